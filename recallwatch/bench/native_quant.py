"""The store's own quantized indexes, measured like the representations of
:mod:`recallwatch.bench.quantize`: recall@k against exact float32 search of the same vectors, and
bytes per vector, so one table answers "what do I lose if I switch".

Always on a copy or read-only: the user's store is never written.

- LanceDB: the base vectors are written to a temporary LanceDB table, which builds each index
  type the adapter offers with the adapter's own rule (``IVF_PQ`` with ``refine_factor`` 1, so
  the codes alone pick the top k, and 10, the adapter's default, which re-ranks 10 k candidates on
  the full vectors; ``IVF_HNSW_SQ``). Bytes per vector are the index files over the rows.
- pgvector: its ``halfvec`` (float16) and ``bit`` (sign, Hamming distance) types, searched
  exactly by the database itself with casts in a read-only query over the store's table.

Other adapters have no quantized index of their own to measure here (Qdrant's local mode keeps
vectors in float32 whatever the collection says): they get a row that says so.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.bench.exact_knn import GroundTruth, id_recall, prepare, tie_aware_recall

if TYPE_CHECKING:
    from recallwatch.bench.datasets import Dataset
    from recallwatch.stores.base import SupportsIndexVariants, SupportsQuantizedSearch, VectorStore

__all__ = ["NativeRow", "native_markdown", "native_quantization"]


@dataclass(frozen=True)
class NativeRow:
    engine: str
    representation: str
    bytes_per_vector: float | None
    recall: float | None  # mean id recall@k against exact float32; None: not measured
    recall_ties: float | None
    note: str  # how it was measured, or why it was not

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def native_quantization(store: VectorStore, data: Dataset, truth: GroundTruth,
                        k: int) -> list[NativeRow]:
    """The store's own quantized indexes on ``data`` (the store's vectors, queries held out):
    built in scratch stores (:class:`SupportsIndexVariants`) or searched on compact casts of
    the stored vectors (:class:`SupportsQuantizedSearch`)."""
    from recallwatch.stores.base import SupportsIndexVariants, SupportsQuantizedSearch

    if isinstance(store, SupportsIndexVariants):
        return _variants(store, data, truth, k)
    if isinstance(store, SupportsQuantizedSearch):
        return _casts(store, store.count(), data, truth, k)
    return [NativeRow(type(store).__name__, "(none)", None, None, None,
                      "this adapter has no quantized index of its own to measure")]


def native_markdown(rows: list[NativeRow], k: int) -> str:
    """The store's own indexes as a table beside the representations' table."""
    lines = ["The store's own quantized indexes, same queries and exact truth:", "",
             f"| Index | Bytes/vector | recall@{k} | recall@{k} (ties) | How |",
             "|---|---:|---:|---:|---|"]
    for r in rows:
        size = "—" if r.bytes_per_vector is None else f"{r.bytes_per_vector:.1f}"
        rec = "—" if r.recall is None else f"{r.recall:.3f}"
        ties = "—" if r.recall_ties is None else f"{r.recall_ties:.3f}"
        lines.append(f"| {r.representation} | {size} | {rec} | {ties} | {r.note} |")
    return "\n".join(lines) + "\n"


def _measure(found: np.ndarray, data: Dataset, truth: GroundTruth,
             k: int) -> tuple[float, float]:
    xb, xq = prepare(data.base, data.metric), prepare(data.queries, data.metric)
    return (float(id_recall(found, truth.ids, k).mean()),
            float(tie_aware_recall(found, truth, xb, xq, k).mean()))


def _variants(store: SupportsIndexVariants, data: Dataset, truth: GroundTruth,
              k: int) -> list[NativeRow]:
    from recallwatch.bench.engines.store_engine import StoreEngine
    from recallwatch.errors import RecallwatchError
    from recallwatch.stores import open_store
    from recallwatch.stores.base import (
        Chunk,
        SupportsIndexInspection,
        SupportsIndexSize,
        SupportsIndexVariants,
    )

    n = data.base.shape[0]
    ids = list(data.ids) if data.ids is not None else [str(i) for i in range(n)]
    rows: list[NativeRow] = []
    # PQ codes re-ranked on 1× and 10× k full vectors; the other types as they search
    labels = store.index_variants()
    variants = [(t, r) for t in labels for r in ((1, 10) if t.endswith("PQ") else (None,))]
    with tempfile.TemporaryDirectory(prefix="recallwatch-quantize-") as tmp:
        built: dict[str, tuple[str, float | None] | str] = {}
        for index_type, refine in variants:
            name = labels[index_type] + ("" if refine is None else f", refine_factor {refine}")
            engine_name = labels[index_type].split()[0].lower()
            if index_type not in built:
                try:
                    copy = open_store(store.scratch_uri(tmp, index_type), create=True)
                    # one write of every base vector: over the threshold, the adapter indexes it
                    copy.upsert([Chunk(id=i, text="") for i in ids], data.base)
                    params = (copy.index_parameters(n, data.base.shape[1])
                              if isinstance(copy, SupportsIndexVariants) else {})
                    state = (copy.index_state() if isinstance(copy, SupportsIndexInspection)
                             else None)
                    size = copy.index_bytes() if isinstance(copy, SupportsIndexSize) else None
                    copy.close()
                    if state is None or state.indexed_rows == 0:
                        # too few rows to train on: LanceDB writes an empty index and scans
                        built[index_type] = (f"not measured: LanceDB left all {n} rows out of "
                                             "the index (too few to train it); it scans them")
                    else:
                        built[index_type] = (
                            "built with " + ", ".join(f"{a}={b}" for a, b in params.items())
                            + (f"; {state.unindexed_rows} rows left out, scanned exactly"
                               if state.unindexed_rows else ""),
                            None if size is None else size / n)
                except RecallwatchError as exc:
                    built[index_type] = f"LanceDB could not build it: {str(exc)[:160]}"
            outcome = built[index_type]
            if isinstance(outcome, str):
                rows.append(NativeRow(engine_name, name, None, None, None, outcome))
                continue
            how, per_vector = outcome
            scratch = open_store(store.scratch_uri(tmp, index_type, refine_factor=refine))
            engine = StoreEngine.from_store(scratch)
            engine.build(data.base, "ip", ids)  # positions of the ids; nothing is written
            try:
                found = engine.search(data.queries, k)
            finally:
                engine.close()
            note = how + ("; re-ranks on the float32 vectors" if refine and refine > 1 else "")
            rows.append(NativeRow(engine_name, name, per_vector,
                                  *_measure(found, data, truth, k), note))
    return rows


def _casts(store: SupportsQuantizedSearch, rows_total: int, data: Dataset, truth: GroundTruth,
           k: int) -> list[NativeRow]:
    d = data.base.shape[1]
    positions = {name: i for i, name in enumerate(data.ids or [])}
    outside = rows_total - len(positions)  # the held-out queries are rows of the table too
    rows = []
    for kind, (name, per_dim) in store.quantized_representations().items():
        per_vector = per_dim * d
        found = store.quantized_search(data.queries, k + outside, kind)
        grid = np.full((len(found), k), -1, dtype=np.int64)
        for r, hit in enumerate(found):
            kept = [positions[i] for i in hit if i in positions][:k]
            grid[r, :len(kept)] = kept
        rows.append(NativeRow(name.split()[0].lower(), name, per_vector,
                              *_measure(grid, data, truth, k),
                              "exact search by PostgreSQL with the column cast, read-only"))
    return rows
