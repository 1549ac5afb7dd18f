"""Many runs at once: means, paired tests against the first run or every pair, Holm across the
table, ranx-style letters; p-values checked against scipy, means against ranx."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from recallwatch.errors import UsageError
from recallwatch.metrics import Qrels, Run
from recallwatch.stats import compare_many, compare_many_scores
from recallwatch.stats._multi import letter
from tests.reference import reference_library

QUERIES = [f"q{i:02d}" for i in range(40)]
RNG = np.random.default_rng(11)
# The rank of each query's one relevant document in four runs: "base" at rank 3; "better"
# mostly at 1; "same" like base with a few moves either way; "worse" mostly at 6.
RANKS = {
    "base": np.full(40, 3),
    "better": np.where(RNG.random(40) < 0.8, 1, 3),
    "same": np.array([2, 2, 4, 4] + [3] * 36),
    "worse": np.where(RNG.random(40) < 0.7, 6, 3),
}


def _run(ranks: np.ndarray) -> Run:
    mapping = {}
    for q, r in zip(QUERIES, ranks, strict=True):
        docs = [f"{q}-n{i}" for i in range(9)]
        docs.insert(int(r) - 1, f"{q}-rel")
        mapping[q] = {d: float(20 - i) for i, d in enumerate(docs)}
    return Run.from_dict(mapping)


QRELS = Qrels.from_dict({q: {f"{q}-rel": 1} for q in QUERIES})
RUNS = {name: _run(r) for name, r in RANKS.items()}


def _holm_by_hand(p: list[float]) -> list[float]:
    """Holm (1979) adjusted p-values written out: sorted ascending, (m - i) p_(i), running max."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * p[i]))
        out[i] = running
    return out


@pytest.mark.parametrize("all_pairs", [False, True])
def test_t_test_p_values_are_scipys_and_holm_covers_the_whole_table(all_pairs: bool) -> None:
    result = compare_many(QRELS, RUNS, ["RR", "P@1"], all_pairs=all_pairs, test="t")
    names = list(RUNS)
    pairs = (list(itertools.combinations(names, 2)) if all_pairs
             else [(names[0], n) for n in names[1:]])
    assert [(t.a, t.b) for t in result.tests] == [p for p in pairs for _ in range(2)]
    raw = []
    for t in result.tests:
        a, b = (1.0 / RANKS[t.a], 1.0 / RANKS[t.b]) if t.measure == "RR" else (
            (RANKS[t.a] == 1).astype(float), (RANKS[t.b] == 1).astype(float))
        d = b - a
        assert t.delta == pytest.approx(d.mean())
        assert (t.wins, t.ties, t.losses) == (int((d > 0).sum()), int((d == 0).sum()),
                                              int((d < 0).sum()))
        if np.all(d == 0):
            assert t.p == 1.0
        else:
            assert t.p == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-9)
        raw.append(t.p)
    assert [t.p_holm for t in result.tests] == pytest.approx(_holm_by_hand(raw), rel=1e-12)


# ranx's numba kernels warn of an unsafe cast on their own inputs (the message starts with
# terminal colour codes), and compile on first use: minutes on a busy machine
@pytest.mark.filterwarnings("ignore:.*unsafe cast from uint64 to int64")
@pytest.mark.slow
def test_means_agree_with_ranx() -> None:
    ranx = reference_library("ranx")
    qrels = ranx.Qrels({q: {f"{q}-rel": 1} for q in QUERIES})
    result = compare_many(QRELS, RUNS, ["RR", "P@1"], test="t")
    for name, ranks in RANKS.items():
        mapping = {}
        for q, r in zip(QUERIES, ranks, strict=True):
            docs = [f"{q}-n{i}" for i in range(9)]
            docs.insert(int(r) - 1, f"{q}-rel")
            mapping[q] = {d: float(20 - i) for i, d in enumerate(docs)}
        got = ranx.evaluate(qrels, ranx.Run(mapping), ["mrr", "precision@1"])
        assert result.aggregate[name]["RR"] == pytest.approx(got["mrr"])
        assert result.aggregate[name]["P@1"] == pytest.approx(got["precision@1"])


def test_letters_name_the_runs_beaten_after_holm() -> None:
    result = compare_many(QRELS, RUNS, ["RR"], all_pairs=True, test="t")
    for run in RUNS:
        expected = []
        for t in result.tests:
            if t.p_holm > result.alpha:
                continue
            if t.b == run and t.delta > 0:
                expected.append(t.a)
            if t.a == run and t.delta < 0:
                expected.append(t.b)
        assert sorted(result.beats(run, "RR")) == sorted(expected)
    # the construction: "better" beats every other run, "worse" none
    assert result.marks("better", "RR") == "acd"
    assert result.marks("worse", "RR") == ""
    assert result.marks("base", "RR") == "d"


def test_against_the_first_run_only_tests_the_first_run() -> None:
    result = compare_many(QRELS, RUNS, ["RR"], test="t")
    assert {t.a for t in result.tests} == {"base"}
    assert result.marks("better", "RR") == "a"
    assert result.marks("base", "RR") == "d"  # base beats worse in the base-vs-worse test
    assert result.marks("same", "RR") == ""  # same vs better was never tested


def test_randomization_is_seeded_and_a_pairs_p_ignores_other_runs() -> None:
    three = compare_many(QRELS, {k: RUNS[k] for k in ("base", "better", "same")}, ["RR"],
                         seed=4, n_resamples=2000)
    four = compare_many(QRELS, RUNS, ["RR"], seed=4, n_resamples=2000)
    assert three.tests[0].p == four.tests[0].p
    assert compare_many(QRELS, RUNS, ["RR"], seed=4, n_resamples=2000) == four


def test_outputs_show_the_same_table() -> None:
    result = compare_many(QRELS, RUNS, ["RR", "P@1"], all_pairs=True, test="t")
    md = result.to_markdown().splitlines()
    assert md[0] == "| \\# | run | RR | P@1 |"
    better = f"{result.aggregate['better']['RR']:.4f}<sup>acd</sup>"
    assert better in md[3]
    latex = result.to_latex()
    assert f"{result.aggregate['better']['RR']:.4f}$^{{acd}}$" in latex
    assert latex.startswith("\\begin{table}") and latex.rstrip().endswith("\\end{table}")
    csv_lines = result.to_csv().splitlines()
    assert csv_lines[0] == "letter,run,RR,RR beats,P@1,P@1 beats"
    assert csv_lines[2].startswith("b,better,") and ",acd," in csv_lines[2]
    text = result.to_text()
    assert "Holm correction across all 12 tests" in text


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_data_frame(library: str) -> None:
    pytest.importorskip(library)
    result = compare_many(QRELS, RUNS, ["RR"], all_pairs=True, test="t")
    frame = result.to_frame(library)  # type: ignore[arg-type]
    rows = frame.to_dicts() if library == "polars" else frame.to_dict("records")
    assert [r["run"] for r in rows] == list(RUNS)
    assert [r["RR"] for r in rows] == [result.aggregate[n]["RR"] for n in RUNS]
    assert rows[1]["RR beats"] == "acd"


def test_hostile_run_names_are_escaped() -> None:
    scores = {"a|b": {"RR": [0.5, 1.0]}, "x_$&\n": {"RR": [0.5, 1.0]}}
    result = compare_many_scores(list(scores), ["q1", "q2"], scores)
    md = result.to_markdown()
    assert "a\\|b" in md and "x\\_$&" in md
    assert "x\\_\\$\\&" in result.to_latex()


def test_letters_go_on_after_z() -> None:
    assert [letter(i) for i in (0, 25, 26, 27, 51, 52)] == ["a", "z", "aa", "ab", "az", "ba"]


def test_bad_input() -> None:
    with pytest.raises(UsageError, match="at least two runs"):
        compare_many_scores(["a"], ["q"], {"a": {"RR": [1.0]}})
    with pytest.raises(UsageError, match="two runs are named 'a'"):
        compare_many_scores(["a", "a"], ["q"], {"a": {"RR": [1.0]}})
