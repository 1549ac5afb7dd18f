"""The stale-set warning: the history part on both backends (runs of one golden set while the
corpus grows), the log part on real queries (the example knowledge base's questions against its
own log and against Cranfield's)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from recallwatch.errors import InputError
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.formats.policy import StalenessSettings, load_policy
from recallwatch.history import History
from recallwatch.judgments.staleness import (
    check_staleness,
    history_figures,
    log_figures,
    spherical_kmeans,
    warnings_of,
)
from tests.history.helpers import gate_run, golden_set
from tests.judgments.query_logs import write_interaction_log, write_query_list

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


def _on_corpus(g: GoldenSet, count: int):  # type: ignore[no-untyped-def]
    # A results-file run knows no store; give it the chunk count a store run would report.
    r = gate_run(g)
    return replace(r, store={"uri": "lancedb://kb?table=chunks", "version": "1", "count": count})


def test_unchanged_set_on_a_growing_corpus_warns(history_at: str) -> None:
    settings = StalenessSettings(unchanged_runs=4, corpus_growth=0.2)
    g = golden_set(10)
    with History(history_at) as h:
        h.record(_on_corpus(golden_set(10, version="0"), 50))  # an older set: not counted
        for count in (100, 105, 110):
            h.record(_on_corpus(g, count))
        current = _on_corpus(g, 119)
        figures = history_figures(h, current, settings)
        assert figures["unchanged_runs"] == 4 and figures["corpus_then"] == 100
        assert figures["corpus_growth"] == pytest.approx(0.19) and not figures["stale"]
        current = _on_corpus(g, 125)
        figures = history_figures(h, current, settings)
        assert figures["corpus_growth"] == pytest.approx(0.25) and figures["stale"]
        # a changed set starts the count again
        changed = _on_corpus(golden_set(11), 125)
        assert history_figures(h, changed, settings)["unchanged_runs"] == 1
        out = check_staleness(current, g, settings, history=h)
    [line] = warnings_of(out)
    assert "unchanged for 4 runs" in line and "grew 25% (100 -> 125 chunks" in line


def test_a_results_file_run_has_no_corpus_size(history_at: str) -> None:
    g = golden_set(5)
    with History(history_at) as h:
        for _ in range(3):
            h.record(gate_run(g))
        figures = history_figures(h, gate_run(g), StalenessSettings(unchanged_runs=2))
    assert figures["unchanged_runs"] == 4 and figures["corpus_growth"] is None
    assert not figures["stale"]


def test_policy_settings_and_their_defaults(tmp_path: Path) -> None:
    assert load_policy(None).staleness == StalenessSettings()
    p = tmp_path / "p.yaml"
    p.write_text("staleness:\n  unchanged_runs: 3\n  corpus_growth: 0.5\n", encoding="utf-8")
    pol = load_policy(p)
    assert (pol.staleness.unchanged_runs, pol.staleness.corpus_growth) == (3, 0.5)
    assert pol.hash == load_policy(None).hash  # a warning's setting: not part of the rules
    p.write_text("staleness:\n  topics: 0\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"staleness\.topics"):
        load_policy(p)


def test_spherical_kmeans_finds_separated_groups() -> None:
    rng = np.random.default_rng(0)
    axes = np.eye(8)[:3]
    x = np.concatenate([a + 0.05 * rng.normal(size=(30, 8)) for a in axes])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    _, assign = spherical_kmeans(x, np.ones(len(x)), 3)
    groups = [set(assign[i * 30:(i + 1) * 30].tolist()) for i in range(3)]
    assert all(len(s) == 1 for s in groups) and len(set().union(*groups)) == 3


@pytest.mark.slow
def test_the_log_part_on_real_queries(tmp_path: Path, cranfield_dir: Path) -> None:
    from recallwatch.embedders import get_embedder
    from recallwatch.formats import cranfield

    golden = load_golden(KB / "golden.yaml")
    kb_log = tmp_path / "kb.jsonl"
    write_interaction_log(kb_log, [(q.text, q.domain) for q in golden.queries], total=1500,
                          seed=1)
    cran_log = tmp_path / "cran.jsonl"
    write_query_list(cran_log, [(q.text, None) for q in
                                cranfield.read_queries(cranfield_dir / "cran.qry")],
                     total=1500, seed=2)
    embedder, settings = get_embedder(), StalenessSettings()
    own = log_figures(kb_log, golden, embedder, settings)
    # the set's own users: close centroids, nearly every topic covered
    assert own["centroid_distance"] < 0.15 and own["topic_coverage"] > 0.9
    assert not own["stale"]
    # aerodynamics questions in English against a Spanish labour-law set: far, uncovered
    other = log_figures(cran_log, golden, embedder, settings)
    assert other["centroid_distance"] > 0.5 and other["topic_coverage"] < 0.2
    assert other["stale"] and other["uncovered_topics"][0]["share"] > 0
    # a set that kept one domain of four drifts from the same users
    finanzas = replace(golden, queries=tuple(q for q in golden.queries
                                             if q.domain == "finanzas"))
    narrow = log_figures(kb_log, finanzas, embedder, settings)
    assert narrow["topic_coverage"] < own["topic_coverage"] - 0.2 and narrow["stale"]
    [line] = warnings_of({"settings": settings.to_dict(), "history": None, "log": other})
    assert "centroid distance" in line and "topic coverage" in line
