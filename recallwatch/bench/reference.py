"""The chapter's experiments (``simular_*`` of its module), reproduced with fixed seeds.

``run_experiments(out)`` writes the six figures (18.1 metrics demo, 18.2 recall by depth on IVF,
18.3 exact-search latency vs N, 18.5 drift and reindex, 18.6 quantization, 18.7 binary two-stage
vs R), the two tables (18.1 quantization, 18.2 indicator groups), the one-query evaluation report
(listing 18.15), and ``experiments.json`` with the configuration, seeds, input hashes, library
versions and thread settings beside every number. The directions of the chapter's results are
what must hold; magnitudes depend on the machine and the synthetic data.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._files import atomic_path, output_dir, write_atomic
from recallwatch._hashing import canonical_hash
from recallwatch._progress import steps
from recallwatch.bench.datasets import synthetic, topic_collection
from recallwatch.bench.exact_knn import content_hash, ground_truth, id_recall
from recallwatch.bench.quantize import QuantizationStudy, quantization_study

__all__ = ["ExperimentConfig", "drift_experiment", "figure_sizes", "latency_vs_n",
           "metrics_demo", "recall_by_depth", "run_experiments"]

# Listing 18.6: the same relevant set {0, 1, 2} placed ideally, dispersed and late.
DEMO_RELEVANT = (0, 1, 2)
DEMO_RANKINGS: dict[str, list[int]] = {
    "ideal": [0, 1, 2, 9, 8, 7, 6, 5, 4, 3],
    "dispersed": [0, 9, 8, 1, 7, 6, 2, 5, 4, 3],
    "late": [9, 8, 7, 6, 0, 1, 2, 5, 4, 3],
}

# Table 18.2 of the chapter: the indicator groups of a production vector search system.
INDICATOR_GROUPS: list[tuple[str, str]] = [
    ("Retrieval quality", "Does it bring what is relevant, well ordered? recall@k, MRR, nDCG."),
    ("Task quality", "In a RAG, is the answer good? Faithfulness, relevance, hallucination."),
    ("Latency", "Is it fast? Mean and 99th percentile (the tail)."),
    ("Throughput", "How much does it hold? QPS under concurrent load."),
    ("Memory and cost", "Does it fit, is it sustainable? Footprint, cost per query at fixed "
     "quality."),
    ("Coverage", "How many queries are left without a useful answer?"),
    ("Index health", "Has it degraded? Production recall, age of the last reindex."),
    ("User signal", "Does it really serve? Clicks, conversion, satisfaction."),
]


@dataclass(frozen=True)
class ExperimentConfig:
    n: int = 20_000
    dim: int = 128
    topics: int = 40
    queries: int = 200
    seed: int = 18
    nlist: int = 128
    nprobe: int = 4  # where the chapter's effects (depth, drift) show on this data; 8 saturates
    report_nprobe: int = 8  # listing 18.15
    depths: list[int] = field(default_factory=lambda: [1, 5, 10, 20, 50, 100])
    latency_sizes: list[int] = field(default_factory=lambda: [2_000, 4_000, 8_000, 16_000,
                                                              32_000, 64_000])
    latency_queries: int = 200
    rescore_depths: list[int] = field(default_factory=lambda: [10, 20, 50, 100, 200, 500,
                                                               1000, 2000])
    drift_topics: int = 30
    drift_waves: int = 2


def figure_sizes(cfg: ExperimentConfig) -> dict[str, str]:
    """At which size each file was made, as the command prints it beside the file's name."""
    main = f"n={cfg.n:,} vectors × {cfg.dim} dimensions, {cfg.queries:,} queries"
    lat = ", ".join(f"{n:,}" for n in sorted(cfg.latency_sizes))
    new = cfg.n // 2
    drift = (f"n={cfg.n:,} vectors on {cfg.topics} old topics, then {cfg.drift_waves} wave(s) of "
             f"{new:,} on {cfg.drift_topics} new topics each, n={cfg.n + cfg.drift_waves * new:,} "
             f"at the end, × {cfg.dim} dimensions")
    return {
        "fig18_1_metrics.png": "three rankings of 10 documents, no collection",
        "fig18_2_recall_by_k.png": f"{main}, IVF nlist={cfg.nlist} nprobe={cfg.nprobe}",
        "fig18_3_latency_vs_n.png": f"n={lat} vectors × {cfg.dim} dimensions, "
                                    f"{cfg.latency_queries:,} queries; fixed sizes, not --n",
        "fig18_5_drift.png": f"{drift}, IVF nlist={cfg.nlist} nprobe={cfg.nprobe}",
        "fig18_6_quantization.png": main,
        "fig18_7_binary_rescoring.png": main,
        "table18_1_quantization.md": main,
        "table18_2_indicators.md": "a fixed table, no data",
        "evaluation_report.txt": f"one query against n={cfg.n:,} vectors × {cfg.dim} dimensions, "
                                 f"IVF nlist={cfg.nlist} nprobe={cfg.report_nprobe}",
        "experiments.json": "the configuration and every number above",
    }


class _IVF:
    """faiss IVF-Flat: k-means cells (L2 to the centroids, as listing 18.5), inner-product
    ranking; one thread and a fixed k-means seed so that runs repeat exactly."""

    def __init__(self, train: np.ndarray, nlist: int, seed: int) -> None:
        import faiss

        quantizer = faiss.IndexFlatL2(train.shape[1])
        self.index = faiss.IndexIVFFlat(quantizer, train.shape[1], nlist,
                                        faiss.METRIC_INNER_PRODUCT)
        self.index.cp.seed = seed
        self.index.train(train)
        self.index.add(train)

    def add(self, x: np.ndarray) -> None:
        """New vectors go into the existing cells (listing 18.17: the old centroids)."""
        self.index.add(x)

    def search(self, q: np.ndarray, k: int, nprobe: int) -> np.ndarray:
        self.index.nprobe = nprobe
        return np.asarray(self.index.search(q, k)[1])


def _chapter_metrics(ranking: list[int], relevant: set[int], ks: list[int]) -> dict[str, float]:
    """recall@k (denominator min(|rel|, k)), MRR and nDCG@10 of one ranking, by
    :mod:`recallwatch.metrics` (the chapter's listing 18.1)."""
    from recallwatch.metrics import Qrels, Run, evaluate

    qrels = Qrels.from_dict({"q": {str(d): 1 for d in relevant}})
    run = Run.from_ranked({"q": [str(d) for d in ranking]})
    names = [*(f"Rcap@{k}" for k in ks), "RR", "nDCG@10"]
    result = evaluate(qrels, run, names)
    values = {str(m): float(v) for m, v in result.aggregate.items()}
    out = {f"recall@{k}": values[f"Rcap@{k}"] for k in ks}
    out["MRR"] = values["RR"]
    out["nDCG@10"] = values["nDCG@10"]
    return out


def metrics_demo() -> dict[str, dict[str, float]]:
    """Figure 18.1: same recall@10, different MRR and nDCG@10."""
    return {name: _chapter_metrics(r, set(DEMO_RELEVANT), [10])
            for name, r in DEMO_RANKINGS.items()}


def recall_by_depth(base: np.ndarray, queries: np.ndarray, cfg: ExperimentConfig
                    ) -> dict[int, float]:
    """Figure 18.2: recall@k of an IVF (nprobe fixed) against exact search, by depth k."""
    ivf = _IVF(base, cfg.nlist, cfg.seed)
    truth = ground_truth(base, queries, max(cfg.depths), "ip")
    return {k: float(id_recall(ivf.search(queries, k, cfg.nprobe), truth.ids, k).mean())
            for k in cfg.depths}


def latency_vs_n(cfg: ExperimentConfig) -> dict[str, Any]:
    """Figure 18.3: mean latency of one exact query (faiss flat, one thread) by collection size,
    and the log-log slope (≈ 1: brute force is linear in N)."""
    import faiss

    data = synthetic(max(cfg.latency_sizes), cfg.dim, topics=cfg.topics,
                     queries=cfg.latency_queries, seed=cfg.seed + 3)
    sizes, means, qps = [], [], []
    for n in sorted(cfg.latency_sizes):
        index = faiss.IndexFlatIP(cfg.dim)
        index.add(data.base[:n])
        for q in data.queries[:10]:
            index.search(q[None, :], 10)
        per = np.empty(len(data.queries))
        for i, q in enumerate(data.queries):
            t0 = time.perf_counter()
            index.search(q[None, :], 10)
            per[i] = time.perf_counter() - t0
        sizes.append(n)
        means.append(float(per.mean() * 1e3))
        qps.append(float(1.0 / per.mean()))
    slope = float(np.polyfit(np.log(sizes), np.log(means), 1)[0])
    return {"n": sizes, "latency_ms": means, "qps": qps, "loglog_slope": slope,
            "input_hash": data.hash}


def drift_experiment(cfg: ExperimentConfig) -> dict[str, Any]:
    """Figure 18.5: an IVF trained on the old topics; waves of new topics land in the old cells
    and recall@10 falls; an IVF retrained on the current collection recovers it.

    Queries at each stage are fresh points of the topics the collection holds, in proportion.
    """
    rng = np.random.default_rng(cfg.seed + 5)
    old_centres = rng.standard_normal((cfg.topics, cfg.dim)) * 3
    parts = [topic_collection(old_centres, cfg.n, rng)]
    query_parts = [topic_collection(old_centres, cfg.queries, rng)]
    for _ in range(cfg.drift_waves):
        centres = rng.standard_normal((cfg.drift_topics, cfg.dim)) * 3
        parts.append(topic_collection(centres, cfg.n // 2, rng))
        query_parts.append(topic_collection(centres, cfg.queries, rng))
    ivf = _IVF(parts[0], cfg.nlist, cfg.seed)
    stages: list[dict[str, Any]] = []

    def measure(label: str, index: _IVF, upto: int) -> None:
        base = np.vstack(parts[:upto + 1])
        sizes = np.array([len(p) for p in parts[:upto + 1]], dtype=np.float64)
        counts = np.floor(cfg.queries * sizes / sizes.sum()).astype(int)
        counts[0] += cfg.queries - counts.sum()
        q = np.vstack([qp[:c] for qp, c in zip(query_parts, counts, strict=False)])
        truth = ground_truth(base, q, 10, "ip")
        rec = float(id_recall(index.search(q, 10, cfg.nprobe), truth.ids, 10).mean())
        stages.append({"stage": label, "n": int(base.shape[0]), "recall@10": rec})

    measure("trained on old topics", ivf, 0)
    for wave in range(1, cfg.drift_waves + 1):
        ivf.add(parts[wave])
        measure(f"+ new topics (wave {wave})", ivf, wave)
    retrained = _IVF(np.vstack(parts), cfg.nlist, cfg.seed)
    measure("reindexed (k-means retrained)", retrained, cfg.drift_waves)
    return {"stages": stages, "input_hash": content_hash(*parts, *query_parts)}


def one_query_report(base: np.ndarray, queries: np.ndarray, cfg: ExperimentConfig
                     ) -> dict[str, float]:
    """Listing 18.15: the exact top-10 of one query as truth, the IVF's top-20 as the ranking."""
    truth = ground_truth(base, queries[:1], 10, "ip")
    ranking = _IVF(base, cfg.nlist, cfg.seed).search(queries[:1], 20, cfg.report_nprobe)[0]
    return _chapter_metrics([int(i) for i in ranking], {int(i) for i in truth.ids[0]}, [10, 20])


def _figures(out: Path, res: dict[str, Any], study: QuantizationStudy) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        with atomic_path(out / name) as tmp:
            fig.savefig(tmp, dpi=110)
        plt.close(fig)
        written.append(out / name)

    demo = res["metrics_demo"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    names = list(demo)
    for j, metric in enumerate(["recall@10", "MRR", "nDCG@10"]):
        ax.bar(np.arange(len(names)) + (j - 1) * 0.27, [demo[n][metric] for n in names], 0.27,
               label=metric)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1.1)
    ax.set_title("Same relevant set {0,1,2} in three orders: recall alike, MRR and nDCG not")
    ax.legend(fontsize=8)
    save(fig, "fig18_1_metrics.png")

    depth = res["recall_by_depth"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot([int(k) for k in depth], list(depth.values()), marker="o")
    ax.set_xscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k vs exact")
    ax.set_title(f"Recall by depth: IVF nlist={res['config']['nlist']} "
                 f"nprobe={res['config']['nprobe']}, n={res['config']['n']:,}", fontsize=9)
    save(fig, "fig18_2_recall_by_k.png")

    lat = res["latency_vs_n"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.loglog(lat["n"], lat["latency_ms"], marker="o")
    ax.set_xlabel("N (vectors)")
    ax.set_ylabel("ms per exact query (1 thread)")
    ax.set_title(f"Exact search latency by N, log-log slope {lat['loglog_slope']:.2f}")
    save(fig, "fig18_3_latency_vs_n.png")

    stages = res["drift"]["stages"]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.bar(range(len(stages)), [s["recall@10"] for s in stages],
           color=["tab:blue"] + ["tab:red"] * (len(stages) - 2) + ["tab:green"])
    ax.set_xticks(range(len(stages)), [s["stage"] for s in stages], fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("recall@10")
    ax.set_title(f"Drift (new topics in old cells) and reindex, n={stages[0]['n']:,} → "
                 f"{stages[-1]['n']:,}", fontsize=9)
    save(fig, "fig18_5_drift.png")

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.bar([r.representation for r in study.rows], [r.recall for r in study.rows])
    ax.set_ylabel(f"recall@{study.k} vs float32")
    ax.set_title(f"Quantization: recall against float32, n={res['config']['n']:,}", fontsize=9)
    ax.tick_params(axis="x", labelsize=7)
    save(fig, "fig18_6_quantization.png")

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot([p.R for p in study.rescoring], [p.recall for p in study.rescoring], marker="o",
            label="binary + exact rescoring")
    binary = next(r.recall for r in study.rows if r.representation.startswith("binary"))
    ax.axhline(binary, ls="--", color="gray", label="binary alone")
    ax.set_xscale("log")
    ax.set_xlabel("R (candidates rescored)")
    ax.set_ylabel(f"recall@{study.k}")
    ax.set_title(f"Binary screening + exact rescoring of the top R, n={res['config']['n']:,}",
                 fontsize=9)
    ax.legend(fontsize=8)
    save(fig, "fig18_7_binary_rescoring.png")
    return written


def run_experiments(out: str | Path, cfg: ExperimentConfig | None = None) -> dict[str, Any]:
    """Run every experiment and write its files into ``out``; returns the JSON record."""
    import faiss

    cfg = cfg or ExperimentConfig()
    out = output_dir(out, "--out")
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # one thread: repeatable k-means and honest latency
    # on a terminal, each experiment is a step (redrawn only between them: latency is timed)
    try:
        with steps(6, "bench reference", timed=True) as step:
            step(f"a synthetic collection of {cfg.n:,} vectors")
            data = synthetic(cfg.n, cfg.dim, topics=cfg.topics, queries=cfg.queries,
                             seed=cfg.seed)
            step("quantization: float16, int8, binary and binary with rescoring")
            study = quantization_study(data.base, data.queries, k=10, metric="ip",
                                       depths=cfg.rescore_depths)
            step("metrics and recall by depth")
            by_depth = recall_by_depth(data.base, data.queries, cfg)
            step("latency against the collection's size")
            latency = latency_vs_n(cfg)
            step("drift and reindexing")
            drift = drift_experiment(cfg)
            step("one query's report")
            one = one_query_report(data.base, data.queries, cfg)
        res: dict[str, Any] = {
            "config": asdict(cfg),
            "config_hash": canonical_hash(asdict(cfg)),
            "inputs": {"collection_hash": data.hash, "collection": data.source},
            "metrics_demo": metrics_demo(),
            "recall_by_depth": {str(k): v for k, v in by_depth.items()},
            "latency_vs_n": latency,
            "quantization": study.to_dict(),
            "drift": drift,
            "one_query_report": one,
            "sizes": figure_sizes(cfg),
            "threads": {"faiss_omp": 1, "numpy_blas_env": _blas_env()},
            "versions": {"numpy": np.__version__, "faiss": faiss.__version__},
        }
    finally:
        faiss.omp_set_num_threads(threads)
    files = _figures(out, res, study)
    texts = {
        "table18_1_quantization.md": "# Quantization: bytes per vector and recall\n\n"
        + f"Made at {figure_sizes(cfg)['table18_1_quantization.md']}.\n\n" + study.markdown()
        + "\nint8 counts its float32 per-vector scale (d + 4 bytes), not d alone.\n",
        "table18_2_indicators.md": "# Indicator groups of a production vector search system\n\n"
        "| Group | What it answers "
        "and what is measured |\n|---|---|\n"
        + "".join(f"| {g} | {w} |\n" for g, w in INDICATOR_GROUPS),
        "evaluation_report.txt": "".join(f"{name + ':':<11}{value:.3f}\n" for name, value in
                                         res["one_query_report"].items()),
    }
    for name, text in texts.items():
        write_atomic(out / name, text)
        files.append(out / name)
    res["files"] = sorted(p.name for p in [*files, out / "experiments.json"])
    write_atomic(out / "experiments.json", json.dumps(res, indent=2) + "\n")
    return res


def _blas_env() -> dict[str, str | None]:
    import os

    return {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                           "MKL_NUM_THREADS")}
