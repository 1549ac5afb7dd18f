"""`recallwatch compare` through its CLI: outputs, the JSON contract, determinism, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner, Result

from recallwatch.cli import app
from recallwatch.stats import holm, paired_test

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

QUERIES = [f"q{i:02d}" for i in range(1, 31)]
# Where run B puts each query's one relevant document (run A always puts it at rank 2):
# better on q01-q20, equal on q21-q28, worse on q29, and q30 is missing from B altogether.
B_RANK = {**{q: 1 for q in QUERIES[:20]}, **{q: 2 for q in QUERIES[20:28]}, "q29": 3}


def _run_lines(ranks: dict[str, int], tag: str) -> str:
    lines = []
    for qid, rank in ranks.items():
        docs = [f"{qid}-n{i}" for i in range(10)]
        docs.insert(rank - 1, f"{qid}-rel")
        lines += [f"{qid} Q0 {doc} {r} {20 - r} {tag}" for r, doc in enumerate(docs, 1)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {q}-rel 1\n" for q in QUERIES))
    run_a = tmp_path / "a.run"
    run_a.write_text(_run_lines(dict.fromkeys(QUERIES, 2), "A"))
    run_b = tmp_path / "b.run"
    run_b.write_text(_run_lines(B_RANK, "B") + "zz Q0 d1 1 1.0 B\n")  # zz: not judged
    return {"qrels": qrels, "a": run_a, "b": run_b, "dir": tmp_path}


def _scores(measure: str) -> tuple[np.ndarray, np.ndarray]:
    """The per-query scores the construction implies (queries in sorted order)."""
    rank_a = np.full(len(QUERIES), 2.0)
    rank_b = np.array([B_RANK.get(q, np.inf) for q in QUERIES])
    if measure == "RR":
        return 1 / rank_a, 1 / rank_b
    assert measure == "P@1"
    return (rank_a == 1).astype(float), (rank_b == 1).astype(float)


def invoke(files: dict[str, Path], *args: str) -> Result:
    return runner.invoke(app, ["compare", str(files["qrels"]), str(files["a"]), str(files["b"]),
                               *args])


def test_table_shows_means_delta_ci_p_and_win_tie_loss(files: dict[str, Path]) -> None:
    r = invoke(files, "-m", "RR", "-m", "P@1")
    assert r.exit_code == 0, r.output
    rr = next(line for line in r.stdout.splitlines() if line.startswith("RR "))
    a, b = _scores("RR")
    cells = rr.split()
    assert cells[1:4] == [f"{a.mean():.4f}", f"{b.mean():.4f}", f"{b.mean() - a.mean():+.4f}"]
    assert "20/8/2" in rr and " * " in rr + " "
    assert re.search(r"\[\+0\.\d{4}, \+0\.\d{4}\]", rr)
    assert "1 judged query missing from B, scored 0 there: q30" in r.stdout
    assert "1 unjudged query ignored: zz" in r.stdout
    assert "30 queries; delta = B - A; randomization test, 10,000 resamples, seed 0" in r.stdout


def test_json_contract_and_agreement_with_the_stats_layer(files: dict[str, Path]) -> None:
    r = invoke(files, "-m", "RR", "-m", "P@1", "--format", "json", "--seed", "7",
               "--resamples", "2000")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out) == {"schema", "test", "seed", "resamples", "alpha", "ci_level", "ci_method",
                        "tie_tolerance", "power", "qrels", "run_a", "run_b", "queries",
                        "measures"}
    assert out["schema"] == "recallwatch.compare/1"
    assert out["queries"] == {"evaluated": 30, "missing_from_a": [], "missing_from_b": ["q30"],
                              "not_judged": ["zz"]}
    assert list(out["measures"]) == ["RR", "P@1"]
    raw = []
    for name, row in out["measures"].items():
        a, b = _scores(name)
        assert set(row) == {"mean_a", "mean_b", "delta", "ci", "p_value", "p_holm",
                            "significant", "statistic", "p_method", "wins", "ties", "losses",
                            "queries_needed"}
        assert row["mean_a"] == pytest.approx(a.mean())
        assert row["mean_b"] == pytest.approx(b.mean())
        assert row["delta"] == pytest.approx(b.mean() - a.mean())
        assert row["ci"][0] <= row["delta"] <= row["ci"][1]
        expected = paired_test(a, b, test="randomization", seed=7, n_resamples=2000)
        assert row["p_value"] == expected.p_value
        assert row["p_method"] == expected.method
        d = b - a
        assert [row["wins"], row["ties"], row["losses"]] == [
            int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())]
        raw.append(row["p_value"])
    assert [row["p_holm"] for row in out["measures"].values()] == holm(raw).tolist()


def test_t_and_wilcoxon_agree_with_scipy(files: dict[str, Path]) -> None:
    a, b = _scores("RR")
    for test, reference in (("t", stats.ttest_rel(b, a).pvalue),
                            ("wilcoxon", paired_test(a, b, test="wilcoxon").p_value)):
        r = invoke(files, "-m", "RR", "--test", test, "--format", "json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["measures"]["RR"]["p_value"] == pytest.approx(reference)


def test_same_seed_same_output(files: dict[str, Path]) -> None:
    first = invoke(files, "-m", "RR", "-m", "P@1", "--seed", "3", "--format", "json")
    again = invoke(files, "-m", "RR", "-m", "P@1", "--seed", "3", "--format", "json")
    assert first.exit_code == 0 and first.stdout == again.stdout


def test_a_run_against_itself(files: dict[str, Path]) -> None:
    r = runner.invoke(app, ["compare", str(files["qrels"]), str(files["a"]), str(files["a"]),
                            "-m", "RR", "--format", "json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["measures"]["RR"]
    assert (row["delta"], row["p_value"], row["p_holm"], row["ci"]) == (0.0, 1.0, 1.0, [0.0, 0.0])
    assert (row["wins"], row["ties"], row["losses"]) == (0, 30, 0)
    assert row["significant"] is False and row["queries_needed"] is None


def _error(r: Result) -> str:
    """The one error line, after checking exit code 2 and that no traceback leaked."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return str(lines[0])


def test_missing_run_file(files: dict[str, Path]) -> None:
    r = runner.invoke(app, ["compare", str(files["qrels"]), str(files["a"]),
                            str(files["dir"] / "nope.run"), "-m", "RR"])
    message = _error(r)
    assert message.startswith("Error: ") and "nope.run" in message


def test_malformed_run_line_names_file_and_line(files: dict[str, Path]) -> None:
    bad = files["dir"] / "bad.run"
    bad.write_text("q01 Q0 d1 1 0.9 B\nq01 Q0 d2 2 high B\n")
    r = runner.invoke(app, ["compare", str(files["qrels"]), str(files["a"]), str(bad), "-m", "RR"])
    message = _error(r)
    assert message.startswith(f"Error: {bad}:2: ")
    assert "'high'" in message


def test_unknown_measure_lists_the_valid_ones(files: dict[str, Path]) -> None:
    message = _error(invoke(files, "-m", "MAPP"))
    assert message.startswith("Error: unknown measure 'MAPP'")
    assert "valid measures:" in message and "nDCG" in message


@pytest.mark.parametrize(("option", "value", "text"), [
    ("--alpha", "1.5", "alpha must be strictly between 0 and 1, got 1.5"),
    ("--power", "0", "power must be strictly between 0 and 1, got 0.0"),
    ("--tie-tolerance", "-1", "the tie tolerance must be a finite number >= 0, got -1.0"),
])
def test_bad_option_values(files: dict[str, Path], option: str, value: str, text: str) -> None:
    assert _error(invoke(files, "-m", "RR", option, value)) == f"Error: {text}"


def test_unknown_test_is_a_usage_error(files: dict[str, Path]) -> None:
    r = invoke(files, "-m", "RR", "--test", "bayes")
    assert r.exit_code == 2
    assert "'bayes' is not one of 'randomization', 't', 'wilcoxon'" in r.output


def test_json_shape_is_documented() -> None:
    # Every key the command prints appears in docs/compare-and-ingest.md's "compare" section
    # and the docstring.
    from recallwatch.cli.compare import compare

    docs = (ROOT / "docs" / "compare-and-ingest.md").read_text(encoding="utf-8")
    section = docs.split("## compare", 1)[1].split("\n## ", 1)[0]
    keys = ["schema", "test", "seed", "resamples", "alpha", "ci_level", "ci_method",
            "tie_tolerance", "power", "qrels", "run_a", "run_b", "queries", "evaluated",
            "missing_from_a", "missing_from_b", "not_judged", "measures", "mean_a", "mean_b",
            "delta", "ci", "p_value", "p_holm", "significant", "statistic", "p_method", "wins",
            "ties", "losses", "queries_needed"]
    for key in keys:
        assert f'"{key}"' in section, key
        assert f'"{key}"' in (compare.__doc__ or ""), key


def test_standard_set_measures_compare_like_any_other(files: dict[str, Path]) -> None:
    res = invoke(files, "-m", "ERR@10", "-m", "RBP", "-m", "IPrec@0.5", "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)["measures"]
    rank_a = np.full(len(QUERIES), 2.0)
    rank_b = np.array([B_RANK.get(q, np.inf) for q in QUERIES])
    # one relevant document of grade 1: ERR = (1/16) / rank, RBP = 0.2 * 0.8^(rank - 1)
    assert out["ERR@10"]["mean_a"] == pytest.approx(np.mean(1 / 16 / rank_a))
    assert out["ERR@10"]["mean_b"] == pytest.approx(np.mean(1 / 16 / rank_b))
    assert out["RBP"]["mean_b"] == pytest.approx(np.mean(0.2 * 0.8 ** (rank_b - 1)))
    assert out["IPrec@0.5"]["mean_a"] == pytest.approx(0.5)


def test_gmap_is_refused_with_the_measure_to_compare_instead(files: dict[str, Path]) -> None:
    message = _error(invoke(files, "-m", "GMAP"))
    assert message.startswith("Error: GMAP is a geometric mean over queries")
    assert "compare AP (its per-query values) instead" in message


# -- three runs or more ------------------------------------------------------------------------

def _third(files: dict[str, Path]) -> Path:
    """Run C: the relevant document at rank 1 for every query (better than A and B)."""
    run_c = files["dir"] / "c.run"
    run_c.write_text(_run_lines(dict.fromkeys(QUERIES, 1), "C"))
    return run_c


def test_three_runs_json_contract(files: dict[str, Path]) -> None:
    run_c = _third(files)
    r = invoke(files, str(run_c), "-m", "RR", "-m", "P@1", "--format", "json", "--test", "t")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert {"runs", "aggregate", "tests"} <= set(out)
    assert out["runs"] == ["a.run", "b.run", "c.run"]
    assert out["pairs"] == "first"
    assert [(t["a"], t["b"], t["measure"]) for t in out["tests"]] == [
        ("a.run", "b.run", "RR"), ("a.run", "b.run", "P@1"),
        ("a.run", "c.run", "RR"), ("a.run", "c.run", "P@1")]
    a, b = _scores("RR")
    assert out["aggregate"]["a.run"]["RR"] == pytest.approx(a.mean())
    assert out["aggregate"]["b.run"]["RR"] == pytest.approx(b.mean())
    assert out["aggregate"]["c.run"]["RR"] == pytest.approx(1.0)
    ab = out["tests"][0]
    assert set(ab) >= {"a", "b", "measure", "delta", "p", "p_holm"}
    assert ab["p"] == pytest.approx(stats.ttest_rel(b, a).pvalue)
    assert [t["p_holm"] for t in out["tests"]] == pytest.approx(
        holm([t["p"] for t in out["tests"]]).tolist())


def test_three_runs_all_pairs_table_marks_the_winner(files: dict[str, Path]) -> None:
    run_c = _third(files)
    r = invoke(files, str(run_c), "-m", "RR", "--all-pairs", "--test", "t")
    assert r.exit_code == 0, r.output
    rows = {line.split()[1]: line.split() for line in r.stdout.splitlines()
            if line[:2] in ("a ", "b ", "c ")}
    assert rows["c.run"][2].endswith("ab")  # C beats A and B
    assert rows["b.run"][2].endswith("a")  # B beats A
    assert "Holm correction across all 3 tests" in r.stdout


@pytest.mark.parametrize(("fmt", "start"), [("markdown", "| \\# | run | RR |"),
                                            ("latex", "\\begin{table}"),
                                            ("csv", "letter,run,RR,RR beats")])
def test_other_formats(files: dict[str, Path], fmt: str, start: str) -> None:
    r = invoke(files, str(_third(files)), "-m", "RR", "--format", fmt)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(start)


def test_costs_need_two_runs(files: dict[str, Path]) -> None:
    message = _error(invoke(files, str(_third(files)), "-m", "RR", "--cost-a", "x.json",
                            "--cost-b", "y.json"))
    assert message.startswith("Error: --cost-a and --cost-b compare two runs")
