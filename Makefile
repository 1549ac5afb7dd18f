# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-all lint typecheck bench clean install browser

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	bash examples/demo.sh

# The browser tests (dashboard, HTML report) drive Debian's chromium; nothing is downloaded by
# playwright. Installed only when missing; sudo only when not root.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@[ -x /usr/bin/chromium ] || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
	  || { $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

test: $(STAMP)
	@$(MAKE) --no-print-directory browser || echo "warning: chromium could not be installed; browser tests will be skipped"
	$(BIN)/python -m pytest -m "not slow" -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -q

test-all: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check recallwatch tests benchmarks examples
	$(BIN)/mypy

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/metrics_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache demo-out
