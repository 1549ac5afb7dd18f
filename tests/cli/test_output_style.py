"""`eval` and `compare` print in one style in the terminal: the runs named above the table, the
header ruled with dashes, names left and numbers right two spaces apart, values with 4 decimals,
then what the figures mean and the queries left out, worded alike. Their JSON is unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from recallwatch.cli import app

runner = CliRunner(env={"COLUMNS": "200"})
DATA = Path(__file__).resolve().parent.parent / "data" / "trec"
QRELS, RUN = DATA / "qrels.txt", DATA / "run.txt"
VALUE = re.compile(r"[+-]?\d+\.\d{4}")


def table(out: str) -> tuple[list[str], list[str], list[list[str]], list[str]]:
    """(the lines above the table, its header, its rows, the lines under it) of a command's
    output; checks the rule under the header lines up with the header's columns."""
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln and set(ln) <= {"-", " "})
    header, rule = lines[at - 1], lines[at]
    # a rule of dashes per column, as wide as the header and every row
    widths = [len(m.group()) for m in re.finditer(r"-+", rule)]
    assert len(header) <= len(rule)
    end = next((i for i in range(at + 1, len(lines)) if not lines[i]), len(lines))
    rows = [ln for ln in lines[at + 1:end] if not set(ln) <= {"-", " "}]
    for ln in rows:
        assert len(ln) <= sum(widths) + 2 * (len(widths) - 1)
    return lines[:at - 1], header.split(), [r.split() for r in rows], lines[end + 1:]


def test_eval_and_compare_share_the_table_style(tmp_path: Path) -> None:
    other = tmp_path / "other.run"
    other.write_text(RUN.read_text().replace("q1 Q0", "q9 Q0"))  # q1 now missing too
    ev = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "nDCG@10", "-m", "AP"])
    cmp = runner.invoke(app, ["compare", str(QRELS), str(RUN), str(other), "-m", "nDCG@10",
                              "-m", "AP"])
    assert ev.exit_code == 0 and cmp.exit_code == 0, (ev.output, cmp.output)
    above_e, head_e, rows_e, under_e = table(ev.stdout)
    above_c, head_c, rows_c, under_c = table(cmp.stdout)
    # the runs named above the table, one "NAME: file" line each, then a blank line
    assert above_e == [f"run: {RUN}", ""]
    assert above_c == [f"A: {RUN}", f"B: {other}", ""]
    # the first header cell names the rows; every number with 4 decimals
    assert head_e[0] == "query" and head_c[0] == "measure"
    for row in [*rows_e, *rows_c]:
        assert all(VALUE.fullmatch(c) for c in row[1:3]), row
    # the same mean printed by both, for each measure (compare's mean A is the run eval read)
    means_e = dict(zip(head_e[1:], rows_e[-1][1:], strict=True))
    means_c = {r[0]: r[1] for r in rows_c}
    assert means_e == means_c
    exact = json.loads(runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "AP", "--format",
                                           "json"]).stdout)["aggregate"]["AP"]
    assert means_e["AP"] == f"{exact:.4f}"
    # under the table: how many queries, then the queries left out, worded alike
    assert re.fullmatch(r"3 queries; .*\.", under_e[0]) and re.fullmatch(r"3 queries; .*\.",
                                                                          under_c[0])
    note = re.compile(r"\d+ judged quer(y|ies) missing from (the run|A|B), scored 0 there: .+"
                      r"|\d+ unjudged quer(y|ies) ignored: .+")
    notes_e = [ln for ln in under_e if note.fullmatch(ln)]
    notes_c = [ln for ln in under_c if note.fullmatch(ln)]
    assert notes_e == ["1 judged query missing from the run, scored 0 there: q3",
                       "1 unjudged query ignored: q4"]
    assert "1 judged query missing from A, scored 0 there: q3" in notes_c
    assert "2 judged queries missing from B, scored 0 there: q1, q3" in notes_c
    assert ev.stderr == "" and cmp.stderr == ""


def test_per_query_rows_are_ruled_off_from_the_mean() -> None:
    ev = runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "RR", "--per-query"])
    lines = ev.stdout.splitlines()
    rules = [i for i, ln in enumerate(lines) if ln and set(ln) <= {"-", " "}]
    assert len(rules) == 2 and lines[rules[1] + 1].startswith("mean ")
    per_query = json.loads(runner.invoke(app, ["eval", str(QRELS), str(RUN), "-m", "RR",
                                               "--per-query", "--format", "json"]).stdout)
    shown = {ln.split()[0]: float(ln.split()[1]) for ln in lines[rules[0] + 1:rules[1]]}
    assert shown == {q: round(v["RR"], 4) for q, v in per_query["per_query"].items()}


def test_many_runs_use_the_same_table(tmp_path: Path) -> None:
    third = tmp_path / "c.run"
    third.write_text(RUN.read_text())
    second = tmp_path / "b.run"
    second.write_text(RUN.read_text())
    r = runner.invoke(app, ["compare", str(QRELS), str(RUN), str(second), str(third), "-m",
                            "RR"])
    assert r.exit_code == 0, r.output
    _, head, rows, under = table(r.stdout)
    assert head == ["#", "run", "RR"] and [row[0] for row in rows] == ["a", "b", "c"]
    assert all(VALUE.fullmatch(row[2]) for row in rows)
    assert re.fullmatch(r"3 queries; .*", under[0])
