"""Twins: a chunk with the same text as an expected chunk, under another id. With the policy's
``twins_count_as_found`` (the default) the gate counts a twin in the top K as the expected chunk,
at the twin's rank, and says so per query (``twins``), in a warning and in every report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from recallwatch.acceptance.gate import run_gate
from recallwatch.errors import InputError
from recallwatch.formats.policy import Policy, load_policy
from recallwatch.records import Chunk
from recallwatch.report.markdown import to_markdown
from recallwatch.report.terminal import print_report
from tests.acceptance.helpers import golden, ranked
from tests.clirun import cli

DOC = "Return the local date corresponding to the POSIX timestamp."
CORPUS = {
    "datetime.date.fromtimestamp": Chunk("datetime.date.fromtimestamp", DOC),
    # the same docstring under another module's name, rewrapped and capitalised otherwise
    "sqlite3.Date.fromtimestamp": Chunk("sqlite3.Date.fromtimestamp",
                                        "Return the local  date corresponding to the\nPOSIX "
                                        "timestamp."),
    # one word differs: a near duplicate at most, never a twin
    "time.localtime": Chunk("time.localtime", DOC.replace("date", "time")),
}
QUERY = {"id": "ts", "text": "date from a unix timestamp",
         "expected": ["datetime.date.fromtimestamp"]}
TWIN_AT_1 = {"ts": ranked({"sqlite3.Date.fromtimestamp": 1, "datetime.date.fromtimestamp": 14})}


def test_an_identical_twin_in_the_top_k_counts_as_found_and_says_so() -> None:
    res = run_gate(golden(QUERY), results=TWIN_AT_1, corpus=CORPUS)
    q = res.query("ts")
    assert (q.recall, q.quality, q.passed, q.rr) == (1.0, 100.0, True, 1.0)
    assert [(h.id, h.rank, h.in_top_k) for h in q.expected] == [
        ("sqlite3.Date.fromtimestamp", 1, True)]
    assert q.expected[0].score == pytest.approx(0.95)  # the score it was ranked with
    assert q.twins == ({"expected": "datetime.date.fromtimestamp",
                        "found": "sqlite3.Date.fromtimestamp", "rank": 1},)
    assert q.to_dict()["twins"] == [dict(q.twins[0])]
    said = [w for w in res.warnings if "identical twin" in w]
    assert len(said) == 1
    assert said[0].startswith(
        "1 expected chunk(s) of 1 query were found through an identical twin, a chunk with "
        "the same text under another id (ts: datetime.date.fromtimestamp → "
        "sqlite3.Date.fromtimestamp at rank 1): counted as found (policy "
        "twins_count_as_found; false counts only the chunk listed)")


def test_the_policy_switch_turns_twins_off() -> None:
    res = run_gate(golden(QUERY), results=TWIN_AT_1, corpus=CORPUS,
                   policy=Policy(twins_count_as_found=False))
    q = res.query("ts")
    assert (q.recall, q.passed, q.twins) == (0.0, False, ())
    assert [(h.id, h.rank) for h in q.expected] == [("datetime.date.fromtimestamp", 14)]
    assert not any("twin" in w for w in res.warnings)


def test_a_near_duplicate_is_not_a_twin_and_an_expected_chunk_in_the_top_k_keeps_its_place(
        ) -> None:
    near = {"ts": ranked({"time.localtime": 1, "datetime.date.fromtimestamp": 14})}
    assert run_gate(golden(QUERY), results=near, corpus=CORPUS).query("ts").recall == 0.0
    both = {"ts": ranked({"sqlite3.Date.fromtimestamp": 1, "datetime.date.fromtimestamp": 2})}
    q = run_gate(golden(QUERY), results=both, corpus=CORPUS).query("ts")
    assert [(h.id, h.rank) for h in q.expected] == [("datetime.date.fromtimestamp", 2)]
    assert q.twins == ()


def test_a_twin_the_query_lists_itself_counts_on_its_own() -> None:
    # both copies required: the one in the top K is found, the other is still missing (list
    # them as {any: [A, B]} instead: golden check and init --corpus say they are identical)
    both = golden({**QUERY, "expected": ["datetime.date.fromtimestamp",
                                         "sqlite3.Date.fromtimestamp"]})
    q = run_gate(both, results=TWIN_AT_1, corpus=CORPUS).query("ts")
    assert q.recall == 0.5 and q.twins == ()


def test_a_twin_stands_for_a_member_of_a_group_and_for_a_gold_chunk() -> None:
    group = golden({**QUERY, "expected": [{"any": ["datetime.date.fromtimestamp",
                                                   "time.localtime"]}],
                    "gold": ["datetime.date.fromtimestamp"]})
    results = {"ts": ranked({"sqlite3.Date.fromtimestamp": 2, "datetime.date.fromtimestamp": 15,
                             "time.localtime": 12})}
    q = run_gate(group, results=results, corpus=CORPUS).query("ts")
    assert (q.recall, q.passed, q.has_gold) == (1.0, True, True)
    assert [(h.id, h.rank, h.gold) for h in q.expected] == [
        ("sqlite3.Date.fromtimestamp", 2, True)]
    (row,) = q.alternatives
    assert row["satisfied"] and row["found"] == ["datetime.date.fromtimestamp"]
    assert q.twins[0]["found"] == "sqlite3.Date.fromtimestamp"


def test_a_results_file_without_its_corpus_has_no_texts_and_no_twins() -> None:
    q = run_gate(golden(QUERY), results=TWIN_AT_1).query("ts")
    assert q.recall == 0.0 and q.twins == ()


def test_every_report_names_the_twin() -> None:
    # two expected chunks, the other one missing: the query fails and its block is shown
    g = golden({**QUERY, "expected": ["datetime.date.fromtimestamp", "time.localtime"]})
    res = run_gate(g, results=TWIN_AT_1, corpus=CORPUS)
    line = ("datetime.date.fromtimestamp found through its identical twin "
            "sqlite3.Date.fromtimestamp at rank 1 (same text under another id; counted as "
            "found)")
    console = Console(record=True, width=400)
    print_report(res, console)
    assert line in console.export_text()
    assert line in to_markdown(res).replace("\\", "")
    from recallwatch.report.html import to_html

    assert "Found through an identical twin" in to_html(res)


def test_the_policy_key_is_checked_and_hashed_only_when_turned_off(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("twins_count_as_found: 'no'\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_policy(path)
    assert str(err.value) == (f"{path}:1: field 'twins_count_as_found': expected true or false, "
                              "found 'no'")
    path.write_text("twins_count_as_found: false\n", encoding="utf-8")
    off = load_policy(path)
    assert off.twins_count_as_found is False
    assert off.rules_dict()["twins_count_as_found"] is False and off.hash != Policy().hash
    path.write_text("twins_count_as_found: true\n", encoding="utf-8")
    assert load_policy(path).hash == Policy().hash


def test_on_a_store_the_tied_twin_is_found_through_the_cli(tmp_path: Path) -> None:
    # identical texts embed alike: the twin ties with the expected chunk and, ties ordered by
    # id descending, takes rank 1 with K = 1
    corpus = tmp_path / "chunks.jsonl"
    rows = [{"id": cid, "text": c.text} for cid, c in CORPUS.items()]
    rows.append({"id": "other", "text": "The weather in Lisbon is mild in winter."})
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    uri = f"lancedb://{tmp_path / 'db'}?table=chunks"
    code, out, err = cli("ingest", str(corpus), "--store", uri, "--no-history")
    assert code == 0, err
    assert ("warning: 2 of 4 chunks have identical text, in 1 group(s) "
            "(datetime.date.fromtimestamp = sqlite3.Date.fromtimestamp)") in out
    g = tmp_path / "golden.json"
    g.write_text(json.dumps({"name": "t", "top_k": 1, "queries": [QUERY]}), encoding="utf-8")
    code, out, err = cli("gate", str(g), "--store", uri, "--no-history", "--format", "json")
    assert code == 0, out + err
    (q,) = json.loads(out)["queries"]
    assert q["twins"] == [{"expected": "datetime.date.fromtimestamp",
                           "found": "sqlite3.Date.fromtimestamp", "rank": 1}]
    assert q["recall"] == 1.0


def test_golden_check_lists_an_expected_chunk_with_its_twins(tmp_path: Path) -> None:
    corpus = tmp_path / "chunks.jsonl"
    corpus.write_text("".join(json.dumps({"id": cid, "text": c.text}) + "\n"
                              for cid, c in CORPUS.items()), encoding="utf-8")
    g = tmp_path / "golden.yaml"
    g.write_text("name: t\nqueries:\n  - id: ts\n    text: date from a timestamp\n"
                 "    expected: [datetime.date.fromtimestamp, sqlite3.Date.fromtimestamp]\n",
                 encoding="utf-8")
    code, out, err = cli("golden", "check", str(g), "--corpus", str(corpus))
    assert code == 0, err
    assert (f"twins     {g}:3: query ts: datetime.date.fromtimestamp — chunk exists; identical "
            "text in sqlite3.Date.fromtimestamp: the gate counts any of them in the top K as "
            "this chunk (policy twins_count_as_found); sqlite3.Date.fromtimestamp is listed as "
            "required too, so both must be found: list them as {any: "
            "[datetime.date.fromtimestamp, sqlite3.Date.fromtimestamp]}") in out
    assert ("2 expected chunk id(s) have identical twins (the same text under another id): the "
            "gate counts a twin in the top K as the chunk expected") in out
    code, out, _ = cli("golden", "check", str(g), "--corpus", str(corpus), "--format", "json")
    data = json.loads(out)
    assert data["twins"] == 2
    assert data["labels"][0]["twins"] == ["sqlite3.Date.fromtimestamp"]
