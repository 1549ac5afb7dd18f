"""A small real knowledge base for the retriever tests: a corpus file, a LanceDB store built from
it with the default embedder, and a golden set whose answers both find."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TEXTS = {
    "vac": "Las vacaciones anuales son de treinta días naturales por año trabajado.",
    "vac_gold": "Síntesis: cada trabajador tiene 30 días naturales de vacaciones al año.",
    "sal": "El salario se abona el último día hábil de cada mes por transferencia.",
    "jor": "La jornada ordinaria es de cuarenta horas semanales de trabajo efectivo.",
    "irpf": "El IRPF de los autónomos se paga con el modelo 130 cada trimestre.",
    "iva": "El IVA trimestral se declara con el modelo 303 en los veinte primeros días.",
    "baja": "La baja por enfermedad común se comunica a la empresa con el parte médico.",
    "nomina": "La nómina detalla el salario bruto, las retenciones de IRPF y la cotización.",
}


# A python: retriever's module text: keyword overlap over TEXTS, ties by id (deterministic).
KEYWORDS = f"""
TEXTS = {TEXTS!r}


def search(query, k):
    words = set(query.lower().split())
    scored = sorted(((len(words & set(t.lower().split())), cid) for cid, t in TEXTS.items()),
                    key=lambda s: (-s[0], s[1]))
    return [(cid, float(n)) for n, cid in scored[:k]]
"""

QUERIES = [
    ("q_vac", "¿Cuántos días de vacaciones tengo al año?", ["vac", "vac_gold"]),
    ("q_iva", "¿Con qué modelo se declara el IVA trimestral?", ["iva"]),
    ("q_irpf", "¿Qué modelo usan los autónomos para el IRPF?", ["irpf"]),
    ("q_jor", "¿Cuántas horas semanales es la jornada ordinaria?", ["jor"]),
]


@pytest.fixture(scope="session")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding corpus.jsonl, golden.yaml and the LanceDB store db/ (table chunks)."""
    from recallwatch.embedders import get_embedder
    from recallwatch.ops.ingest import ingest
    from recallwatch.stores import open_store

    path = tmp_path_factory.mktemp("kb")
    corpus = path / "corpus.jsonl"
    corpus.write_text("".join(
        json.dumps({"id": i, "text": t, "doc_id": f"doc_{i}", "domain": "rrhh"}) + "\n"
        for i, t in TEXTS.items()), encoding="utf-8")
    golden = {"name": "kb", "version": "1", "top_k": 3,
              "queries": [{"id": q, "text": t, "expected": e} for q, t, e in QUERIES]}
    (path / "golden.yaml").write_text(json.dumps(golden, ensure_ascii=False), encoding="utf-8")
    store = open_store(store_uri(path), create=True)
    try:
        ingest(corpus, store, get_embedder(), embedder_spec="use-multilingual")
    finally:
        store.close()
    return path


def store_uri(kb: Path) -> str:
    return f"lancedb://{kb / 'db'}?table=chunks"
