"""What is checked once each variant's chunks are built, before any index is embedded: the golden
set's expected chunk ids are chunks of every variant.

A variant that re-chunks the corpus gives its chunks new ids, so a golden set that names its
expected chunks by id cannot be judged on it; content anchors (``{doc_id, quote}``) resolve on
every chunking, and ``recallwatch golden migrate`` writes them. The error names the plan, the
variant and that command, before minutes of embedding are spent.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from recallwatch.errors import DatasetError
from recallwatch.experiment.plan import Plan, VariantSpec

if TYPE_CHECKING:
    from recallwatch.experiment.build import Build

__all__ = ["check_golden_ids"]


def check_golden_ids(plan: Plan, keys: dict[str, tuple[str, str | None]],
                     corpora: dict[str, Build]) -> None:
    """Raise a DatasetError naming the plan and the first variant whose chunks lack some of the
    golden set's expected chunk ids (``keys``: variant -> corpus key; ``corpora``: corpus key ->
    its build)."""
    from recallwatch.formats.corpus import read_corpus
    from recallwatch.formats.golden import load_golden

    golden = load_golden(plan.golden)
    expected = list(dict.fromkeys(c for q in golden.queries for c in q.expected))
    if not expected:
        return
    ids: dict[str, set[str]] = {}
    failing: list[tuple[VariantSpec, list[str]]] = []
    for v in plan.all():
        key = keys[v.name][0]
        if key not in ids:
            ids[key] = {c.id for c in read_corpus(corpora[key].corpus_file).chunks}
        missing = [c for c in expected if c not in ids[key]]
        if missing:
            failing.append((v, missing))
    if failing:
        raise _missing_ids(plan, len(expected), failing)


def _missing_ids(plan: Plan, n_expected: int,
                 failing: list[tuple[VariantSpec, list[str]]]) -> DatasetError:
    variant, missing = failing[0]
    others = [v.name for v, _ in failing[1:]]
    also = f"; so do {len(others)} other variant(s): {', '.join(others[:5])}" if others else ""
    listed = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
    golden = _path(plan.golden)
    if variant.chunking is not None:
        corpus = (_path(plan.corpus[0]) if len(plan.corpus) == 1 else
                  "CORPUS (one file of the chunks the ids name: the plan's corpus files "
                  f"{', '.join(_path(p) for p in plan.corpus)} merged)")
        anchors = _path(plan.golden.with_name(f"{plan.golden.stem}_anchors.yaml"))
        return DatasetError(
            f"this variant re-chunks the corpus, which gives its chunks new ids, and the golden "
            f"set {golden} names its expected chunks by id: {len(missing)} of its "
            f"{n_expected} ids are not chunks of this variant ({listed}){also}",
            source=str(plan.source), line=variant.line, record=variant.name, field="chunking",
            hint="write the expected chunks as content anchors, which resolve on every "
            f"chunking: recallwatch golden migrate {golden} --from {corpus} --out {anchors}, "
            "then name that file in the plan's golden:")
    return DatasetError(
        f"{len(missing)} of the golden set's {n_expected} expected chunk ids are not in this "
        f"variant's corpus ({listed}){also}", source=str(plan.source), line=variant.line,
        record=variant.name, field="corpus",
        hint=f"fix the golden set {golden}, or the corpus files the plan names")


def _path(path: Path) -> str:
    """A path as a command line takes it: from the working folder when it is below it."""
    relative = os.path.relpath(path)
    return shlex.quote(path.as_posix() if relative.startswith("..") else relative)
