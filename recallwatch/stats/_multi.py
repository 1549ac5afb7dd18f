"""Many runs on the same queries and truth: every measure for every run, with paired tests.

Each run is tested against the first one (the baseline) or, with ``all_pairs``, every pair of
runs is tested. The p-values of every test in the table (pairs times measures) are
Holm-corrected together, so "significant" in the table holds for the whole table at once. As in
ranx's report, runs are lettered a, b, c… in the order given, and a run's score carries the
letters of the runs it beats significantly on that measure.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from recallwatch._terminal import table_lines
from recallwatch.errors import InputError, UsageError
from recallwatch.stats._paired import TestName, paired_differences, test_differences

if TYPE_CHECKING:
    import numpy.typing as npt

    from recallwatch.formats.frames import Frame
    from recallwatch.metrics import Measure, Qrels, Run, SubtopicQrels

__all__ = ["MultiComparison", "PairTest", "compare_many", "compare_many_scores", "compare_runs",
           "letter"]

#: Version of the shape returned by :meth:`MultiComparison.to_dict`.
SCHEMA = "recallwatch.compare-many/1"



class ManyOptions(TypedDict, total=False):
    """The options of :func:`compare_many_scores`, which :func:`compare_many` passes on (their
    defaults are those of :func:`compare_many_scores`)."""

    all_pairs: bool
    test: TestName
    seed: int
    n_resamples: int
    alpha: float
    tie_tolerance: float


def letter(index: int) -> str:
    """The letter of the run at ``index``: a…z, then aa, ab…"""
    out = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


@dataclass(frozen=True, slots=True)
class PairTest:
    """Run ``b`` against run ``a`` on one measure (``delta = mean(b) - mean(a)``)."""

    __test__ = False  # not a pytest test class, despite the name

    a: str
    b: str
    measure: str
    delta: float
    p: float
    p_holm: float
    wins: int
    """Queries where ``b`` scores higher than ``a`` by more than the tie tolerance."""
    ties: int
    losses: int

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "measure": self.measure, "delta": self.delta,
                "p": self.p, "p_holm": self.p_holm, "wins": self.wins, "ties": self.ties,
                "losses": self.losses}


@dataclass(frozen=True, slots=True)
class MultiComparison:
    """The means of every run on every measure and the paired tests between them."""

    runs: tuple[str, ...]
    measures: tuple[str, ...]
    aggregate: Mapping[str, Mapping[str, float]]
    """``aggregate[run][measure]``: the mean over the evaluated queries."""
    tests: tuple[PairTest, ...]
    query_ids: tuple[str, ...]
    test: TestName
    seed: int
    n_resamples: int
    alpha: float
    all_pairs: bool

    def beats(self, run: str, measure: str) -> list[str]:
        """The runs that ``run`` beats significantly on ``measure`` (after Holm), in run order."""
        won = set()
        for t in self.tests:
            if t.measure != measure or t.p_holm > self.alpha or t.delta == 0.0:
                continue
            if t.b == run and t.delta > 0:
                won.add(t.a)
            elif t.a == run and t.delta < 0:
                won.add(t.b)
        return [r for r in self.runs if r in won]

    def marks(self, run: str, measure: str) -> str:
        """The letters of the runs ``run`` beats significantly on ``measure``."""
        return "".join(letter(self.runs.index(r)) for r in self.beats(run, measure))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``recallwatch compare`` with three runs or more."""
        return {
            "schema": SCHEMA,
            "runs": list(self.runs),
            "measures": list(self.measures),
            "aggregate": {r: dict(self.aggregate[r]) for r in self.runs},
            "tests": [t.to_dict() for t in self.tests],
            "pairs": "all" if self.all_pairs else "first",
            "test": self.test,
            "seed": self.seed,
            "resamples": self.n_resamples,
            "alpha": self.alpha,
            "queries": {"evaluated": len(self.query_ids)},
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per run: its letter, its name, then each measure's mean and marks."""
        out = []
        for i, run in enumerate(self.runs):
            row: dict[str, Any] = {"letter": letter(i), "run": run}
            for m in self.measures:
                row[m] = self.aggregate[run][m]
                row[f"{m} beats"] = self.marks(run, m)
            out.append(row)
        return out

    def to_frame(self, library: Frame = "pandas") -> Any:
        """The table as a pandas or polars DataFrame: one row per run, each measure's mean and a
        ``MEASURE beats`` column with the letters of the runs it beats significantly."""
        from recallwatch.formats.frames import to_frame

        return to_frame(self.rows(), library)

    def _repr_html_(self) -> str:
        """The table for Jupyter: one row per run, each mean with the letters of the runs it
        beats significantly, then what the letters mean."""
        from html import escape

        rows = self.cells()
        head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>"
                       for r in rows[1:])
        return (f"<table><caption>{escape(self.legend())}</caption><thead><tr>{head}</tr>"
                f"</thead><tbody>{body}</tbody></table>")

    def to_csv(self) -> str:
        buffer = io.StringIO()
        rows = self.rows()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v)
                             for k, v in row.items()})
        return buffer.getvalue()

    def cells(self) -> list[list[str]]:
        """The table's header and rows as text, marks written after the mean (``0.4210ab``)."""
        header = ["#", "run", *self.measures]
        body = [[letter(i), run, *(f"{self.aggregate[run][m]:.4f}{self.marks(run, m)}"
                                   for m in self.measures)]
                for i, run in enumerate(self.runs)]
        return [header, *body]

    def to_text(self) -> str:
        """The terminal table: one row per run, then what the letters mean."""
        rows = self.cells()
        return "\n".join([*table_lines(rows[0], rows[1:], left=2), "", self.legend()])

    def to_markdown(self) -> str:
        rows = self.cells()
        head, body = rows[0], rows[1:]
        lines = ["| " + " | ".join(_md(c) for c in head) + " |",
                 "|---|---|" + "---:|" * (len(head) - 2)]
        for r in body:
            cells = [r[0], _md(r[1]), *(_md_mark(c) for c in r[2:])]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join([*lines, "", _md(self.legend())])

    def to_latex(self) -> str:
        rows = self.cells()
        head = rows[0]
        lines = ["\\begin{table}[t]", "\\centering",
                 "\\begin{tabular}{ll" + "r" * (len(head) - 2) + "}", "\\toprule",
                 " & ".join(_tex(c) for c in head) + " \\\\", "\\midrule"]
        for i, run in enumerate(self.runs):
            cells = [letter(i), _tex(run)]
            for m in self.measures:
                mark = self.marks(run, m)
                value = f"{self.aggregate[run][m]:.4f}"
                cells.append(f"{value}$^{{{mark}}}$" if mark else value)
            lines.append(" & ".join(cells) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{_tex(self.legend())}}}",
                  "\\end{table}"]
        return "\n".join(lines)

    def legend(self) -> str:
        against = "every other run" if self.all_pairs else f"the first run ({self.runs[0]})"
        method = self.test if self.test != "t" else "paired t"
        return (f"{len(self.query_ids)} queries; each run tested against {against} with a "
                f"{method} test; the letters after a score name the runs it beats at alpha "
                f"{self.alpha:g} after Holm correction across all {len(self.tests)} tests.")


def compare_many_scores(
    names: Sequence[str],
    query_ids: Sequence[str],
    scores: Mapping[str, Mapping[str, npt.ArrayLike]],
    *,
    all_pairs: bool = False,
    test: TestName = "randomization",
    seed: int = 0,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    tie_tolerance: float = 1e-9,
) -> MultiComparison:
    """Compare per-query scores of several runs: ``scores[run][measure][i]`` is query
    ``query_ids[i]``'s score. Every test draws from a fresh generator seeded with ``seed``, so a
    pair's raw p-value does not depend on the other runs; the Holm correction does."""
    import numpy as np

    from recallwatch.stats._compare import _check_options
    from recallwatch.stats._holm import holm

    _check_options(test, alpha, tie_tolerance, 0.5)
    if len(names) < 2:
        raise UsageError(f"give at least two runs to compare, got {len(names)}")
    if len(set(names)) != len(names):
        dup = next(n for n in names if list(names).count(n) > 1)
        raise UsageError(f"two runs are named {dup!r}: give each run a different name")
    measures = list(scores[names[0]])
    if not measures:
        raise UsageError("nothing to compare: give at least one measure")
    for name in names:
        if list(scores[name]) != measures:
            raise InputError(record=name, field="measures", expected=", ".join(measures),
                             found=", ".join(scores[name]))
    arrays = {n: {m: np.asarray(scores[n][m], dtype=np.float64) for m in measures}
              for n in names}
    pairs = ([(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
             if all_pairs else [(names[0], other) for other in names[1:]])
    raw = []
    for a, b in pairs:
        for m in measures:
            d = paired_differences(arrays[a][m], arrays[b][m], names=(f"{a} {m}", f"{b} {m}"))
            if d.size != len(query_ids):
                raise InputError(record=b, field=m, expected=f"one score per query "
                                 f"({len(query_ids)})", found=d.size)
            p = test_differences(d, test=test, seed=seed, n_resamples=n_resamples).p_value
            raw.append((a, b, m, d, p))
    adjusted = holm([r[4] for r in raw])
    tests = tuple(
        PairTest(a, b, m, float(d.mean()), float(p), float(ph),
                 int(np.count_nonzero(d > tie_tolerance)),
                 int(np.count_nonzero(np.abs(d) <= tie_tolerance)),
                 int(np.count_nonzero(d < -tie_tolerance)))
        for (a, b, m, d, p), ph in zip(raw, adjusted, strict=True))
    aggregate = {n: {m: float(arrays[n][m].mean()) for m in measures} for n in names}
    return MultiComparison(tuple(names), tuple(measures), aggregate, tests, tuple(query_ids),
                           test, seed, n_resamples, alpha, all_pairs)


def compare_many(
    qrels: Qrels,
    runs: Mapping[str, Run],
    measures: Sequence[str | Measure],
    *,
    subtopics: SubtopicQrels | None = None,
    **options: Unpack[ManyOptions],
) -> MultiComparison:
    """Evaluate every run on the same judged queries and compare them (the first is the
    baseline). A judged query a run did not return scores 0 there (trec_eval ``-c``).
    ``subtopics``: the subtopic judgments ``alpha_nDCG@k`` reads. The other options
    (``all_pairs``, ``test``, ``seed``, ``n_resamples``, ``alpha``, ``tie_tolerance``) are those
    of :func:`compare_many_scores`."""
    from recallwatch.metrics import evaluate
    from recallwatch.stats._compare import _aligned

    results = {name: evaluate(qrels, run, measures, subtopics) for name, run in runs.items()}
    query_ids = sorted({q for r in results.values() for q in r.query_ids})
    scores = {}
    for name, res in results.items():
        names = [str(m) for m in res.measures]
        scores[name] = dict(zip(names, _aligned(res, query_ids), strict=True))
    return compare_many_scores(list(runs), query_ids, scores, **options)


def compare_runs(qrels: Any, runs: Sequence[Any] | Mapping[str, Any],
                 measures: str | Measure | Sequence[str | Measure], *,
                 subtopics: SubtopicQrels | None = None,
                 **options: Unpack[ManyOptions]) -> MultiComparison:
    """:func:`compare_many` for data in the user's shapes: ``qrels`` and each run as
    :meth:`Qrels.of` and :meth:`Run.of` take them (objects, dicts, frames, paths); ``runs`` a
    mapping name -> run, or a list (named by their paths, else run1, run2, …, in order). The
    result is keyed by the measure names as given (``res.aggregate[run]["nDCG@10"]``)."""
    from dataclasses import replace

    from recallwatch.metrics import Qrels, Run, measure_labels

    labels = measure_labels(measures)
    if isinstance(runs, Mapping):
        named = {str(name): Run.of(run) for name, run in runs.items()}
    elif isinstance(runs, Sequence) and not isinstance(runs, str):
        named = {}
        for i, run in enumerate(runs, start=1):
            name = str(run) if isinstance(run, str | PathLike) else f"run{i}"
            named[name if name not in named else f"{name} ({i})"] = Run.of(run)
    else:
        raise UsageError(f"runs: expected a list of runs or a mapping name -> run; found "
                         f"{type(runs).__name__}")
    result = compare_many(Qrels.of(qrels), named, list(labels.values()), subtopics=subtopics,
                          **options)
    as_given = {str(m): label for label, m in labels.items()}
    return replace(
        result, measures=tuple(as_given[m] for m in result.measures),
        aggregate={r: {as_given[m]: v for m, v in values.items()}
                   for r, values in result.aggregate.items()},
        tests=tuple(replace(t, measure=as_given[t.measure]) for t in result.tests))


def _md(text: str) -> str:
    # a run name is a file path the user typed: nothing in it may break the table or add markup
    for ch in "\\`*_[]<>|#":
        text = text.replace(ch, "\\" + ch)
    return " ".join(text.split())


def _md_mark(cell: str) -> str:
    """``0.4210ab`` as ``0.4210<sup>ab</sup>``."""
    value = cell.rstrip("abcdefghijklmnopqrstuvwxyz")
    mark = cell[len(value):]
    return f"{value}<sup>{mark}</sup>" if mark else value


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}"}


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in " ".join(text.split()))
