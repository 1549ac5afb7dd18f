"""`recallwatch init`: templates that load as a golden set and a policy, in English or Spanish, a
corpus check that lists every problem with its line, and the next command to run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from recallwatch.formats.golden import load_golden
from recallwatch.formats.policy import Policy, load_policy
from tests.clirun import wide_cli as cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "first-hour"


@pytest.mark.parametrize("language", ["en", "es"])
def test_templates_load_and_the_policy_is_the_default(tmp_path: Path, language: str) -> None:
    code, out, err = cli("init", str(tmp_path), "--language", language)
    assert code == 0, err
    golden = load_golden(tmp_path / "golden.yaml")
    assert [q.id for q in golden.queries] == ["q1", "q2"] and golden.top_k == 10
    assert golden.queries[1].gold and golden.queries[1].tags == ("numeric",)
    policy = load_policy(tmp_path / "policy.yaml")
    assert policy.rules_dict() == Policy().rules_dict()  # the defaults, written out
    assert f"wrote {tmp_path / 'golden.yaml'} (golden-set template" in out
    assert "next:\n  recallwatch ingest CHUNKS.jsonl --store " in out
    text = (tmp_path / "golden.yaml").read_text(encoding="utf-8")
    label = "CURATED_SYNTHESIS" if language == "en" else "SINTESIS_CURADA"
    assert label in text
    assert ("preguntas" in text) is (language == "es")


def test_existing_files_are_kept_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "golden.yaml").write_text("mine", encoding="utf-8")
    code, out, _ = cli("init", str(tmp_path))
    assert code == 0 and "kept" in out and f"wrote {tmp_path / 'policy.yaml'}" in out
    assert (tmp_path / "golden.yaml").read_text(encoding="utf-8") == "mine"
    assert cli("init", str(tmp_path), "--force")[0] == 0
    assert (tmp_path / "golden.yaml").read_text(encoding="utf-8") != "mine"


def test_a_good_corpus_and_golden_set_pass_the_check(tmp_path: Path) -> None:
    (tmp_path / "golden.yaml").write_text((EXAMPLE / "golden.yaml").read_text(encoding="utf-8"),
                                          encoding="utf-8")
    code, out, err = cli("init", str(tmp_path), "--corpus", str(EXAMPLE / "chunks.jsonl"))
    assert code == 0, out + err
    assert "30 chunks in 10 documents; domains: facilities 3, finance 9, hr 9, it 9; 1 Gold " \
        "chunk (label CURATED_SYNTHESIS or SINTESIS_CURADA)" in out
    assert "no problems found" in out
    # the next command to run, ready to paste: a path with a space is quoted
    assert "recallwatch ingest " + shlex.quote(str(EXAMPLE / "chunks.jsonl")) in out


def test_every_corpus_problem_and_every_unknown_id_is_listed_with_its_place(
        tmp_path: Path) -> None:
    corpus = tmp_path / "chunks.jsonl"
    corpus.write_text("\n".join([
        json.dumps({"id": "a", "text": "fine.", "doc_id": "d"}),
        json.dumps({"id": "b", "text": ""}),
        "{not json",
        json.dumps({"id": "a", "text": "again."}),
        json.dumps({"id": "c", "text": "old.", "valid_to": "2020-01-01"}),
    ]) + "\n", encoding="utf-8")
    cli("init", str(tmp_path))  # the template expects CHUNK_ID_1, _2, _3: not in this corpus
    code, out, _ = cli("init", str(tmp_path), "--corpus", str(corpus))
    assert code == 2
    problems = [line for line in out.splitlines() if line.startswith("  problem: ")]
    assert len(problems) == 6  # three bad records, three unknown ids
    assert any(f"{corpus}:2" in p and "text" in p for p in problems)
    assert any(f"{corpus}:3" in p for p in problems)
    assert any(f"{corpus}:4" in p and "duplicate id" in p for p in problems)
    assert any("record 'q1'" in p and "CHUNK_ID_1" in p and "copy the id from the corpus" in p
               for p in problems)
    assert "note: 1 chunk(s) whose validity ended before" in out
    assert "note: 1 chunk(s) without doc_id (first: c)" in out


def test_an_unreadable_corpus_is_an_input_error(tmp_path: Path) -> None:
    code, _, err = cli("init", str(tmp_path), "--corpus", str(tmp_path / "missing.jsonl"))
    assert code == 2 and err.startswith("Error: ") and "missing.jsonl" in err


def test_duplicate_chunks_and_expected_chunks_with_a_twin_are_noted(tmp_path: Path) -> None:
    corpus = tmp_path / "chunks.jsonl"
    doc = "Return the local date corresponding to the POSIX timestamp."
    corpus.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "datetime.date.fromtimestamp", "text": doc, "doc_id": "datetime"},
        {"id": "sqlite3.Date.fromtimestamp", "text": doc.upper(), "doc_id": "sqlite3"},
        {"id": "time.time", "text": "Return the time in seconds since the epoch.",
         "doc_id": "time"},
    ]), encoding="utf-8")
    (tmp_path / "golden.yaml").write_text(
        "name: py\nqueries:\n  - id: ts\n    text: date from a timestamp\n"
        "    expected: [datetime.date.fromtimestamp]\n", encoding="utf-8")
    code, out, _ = cli("init", str(tmp_path), "--corpus", str(corpus))
    assert code == 0, out
    assert ("note: 2 of 3 chunks have identical text, in 1 group(s) (datetime.date.fromtimestamp "
            "= sqlite3.Date.fromtimestamp): a query that expects one is answered by any of "
            "them") in out
    assert ("note: 1 expected chunk(s) of the golden set have an identical twin (ts: "
            "datetime.date.fromtimestamp = sqlite3.Date.fromtimestamp): the gate counts the "
            "twin as found when it reaches the top K instead") in out
    assert "  no problems found (2 notes above)" in out


def test_force_replaces_a_symbolic_link_never_the_file_it_points_to(tmp_path: Path) -> None:
    theirs = tmp_path / "shared" / "golden.yaml"
    theirs.parent.mkdir()
    theirs.write_text("someone else's golden set", encoding="utf-8")
    here = tmp_path / "here"
    here.mkdir()
    (here / "golden.yaml").symlink_to(theirs)
    code, out, _ = cli("init", str(here))  # a link to a file is kept, like any existing file
    assert code == 0 and f"kept {here / 'golden.yaml'} (it exists; --force overwrites it)" in out
    code, out, err = cli("init", str(here), "--force")
    assert code == 0, err
    assert (f"wrote {here / 'golden.yaml'} (golden-set template: replace its two example "
            "queries with your questions and the ids of the chunks that answer them; it replaces "
            f"the symbolic link to {theirs}; the file it pointed to is unchanged)") in out
    assert not (here / "golden.yaml").is_symlink()
    assert load_golden(here / "golden.yaml").queries[0].id == "q1"
    assert theirs.read_text(encoding="utf-8") == "someone else's golden set"


def test_a_dangling_link_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    (here / "policy.yaml").symlink_to(tmp_path / "outside.yaml")
    code, out, err = cli("init", str(here))
    assert (code, out) == (2, "")
    assert err == (f"Error: {here / 'policy.yaml'}: expected a file or nothing, found <a "
                   f"symbolic link to {tmp_path / 'outside.yaml'}, which does not exist> (init "
                   "does not write through a link: remove it, or run init with --force to "
                   "replace the link by the template)\n")
    assert not (tmp_path / "outside.yaml").exists() and not (here / "golden.yaml").exists()
    assert cli("init", str(here), "--force")[0] == 0
    assert load_policy(here / "policy.yaml").rules_dict() == Policy().rules_dict()
    assert not (tmp_path / "outside.yaml").exists()


def test_a_folder_where_a_template_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "golden.yaml").mkdir()
    code, _, err = cli("init", str(tmp_path), "--force")
    assert (code, err) == (2, f"Error: {tmp_path / 'golden.yaml'}: expected a file or nothing, "
                              "found <a directory> (move the folder away, or run init in another "
                              "folder)\n")
    assert not (tmp_path / "policy.yaml").exists()
