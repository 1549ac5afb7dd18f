"""The quantization study (the chapter's table 18.1 and figures 18.6–18.7) and the binary index.

Each representation is measured as the chapter does: reconstruct the vectors, search them
exactly, compare the top-k with the exact float32 top-k. Representations:

- ``float16``: a cast;
- ``int8``: a per-vector scale ``max|x| / 127`` (stored as one float32 per vector) and rounding;
- ``binary``: the sign of each component, compared by Hamming distance;
- ``binary + rescoring``: Hamming selects R candidates, exact distances reorder them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from recallwatch.bench.exact_knn import (
    GroundTruth,
    exact_distances,
    ground_truth,
    id_recall,
    prepare,
    tie_aware_recall,
)
from recallwatch.errors import InputError
from recallwatch.formats.ann import Metric
from recallwatch.vectors import top_k_rows

__all__ = [
    "DEFAULT_DEPTHS",
    "BinaryIndex",
    "QuantRow",
    "QuantizationStudy",
    "RescorePoint",
    "int8_per_vector",
    "quantization_study",
    "rescore",
    "sign_codes",
]

DEFAULT_DEPTHS: tuple[int, ...] = (10, 20, 50, 100, 200, 500, 1000, 2000)


def sign_codes(x: np.ndarray) -> np.ndarray:
    """One bit per component (1 where > 0), packed into bytes: ``ceil(d / 8)`` bytes per row."""
    return np.packbits(np.asarray(x) > 0, axis=1)


def int8_per_vector(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and the per-vector scale (``max|x| / 127``) that reconstructs them."""
    x = np.asarray(x, dtype=np.float32)
    scale = np.abs(x).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0  # a zero vector stays zero whatever its scale
    return np.round(x / scale).astype(np.int8), scale.astype(np.float32)


def rescore(
    base: np.ndarray, queries: np.ndarray, candidates: np.ndarray, k: int, metric: Metric
) -> np.ndarray:
    """The k best of each row's candidates by exact distance (inputs prepared for ``metric``)."""
    dist = exact_distances(base, queries, candidates, metric)
    # smaller distance first; equal distances by id, the package's one tie rule
    order = top_k_rows(-dist.astype(np.float64), k, candidates)
    return np.take_along_axis(candidates, order, axis=1)


class BinaryIndex:
    """Sign codes in a faiss ``IndexBinaryFlat``; the float vectors are kept for rescoring."""

    def __init__(self, base: np.ndarray, metric: Metric) -> None:
        import faiss

        self.base = base
        self.metric: Metric = metric
        codes = sign_codes(base)
        self.index = faiss.IndexBinaryFlat(codes.shape[1] * 8)
        self.index.add(codes)

    def search(self, queries: np.ndarray, k: int, depth: int = 0) -> np.ndarray:
        """Top-k by Hamming alone (``depth`` 0), or Hamming top-``depth`` rescored exactly."""
        n = self.base.shape[0]
        wanted = min(max(k, depth), n)
        candidates = np.asarray(self.index.search(sign_codes(queries), wanted)[1], dtype=np.int64)
        if depth <= 0:
            return candidates[:, :k]
        return rescore(self.base, queries, candidates, k, self.metric)

    def code_bytes(self) -> int:
        import faiss

        return int(faiss.serialize_index_binary(self.index).size)


@dataclass(frozen=True)
class QuantRow:
    representation: str
    bytes_per_vector: float
    recall: float  # mean id recall@k against exact float32
    recall_ties: float  # the same, counting ties within 1e-6 of the k-th distance


# Matryoshka truncation: the dimensions a study cuts the vectors to (those below their own)
TRUNCATION_DIMS = (512, 256, 128)


@dataclass(frozen=True)
class RescorePoint:
    R: int
    share: float  # R / n: the fraction of the collection rescored exactly
    recall: float
    recall_ties: float


@dataclass(frozen=True)
class QuantizationStudy:
    n: int
    d: int
    nq: int
    k: int
    metric: Metric
    rows: list[QuantRow]
    rescoring: list[RescorePoint]
    # Matryoshka truncation: the first m dimensions of every vector, renormalised, searched
    # exactly (meaningful for embedders trained so that a prefix of the vector works alone)
    truncation: list[QuantRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        """Table 18.1: bytes per vector and recall@k of each representation against float32."""
        lines = [
            f"recall@{self.k} against exact float32 search; n={self.n}, d={self.d}, "
            f"{self.nq} queries, metric {self.metric}",
            "",
            f"| Representation | Bytes/vector | recall@{self.k} | recall@{self.k} (ties) |",
            "|---|---:|---:|---:|",
        ]
        lines += [f"| {r.representation} | {r.bytes_per_vector:g} | {r.recall:.3f} | "
                  f"{r.recall_ties:.3f} |" for r in self.rows]
        if self.truncation:
            lines += ["", "Dimension truncation (Matryoshka): the first m dimensions of every "
                      "vector, renormalised, searched exactly", "",
                      f"| Dimensions | Bytes/vector | recall@{self.k} | recall@{self.k} (ties) |",
                      "|---|---:|---:|---:|"]
            lines += [f"| {r.representation} | {r.bytes_per_vector:g} | {r.recall:.3f} | "
                      f"{r.recall_ties:.3f} |" for r in self.truncation]
        return "\n".join(lines) + "\n"


def quantization_study(
    base: np.ndarray,
    queries: np.ndarray,
    *,
    k: int = 10,
    metric: Metric = "ip",
    depths: Sequence[int] = DEFAULT_DEPTHS,
    truth: GroundTruth | None = None,
    truncate: Sequence[int] = TRUNCATION_DIMS,
) -> QuantizationStudy:
    """float32 / float16 / int8 (per-vector scale) / binary recall@k, binary + rescoring over
    the rescoring depths R (those larger than the collection are left out), and the vectors cut
    to each of ``truncate`` dimensions smaller than theirs and renormalised (not for l2)."""
    n, d = base.shape
    if k > n:
        raise InputError(field="k", expected=f"k ≤ {n} (the base size)", found=k)
    truth = truth or ground_truth(base, queries, k, metric)
    xb = prepare(base, metric)
    xq = prepare(queries, metric)

    def measure(found: np.ndarray) -> tuple[float, float]:
        return (float(id_recall(found, truth.ids, k).mean()),
                float(tie_aware_recall(found, truth, xb, xq, k).mean()))

    def exact_over(recon: np.ndarray) -> np.ndarray:
        return ground_truth(recon, queries, k, metric).ids

    q8, scale = int8_per_vector(xb)
    binary = BinaryIndex(xb, metric)
    reps: list[tuple[str, float, np.ndarray]] = [
        ("float32", 4.0 * d, truth.ids),
        ("float16", 2.0 * d, exact_over(xb.astype(np.float16).astype(np.float32))),
        ("int8 (per-vector scale)", d + 4.0, exact_over(q8.astype(np.float32) * scale)),
        ("binary (sign)", float(-(-d // 8)), binary.search(xq, k)),
    ]
    rows = [QuantRow(name, size, *measure(found)) for name, size, found in reps]
    rescoring = [RescorePoint(r, r / n, *measure(binary.search(xq, k, r)))
                 for r in sorted(set(depths)) if k <= r <= n]
    truncation = [] if metric == "l2" else [
        QuantRow(f"{m} of {d}", 4.0 * m, *measure(
            ground_truth(_cut(base, m), _cut(queries, m), k, "cosine").ids))
        for m in sorted(set(truncate), reverse=True) if 0 < m < d]
    return QuantizationStudy(n, d, queries.shape[0], k, metric, rows, rescoring, truncation)


def _cut(vectors: np.ndarray, m: int) -> np.ndarray:
    """The first ``m`` dimensions of each row, renormalised to length 1 (a zero row stays 0)."""
    head = np.ascontiguousarray(vectors[:, :m], dtype=np.float32)
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    out: np.ndarray = np.divide(head, norms, out=np.zeros_like(head), where=norms > 0)
    return out
