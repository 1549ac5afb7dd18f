"""Bad answers, labelled answers, generator and judge specs: each refused before the gate
searches anything (exit 2), with a message that names the file, the line, the field, what was
expected and what was found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.answers.conftest import KB, LABELS, golden_file
from tests.clirun import wide_cli as cli

CORPUS = KB / "corpus_v1.jsonl"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a one-query golden set and a results file for it (relative paths)."""
    monkeypatch.chdir(tmp_path)
    golden_file(tmp_path, ["smi_2025"])
    (tmp_path / "r.jsonl").write_text(
        '{"query_id": "smi_2025", "results": [{"id": "silver_rrhh_025", "score": 0.9}]}\n',
        encoding="utf-8")
    return tmp_path


def error(*args: str) -> str:
    code, out, err = cli("gate", "golden.yaml", "--results", "r.jsonl", "--no-history", *args)
    assert code == 2, out + err
    return (out + err).strip()


ANSWERS = {
    "unknown key": ('{"query_id": "smi_2025", "answer": "x", "contxts": []}',
                    "a.jsonl:1: record 'smi_2025': field 'contxts': unknown key (did you mean "
                    "'contexts'?) (valid keys: answer, contexts, query_id)"),
    "empty answer": ('{"query_id": "smi_2025", "answer": ""}',
                     "a.jsonl:1: record 'smi_2025': field 'answer': expected a non-empty "
                     "string, found ''"),
    "twice": ('{"query_id": "smi_2025", "answer": "a"}\n\n{"query_id": "smi_2025", "answer": '
              '"b"}', "a.jsonl:3: record 'smi_2025': field 'query_id': expected one answer "
              "per query (it is answered on line 1 already), found 'smi_2025'"),
    "unknown query": ('{"query_id": "nope", "answer": "a"}',
                      "a.jsonl:1: record 'nope': field 'query_id': expected the id of a query "
                      "of the golden set 'despacho-laboral-respuestas', found 'nope'"),
    "contexts not a list": ('{"query_id": "smi_2025", "answer": "a", "contexts": "c1"}',
                            "a.jsonl:1: record 'smi_2025': field 'contexts': expected a "
                            "non-empty list of chunk ids or {\"text\": …} objects (or no "
                            "contexts key: the retrieved chunks), found 'c1'"),
    "empty text": ('{"query_id": "smi_2025", "answer": "a", "contexts": [{"text": " "}]}',
                   "a.jsonl:1: record 'smi_2025': field 'contexts[0].text': expected a "
                   "non-empty string, found ' '"),
}


@pytest.mark.parametrize("case", ANSWERS)
def test_a_bad_answers_file_is_located(here: Path, case: str) -> None:
    text, message = ANSWERS[case]
    (here / "a.jsonl").write_text(text + "\n", encoding="utf-8")
    assert error("--answers", "a.jsonl", "--answer-labels", str(LABELS)) == f"Error: {message}"


def test_a_context_chunk_the_index_lacks_is_located(here: Path) -> None:
    (here / "a.jsonl").write_text('{"query_id": "smi_2025", "answer": "a", "contexts": '
                                  '["silver_rrhh_025", "ghost_1"]}\n', encoding="utf-8")
    assert error("--answers", "a.jsonl", "--answer-labels", str(LABELS), "--corpus",
                 str(CORPUS)) == (
        "Error: a.jsonl:1: record 'smi_2025': field 'contexts[1]': expected a chunk id of the "
        "index (or {\"text\": …} for a passage that is not one), found 'ghost_1'")


def test_answers_need_the_chunks_texts(here: Path) -> None:
    (here / "a.jsonl").write_text('{"query_id": "smi_2025", "answer": "a"}\n', encoding="utf-8")
    assert error("--answers", "a.jsonl", "--answer-labels", str(LABELS)) == (
        "Error: judging answers needs the chunks' texts, and this source gave none of them: "
        "give --corpus FILE (the chunks as JSON Lines)")


LABELLED = {
    "not a flag": ('{"question": "q", "answer": "a", "contexts": ["c"], "faithful": "yes", '
                   '"relevant": true}',
                   "l.jsonl:1: field 'faithful': expected true or false, found 'yes'"),
    "correct without truth": ('{"id": "a7", "question": "q", "answer": "a", "contexts": ["c"], '
                              '"faithful": true, "relevant": true, "correct": true}',
                              "l.jsonl:1: record 'a7': field 'correct': expected a reference or "
                              "facts to judge correctness against, found <neither> (add "
                              "\"reference\": the right answer, or \"facts\": [...])"),
    "no contexts": ('{"question": "q", "answer": "a", "contexts": [], "faithful": true, '
                    '"relevant": true}',
                    "l.jsonl:1: field 'contexts': expected a non-empty list of the passages' "
                    "texts, found []"),
}


@pytest.mark.parametrize("case", LABELLED)
def test_a_bad_labelled_answers_file_is_located(here: Path, case: str) -> None:
    text, message = LABELLED[case]
    (here / "l.jsonl").write_text(text + "\n", encoding="utf-8")
    (here / "a.jsonl").write_text('{"query_id": "smi_2025", "answer": "a"}\n', encoding="utf-8")
    assert error("--answers", "a.jsonl", "--answer-labels", "l.jsonl") == f"Error: {message}"


SPECS = {
    "no labels": ((), "answers are judged only by a judge measured against answers people "
                      "labelled: give --answer-labels FILE (JSON Lines of {question, answer, "
                      "contexts, faithful, relevant}; docs/answers.md)"),
    "labels alone": (("--answer-labels", str(LABELS)),
                     "--answer-labels measures the judge of answers: give the answers with "
                     "--answers FILE or a --generator SPEC"),
    "scheme": (("--generator", "ftp://x"),
               "--generator must be python:MODULE:ATTR or an OpenAI-compatible chat endpoint "
               "http(s)://…?model=NAME; found 'ftp://x'"),
    "attribute": (("--generator", "python:tests.answers.scripted:nothing"),
                  "generator python:tests.answers.scripted:nothing: module "
                  "'tests.answers.scripted' has no attribute 'nothing'; it defines: SCRIPT, "
                  "Script, annotations, answer, backed, chat_reply, dataclass, generate, judges, "
                  "numbers_of, re"),
    "no model": (("--generator", "http://127.0.0.1:9/v1"),
                 "--generator: name the model at the endpoint, e.g. "
                 "http://127.0.0.1:9/v1?model=NAME (found 'http://127.0.0.1:9/v1')"),
    "setting": (("--generator", "http://127.0.0.1:9/v1?model=m&temprature=1"),
                "--generator: unknown setting 'temprature' in "
                "'http://127.0.0.1:9/v1?model=m&temprature=1'; valid: model, api_key_env, "
                "timeout, prompt, max_tokens"),
    "judge": (("--generator", "python:tests.answers.scripted:answer", "--answer-judge",
               "offlin"),
              "--answer-judge must be offline, offline?support=X&relevance=Y, or an "
              "OpenAI-compatible endpoint http(s)://…?model=NAME; found 'offlin'"),
    "threshold": (("--generator", "python:tests.answers.scripted:answer", "--answer-judge",
                   "offline?support=2"),
                  "--answer-judge offline: support is a cosine similarity from -1 to 1, "
                  "found '2'"),
}


@pytest.mark.parametrize("case", SPECS)
def test_a_bad_spec_is_refused_before_the_run(here: Path, case: str) -> None:
    args, message = SPECS[case]
    if case != "labels alone" and "--answer-labels" not in args and case != "no labels":
        args = (*args, "--answer-labels", str(LABELS))
    if case == "no labels":
        (here / "a.jsonl").write_text('{"query_id": "smi_2025", "answer": "a"}\n',
                                      encoding="utf-8")
        args = ("--answers", "a.jsonl")
    assert error(*args) == f"Error: {message}"


def test_a_prompt_template_must_hold_both_placeholders(here: Path) -> None:
    (here / "p.txt").write_text("Answer {question}\n", encoding="utf-8")
    assert error("--generator", "http://127.0.0.1:9/v1?model=m&prompt=p.txt",
                 "--answer-labels", str(LABELS)) == (
        "Error: p.txt: field 'prompt': expected a prompt template holding {question} and "
        "{contexts}, found <no {contexts}>")


GENERATORS = '''
def none(question, contexts):
    return None


def fails(question, contexts):
    raise KeyError("index")


def exits(question, contexts):
    raise SystemExit(0)
'''


@pytest.mark.parametrize(("attr", "message"), [
    ("none", "generator python:{m}:none answered '¿Cuál es el salario mínimo interprofesional "
             "en 2025?' with NoneType: expected the answer's text"),
    ("fails", "generator python:{m}:fails raised KeyError on question '¿Cuál es el salario "
              "mínimo interprofesional en 2025?': 'index'"),
    ("exits", "generator python:{m}:exits called sys.exit(0) on question '¿Cuál es el salario "
              "mínimo interprofesional en 2025?': it must return the answer's text, never end "
              "the program (the exit code is recallwatch's to set)"),
])
def test_a_generator_that_fails_is_named(here: Path, attr: str, message: str,
                                         request: pytest.FixtureRequest) -> None:
    module = f"gen_{request.node.name.split('[')[1].rstrip(']')}"
    (here / f"{module}.py").write_text(GENERATORS, encoding="utf-8")
    assert error("--generator", f"python:{module}:{attr}", "--answer-labels", str(LABELS),
                 "--corpus", str(CORPUS)) == f"Error: {message.format(m=module)}"


def test_a_generator_endpoint_that_never_answers_names_its_timeout(here: Path) -> None:
    from tests.http_hosts import serving, stall

    with serving(stall) as host:
        message = error("--generator", f"{host.url}/v1?model=m&timeout=0.2", "--answer-labels",
                        str(LABELS), "--corpus", str(CORPUS))
    assert message == (
        f"Error: cannot reach {host.url}/v1/chat/completions after 4 attempts: timed out (no "
        "answer within 0.2 s), for model 'm'; if the endpoint is only slow, raise its timeout: "
        "&timeout=SECONDS in --generator (now 0.2)")
