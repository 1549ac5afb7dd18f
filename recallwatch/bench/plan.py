"""The footprint planner: memory, disk, build time and queries per second per core of a vector
index before it is built, each figure with the formula that gives it.

Sizes are exact arithmetic on the shape of the data (decimal units: 1 GB = 10^9 bytes):

- vectors: ``n × d × b`` with ``b`` = 4 (float32), 2 (float16), 1 (int8; one scale per
  dimension, stored once) or ``⌈d / 8⌉ / d`` (binary: one bit per dimension);
- ``flat``: nothing beyond the vectors (a row's position is its id);
- ``ivf``: ``n × 8`` bytes of ids in the inverted lists plus ``nlist × d × 4`` of float32
  centroids (``nlist × ⌈d/8⌉`` for binary codes, whose centroids are binary);
- ``hnsw``: ``n × (4 × (2M + M/(M−1)) + 12)`` bytes. Layer 0 keeps 2M links per vector (4-byte
  ids); a vector reaches layer ℓ with probability ``M^−ℓ``, so it has on average
  ``1/(M−1)`` upper layers of M links each; 12 bytes hold its level and the offset of its links.

Times come from rates measured on this machine (:mod:`recallwatch.bench.rates`): the seconds one
core spends per vector-dimension of an exact scan (per representation, one query at a time, and
for float32 in batches), and per unit of HNSW work (per representation). ``ivf`` uses the batched
rate for its k-means training and its assignment of every vector to a list, and the one-query
rate for its search of ``nlist`` centroids and ``nprobe`` lists.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, get_args

from recallwatch.errors import InputError

__all__ = [
    "DTYPES",
    "INDEXES",
    "Dtype",
    "Footprint",
    "IndexKind",
    "Line",
    "centroid_bytes",
    "default_nlist",
    "footprint",
    "hnsw_bytes_per_vector",
    "index_bytes",
    "parse_count",
    "vector_bytes",
]

Dtype = Literal["f32", "f16", "int8", "binary"]
IndexKind = Literal["flat", "ivf", "hnsw"]
DTYPES: tuple[str, ...] = get_args(Dtype)
INDEXES: tuple[str, ...] = get_args(IndexKind)
BYTES: dict[str, float] = {"f32": 4.0, "f16": 2.0, "int8": 1.0}
IVF_ITERATIONS = 10  # faiss's k-means iterations when it trains an IVF quantizer
IVF_POINTS_PER_LIST = 256  # faiss trains on at most this many points per list
HNSW_BOOKKEEPING = 12  # bytes per vector: its level (4) and the offset of its links (8)


# Engines number their vectors with signed 64-bit integers: no index holds more.
MAX_VECTORS = 2**63 - 1


def parse_count(text: str) -> int:
    """``100M``, ``1.5B``, ``20k``, ``1e8`` or ``100000000`` as a count of vectors (read in
    decimal, so ``1e23`` is exactly 10^23, not the nearest float)."""
    s = text.strip().replace("_", "").replace(",", "")
    scale = {"k": 3, "m": 6, "b": 9, "g": 9}.get(s[-1:].lower(), 0)
    try:
        value = Decimal(s[:-1] if scale else s).scaleb(scale)
    except (InvalidOperation, ValueError):
        value = Decimal(-1)
    if not (value.is_finite() and 1 <= value <= MAX_VECTORS and value == value.to_integral_value()):
        raise InputError(field="--vectors", expected="a positive whole count such as 100M, "
                         f"20k or 1e8, at most {MAX_VECTORS:,} (what a 64-bit vector id can "
                         "number)", found=text)
    return int(value)


def vector_bytes(n: int, d: int, dtype: Dtype) -> int:
    """The stored vectors alone: ``n × d × bytes per component`` (binary: ``n × ⌈d/8⌉``)."""
    if dtype == "binary":
        return n * -(-d // 8)
    return int(n * d * BYTES[dtype])


def hnsw_bytes_per_vector(m: int) -> float:
    """Links and bookkeeping of one vector in an HNSW graph: ``4 × (2M + M/(M−1)) + 12``."""
    return 4.0 * (2 * m + m / (m - 1)) + HNSW_BOOKKEEPING


def default_nlist(n: int) -> int:
    """About ``4 × √n`` inverted lists, faiss's usual starting point (never more than ``n``)."""
    return max(1, min(n, round(4 * math.sqrt(n))))


def centroid_bytes(d: int, dtype: Dtype) -> int:
    """One IVF centroid: float32, except for binary codes, whose centroids are binary too."""
    return -(-d // 8) if dtype == "binary" else 4 * d


def index_bytes(n: int, d: int, index: IndexKind, *, m: int = 16, nlist: int | None = None,
                dtype: Dtype = "f32") -> int:
    """What the index keeps beyond the vectors (see the module docstring)."""
    if index == "flat":
        return 0
    if index == "ivf":
        lists = nlist or default_nlist(n)
        return n * 8 + lists * centroid_bytes(d, dtype)
    return round(n * hnsw_bytes_per_vector(m))


@dataclass(frozen=True)
class Line:
    """One figure of a plan with the formula that gives it, and that formula with numbers."""

    name: str
    formula: str
    worked: str
    value: float
    unit: str


@dataclass(frozen=True)
class Footprint:
    n: int
    d: int
    dtype: str
    index: str
    params: dict[str, int]
    replicas: int
    vector_bytes: int
    index_bytes: int
    memory_bytes: int  # per replica
    disk_bytes: int  # per replica
    build_core_seconds: float | None
    qps_per_core: float | None
    lines: tuple[Line, ...]
    rates: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _gb(x: float) -> str:
    if x == 0:
        return "0 B"
    return f"{x / 1e9:,.1f} GB" if x >= 1e8 else f"{x / 1e6:,.2f} MB"


def footprint(
    n: int, d: int, dtype: Dtype = "f32", index: IndexKind = "flat", *, m: int = 16,
    ef_construction: int = 200, ef_search: int = 64, nlist: int | None = None,
    nprobe: int = 32, replicas: int = 1, rates: dict[str, Any] | None = None,
) -> Footprint:
    """The plan for ``n`` vectors of dimension ``d``. Without ``rates`` (a record from
    :func:`recallwatch.bench.rates.measure_rates`) the times are left out."""
    if dtype not in DTYPES:
        raise InputError(field="--dtype", expected=" | ".join(DTYPES), found=dtype)
    if index not in INDEXES:
        raise InputError(field="--index", expected=" | ".join(INDEXES), found=index)
    for field, value, low in (("--vectors", n, 1), ("--dim", d, 1), ("--m", m, 2),
                              ("--replicas", replicas, 1), ("--nprobe", nprobe, 1),
                              ("--ef-construction", ef_construction, 1),
                              ("--ef-search", ef_search, 1)):
        if value < low:
            raise InputError(field=field, expected=f"an integer ≥ {low}", found=value)
    b = {"f32": "4", "f16": "2", "int8": "1", "binary": "⌈d/8⌉/d"}[dtype]
    vb = vector_bytes(n, d, dtype)
    per = f"{-(-d // 8)}" if dtype == "binary" else f"{d} × {b}"
    lines = [Line("vectors", f"n × d × {b} B" if dtype != "binary" else "n × ⌈d/8⌉ B",
                  f"{n:,} × {per} B = {_gb(vb)}", vb, "bytes")]
    params: dict[str, int] = {}
    lists = nlist or default_nlist(n)
    if index == "ivf" and lists > n:
        # k-means places one centre per list on the vectors: faiss refuses to train on fewer
        raise InputError(field="--nlist", expected=f"at most the number of vectors, {n:,} (an "
                         "IVF index learns one centre per list from the vectors; faiss cannot "
                         "train more lists than vectors, and wants about 39 vectors per list)",
                         found=lists)
    ib = index_bytes(n, d, index, m=m, nlist=lists, dtype=dtype)
    if index == "ivf":
        params = {"nlist": lists, "nprobe": min(nprobe, lists)}
        c, cw = ("⌈d/8⌉ B", f"{-(-d // 8)}") if dtype == "binary" else ("d × 4 B", f"{d} × 4")
        lines.append(Line("index", f"n × 8 B (ids) + nlist × {c} (centroids)",
                          f"{n:,} × 8 + {lists:,} × {cw} = {_gb(ib)}", ib, "bytes"))
    elif index == "hnsw":
        params = {"M": m, "efConstruction": ef_construction, "efSearch": ef_search}
        lines.append(Line("index", "n × (4 B × (2M + M/(M−1)) + 12 B)",
                          f"{n:,} × (4 × ({2 * m} + {m / (m - 1):.3f}) + 12) = {_gb(ib)}",
                          ib, "bytes"))
    else:
        lines.append(Line("index", "0 (flat: a row's position is its id)", "0", 0, "bytes"))
    memory = vb + ib
    lines.append(Line("memory", "vectors + index, per replica",
                      f"{_gb(vb)} + {_gb(ib)} = {_gb(memory)}", memory, "bytes"))
    lines.append(Line("disk", "= memory (the index written as it sits in memory), per replica",
                      _gb(memory), memory, "bytes"))
    if replicas > 1:
        lines.append(Line("all replicas", "memory × R", f"{_gb(memory)} × {replicas} = "
                          f"{_gb(memory * replicas)}", memory * replicas, "bytes"))
    build = qps = None
    if rates is not None:
        build, qps, timed = _times(n, d, dtype, index, lists, min(nprobe, lists), m,
                                   ef_construction, ef_search, rates)
        lines += timed
    return Footprint(n, d, dtype, index, params, replicas, vb, ib, memory, memory, build, qps,
                     tuple(lines), rates)


def _times(n: int, d: int, dtype: Dtype, index: IndexKind, nlist: int, nprobe: int, m: int,
           efc: int, efs: int, record: dict[str, Any]) -> tuple[float, float, list[Line]]:
    r = record["rates"]
    scan = float(r["scan"][dtype])  # seconds per vector-dimension scanned, one core
    s_scan = f"{scan:.3g} s"
    lg = math.log2(max(n, 2))
    if index == "flat":
        build, query = 0.0, n * d * scan
        return build, 1 / query, [
            Line("build", "0 (vectors are stored as they come)", "0 s", 0.0, "core-seconds"),
            Line("QPS per core", "1 / (n × d × scan)",
                 f"1 / ({n:,} × {d} × {s_scan}) = {1 / query:,.3g}", 1 / query, "queries/s")]
    if index == "ivf":
        f32 = float(r["scan_batch"])  # training and assignment compare many vectors at once
        train = IVF_ITERATIONS * min(n, IVF_POINTS_PER_LIST * nlist) * nlist * d * f32
        add = n * nlist * d * f32
        query = (nlist + nprobe * n / nlist) * d * scan
        build = train + add
        return build, 1 / query, [
            Line("build", f"{IVF_ITERATIONS} × min(n, 256 × nlist) × nlist × d × scan_batch "
                 "(k-means) + n × nlist × d × scan_batch (assignment)",
                 f"{train:,.3g} + {add:,.3g} = {_duration(build)}", build, "core-seconds"),
            Line("QPS per core", "1 / ((nlist + nprobe × n / nlist) × d × scan)",
                 f"1 / (({nlist:,} + {nprobe} × {n / nlist:,.0f}) × {d} × {s_scan}) = "
                 f"{1 / query:,.3g}", 1 / query, "queries/s")]
    hb, hq = float(r["hnsw_build"][dtype]), float(r["hnsw_query"][dtype])
    cal_m = int(record["calibration"]["M"])
    # the work per insertion grows with the links it chooses among: scaled by M from the rate's M
    build = n * lg * d * efc * (m / cal_m) * hb
    query = lg * d * efs * hq
    return build, 1 / query, [
        Line("build", f"n × log2 n × d × efConstruction × M/{cal_m} × hnsw_build",
             f"{n:,} × {lg:.1f} × {d} × {efc} × {m}/{cal_m} × {hb:.3g} s = {_duration(build)}",
             build, "core-seconds"),
        Line("QPS per core", "1 / (log2 n × d × efSearch × hnsw_query)",
             f"1 / ({lg:.1f} × {d} × {efs} × {hq:.3g} s) = {1 / query:,.3g}", 1 / query,
             "queries/s")]


def _duration(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:,.1f} core-days"
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} core-hours"
    return f"{seconds:,.1f} core-seconds"
