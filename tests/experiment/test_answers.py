"""Answers in `recallwatch experiment`: with the plan's answers: section, each variant's
generator answers every question from the variant's retrieved chunks and from its expected
chunks alone, and one judge (measured once against the labelled answers) judges both, so each
variant reports its answer measures and its wrong answers by failure (retrieval, generation,
both). A variant that changes only the generator, or only the chat endpoint's prompt, changes
the answers and not the retrieval; the winner still rests on the retrieval measures.

The generators are the tests' scripted one (tests/answers/scripted.py: right when its contexts
hold what the answer needs, but a wrong date for modelo_190 whatever it is given) and
:func:`careless` below; the judge is the scripted LLM judge behind a local chat endpoint, so no
model is loaded. The retrieval is BM25 at a top K of 2 on version 1 of the example knowledge base:
it misses the chunk preaviso_dimision needs, and finds the others'."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recallwatch.answers import generate
from tests.answers import scripted
from tests.answers.conftest import KB, LABELS, chat_with_usage, golden_file
from tests.clirun import wide_cli as cli

FIVE = ["retencion_alquiler_local", "modelo_190", "smi_2025", "preaviso_dimision", "tarifa_plana"]
SCRIPTED = "python:tests.answers.scripted:answer"
CARELESS = "python:tests.experiment.test_answers:careless"
TERSE = "Pregunta: {question}\nTextos: {contexts}\n"


def careless(question: str, contexts: list[str]) -> str:
    """A generator that does not read its contexts: the scripted wrong answer, always."""
    return scripted.SCRIPT[question].wrong


def model(system: str, user: str) -> str:
    """The scripted generator and judge behind a chat endpoint; given a user message that is
    not the default template ("Passages: … Question: …"), the generator loses the passages and
    answers wrong, as a model confused by a worse prompt."""
    if system == generate.SYSTEM_PROMPT and not user.startswith("Passages:\n"):
        return next(s.wrong for q, s in scripted.SCRIPT.items() if q in user)
    return scripted.chat_reply(system, user)


def plan_file(folder: Path, url: str, variants: list[str]) -> Path:
    golden_file(folder, FIVE, top_k=2)
    (folder / "terse.txt").write_text(TERSE, encoding="utf-8")
    path = folder / "plan.yaml"
    path.write_text(
        f"golden: golden.yaml\ncorpus: {KB / 'corpus_v1.jsonl'}\n"
        f"answers: {{generator: \"{SCRIPTED}\", judge: \"{url}?model=scripted-judge\", "
        f"labels: {LABELS}}}\n"
        "base: {name: bm25, retrieval: bm25}\nvariants:\n"
        + "".join(f"  - {v}\n" for v in variants), encoding="utf-8")
    return path


def failures(variant: dict[str, Any]) -> dict[str, str | None]:
    return {q: a["failure"] for q, a in variant["answers"]["per_query"].items()}


def test_a_generator_or_a_prompt_per_variant_changes_the_answers_and_their_failures(
        tmp_path: Path, chat: Callable[[Callable[[str, str], str]], str]) -> None:
    url = chat(model)
    plan = plan_file(tmp_path, url, [
        f'{{name: careless, generator: "{CARELESS}"}}',
        f'{{name: chat, generator: "{url}?model=scripted"}}',
        f'{{name: chat-terse, generator: "{url}?model=scripted", prompt: terse.txt}}'])
    code, out, err = cli("experiment", str(plan), "--out-dir", str(tmp_path / "out"),
                         "--timing-rounds", "0")
    assert code == 0, err
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    v = {x["name"]: x for x in results["variants"]}
    # the retrieval is the same for all four: the same chunks, the same measures
    assert len({json.dumps(x["per_query"], sort_keys=True) for x in v.values()}) == 1
    # the scripted generator, as python code or behind the endpoint with the default prompt:
    # wrong for preaviso_dimision because the retrieval missed its chunk (right from the
    # expected chunks alone), and for modelo_190 because the generator ignores its context
    right_by_retrieval = {"preaviso_dimision": "retrieval", "modelo_190": "generation",
                          "smi_2025": None, "retencion_alquiler_local": None,
                          "tarifa_plana": None}
    assert failures(v["bm25"]) == failures(v["chat"]) == right_by_retrieval
    # the careless generator and the terse prompt: every answer wrong, from the expected chunks
    # too: generation where the retrieval held them, both where it missed them
    worse = {**dict.fromkeys(FIVE, "generation"), "preaviso_dimision": "both"}
    assert failures(v["careless"]) == failures(v["chat-terse"]) == worse
    for name, good in (("bm25", True), ("chat", True), ("careless", False),
                       ("chat-terse", False)):
        a = v[name]["answers"]
        assert (a["answered"], a["right"]) == (5, 3 if good else 0), name
        assert a["failures"] == ({"retrieval": 1, "generation": 1, "both": 0} if good
                                 else {"retrieval": 0, "generation": 4, "both": 1}), name
        flags = [q["hallucinated"] for q in a["per_query"].values()]
        assert a["hallucination_rate"] == sum(flags) / 5
        assert a["faithfulness"] == sum(q["faithfulness"] for q in a["per_query"].values()) / 5
    assert v["careless"]["answers"]["hallucination_rate"] == 1.0
    assert v["careless"]["answers"]["faithfulness"] < v["bm25"]["answers"]["faithfulness"]
    assert v["careless"]["answers"]["correctness"] < v["bm25"]["answers"]["correctness"]
    # the variant's generator and prompt, as the config and the answers record them
    assert v["careless"]["config"]["generator"] == CARELESS
    assert v["chat-terse"]["config"]["prompt"] == "terse.txt"
    assert v["chat-terse"]["answers"]["generator"]["prompt"] == str(tmp_path / "terse.txt")
    assert v["chat"]["answers"]["generator"]["prompt"] == "default"
    assert v["bm25"]["answers"]["generator"] == {"kind": "python", "spec": SCRIPTED}
    # one judge, measured once, trusted for every measure; the answers decide nothing
    judge = results["answers"]
    assert judge["judge"]["kind"] == "llm" and judge["labelled"] == 28
    assert set(judge["trusted"]) == {"faithfulness", "hallucination", "relevance",
                                     "correctness"}
    assert (judge["used_for_choice"], judge["cached"]) == (False, False)
    assert results["winner"] == "bm25" and results["choice"]["measures"] == [
        "mean_quality", "mean_ndcg"]
    # what a person reads: the answers table and the lines of the summary
    assert ("answers with careless (generator python:tests.experiment.test_answers:careless): "
            "faithfulness 0.000") in out
    assert "wrong answers by failure: retrieval 0, generation 4, both 1" in out
    assert ("the answers are shown, not used for the choice: the winner rests on mean quality "
            "and nDCG@K") in out
    *_, row = (line for line in out.splitlines() if line.startswith("chat-terse "))
    assert row.split()[-4:] == ["0/5", "0", "4", "1"]  # the answers table: right, failures
    md = (tmp_path / "out" / "results.md").read_text(encoding="utf-8")
    assert "| variant | generator | faithfulness | relevance | correctness |" in md
    assert '<table class="answers">' in (tmp_path / "out" / "report.html").read_text(
        encoding="utf-8")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    golden_file(tmp_path, ["modelo_190"])
    (tmp_path / "corpus.jsonl").write_text('{"id": "c1", "text": "Uno."}\n', encoding="utf-8")
    (tmp_path / "labels.jsonl").write_text(LABELS.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "terse.txt").write_text(TERSE, encoding="utf-8")
    (tmp_path / "no_contexts.txt").write_text("Pregunta: {question}\n", encoding="utf-8")
    return tmp_path


BASE = "base: {name: b, retrieval: bm25}\n"
ANSWERS = 'answers: {generator: "python:m:f", labels: labels.jsonl}\n'


@pytest.mark.parametrize(("body", "message"), [
    (BASE + 'variants:\n  - {name: v, generator: "python:m:f"}\n',
     "plan.yaml:5: record 'v': field 'generator': a variant's generator is used only to judge its "
     "answers, and the plan has no answers: section, which names the labelled answers and the "
     "judge (add answers: {labels: FILE} to the plan, or drop generator: from the variant; "
     "docs/experiments.md)"),
    ('answers: {generator: "python:m:f"}\n' + BASE,
     "plan.yaml:3: record 'answers': field 'labels': expected a file of answers people labelled "
     "(as gate --answer-labels reads it): the judge is measured against it before it judges, "
     "found <nothing>"),
    ("answers: {labels: labels.jsonl}\n" + BASE,
     "plan.yaml:4: record 'b': field 'generator': expected a generator for the variant's "
     "answers: generator: in the plan's answers: section, on the base, or on this variant, found "
     "<nothing> (a generator spec, as gate --generator takes it: python:MODULE:ATTR or an "
     "OpenAI-compatible chat endpoint http(s)://…/v1?model=NAME)"),
    ("answers: {labels: labels.jsonl}\nbase: {name: b, retrieval: bm25, generator: gpt4}\n",
     "plan.yaml:4: record 'b': field 'generator': expected a generator spec, as gate --generator "
     "takes it: python:MODULE:ATTR or an OpenAI-compatible chat endpoint "
     "http(s)://…/v1?model=NAME, found 'gpt4'"),
    ('answers: {generator: "http://127.0.0.1:9/v1?model=m&temperature=1", labels: labels.jsonl}'
     "\n" + BASE,
     "plan.yaml:3: record 'answers': field 'generator': expected a generator spec, as gate "
     "--generator takes it: python:MODULE:ATTR or an OpenAI-compatible chat endpoint "
     "http(s)://…/v1?model=NAME, found 'http://127.0.0.1:9/v1?model=m&temperature=1' "
     "(--generator: unknown setting 'temperature' in "
     "'http://127.0.0.1:9/v1?model=m&temperature=1'; valid: model, api_key_env, timeout, "
     "prompt, max_tokens)"),
    (ANSWERS + BASE + "variants:\n  - {name: v, prompt: terse.txt}\n",
     "plan.yaml:6: record 'v': field 'prompt': expected a chat endpoint generator "
     "(http(s)://…/v1?model=NAME) to send the prompt template to, found <the python: generator "
     "python:m:f> (a python: generator builds its own prompt from the question and the "
     "contexts: drop prompt:, or set prompt: null on this variant)"),
    ('answers: {generator: "http://127.0.0.1:9/v1?model=m", labels: labels.jsonl}\n' + BASE
     + "variants:\n  - {name: v, prompt: no_contexts.txt}\n",
     "plan.yaml:6: record 'v': field 'prompt': expected a prompt template holding {question} "
     "and {contexts}, found <no {contexts} in no_contexts.txt>"),
    ('answers: {generator: "python:m:f", labels: labels.jsonl, judge: "offline?support=2"}\n'
     + BASE,
     "plan.yaml:3: record 'answers': field 'judge': expected an answer judge, as gate "
     "--answer-judge takes it: offline, offline?support=X&relevance=Y&correct=Z, or an "
     "OpenAI-compatible chat endpoint http(s)://…/v1?model=NAME, found 'offline?support=2' "
     "(--answer-judge offline: support is a cosine similarity from -1 to 1, found '2')"),
    ('answers: {generator: "python:m:f", labels: labels.jsonl, min_kappa: 2}\n' + BASE,
     "plan.yaml:3: record 'answers': field 'min_kappa': expected a kappa from -1 to 1 (as gate "
     "--answer-min-kappa), found 2"),
    ('answers: {generator: "python:m:f", labels: labels.jsonl, answers: a.jsonl}\n' + BASE,
     "plan.yaml:3: record 'answers': field 'answers': unknown key (valid keys: generator, judge, "
     "labels, min_kappa, min_labelled, prompt)"),
    ('answers: {generator: "python:no_such_module:f", labels: labels.jsonl}\n' + BASE,
     "plan.yaml:4: record 'b': field 'generator': expected a generator spec, as gate "
     "--generator takes it: python:MODULE:ATTR or an OpenAI-compatible chat endpoint "
     "http(s)://…/v1?model=NAME, found 'python:no_such_module:f' (it could not be opened: "
     "generator python:no_such_module:f: cannot import module 'no_such_module' of "
     "'python:no_such_module:f' from the working directory {cwd}: No module named "
     "'no_such_module')"),
])
def test_a_bad_answers_plan_is_a_located_error(folder: Path, body: str, message: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    (folder / "plan.yaml").write_text("golden: golden.yaml\ncorpus: corpus.jsonl\n" + body,
                                      encoding="utf-8")
    code, out, err = cli("experiment", "plan.yaml", "--out-dir", "out", "--timing-rounds", "0")
    assert (code, out) == (2, "")
    assert err == f"Error: {message.replace('{cwd}', str(folder))}\n"
    assert not (folder / "out" / "cache").exists() or not any((folder / "out" / "cache").iterdir())


@pytest.mark.slow  # two LanceDB indexes embedded, the offline judge calibrated (about 20 s)
def test_the_docs_answers_example_is_what_the_example_plan_prints(tmp_path: Path) -> None:
    code, out, err = cli("experiment", str(KB / "experiment_answers.yaml"), "--out-dir",
                         str(tmp_path / "exp-answers"))
    assert code == 0, err
    docs = (KB.parents[1] / "docs" / "experiments.md").read_text(encoding="utf-8")
    table = out[out.index("\nvariant      generator"):].split("\n\n")[0].strip()
    assert table.count("\n") == 4 and table in docs
    for line in out.splitlines():
        if line.startswith(("answers with ", "answers on the ")):
            assert line in docs


def test_each_variants_generator_tokens_are_priced(tmp_path: Path) -> None:
    """With prices, a variant's cost of serving 1,000 queries includes its generator's input and
    output tokens per answer, as its chat endpoint reported them in ``usage``."""
    log: list[tuple[str, int, int]] = []
    (tmp_path / "prices.yaml").write_text(
        "llm_input_per_1k_tokens: 0.5\nllm_output_per_1k_tokens: 2.0\n", encoding="utf-8")
    with chat_with_usage(log, usage=True) as url:
        golden_file(tmp_path, FIVE, top_k=2)
        (tmp_path / "plan.yaml").write_text(
            f"golden: golden.yaml\ncorpus: {KB / 'corpus_v1.jsonl'}\n"
            f"answers: {{generator: \"{url}?model=scripted\", judge: \"{url}?model=judge\", "
            f"labels: {LABELS}}}\nbase: {{name: bm25, retrieval: bm25}}\nvariants:\n"
            f"  - {{name: scripted-py, retrieval: bm25, generator: \"{SCRIPTED}\"}}\n",
            encoding="utf-8")
        code, out, err = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir",
                             str(tmp_path / "out"), "--timing-rounds", "0", "--prices",
                             str(tmp_path / "prices.yaml"))
    assert code == 0, err
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    v = {x["name"]: x for x in results["variants"]}
    spent = v["bm25"]["answers"]["tokens"]["answers"]
    assert spent["reported"] == 5
    # the answers served: every other generator request (the second of each pair answers from
    # the expected chunks alone, which is the evaluation's cost, not serving's)
    served = [(i, o) for system, i, o in log if system == generate.SYSTEM_PROMPT][0::2]
    assert (spent["input_tokens"], spent["output_tokens"]) == (
        sum(i for i, _ in served), sum(o for _, o in served))
    costs = {i["item"]: i["cost"] for i in v["bm25"]["money"]["items"]}
    assert math.isclose(costs["LLM input tokens"], 1000 * spent["input_tokens"] / 5 / 1000 * 0.5,
                        rel_tol=1e-9)
    assert math.isclose(costs["LLM output tokens"],
                        1000 * spent["output_tokens"] / 5 / 1000 * 2.0, rel_tol=1e-9)
    # python code's model is not seen from here: not priced, and the reason says so
    not_priced = v["scripted-py"]["money"]["not_priced"]
    assert not_priced["LLM input tokens"] == not_priced["LLM output tokens"] == (
        "the generator is python code: what its model spends is not seen from here")
    assert "LLM input tokens" in out and "cost of serving 1,000 queries with bm25" in out
