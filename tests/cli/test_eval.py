"""`recallwatch eval` through its CLI: outputs, exit codes, and one test per kind of bad input."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
import pytrec_eval
from typer.testing import CliRunner

from recallwatch.cli import app

runner = CliRunner(env={"COLUMNS": "200"})
DATA = Path(__file__).resolve().parent.parent / "data" / "trec"
QRELS, RUN = DATA / "qrels.txt", DATA / "run.txt"


def _dicts() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    for line in RUN.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    return qrels, run


def test_json_output_matches_pytrec_eval_and_the_contract() -> None:
    result = runner.invoke(
        app, ["eval", str(QRELS), str(RUN), "-m", "nDCG@10", "-m", "AP", "--per-query",
              "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"aggregate", "per_query", "queries"}
    assert out["queries"] == {"evaluated": 3, "missing_from_run": ["q3"], "not_judged": ["q4"]}
    qrels, run = _dicts()
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map"}).evaluate(run)
    for qid in ("q1", "q2"):
        assert out["per_query"][qid]["nDCG@10"] == pytest.approx(ref[qid]["ndcg_cut_10"])
        assert out["per_query"][qid]["AP"] == pytest.approx(ref[qid]["map"])
    assert out["per_query"]["q3"] == {"nDCG@10": 0.0, "AP": 0.0}
    # -c semantics: the judged query absent from the run counts as 0 in the mean
    assert out["aggregate"]["AP"] == pytest.approx((ref["q1"]["map"] + ref["q2"]["map"]) / 3)


def test_json_without_per_query_has_no_per_query_key() -> None:
    result = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "RR", "--format", "json"])
    assert result.exit_code == 0
    assert "per_query" not in json.loads(result.stdout)


def test_table_lists_missing_and_unjudged_queries_under_it() -> None:
    result = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "P@2", "--per-query"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert "P@2" in lines[2] and lines[-5].split()[0] == "mean" and lines[-4] == ""
    assert lines[-2:] == ["1 judged query missing from the run, scored 0 there: q3",
                          "1 unjudged query ignored: q4"]
    assert result.stderr == ""


def test_tsv_output(tmp_path: Path) -> None:
    gz_run = tmp_path / "run.gz"
    gz_run.write_bytes(gzip.compress(RUN.read_bytes()))
    result = runner.invoke(app, ["eval", str(QRELS), str(gz_run), "-m", "RR", "-m", "R@2",
                                 "--format", "tsv", "--per-query"])
    assert result.exit_code == 0, result.output
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert lines[0] == ["query_id", "RR", "R@2"]
    assert [row[0] for row in lines[1:]] == ["q1", "q2", "q3", "all"]
    assert float(lines[1][1]) == 1.0 and float(lines[2][1]) == 0.5


def _bad(tmp_path: Path, content: bytes, *, kind: str = "run") -> str:
    path = tmp_path / f"bad.{kind}"
    path.write_bytes(content)
    args = [str(QRELS), str(path)] if kind == "run" else [str(path), str(RUN)]
    result = runner.invoke(app, ["eval", *args, "-m", "AP"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    return lines[0]


def test_wrong_column_count(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 1 2.0\n")
    assert message == (
        f"Error: {tmp_path / 'bad.run'}:2: expected 6 whitespace-separated columns "
        "'qid Q0 docid rank score tag', found <5 columns: 'q1 Q0 d2 1 2.0'>"
    )


def test_malformed_line_with_extra_blanks_is_located(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1\tQ0  d1 1 2.0 r\n\n  q1 Q0\td2 1 2.0\n")
    assert "bad.run:3: expected 6 whitespace-separated columns" in message
    assert "found <5 columns: 'q1 Q0\\td2 1 2.0'>" in message


def test_non_numeric_score(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 high r\n")
    assert message == (
        f"Error: {tmp_path / 'bad.run'}:2: record 'q1': field 'score': "
        "expected a finite number, found 'high'"
    )


def test_non_finite_score(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 nan r\n")
    assert "bad.run:2: record 'q1': field 'score': expected a finite number, found 'nan'" in message


def test_non_integer_grade(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1 0 d1 1\nq1 0 d2 0.5\n", kind="qrels")
    assert message == (
        f"Error: {tmp_path / 'bad.qrels'}:2: record 'q1': field 'rel': "
        "expected an integer relevance grade, found '0.5'"
    )


def test_duplicate_document_names_query_document_and_lines(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.5 r\nq1 Q0 d1 3 1.0 r\n")
    assert message == (
        f"Error: {tmp_path / 'bad.run'}:3: record 'q1': field 'docid': "
        "duplicate document 'd1' in query 'q1' (also on line 1)"
    )


def test_duplicate_judgment(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1 0 d1 1\nq1 0 d1 2\n", kind="qrels")
    assert (
        "bad.qrels:2: record 'q1': field 'docid': duplicate document 'd1' in query 'q1'" in message
    )


def test_empty_file(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"\n  \n")
    assert message == (
        f"Error: {tmp_path / 'bad.run'}: expected at least one line "
        "'qid Q0 docid rank score tag', found <an empty file>"
    )


def test_missing_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(QRELS), str(tmp_path / "nope.txt"), "-m", "AP"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {tmp_path / 'nope.txt'}: expected a readable TREC run file, found <no such file>"
    )


def test_non_utf8_bytes(tmp_path: Path) -> None:
    message = _bad(tmp_path, b"q1 Q0 d1 1 2.0 r\nq1 Q0 d\xff2 2 1.0 r\n")
    assert message == (
        f"Error: {tmp_path / 'bad.run'}:2: expected UTF-8 text, found <bytes b'\\xff' at column 8>"
    )


def test_truncated_gzip(tmp_path: Path) -> None:
    message = _bad(tmp_path, gzip.compress(RUN.read_bytes())[:-12])
    where = re.escape(str(tmp_path / "bad.run"))
    assert re.match(rf"Error: {where}:\d+: expected a complete gzip stream", message)


def test_unknown_measure_lists_valid_ones_and_suggests() -> None:
    result = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "nDGC@10"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: unknown measure 'nDGC' (did you mean 'nDCG'?); "
        "valid measures: AP, AP11pt, Bpref, ERR, GMAP, IPrec, Judged, NumQ, NumRel, "
        "NumRelRet, NumRet, P, R, RBP, RR, Rcap, Rprec, SetF, SetP, SetR, Success, alpha_nDCG, "
        "infAP, nDCG"
    )


def test_measure_with_a_parameter_it_does_not_take() -> None:
    result = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "nDCG(rel=2)@10"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: measure nDCG takes no parameter 'rel'; its parameters: dcg"
    )


def test_unknown_format() -> None:
    result = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "AP", "--format", "xml"])
    assert result.exit_code == 2
    assert "xml" in result.output


def test_a_parquet_run_gives_what_the_trec_run_gives(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [line.split() for line in RUN.read_text().splitlines()]
    parquet = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": [r[0] for r in rows], "docid": [r[2] for r in rows],
                             "score": [float(r[4]) for r in rows]}), parquet)
    argv = ["-m", "nDCG@10", "-m", "AP", "--per-query", "--format", "json"]
    trec = runner.invoke(app, ["eval", str(QRELS), str(RUN), *argv])
    columnar = runner.invoke(app, ["eval", str(QRELS), str(parquet), *argv])
    assert trec.exit_code == columnar.exit_code == 0, columnar.output
    assert json.loads(columnar.stdout) == json.loads(trec.stdout)
    compared = runner.invoke(app, ["compare", str(QRELS), str(RUN), str(parquet), "-m", "AP"])
    assert compared.exit_code == 0, compared.output


TREC_EVAL = Path(__file__).resolve().parent.parent / "data" / "trec_eval"


def test_standard_set_through_the_cli_matches_trec_eval() -> None:
    # trec_eval -m all_trec -q -c qrels.test results.trunc (tests/data/trec_eval/out.test.aqc)
    expected: dict[str, float] = {}
    for line in (TREC_EVAL / "out.test.aqc").read_text().splitlines():
        name, qid, value = line.split()
        if qid == "all" and name != "runid":
            expected[name] = float(value)
    ours = {"NumQ": "num_q", "NumRet": "num_ret", "NumRelRet": "num_rel_ret", "GMAP": "gm_map",
            "Bpref": "bpref", "infAP": "infAP", "IPrec@0.1": "iprec_at_recall_0.10",
            "AP11pt": "11pt_avg", "SetF": "set_F", "RBP(p=0.9)": "rbp"}
    args = ["eval", str(TREC_EVAL / "qrels.test"), str(TREC_EVAL / "results.trunc"),
            "--format", "json"]
    for name in ours:
        args += ["-m", name]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["queries"]["missing_from_run"] == ["302"]
    for name, trec_name in ours.items():
        assert out["aggregate"][name] == pytest.approx(expected[trec_name], abs=5e-5), name
    assert out["aggregate"]["NumRet"] == 584 and out["aggregate"]["NumQ"] == 3


def test_a_recall_level_out_of_range_is_a_usage_error() -> None:
    result = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "IPrec@5"])
    assert result.exit_code == 2
    assert "IPrec: the recall level must be a number between 0 and 1, found 5.0" in result.output
