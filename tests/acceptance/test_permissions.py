"""The permission rule on real searches: a chunk in a query's top K that the asking user's
groups may not see fails the query (rule ``permission``) whatever its recall, and the gate JSON
lists it under ``permission_leaks``. On LanceDB the store's own acl filter serves the queries
that carry groups (the check says so); a results file is checked unfiltered (and says so)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult
from recallwatch.embedders import get_embedder
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.ops.ingest import ingest
from recallwatch.records import Chunk
from recallwatch.report.html import to_html
from recallwatch.report.junit import to_junit
from recallwatch.report.markdown import to_markdown
from recallwatch.report.terminal import render
from recallwatch.stores import open_store
from recallwatch.stores.base import VectorStore
from tests.pg import PostgresServer

from .helpers import ranked

# The payroll chunks are the closest to the question; only hr may read them.
CORPUS = [
    {"id": "nomina", "text": "La nómina de cada empleado se abona el último día del mes.",
     "acl": ["hr"]},
    {"id": "nomina_detalle", "text": "El detalle de la nómina de cada empleado y su salario.",
     "acl": ["hr", "direccion"]},
    {"id": "pago", "text": "Los salarios se pagan por transferencia el último día hábil del mes."},
    {"id": "vacaciones", "text": "Las vacaciones anuales son de treinta días naturales."},
    {"id": "iva", "text": "El IVA trimestral se declara con el modelo 303."},
]
QUESTION = "¿Qué día se paga la nómina del mes?"
LENIENT = Policy(noise_ceiling=1.0, min_mean_quality=0, other_failures_allowed=1.0)


def _golden(**groups: list[str] | None) -> GoldenSet:
    queries = []
    for qid, g in groups.items():
        q: dict[str, object] = {"id": qid, "text": QUESTION, "expected": ["pago"], "top_k": 3}
        if g is not None:
            q["groups"] = g
        queries.append(q)
    return GoldenSet.from_dict({"name": "acl", "queries": queries})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    path = tmp_path_factory.mktemp("acl")
    corpus = path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in CORPUS),
                      encoding="utf-8")
    s = open_store(f"lancedb://{path / 'db'}?table=chunks", create=True)
    ingest(corpus, s, get_embedder(), embedder_spec="use-multilingual")
    return s


def test_ingest_carries_the_acl_into_the_store(store: VectorStore) -> None:
    got = store.get([r["id"] for r in CORPUS])  # type: ignore[misc]
    assert got["nomina"].acl == ("hr",) and got["nomina_detalle"].acl == ("hr", "direccion")
    assert got["pago"].acl is None


def test_the_stores_filter_keeps_restricted_chunks_out(store: VectorStore) -> None:
    unfiltered = run_gate(_golden(anyone=None), store=store, policy=LENIENT).query("anyone")
    assert {"nomina", "nomina_detalle"} & {c for c, _ in unfiltered.top}  # they do rank high
    result = run_gate(_golden(sales=["sales"], hr=["hr"], anyone=None), store=store,
                      policy=LENIENT)
    sales, hr = result.query("sales"), result.query("hr")
    assert not {"nomina", "nomina_detalle"} & {c for c, _ in sales.top}
    assert sales.permission_leaks == () and sales.passed and sales.groups == ("sales",)
    assert {c for c, _ in hr.top} == {c for c, _ in unfiltered.top}
    assert result.query("anyone").groups is None
    (check,) = [c for c in result.checks if c.rule == "permission"]
    assert check.status == "pass" and "store's own acl filter (lancedb://" in check.message
    assert result.verdict == "ACCEPT"


def _leaking_run(policy: Policy = LENIENT) -> GateResult:
    chunks = {r["id"]: Chunk(str(r["id"]), str(r["text"]),  # type: ignore[arg-type]
                             acl=tuple(r["acl"]) if "acl" in r else None)  # type: ignore[arg-type]
              for r in CORPUS}
    # an external system that served the hr chunk first to a user in sales
    results = {"sales": ranked({"nomina": 1, "pago": 2}), "hr": ranked({"nomina": 1, "pago": 2}),
               "anyone": ranked({"nomina": 1, "pago": 2})}
    return run_gate(_golden(sales=["sales"], hr=["hr"], anyone=None), results=results,
                    corpus=chunks, policy=policy)


def test_a_leak_fails_the_query_whatever_its_recall() -> None:
    result = _leaking_run()
    sales = result.query("sales")
    assert sales.recall == 1.0 and not sales.passed
    assert sales.failed_rules == ("permission",)
    assert [(x.id, x.acl) for x in sales.permission_leaks] == [("nomina", ("hr",))]
    assert result.query("hr").passed and result.query("anyone").passed
    assert result.verdict == "STOP"
    (reason,) = [r for r in result.reasons if r.rule == "permission"]
    assert reason.queries == ("sales",)
    assert "nomina is visible only to hr; the asking user holds sales" in reason.message
    assert "no acl filter: searched unfiltered" in reason.message
    # the JSON contract
    as_json = result.to_dict()["queries"]
    by_id = {q["id"]: q for q in as_json}
    assert by_id["sales"]["permission_leaks"] == [{"id": "nomina", "acl": ["hr"]}]
    assert by_id["hr"]["permission_leaks"] == [] and by_id["anyone"]["groups"] is None
    assert GateResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_a_waiver_does_not_excuse_a_leak() -> None:
    result = _leaking_run(Policy(noise_ceiling=1.0, min_mean_quality=0,
                                 other_failures_allowed=1.0, waivers={"sales": "known"}))
    assert result.verdict == "STOP" and [r.rule for r in result.reasons] == ["permission"]


def test_every_report_names_the_chunk_and_the_missing_grant() -> None:
    result = _leaking_run()
    out = io.StringIO()
    Console(width=300, file=out, no_color=True).print(render(result))
    for text in (out.getvalue(), to_markdown(result), to_junit(result), to_html(result)):
        assert "nomina is visible only to hr; the asking user holds sales" in text, text[:3000]


@pytest.mark.slow
def test_the_stores_filter_on_pgvector(tmp_path: Path, postgres_server: PostgresServer,
                                       pg_env: None) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in CORPUS),
                      encoding="utf-8")
    s = open_store(postgres_server.uri("acl_gate"), create=True)
    try:
        ingest(corpus, s, get_embedder(), embedder_spec="use-multilingual")
        assert s.get(["nomina"])["nomina"].acl == ("hr",)
        result = run_gate(_golden(sales=["sales"], hr=["hr"]), store=s, policy=LENIENT)
        assert not {"nomina", "nomina_detalle"} & {c for c, _ in result.query("sales").top}
        assert {"nomina", "nomina_detalle"} & {c for c, _ in result.query("hr").top}
        (check,) = [c for c in result.checks if c.rule == "permission"]
        assert check.status == "pass" and "acl filter (postgresql://" in check.message
    finally:
        s.close()
