"""`make demo` installs what the documented examples need: the extras its install names hold
every package the example files and the README's "Try it" section use beyond the core (the
dashboard, BM25 keyword search for the hybrid pipeline and the experiment's variants).

No package is installed here (the tests run offline): the Makefile's install line and the
pyproject's extras are read, and each example's needs are derived from what it names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from recallwatch.retrievers import RETRIEVERS, scheme_of

ROOT = Path(__file__).resolve().parent.parent


def _demo_extras() -> set[str]:
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = re.search(r"^DEMO_EXTRAS := (.+)$", make, re.MULTILINE)
    assert found, "the Makefile names the extras of the demo install in DEMO_EXTRAS"
    assert "pip install --quiet -e '.[$(DEMO_EXTRAS)]'" in make
    return {e.strip() for e in found.group(1).split(",")}


def _extras_needed_by_pipeline(path: Path) -> set[str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    extra = {e.name: e.extra for e in RETRIEVERS.entries()}
    return {extra[s] for spec in data["retrievers"].values()
            if (s := scheme_of(spec)) in extra and extra[s]}


def test_the_demo_installs_the_dashboard_and_bm25_and_they_are_real_extras() -> None:
    extras = _demo_extras()
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    assert {"web", "bm25"} <= extras <= set(declared)
    assert any(d.startswith("bm25s") for d in declared["bm25"])


def test_the_hybrid_example_and_the_experiment_example_need_nothing_more() -> None:
    extras = _demo_extras()
    assert _extras_needed_by_pipeline(ROOT / "examples" / "kb" / "hybrid.yaml") == {"bm25"}
    plan = (ROOT / "examples" / "kb" / "experiment.yaml").read_text(encoding="utf-8")
    needed = {"bm25"} if re.search(r"retrieval: (bm25|\{fuse)", plan) else set()
    assert needed == {"bm25"} and needed <= extras
    assert "--pipeline examples/kb/hybrid.yaml" in (ROOT / "README.md").read_text(encoding="utf-8")
