"""gate --answers and gate --generator on the example knowledge base (version 1 in LanceDB):
the measures reported, each wrong answer's failure named (retrieval or generation), the policy's
answer rules blocking as the retrieval rules do, and both judges measured against the labelled
answers first (refused below the agreement floor)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.answers import scripted
from tests.answers.conftest import KB, LABELS, golden_file, policy_file, write_jsonl
from tests.clirun import wide_cli as cli

# With a top K of 2, the retrieval misses the chunk retencion_alquiler_local needs (it ranks 3rd
# on version 1); the other questions find theirs at rank 1.
FIVE = ["retencion_alquiler_local", "modelo_190", "smi_2025", "preaviso_dimision", "tarifa_plana"]


def gate(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli("gate", *args, "--no-history", "--format", "json",
                         "--answer-labels", str(LABELS))
    assert code in (0, 1), err or out
    return code, json.loads(out), err


def by_id(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["id"]: q for q in result["queries"]}


def test_a_generator_names_retrieval_and_generation_failures(kb_v1: str, tmp_path: Path) -> None:
    golden = golden_file(tmp_path, FIVE, top_k=2)
    code, res, _ = gate(str(golden), "--store", kb_v1,
                        "--generator", "python:tests.answers.scripted:answer")
    q = by_id(res)
    assert code == 1 and not q["retencion_alquiler_local"]["passed"]  # the retrieval rules too
    # real answer wrong (from the retrieved chunks), oracle answer right: retrieval
    rent = q["retencion_alquiler_local"]["answer"]
    assert (rent["failure"], rent["right"], rent["oracle"]["right"]) == ("retrieval", False, True)
    assert rent["text"] == scripted.SCRIPT[q["retencion_alquiler_local"]["text"]].wrong
    assert rent["hallucinated"] is True and rent["correctness"] == 0.0
    # wrong with every expected chunk retrieved, and wrong from them alone: generation
    m190 = q["modelo_190"]["answer"]
    assert q["modelo_190"]["passed"] and m190["failure"] == "generation"
    assert not m190["oracle"]["right"]
    assert [s["text"] for s in m190["statements"] if not s["backed"]] == [
        "El modelo 190 se presenta del 1 al 20 de abril."]
    for right in ("smi_2025", "preaviso_dimision", "tarifa_plana"):
        a = q[right]["answer"]
        assert (a["failure"], a["right"], a["hallucinated"], a["faithfulness"]) == (
            None, True, False, 1.0), right
        assert a["correctness"] >= 0.5
    answers = res["answers"]
    assert answers["failures"] == {"retrieval": 1, "generation": 1, "both": 0}
    assert answers["hallucination_rate"] == 2 / 5
    assert answers["faithfulness"] == sum(a["answer"]["faithfulness"] for a in q.values()) / 5
    assert (answers["answered"], answers["right"]) == (5, 3)
    judge = answers["judge"]
    assert judge["judge"]["kind"] == "offline" and judge["accepted"]
    assert {"faithfulness", "hallucination", "correctness"} <= set(judge["trusted"])
    assert judge["agreement"]["faithful"]["kappa"] >= 0.6 and judge["labelled"] == 28


def test_an_answers_file_is_judged_and_says_decomposition_needs_a_generator(
        kb_v1: str, tmp_path: Path) -> None:
    golden = golden_file(tmp_path, ["modelo_190", "smi_2025"])
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"query_id": "modelo_190", "answer": "El modelo 190 se presenta del 1 al 20 de abril."},
        {"query_id": "smi_2025", "contexts": ["silver_rrhh_025", {"text": "Nota interna."}],
         "answer": "El salario mínimo interprofesional de 2025 es de 1.184 euros al mes en "
                   "catorce pagas."},
    ])
    _, res, _ = gate(str(golden), "--store", kb_v1, "--answers", str(answers))
    q = by_id(res)
    m190, smi = q["modelo_190"]["answer"], q["smi_2025"]["answer"]
    assert m190["from"] == "answers file" and m190["failure"] is None
    assert m190["contexts"] == [cid for cid, _ in [(t["id"], 0) for t in q["modelo_190"]["top"]]]
    assert (m190["hallucinated"], m190["faithfulness"], m190["right"]) == (True, 0.0, False)
    assert smi["contexts"] == ["silver_rrhh_025", {"text": "Nota interna."}]
    assert (smi["hallucinated"], smi["right"], smi["correctness"]) == (False, True, 1.0)
    assert smi["context_precision"] == 1.0  # the one relevant context comes first
    assert res["answers"]["failures"] is None
    assert res["answers"]["decomposition"] == (
        "which failures are retrieval's and which generation's needs --generator: it answers "
        "each query again from its expected chunks")


def test_the_policy_blocks_on_its_answer_rules(kb_v1: str, tmp_path: Path) -> None:
    golden = golden_file(tmp_path, ["modelo_190", "smi_2025", "preaviso_dimision"])
    generator = "python:tests.answers.scripted:answer"
    code, res, _ = gate(str(golden), "--store", kb_v1, "--generator", generator, "--policy",
                        str(policy_file(tmp_path)))
    assert (code, res["verdict"]) == (0, "ACCEPT")  # the retrieval passes, no answer rule
    strict = policy_file(tmp_path, min_faithfulness=0.9, max_hallucination_rate=0.0)
    code, res, _ = gate(str(golden), "--store", kb_v1, "--generator", generator, "--policy",
                        str(strict))
    assert (code, res["verdict"]) == (1, "STOP")
    reasons = {r["rule"]: r for r in res["reasons"]}
    assert set(reasons) == {"min_faithfulness", "max_hallucination_rate"}
    assert reasons["max_hallucination_rate"]["queries"] == ["modelo_190"]
    assert reasons["min_faithfulness"]["message"].startswith(
        "mean faithfulness 0.667 is below 0.9: 1 of 3 answers hold a statement their contexts "
        "do not back: modelo_190 (faithfulness 0.00; generation failure)")
    lenient = policy_file(tmp_path, max_hallucination_rate=0.5)
    code, res, _ = gate(str(golden), "--store", kb_v1, "--generator", generator, "--policy",
                        str(lenient))
    assert code == 0
    check = next(c for c in res["checks"] if c["rule"] == "max_hallucination_rate")
    assert (check["status"], check["figures"]["value"]) == ("pass", 1 / 3)


def test_a_chat_endpoint_generates_and_an_llm_judges(kb_v1: str, tmp_path: Path,
                                                    scripted_chat: str) -> None:
    golden = golden_file(tmp_path, FIVE, top_k=2)
    code, res, _ = gate(str(golden), "--store", kb_v1,
                        "--generator", f"{scripted_chat}?model=scripted",
                        "--answer-judge", f"{scripted_chat}?model=scripted-judge")
    q = by_id(res)
    assert code == 1
    assert q["retencion_alquiler_local"]["answer"]["failure"] == "retrieval"
    assert q["modelo_190"]["answer"]["failure"] == "generation"
    assert all(q[i]["answer"]["right"] for i in ("smi_2025", "preaviso_dimision",
                                                 "tarifa_plana"))
    judge = res["answers"]["judge"]
    assert judge["judge"]["kind"] == "llm" and judge["judge"]["model"] == "scripted-judge"
    assert set(judge["trusted"]) == {"faithfulness", "hallucination", "relevance",
                                     "correctness"}
    assert judge["judge"]["bad_replies"] == 0 and judge["judge"]["requests"] > 0
    assert res["answers"]["relevance"] == 1.0  # every answer shares words with its question


def test_an_llm_judge_that_disagrees_with_people_is_refused(
        kb_v1: str, tmp_path: Path, chat: Callable[[Callable[[str, str], str]], str]) -> None:
    def yes_man(system: str, user: str) -> str:
        return "3" if "grade" in system else "1"

    golden = golden_file(tmp_path, ["modelo_190"])
    code, res, _ = gate(str(golden), "--store", kb_v1,
                        "--generator", "python:tests.answers.scripted:answer",
                        "--answer-judge", f"{chat(yes_man)}?model=yes",
                        "--policy", str(policy_file(tmp_path, max_hallucination_rate=0.1)))
    assert (code, res["verdict"]) == (1, "STOP")
    (reason,) = [r for r in res["reasons"] if r["rule"] == "answer_judge"]
    assert reason["message"].startswith("the answer judge (llm) is REFUSED on 28 labelled "
                                        "answers (correct kappa 0.000, faithful kappa 0.000, "
                                        "relevant kappa 0.000; floor 0.6")
    assert reason["message"].endswith("so the policy's answer rules (max_hallucination_rate) "
                                      "cannot be checked")
    assert res["queries"][0]["answer"] is None and res["answers"]["faithfulness"] is None


def test_the_offline_judge_is_not_trusted_where_people_disagree(kb_v1: str,
                                                                 tmp_path: Path) -> None:
    golden = golden_file(tmp_path, ["modelo_190"])
    generator = "python:tests.answers.scripted:answer"
    # On the example's labelled answers the offline judge's relevance agrees too little: a
    # policy rule on relevance cannot be checked, and stops the run.
    code, res, _ = gate(str(golden), "--store", kb_v1, "--generator", generator, "--policy",
                        str(policy_file(tmp_path, min_answer_relevance=0.8)))
    assert code == 1
    (reason,) = [r for r in res["reasons"] if r["rule"] == "answer_judge"]
    kappa = res["answers"]["judge"]["agreement"]["relevant"]["kappa"]
    assert kappa < 0.6
    assert reason["message"] == (
        f"the answer judge is not trusted with relevance (relevance not trusted: relevant "
        f"kappa {kappa:.3f} < 0.6 on 28 answers), so min_answer_relevance 0.8 cannot be checked")
    answer = res["queries"][0]["answer"]
    assert answer["relevance"] is None and answer["faithfulness"] == 0.0
    # Labels that say the opposite of the judge on faithfulness: faithfulness not trusted,
    # correctness (a threshold of its own) still is
    flipped = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    for row in flipped:
        row["faithful"] = not row["faithful"]
    labels = write_jsonl(tmp_path / "flipped.jsonl", flipped)
    code, out, _ = cli("gate", str(golden), "--store", kb_v1, "--no-history", "--format",
                       "json", "--generator", generator, "--answer-labels", str(labels),
                       "--policy", str(policy_file(tmp_path, min_faithfulness=0.9)))
    res = json.loads(out)
    assert code == 1
    (reason,) = [r for r in res["reasons"] if r["rule"] == "answer_judge"]
    kappa = res["answers"]["judge"]["agreement"]["faithful"]["kappa"]
    assert kappa < 0
    assert reason["message"] == (
        f"the answer judge is not trusted with faithfulness (faithfulness and hallucination not "
        f"trusted: faithful kappa {kappa:.3f} < 0.6 on 28 answers), so min_faithfulness 0.9 "
        "cannot be checked")
    answer = res["queries"][0]["answer"]
    assert answer["faithfulness"] is None and answer["hallucinated"] is None
    assert res["answers"]["judge"]["trusted"] == ["correctness"]


def test_the_reports_show_the_answers(kb_v1: str, tmp_path: Path) -> None:
    golden = golden_file(tmp_path, FIVE, top_k=2)
    args = (str(golden), "--store", kb_v1, "--no-history", "--answer-labels", str(LABELS),
            "--generator", "python:tests.answers.scripted:answer")
    code, out, _ = cli("gate", *args, "--format", "markdown")
    assert "### Answers" in out
    assert ("| modelo\\_190 | generation failure; faithfulness 0.000, relevance — \\(not "
            "trusted\\), correctness 0.000 |") in out
    code, out, _ = cli("gate", *args)
    assert "wrong answers (2)" in out
    assert "✗ retencion_alquiler_local: retrieval failure; faithfulness 0.000" in out
    assert "from its expected chunks alone the generator answers right" in out
    code, _, _ = cli("gate", *args, "--report", str(tmp_path / "report"))
    assert code == 1
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="answers">Answers</h2>' in html and "generation failure" in html


def test_answer_rules_without_answers_are_not_applied(kb_v1: str, tmp_path: Path) -> None:
    golden = golden_file(tmp_path, ["smi_2025"])
    code, out, _ = cli("gate", str(golden), "--store", kb_v1, "--no-history", "--format",
                       "json", "--policy", str(policy_file(tmp_path, min_faithfulness=0.9)))
    res = json.loads(out)
    assert (code, res["answers"]) == (0, None)
    (check,) = [c for c in res["checks"] if c["rule"] == "min_faithfulness"]
    assert (check["status"], check["message"]) == (
        "not applied", "no answers were judged (min_faithfulness 0.9): give --answers FILE or "
        "--generator SPEC")


def test_a_significant_fall_of_faithfulness_against_the_baseline_blocks(
        kb_v1: str, tmp_path: Path) -> None:
    """Two gate runs through one history: the first (accepted) answers as the example's
    assistant did; the second's answers each add a figure no context holds. Its faithfulness
    falls on every query both runs answered: max_drop blocks, with the baseline's per-query
    answer measures read back from the history."""
    rows = [json.loads(x) for x in (KB / "answers.jsonl").read_text(encoding="utf-8").splitlines()
            if "cuota_autonomos_2000" not in x]  # the one whose retrieval fails on version 1
    golden = golden_file(tmp_path, [r["query_id"] for r in rows])
    policy = policy_file(tmp_path, max_drop={"faithfulness": 0.1, "hallucination_rate": 0.1})
    history = tmp_path / "history.db"
    good = write_jsonl(tmp_path / "good.jsonl", rows)
    bad = write_jsonl(tmp_path / "bad.jsonl", [
        {**r, "answer": r["answer"] + " Además, el recargo por hacerlo tarde es de 4.321 euros."}
        for r in rows])

    def gate_run(answers: Path) -> tuple[int, dict[str, Any]]:
        code, out, err = cli("gate", str(golden), "--store", kb_v1, "--policy", str(policy),
                             "--history", str(history), "--format", "json", "--answers",
                             str(answers), "--answer-labels", str(LABELS))
        assert code in (0, 1), err or out
        return code, json.loads(out)

    code, first = gate_run(good)
    assert code == 0 and first["answers"]["hallucination_rate"] == 0.0
    assert {c["status"] for c in first["checks"] if c["rule"] == "max_drop"} == {"not applied"}
    code, second = gate_run(bad)
    checks = {c["subject"]: c for c in second["checks"] if c["rule"] == "max_drop"}
    assert code == 1 and [r["rule"] for r in second["reasons"]] == ["max_drop", "max_drop"]
    faith = checks["faithfulness"]
    assert faith["status"] == "stop"
    f = faith["figures"]
    assert (f["baseline_run"], f["n"], f["baseline"]) == (first["run_id"], len(rows), 1.0)
    assert f["value"] == second["answers"]["faithfulness"] and f["p_holm"] <= 0.05
    assert f["interval"][1] < 0
    assert faith["message"].startswith(f"faithfulness fell {f['drop']:.3f} (1.000 → ")
    assert f"over 2 measures; paired randomization test over {len(rows)} queries both runs " \
           "answered; 95 % interval of the change" in faith["message"]
    rate = checks["hallucination_rate"]
    assert rate["status"] == "stop" and rate["figures"]["value"] == 1.0
    assert rate["message"].startswith("hallucination_rate rose 1.000 (0.000 → 1.000)")


def test_the_dashboard_shows_each_query_s_answer_and_its_failure(kb_v1: str,
                                                                 tmp_path: Path) -> None:
    """A run with a generator, recorded: the dashboard's run page lists each query's
    faithfulness and its answer's outcome (right, or the failure's name), and a query's page
    shows its answer — measures, text, each statement backed or not, its contexts, and what the
    generator answered from the expected chunks alone."""
    import re

    from starlette.testclient import TestClient

    from recallwatch.web.app import create_app

    golden = golden_file(tmp_path, FIVE, top_k=2)
    history = tmp_path / "history.db"
    code, out, err = cli("gate", str(golden), "--store", kb_v1, "--history", str(history),
                         "--format", "json", "--answer-labels", str(LABELS),
                         "--generator", "python:tests.answers.scripted:answer")
    assert code == 1, err
    res = json.loads(out)
    client = TestClient(create_app(history), base_url="http://127.0.0.1:8000")
    page = client.get(f"/runs/{res['run_id']}").text
    assert "<th class=\"n\">faithfulness</th><th>answer</th>" in page
    table = page[page.index('id="query-table"'):]
    table = table[:table.index("</table>")]
    rows = dict(re.findall(r'<a class="qlink"[^>]*><code>([^<]+)</code></a>.*?'
                           r'<td class="answer-status" data-v="([^"]*)"', table, flags=re.S))
    expected = {q["id"]: "right" if q["answer"]["right"] else f"{q['answer']['failure']} failure"
                for q in res["queries"]}
    assert rows == expected
    assert rows["retencion_alquiler_local"] == "retrieval failure"
    assert rows["modelo_190"] == "generation failure"
    query = client.get(f"/runs/{res['run_id']}/queries/retencion_alquiler_local").text
    rent = by_id(res)["retencion_alquiler_local"]["answer"]
    text = " ".join(re.sub(r"<[^>]+>", " ", query).split())
    assert "Answer retrieval failure" in text
    assert rent["text"] in text and rent["oracle"]["text"] in text
    assert "from its expected chunks alone the generator answers right" in text
    unbacked = [s["text"] for s in rent["statements"] if not s["backed"]]
    assert unbacked and all(f"not backed {s}" in text for s in unbacked)
    assert "its contexts " + rent["contexts"][0] in text
