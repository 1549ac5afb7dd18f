"""Groups of alternatives in a golden set: ``{any: [...]}`` (any one member answers the query) and
``{at_least: N, of: [...]}``. Recall, quality, the noise threshold, fact recall and the reports
count a group as its N best-ranked members; the others are relevant, never noise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from recallwatch.acceptance.gate import run_gate
from recallwatch.errors import InputError
from recallwatch.formats.golden import Alternatives, GoldenSet, load_golden
from recallwatch.formats.policy import Policy
from recallwatch.records import Chunk
from recallwatch.report.markdown import to_markdown
from recallwatch.report.terminal import print_report
from tests.acceptance.helpers import golden, ranked
from tests.clirun import cli

SUFFIX = {"id": "ext", "text": "How do I get the extension of a file name?",
          "expected": [{"any": ["PurePath.suffix", "os.path.splitext"]}]}


def test_any_one_alternative_in_the_top_k_is_full_recall() -> None:
    # the user lists two answers, either answers: splitext at rank 2, suffix not in the top 10
    res = run_gate(golden(SUFFIX), results={"ext": ranked({"os.path.splitext": 2,
                                                           "PurePath.suffix": 14})})
    q = res.query("ext")
    assert (q.recall, q.quality, q.passed) == (1.0, 100.0, True)
    assert [(h.id, h.rank) for h in q.expected] == [("os.path.splitext", 2)]
    assert q.rr == 0.5
    (group,) = q.alternatives
    assert group == {"members": ["PurePath.suffix", "os.path.splitext"], "need": 1,
                     "counted": ["os.path.splitext"], "chunks": ["os.path.splitext"],
                     "found": ["os.path.splitext"],
                     "satisfied": True}


def test_listing_both_as_required_is_stricter_and_says_so() -> None:
    strict = golden({**SUFFIX, "expected": ["PurePath.suffix", "os.path.splitext"]})
    q = run_gate(strict, results={"ext": ranked({"os.path.splitext": 2,
                                                 "PurePath.suffix": 14})}).query("ext")
    assert (q.recall, q.quality, q.passed) == (0.5, 0.0, False)


def test_a_group_none_of_whose_members_is_found_counts_its_best_ranked_member() -> None:
    res = run_gate(golden(SUFFIX), results={"ext": ranked({"os.path.splitext": 15,
                                                           "PurePath.suffix": 12})})
    q = res.query("ext")
    assert (q.recall, q.passed) == (0.0, False)
    assert [(h.id, h.rank) for h in q.expected] == [("PurePath.suffix", 12)]
    assert q.alternatives[0]["satisfied"] is False
    line = ("any of PurePath.suffix, os.path.splitext: 0 of 1 needed in the top-K; counted as "
            "expected: PurePath.suffix")
    assert line in to_markdown(res).replace("\\", "")
    console = Console(record=True, width=300)
    print_report(res, console)
    assert line in console.export_text()


def test_at_least_n_counts_the_n_best_ranked_members_beside_the_required_ones() -> None:
    g = golden({"id": "q", "text": "x",
                "expected": ["must", {"at_least": 2, "of": ["a", "b", "c"]}]})
    q = run_gate(g, results={"q": ranked({"must": 1, "c": 3, "a": 12, "b": 4})}).query("q")
    assert sorted(h.id for h in q.expected) == ["b", "c", "must"]
    assert q.recall == 1.0
    one = run_gate(g, results={"q": ranked({"must": 1, "c": 3, "a": 12, "b": 14})}).query("q")
    assert one.recall == pytest.approx(2 / 3)
    assert one.alternatives[0]["found"] == ["c"] and not one.alternatives[0]["satisfied"]


def test_an_alternative_not_counted_is_never_noise() -> None:
    # both alternatives in the top K: the threshold is the counted one's score, and the other,
    # scoring below it, is relevant, not noise
    g = golden(SUFFIX)
    policy = Policy(noise_unlisted="irrelevant")
    q = run_gate(g, results={"ext": ranked({"os.path.splitext": 1, "PurePath.suffix": 9})},
                 policy=policy).query("ext")
    assert q.noise_threshold == pytest.approx(0.95)
    assert q.noise == 8  # the 8 filler results below rank 1, not PurePath.suffix


def test_groups_parse_round_trip_and_keep_the_hash_of_sets_without_them(tmp_path: Path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text(
        "name: py\nversion: '1'\nqueries:\n"
        "  - id: ext\n    text: extension\n"
        "    expected:\n      - any: [PurePath.suffix, os.path.splitext]\n"
        "      - at_least: 1\n        of: [{doc_id: pathlib, quote: 'The file extension'}]\n"
        "    gold: [PurePath.suffix]\n", encoding="utf-8")
    g = load_golden(path)
    (q,) = g.queries
    assert q.expected == () and q.all_expected == ("PurePath.suffix", "os.path.splitext")
    assert q.alternatives[0] == Alternatives(("PurePath.suffix", "os.path.splitext"), 1, "any")
    assert q.alternatives[1].need == 1 and q.alternatives[1].anchors[0].doc_id == "pathlib"
    again = GoldenSet.from_dict(json.loads(json.dumps(g.to_dict())))
    assert again.hash == g.hash and again.queries[0].alternatives == q.alternatives
    plain = golden({"id": "q", "text": "x", "expected": ["a"]})
    assert plain.to_dict()["queries"][0]["expected"] == ["a"]


@pytest.mark.parametrize(("entry", "message"), [
    ({"any": []}, "record 'q': field 'expected.any': expected a non-empty list of chunk ids or "
                  "content anchors, any of which answers the query, found []"),
    ({"at_least": 3, "of": ["a", "b"]},
     "field 'expected.at_least': expected an integer in [1, 2], found 3"),
    ({"any": [{"any": ["a"]}]}, "field 'expected.any': a group inside a group (list every "
                                "alternative of a group in one group)"),
    ({"any": ["a"], "of": ["b"]}, "'of'"),
])
def test_a_malformed_group_is_a_located_error(tmp_path: Path, entry: object,
                                              message: str) -> None:
    with pytest.raises(InputError, match="q") as err:
        GoldenSet.from_dict({"name": "t", "queries": [{"id": "q", "text": "x",
                                                       "expected": [entry]}]},
                            source=tmp_path / "g.yaml")
    assert message in str(err.value)


def test_a_chunk_named_as_required_and_as_an_alternative_is_refused() -> None:
    with pytest.raises(InputError) as err:
        golden({"id": "q", "text": "x", "expected": ["a", {"any": ["a", "b"]}]})
    assert "'a' is listed as a required chunk and again in group 1" in str(err.value)


def test_alternatives_made_of_anchors_resolve_and_count_as_one_fact() -> None:
    from recallwatch.acceptance.anchors import resolve_queries

    chunks = [Chunk(id="p1", text="Use the suffix property of a path", doc_id="pathlib"),
              Chunk(id="o1", text="splitext returns the root and the extension", doc_id="ospath")]
    g = golden({"id": "q", "text": "x", "expected": [{"any": [
        {"doc_id": "pathlib", "quote": "suffix property"},
        {"doc_id": "ospath", "quote": "returns the root and the extension"}]}]})
    anchors = resolve_queries(g.queries, lambda docs: [c for c in chunks if c.doc_id in docs])
    (q,) = anchors.candidates(g.queries)
    assert set(q.expected) == {"p1", "o1"}
    (settled,) = anchors.settle(g.queries, [["x", "o1", "p1"]])
    assert settled.expected == ("o1",)
    rows, fact_recall = anchors.report(settled, settled.expected, [chunks[1]])
    assert rows == () and fact_recall == 1.0


def test_the_gate_json_lists_each_group(tmp_path: Path) -> None:
    g = tmp_path / "golden.yaml"
    g.write_text("name: py\nqueries:\n  - id: ext\n    text: extension\n"
                 "    expected:\n      - any: [PurePath.suffix, os.path.splitext]\n",
                 encoding="utf-8")
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"query_id": "ext", "results": [
        {"id": "other", "score": 0.9}, {"id": "os.path.splitext", "score": 0.8}]}) + "\n",
        encoding="utf-8")
    code, out, _ = cli("gate", str(g), "--results", str(results), "--format", "json",
                       "--no-history")
    assert code == 0, out
    (q,) = json.loads(out)["queries"]
    assert q["recall"] == 1.0 and q["alternatives"][0]["counted"] == ["os.path.splitext"]
    assert [e["id"] for e in q["expected"]] == ["os.path.splitext"]


def test_golden_qrels_writes_every_answering_chunk_for_eval(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "a folder"
    work.mkdir()
    monkeypatch.chdir(work)
    Path("golden.yaml").write_text(
        "name: py\nqueries:\n  - id: ext\n    text: extension\n    gold: [os.path.splitext]\n"
        "    expected:\n      - pathlib.PurePath\n"
        "      - any: [PurePath.suffix, os.path.splitext]\n", encoding="utf-8")
    code, out, err = cli("golden", "qrels", "golden.yaml", "--out", "golden.qrels")
    assert code == 0, err
    assert out.strip() == "golden.qrels: 3 judgments of 1 queries"
    assert Path("golden.qrels").read_text().splitlines() == [
        "ext 0 pathlib.PurePath 1", "ext 0 PurePath.suffix 1", "ext 0 os.path.splitext 2"]
    Path("run").write_text("ext Q0 os.path.splitext 1 0.9 r\next Q0 x 2 0.8 r\n")
    code, out, _ = cli("eval", "golden.qrels", "run", "-m", "RR", "--format", "json")
    assert code == 0 and json.loads(out)["aggregate"]["RR"] == 1.0
    code, _, err = cli("golden", "qrels", "golden.yaml", "--out", ".")
    assert code == 2 and err == "Error: .: is a folder: name the qrels file to write\n"


def test_golden_qrels_needs_the_chunks_to_resolve_anchors(tmp_path: Path) -> None:
    g = tmp_path / "golden.yaml"
    g.write_text("name: py\nqueries:\n  - id: q\n    text: x\n"
                 "    expected: [{doc_id: d, quote: the answer}]\n", encoding="utf-8")
    code, _, err = cli("golden", "qrels", str(g), "--out", str(tmp_path / "q.qrels"))
    assert code == 2 and "content anchors in 1 queries" in err
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "c1", "text": "here is the answer", "doc_id": "d"})
                      + "\n", encoding="utf-8")
    code, _, err = cli("golden", "qrels", str(g), "--out", str(tmp_path / "q.qrels"),
                       "--corpus", str(corpus))
    assert code == 0, err
    assert (tmp_path / "q.qrels").read_text() == "q 0 c1 1\n"
