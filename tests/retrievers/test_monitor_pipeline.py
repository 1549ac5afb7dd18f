"""`recallwatch ops monitor --pipeline`: the probes searched through a real pipeline (the dense
LanceDB store fused with BM25 over the corpus), alone or beside the store; what only a store can
measure is said, never faked."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient

from recallwatch.history import History
from recallwatch.ops.pipeline_probes import NEEDS_A_STORE
from recallwatch.ops.probes import load_probes
from recallwatch.retrievers.pipeline import Pipeline, load_pipeline
from recallwatch.web import create_app
from recallwatch.web._monitor import monitor_view
from tests.clirun import cli
from tests.report import helpers as H
from tests.retrievers.conftest import QUERIES, store_uri
from tests.retrievers.test_pipeline_gate import hybrid, write

NEVER_MET_MS = "0.000001"  # no search takes under a nanosecond


def probes_of(kb: Path, tmp: Path, extra: tuple[str, ...] = ()) -> Path:
    """The golden questions (and ``extra`` logged queries) as a probe-set file."""
    args = ["ops", "probes", str(tmp / "probes.json"), "--golden", str(kb / "golden.yaml")]
    if extra:
        write(tmp / "logged.txt", "\n".join(extra))
        args += ["--queries", str(tmp / "logged.txt")]
    code, _, err = cli(*args)
    assert code == 0, err
    return tmp / "probes.json"


def test_a_pipeline_alone_measures_its_probes_and_says_what_needs_a_store(
        kb: Path, tmp_path: Path) -> None:
    pipeline, probes = hybrid(kb, tmp_path), probes_of(kb, tmp_path)
    db = tmp_path / "h.db"
    code, out, err = cli("ops", "monitor", "--pipeline", str(pipeline), "--probes", str(probes),
                         "--k", "3", "--history", str(db), "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["store"] is None and d["retriever"] == f"pipeline:{pipeline}"
    p = d["pipeline"]
    assert p["probes"] == len(QUERIES) and p["failures"] == 0 and p["k"] == 3
    assert set(p["describe"]["retrievers"]) == {"dense", "keyword"}
    # answered: the share the pipeline itself returns a result for, searched here directly
    with Pipeline.from_spec(load_pipeline(pipeline), base_dir=tmp_path) as opened:
        final = opened.search([t for _, t, _ in QUERIES], 3).final
    assert p["answered"] == sum(1 for hits in final if hits) / len(QUERIES) == 1.0
    assert 0 < p["latency_ms"]["p50"] <= p["latency_ms"]["p99"]
    assert NEEDS_A_STORE in d["notes"] and "recall" not in d
    # recorded under the pipeline's name; the dashboard gives it a section of its own
    with History(db, read_only=True) as h:
        (run,) = h.monitor_runs(kind="monitor")
        view = monitor_view(h)
    assert run.store_uri == f"pipeline:{pipeline}" and run.status == "ok"
    assert [s["name"] for s in view["stores"]] == [f"pipeline:{pipeline}"]
    speed = next(c for c in view["stores"][0]["indicators"] if c["group"] == "speed")
    assert speed["field"] == "latency_ms.p99" and speed["shown"].endswith(" ms")
    page = TestClient(base_url="http://127.0.0.1", app=create_app(db)).get("/monitor")
    (heading,) = H.parse(page.text).cssselect("section.store h2")
    assert H.text(heading).startswith(f"Pipeline {pipeline} (1 record")
    text = cli("ops", "monitor", "--pipeline", str(pipeline), "--probes", str(probes), "--k",
               "3", "--no-history")[1]
    assert "answered         100.0% of 4 probes with at least one result" in text
    assert "need a store" in text and text.endswith("OK\n")


def test_beside_a_store_the_latency_cap_is_the_pipelines(kb: Path, tmp_path: Path) -> None:
    pipeline, probes = hybrid(kb, tmp_path), probes_of(kb, tmp_path)
    code, out, err = cli("ops", "monitor", "--store", store_uri(kb), "--pipeline", str(pipeline),
                         "--probes", str(probes), "--k", "2", "--floor", "0", "--min-coverage",
                         "0", "--no-history", "--format", "json", "--max-probe-latency-p99",
                         NEVER_MET_MS)
    assert code == 1, err
    d = json.loads(out)
    assert d["recall"] == 1.0  # the store's measures are all there (an exact store)
    assert d["pipeline"]["answered"] == 1.0
    (alarm,) = d["alarms"]
    assert alarm.startswith(f"pipeline latency p99 is {d['pipeline']['latency_ms']['p99']:.2f} "
                            "ms, over the maximum 1e-06 ms")
    ok = cli("ops", "monitor", "--store", store_uri(kb), "--pipeline", str(pipeline),
             "--probes", str(probes), "--k", "2", "--floor", "0", "--min-coverage", "0",
             "--no-history")
    assert ok[0] == 0, ok[2]
    assert "  pipeline           " in ok[1] and "(retrievers: dense, keyword; top 2)" in ok[1]


def test_unanswered_probes_alarm_under_min_coverage(kb: Path, tmp_path: Path) -> None:
    """BM25 alone answers nothing for words no chunk holds: those probes are unanswered."""
    keyword = write(tmp_path / "keyword.yaml", f'retrievers:\n  keyword: "bm25:'
                                               f'{kb / "corpus.jsonl"}"\ndepth: 5\n')
    probes = probes_of(kb, tmp_path, extra=("xyzzy plugh", "quux frobnicate", "zork grue"))
    texts = load_probes(probes).texts
    with Pipeline.from_spec(load_pipeline(keyword), base_dir=tmp_path) as opened:
        answered = sum(1 for t in texts if opened.search([t], 3).final[0]) / len(texts)
    assert 0 < answered < 1
    code, out, err = cli("ops", "monitor", "--pipeline", str(keyword), "--probes", str(probes),
                         "--k", "3", "--no-history", "--min-coverage", "0.9")
    assert code == 1, err
    assert f"ALARM: the pipeline answers {answered:.1%} of the probes (at least one result), " \
        "under the minimum 90%" in out


def test_what_a_pipeline_cannot_do_is_refused(kb: Path, tmp_path: Path) -> None:
    import numpy as np

    pipeline, probes = hybrid(kb, tmp_path), probes_of(kb, tmp_path)
    vectors = tmp_path / "v.npy"
    np.save(vectors, np.ones((3, 8), dtype=np.float32))
    code, _, err = cli("ops", "monitor", "--pipeline", str(pipeline), "--probes", str(vectors),
                       "--no-history")
    assert code == 2 and "a pipeline searches by text" in err and "--golden" in err
    code, _, err = cli("ops", "monitor", "--probes", str(probes), "--no-history")
    assert code == 2 and "--store URI, a pipeline with --pipeline FILE, or both" in err
    code, _, err = cli("ops", "monitor", "--pipeline", str(pipeline), "--probes", str(probes),
                       "--no-history", "--reindex-below", "0.9")
    assert code == 2 and "--reindex-below rebuilds a store's index: give the store" in err
