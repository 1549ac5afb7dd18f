# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two installs into one .venv, each with its own stamp: the product alone (what the demo and the
# dashboard use) and everything the tests need (every extra, the dev tools). `make test` after
# `make demo` installs the rest; a changed pyproject.toml makes either install again.
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test test-slow test-all lint typecheck bench clean install browser

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The demo install runs every example of the docs that needs no other service: the dashboard
# (web) and BM25 keyword search (bm25: hybrid pipelines, experiment variants); see
# tests/test_demo_install.py.
DEMO_EXTRAS := web,bm25

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing recallwatch, its dashboard and BM25 keyword search into $(VENV) ..."
	$(BIN)/pip install --quiet -e '.[$(DEMO_EXTRAS)]'
	touch $@

# [all] includes [web] and [bm25], so a test install also serves the demo.
$(TEST_STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing recallwatch with every extra and the test tools into $(VENV) (a few minutes) ..."
	$(BIN)/pip install --quiet -e '.[all,dev]'
	touch $@ $(DEMO_STAMP)

install: $(TEST_STAMP)

demo: $(DEMO_STAMP)
	bash examples/demo.sh

# The browser tests (dashboard, HTML report) drive Debian's chromium; nothing is downloaded by
# playwright. Installed only when missing; sudo only when not root.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@[ -x /usr/bin/chromium ] || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
	  || { $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

test: $(TEST_STAMP)
	@$(MAKE) --no-print-directory browser || echo "warning: chromium could not be installed; browser tests will be skipped"
	$(BIN)/python -m pytest -m "not slow" -q

test-slow: $(TEST_STAMP)
	$(BIN)/python -m pytest -m slow -q

test-all: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

lint: $(TEST_STAMP)
	$(BIN)/ruff check recallwatch tests benchmarks examples
	$(BIN)/mypy

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/metrics_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache demo-out
