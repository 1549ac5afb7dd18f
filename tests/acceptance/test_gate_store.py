"""The gate on a real store (LanceDB + USE): dataset errors, the written boost, deep ranks,
interruption."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.retrieve import StoreSource
from recallwatch.cli import app
from recallwatch.embedders import get_embedder
from recallwatch.errors import DatasetError, Interrupted
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy, SearchSettings
from recallwatch.ops.ingest import ingest
from recallwatch.stores import open_store
from recallwatch.stores.base import VectorStore

TEXTS = {
    "vac": "Las vacaciones anuales son de treinta días naturales por año trabajado.",
    "vac_gold": "Síntesis: cada trabajador tiene 30 días naturales de vacaciones al año.",
    "sal": "El salario se abona el último día hábil de cada mes por transferencia.",
    "jor": "La jornada ordinaria es de cuarenta horas semanales de trabajo efectivo.",
    "irpf": "El IRPF de los autónomos se paga con el modelo 130 cada trimestre.",
    "iva": "El IVA trimestral se declara con el modelo 303 en los veinte primeros días.",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    path = tmp_path_factory.mktemp("kb")
    corpus = path / "c.jsonl"
    corpus.write_text("".join(
        json.dumps({"id": i, "text": t, "domain": "rrhh",
                    "label": "SINTESIS_CURADA" if i == "vac_gold" else "NORMA"}) + "\n"
        for i, t in TEXTS.items()), encoding="utf-8")
    s = open_store(f"lancedb://{path / 'db'}?table=chunks", create=True)
    ingest(corpus, s, get_embedder(), embedder_spec="use-multilingual")
    return s


def golden(expected: list[str], k: int = 2) -> GoldenSet:
    return GoldenSet.from_dict({"name": "g", "top_k": k, "queries": [
        {"id": "q", "text": "¿Cuántos días de vacaciones tengo al año?", "expected": expected}]})


def test_unknown_expected_chunk_is_a_dataset_error(store: VectorStore) -> None:
    with pytest.raises(DatasetError, match=r"1 expected chunk id\(s\) do not exist in .*: "
                                           r"nope \(query q\)"):
        run_gate(golden(["vac", "nope"]), store=store)


def test_ranks_beyond_k_and_gold_from_the_corpus_label(store: VectorStore) -> None:
    q = run_gate(golden(["vac", "vac_gold", "iva"], k=2), store=store).query("q")
    ranks = {h.id: h.rank for h in q.expected}
    assert {ranks["vac"], ranks["vac_gold"]} == {1, 2}
    assert ranks["iva"] is not None and ranks["iva"] > 2  # found by the deeper search
    assert next(h for h in q.expected if h.id == "vac_gold").gold and q.has_gold
    assert all(h.score is not None for h in q.expected)


def test_score_of_an_expected_chunk_beyond_the_search_depth(store: VectorStore) -> None:
    policy = Policy(search=SearchSettings(depth=2))
    q = run_gate(golden(["vac", "iva"], k=2), store=store, policy=policy).query("q")
    iva = next(h for h in q.expected if h.id == "iva")
    assert iva.rank is None and iva.score is not None  # computed directly: the threshold exists
    assert q.noise_threshold == pytest.approx(iva.score)


def test_written_boost_reorders_and_changes_the_configuration_hash(store: VectorStore) -> None:
    plain = run_gate(golden(["jor"], k=1), store=store)
    boosted = run_gate(golden(["jor"], k=1), store=store, policy=Policy(
        search=SearchSettings(boost={"label": {"SINTESIS_CURADA": 1.0}})))
    assert boosted.query("q").top[0][0] == "vac_gold"  # +1.0 puts the Gold synthesis first
    assert plain.config_hash != boosted.config_hash
    assert plain.policy_hash == boosted.policy_hash
    assert boosted.config.search["boost"] == {"label": {"SINTESIS_CURADA": 1.0}}


def test_interrupted_gate_records_nothing(store: VectorStore, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(StoreSource, "retrieve", interrupt)
        with pytest.raises(Interrupted):
            run_gate(golden(["vac"]), store=store)
        g = tmp_path / "g.json"
        g.write_text(json.dumps(golden(["vac"]).to_dict()), encoding="utf-8")
        history, reports = tmp_path / "h.db", tmp_path / "reports"
        r = CliRunner().invoke(app, ["gate", str(g), "--store", store.uri, "--history",
                                     str(history), "--report", str(reports)])
    assert r.exit_code == 130 and "interrupted" in r.stderr  # 128 + SIGINT, as the shell
    assert not reports.exists()
    assert not history.exists() or '"runs": []' in CliRunner().invoke(
        app, ["history", "list", "--history", str(history), "--format", "json"]).stdout
