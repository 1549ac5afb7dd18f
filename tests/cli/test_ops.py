"""The operations commands through the CLI: exit codes, messages, outputs, a real webhook."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.datasets import synthetic
from recallwatch.cli import app
from recallwatch.formats.policy import load_policy
from recallwatch.history import History
from recallwatch.ops.calibrate import THRESHOLD_META_KEY
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore

runner = CliRunner(env={"COLUMNS": "200"})


def run(*args: str) -> Any:
    return runner.invoke(app, list(args))


def make_store(path: Path, *, indexed: bool) -> tuple[str, Path]:
    """2000 synthetic vectors; indexed: a deliberately weak IVF-PQ (1 list probed, no refine)."""
    data = synthetic(2000, 16, topics=8, queries=40, seed=2)
    params = "index_threshold=1000&index_type=IVF_PQ&nprobes=1&refine_factor=1" if indexed \
        else "index_threshold=1000000"
    uri = f"lancedb://{path}?table=t&{params}"
    LanceStore.open(uri, create=True).upsert(
        [Chunk(id=f"c{i:04d}", text="") for i in range(2000)], data.base)
    probes = path.parent / f"{path.name}-probes.npy"
    np.save(probes, data.queries)
    return uri, probes


@pytest.fixture
def hook() -> Iterator[tuple[str, list[Any]]]:
    got: list[Any] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/alarm", got
    httpd.shutdown()
    httpd.server_close()


def test_monitor_ok_exit_0_and_json(tmp_path: Path) -> None:
    uri, probes = make_store(tmp_path / "exact", indexed=False)
    db = tmp_path / "h.db"
    out = run("ops", "monitor", "--store", uri, "--probes", str(probes), "--history", str(db))
    assert out.exit_code == 0, out.output
    assert "recall@10 vs exact  1.000 (floor 0.95" in out.stdout and out.stdout.endswith("OK\n")
    js = run("ops", "monitor", "--store", uri, "--probes", str(probes), "--history", str(db),
             "--format", "json")
    d = json.loads(js.stdout)
    assert js.exit_code == 0 and d["recall"] == 1.0 and d["alarm"] is False
    assert d["probes"]["kind"] == "vectors" and d["budget"]["runs"] == 2
    assert [r.status for r in History(db).monitor_runs(kind="monitor")] == ["ok", "ok"]


def test_monitor_alarm_exit_1_and_webhook(tmp_path: Path, hook: tuple[str, list[Any]]) -> None:
    uri, probes = make_store(tmp_path / "weak", indexed=True)
    url, got = hook
    out = run("ops", "monitor", "--store", uri, "--probes", str(probes), "--floor", "0.99",
              "--no-history", "--webhook", url)
    assert out.exit_code == 1, out.output
    assert "ALARM: recall@10 vs exact search is" in out.stdout and "under the floor 0.99" in \
        out.stdout
    assert "webhook: HTTP 200" in out.stderr
    assert len(got) == 1 and got[0]["event"] == "recallwatch.monitor.alarm"
    assert got[0]["alarm"] is True and got[0]["recall"] < 0.99


def test_reindex_rollback_and_refusals(tmp_path: Path) -> None:
    uri, probes = make_store(tmp_path / "weak", indexed=True)
    db = str(tmp_path / "h.db")
    refused = run("ops", "reindex", "--store", uri, "--probes", str(probes), "--floor", "1.0",
                  "--history", db)
    assert refused.exit_code == 1, refused.output
    assert "not switched; the current index keeps serving" in refused.stdout
    # any recall and any loss against the live index: this test is about the switch itself
    done = run("ops", "reindex", "--store", uri, "--probes", str(probes), "--floor", "0",
               "--max-recall-loss", "1", "--history", db)
    assert done.exit_code == 0 and "switched" in done.stdout, done.output
    back = run("ops", "rollback", "--store", uri, "--history", db)
    assert back.exit_code == 0 and "previous index restored" in back.stdout
    again = run("ops", "rollback", "--store", uri, "--no-history")
    assert again.exit_code == 2
    assert again.stderr.startswith("Error: ") and "no previous index to roll back" in again.stderr
    kinds = [(r.kind, r.status) for r in History(db).monitor_runs()]
    assert kinds == [("rollback", "ok"), ("reindex", "switched"), ("reindex", "refused")]
    exact, p2 = make_store(tmp_path / "exact", indexed=False)
    none = run("ops", "reindex", "--store", exact, "--probes", str(p2), "--no-history")
    assert none.exit_code == 2 and "has no vector index to rebuild" in none.stderr


def test_bad_probe_files_exit_2_with_a_located_message(tmp_path: Path) -> None:
    uri, _ = make_store(tmp_path / "exact", indexed=False)
    bad = tmp_path / "bad.npy"
    np.save(bad, np.arange(3))
    out = run("ops", "monitor", "--store", uri, "--probes", str(bad), "--no-history")
    assert out.exit_code == 2
    assert f"Error: {bad}: expected a non-empty 2-D float matrix" in out.stderr
    assert "Traceback" not in out.output
    texts = tmp_path / "q.txt"
    texts.write_text("vacaciones\n")
    out = run("ops", "monitor", "--store", uri, "--probes", str(texts), "--no-history")
    assert out.exit_code == 2 and "does not record the embedder that built it" in out.stderr


GOLDEN = """\
name: g
queries:
  - {id: a1, text: a1, expected: [a1-e], domain: A, language: es}
  - {id: a2, text: a2, expected: [a2-e], domain: A, language: en}
  - {id: b1, text: b1, expected: [b1-e], domain: B, language: es}
"""


def results_file(path: Path, ranks: dict[str, int]) -> Path:
    lines = []
    for qid, rank in ranks.items():
        ids = [f"{qid}-x{i}" for i in range(12)]
        ids[rank - 1] = f"{qid}-e"
        lines.append(json.dumps({"query_id": qid, "results": [
            {"id": c, "score": round(0.9 - 0.01 * i, 3)} for i, c in enumerate(ids)]}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibrate_noise_prints_a_valid_policy_snippet(tmp_path: Path) -> None:
    golden = tmp_path / "g.yaml"
    golden.write_text(GOLDEN)
    res = results_file(tmp_path / "r.jsonl", {"a1": 9, "a2": 10, "b1": 7})  # noise 1, 0, 3
    strict = tmp_path / "strict.yaml"  # every unlisted result is irrelevant: all measurable
    strict.write_text("noise_unlisted: irrelevant\n")
    out = run("ops", "calibrate-noise", str(golden), "--results", str(res), "--policy", str(strict),
              "--min-queries", "1")
    assert out.exit_code == 0, out.output
    snippet = tmp_path / "p.yaml"
    snippet.write_text(out.stdout)
    assert load_policy(snippet).noise_ceiling_per_domain == {"A": 0.2, "B": 0.4}
    # by default a domain needs 5 healthy queries: these have 2 and 1, and the output says so
    out = run("ops", "calibrate-noise", str(golden), "--results", str(res), "--policy", str(strict))
    assert out.exit_code == 0, out.output
    assert ("# too few healthy queries, not calibrated (they take the default ceiling below, "
            "0.30): A 2, B 1" in out.stdout)
    assert "\n  default: 0.30  # not calibrated: too few healthy queries\n" in out.stdout
    assert load_policy_text(tmp_path, out.stdout).noise_ceiling_per_domain == {}
    both = run("ops", "calibrate-noise", str(golden))
    assert both.exit_code == 2 and "exactly one of --store URI or --results FILE" in both.stderr


def load_policy_text(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "snippet.yaml"
    path.write_text(text)
    return load_policy(path)


def test_groups_from_a_report_and_from_the_history(tmp_path: Path) -> None:
    golden = tmp_path / "g.yaml"
    golden.write_text(GOLDEN)
    res = results_file(tmp_path / "r.jsonl", {"a1": 9, "a2": 10, "b1": 7})
    db = str(tmp_path / "h.db")
    gate = run("gate", str(golden), "--results", str(res), "--format", "json", "--history", db)
    report = tmp_path / "report.json"
    report.write_text(gate.stdout)
    out = run("history", "groups", str(report), "--by", "domain", "--metric", "recall")
    assert out.exit_code == 0, out.output
    assert "recall by domain" in out.stdout and "overall 1.000 over 3 queries" in out.stdout
    # groups of 2 and 1 queries: no interval, said in words (never a zero-width one)
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith(("A ", "B "))]
    assert len(rows) == 2 and all(r.endswith("  too few queries for an interval") for r in rows)
    assert out.stdout.rstrip().endswith("(an interval needs 5 queries or more: resampling fewer "
                                        "says nothing about the gap)")
    lang = run("history", "groups", "latest", "--history", db, "--by", "language", "--golden",
               str(golden),
               "--format", "json")
    d = json.loads(lang.stdout)
    assert lang.exit_code == 0 and [g["group"] for g in d["groups"]] == ["en", "es"]
    need = run("history", "groups", str(report), "--by", "language")
    assert need.exit_code == 2 and "needs the golden set (--golden FILE)" in need.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    bad = run("history", "groups", str(broken), "--by", "domain")
    assert bad.exit_code == 2 and "expected a gate report JSON" in bad.stderr


def test_probes_command_writes_a_hashed_file(tmp_path: Path) -> None:
    golden = tmp_path / "g.yaml"
    golden.write_text(GOLDEN)
    log = tmp_path / "log.txt"
    log.write_text("\n".join(f"consulta {i}" for i in range(20)))
    out_file = tmp_path / "probes.json"
    out = run("ops", "probes", str(out_file), "--golden", str(golden), "--queries", str(log),
              "--sample", "5", "--seed", "3")
    assert out.exit_code == 0, out.output
    data = json.loads(out_file.read_text())
    assert len(data["probes"]) == 8 and f"hash {data['hash']}" in out.stdout


@pytest.mark.slow
def test_calibrate_threshold_with_the_default_embedder_feeds_monitor_coverage(
        tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    texts = ["Vacaciones: 30 días naturales al año.", "El salario se paga el último día del mes.",
             "La jornada es de 40 horas semanales.", "Las horas extra se compensan con descanso."]
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "text": t}, ensure_ascii=False) + "\n"
                              for i, t in enumerate(texts)))
    golden = tmp_path / "g.yaml"
    golden.write_text("name: g\nqueries:\n"
                      "  - {id: q1, text: '¿Cuántos días de vacaciones tengo?', expected: [c0]}\n"
                      "  - {id: q2, text: '¿Cuándo cobro la nómina?', expected: [c1]}\n"
                      "  - {id: q3, text: '¿Cuántas horas trabajo a la semana?', expected: [c2]}\n")
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    assert run("ingest", str(corpus), "--store", store, "--no-progress").exit_code == 0
    # a third of these three questions answered: stored only with no minimum coverage
    out = run("ops", "calibrate-threshold", str(golden), "--store", store, "--target-precision",
              "0.9",
              "--min-coverage", "0")
    assert out.exit_code == 0, out.output
    assert "chosen threshold" in out.stdout
    assert "3 in-domain: each golden query with its expected chunks removed" in out.stdout
    meta = LanceStore.open(store).get_meta(THRESHOLD_META_KEY)
    (entry,) = meta.values()
    assert entry["fingerprint"]["name"] == "use-multilingual" and entry["target"] == "precision"
    probes = tmp_path / "p.json"
    assert run("ops", "probes", str(probes), "--golden", str(golden)).exit_code == 0
    # four rows: a depth under the row count (at 10, recall would be 1 whatever the index)
    mon = run("ops", "monitor", "--store", store, "--probes", str(probes), "--no-history", "--k",
              "2",
              "--min-coverage", "0", "--format", "json")
    d = json.loads(mon.stdout)
    assert mon.exit_code == 0 and d["threshold"] == pytest.approx(entry["threshold"])
    assert d["coverage"] == pytest.approx(entry["coverage"])  # same golden queries, same store
    # a minimum the chosen point misses: printed, refused, exit 1, the stored one untouched
    strict = run("ops", "calibrate-threshold", str(golden), "--store", store, "--target-precision",
                 "0.9", "--min-coverage", "1.0", "--format", "json")
    if entry["coverage"] < 1.0:
        assert strict.exit_code == 1 and json.loads(strict.stdout)["stored"] is False
        assert LanceStore.open(store).get_meta(THRESHOLD_META_KEY) == meta
        # and the monitor alarms on the same coverage under that minimum
        low = run("ops", "monitor", "--store", store, "--probes", str(probes), "--no-history",
                  "--k", "2", "--min-coverage", "1.0")
        assert low.exit_code == 1 and "ALARM: coverage" in low.stdout
    both = run("ops", "calibrate-threshold", str(golden), "--store", store, "--target-precision",
               "0.9",
               "--target-coverage", "0.9")
    assert both.exit_code == 2 and "at most one of" in both.stderr
    easy = run("ops", "calibrate-threshold", str(golden), "--store", store, "--negatives",
               "off-domain",
               "--dry-run")
    assert easy.exit_code == 0 and "40 off-domain: shipped unrelated-domain list" in easy.stdout
    listed = tmp_path / "off.txt"
    listed.write_text("receta de paella\n")
    mixed = run("ops", "calibrate-threshold", str(golden), "--store", store, "--negatives",
                "in-domain",
                "--unanswerable", str(listed))
    assert mixed.exit_code == 2
    assert mixed.stderr.strip().splitlines() == [
        "Error: the unanswerable queries given are off-domain negatives: use them with negatives "
        "'off-domain' or 'both' (--negatives)"]


def test_every_ops_command_and_option_is_documented() -> None:
    import typer

    from recallwatch.cli import app

    docs = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text("utf-8")
    root = typer.main.get_command(app)
    commands = [(f"ops {name}", cmd) for name, cmd in
                root.commands["ops"].commands.items()  # type: ignore[attr-defined]
                if name not in ("promote", "serve")]  # documented in stores.md, dashboard.md
    commands.append(("history groups",
                     root.commands["history"].commands["groups"]))  # type: ignore[attr-defined]
    assert {name for name, _ in commands} == {
        "ops probes", "ops monitor", "ops reindex", "ops rollback", "ops calibrate-threshold",
        "ops calibrate-noise", "history groups"}
    for name, cmd in commands:
        assert f"recallwatch {name}" in docs, name
        for param in cmd.params:
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in docs, f"{name} {opt} is not in docs/operations.md"


def test_the_monitors_latency_line_states_no_p99_from_too_few_calls() -> None:
    """A p99 of 40 calls is their slowest call or so: the line says it is not stated, and why;
    from enough calls it is stated with its interval."""
    from recallwatch.cli.ops._pipeline import latency_text

    few = latency_text({"p50": 4.0, "p99": 9.5, "mean": 4.2}, {
        "calls": 40, "p50_ci_ms": [3.9, 4.2], "p99_ci_ms": None,
        "p99_missing": "not enough calls for a p99: 40 of 368 needed"})
    assert few == ("p50 4.00 ms [3.90–4.20], p99 not stated (not enough calls for a p99: 40 of "
                   "368 needed) over 40 calls")
    enough = latency_text({"p50": 4.0, "p99": 9.5, "mean": 4.2}, {
        "calls": 368, "p50_ci_ms": [3.9, 4.2], "p99_ci_ms": [8.0, 12.5], "p99_missing": None})
    assert enough == "p50 4.00 ms [3.90–4.20], p99 9.50 ms [8.00–12.50] over 368 calls"
