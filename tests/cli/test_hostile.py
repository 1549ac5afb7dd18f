"""Hostile values against the commands added in the second wave (plan, monitor, online, groups,
golden, label, policies, PostgreSQL URIs, history copy, Ray addresses) and against pipelines and
experiment plans (weights and timeouts that are not ones, user code that calls ``sys.exit``,
retriever specs where a command needs a store): every one is refused with exit 2 and one located
``Error:`` line, never an internal error, a traceback or the exit code the user's code asked for.

In-process (tests/clirun.py) and small, so it runs in the default suite."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from recallwatch.online.simulate import (
    make_collection,
    simulate_ab_log,
    simulate_interleaved_log,
    simulate_log,
)
from tests.cli.test_history import _golden, _results
from tests.clirun import cli
from tests.ops.test_monitor import small_store

Files = dict[str, Path]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    d = tmp_path_factory.mktemp("hostile")
    col = make_collection(6, 12, seed=1)
    weak, strong = col.ranking(1.0, seed=1), col.ranking(0.3, seed=2)
    logs = {"clicks": list(simulate_log(col, 30, seed=2)),
            "ab": list(simulate_ab_log(col, weak, strong, 30, seed=3)),
            "il": list(simulate_interleaved_log(col, weak, strong, 30, seed=4))}
    out: Files = {"dir": d, "golden": _golden(d), "results": _results(d, "ok", set())}
    for kind, records in logs.items():
        out[kind] = d / f"{kind}.jsonl"
        out[kind].write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    store, data = small_store(d / "kb", indexed=False, n=165)
    store.close()
    out["store"] = d / "kb"
    np.save(d / "probes.npy", data.queries[:5])
    out["probes"] = d / "probes.npy"
    out["db"] = d / "h.db"
    assert cli("gate", str(out["golden"]), "--results", str(out["results"]), "--policy",
               str(d / "policy.yaml"), "--history", str(out["db"]))[0] == 0
    return out


def _write(f: Files, name: str, text: str) -> str:
    path = f["dir"] / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _log_with(f: Files, kind: str, name: str, first_line: Callable[[str], str]) -> str:
    lines = f[kind].read_text(encoding="utf-8").splitlines(keepends=True)
    return _write(f, name, first_line(lines[0]) + "".join(lines[1:]))


def _ts(value: str) -> Callable[[str], str]:
    def change(line: str) -> str:
        record = json.loads(line)
        record["ts"] = value
        return json.dumps(record) + "\n"
    return change


DEEP = "[" * 100_000 + "]" * 100_000
LONG_NUMBER = "9" * 5_000
BROKEN_V6 = "postgresql://u:p@[::1/db"


def _store(f: Files) -> str:
    return f"lancedb://{f['store']}?table=t"


def _module(f: Files, name: str, code: str) -> str:
    """A retriever module ``name`` in the test folder (importable from the pipeline's folder)."""
    _write(f, f"{name}.py", code)
    return name


def _pipeline(f: Files, name: str, text: str) -> str:
    return _write(f, f"{name}.yaml", text)


def _gate_pipeline(f: Files, name: str, text: str) -> list[str]:
    return ["gate", str(f["golden"]), "--pipeline", _pipeline(f, name, text), "--no-history",
            "--format", "json"]


def _wsum(weight: str) -> str:
    return f"retrievers: {{a: 'bm25:x.jsonl', b: 'bm25:y.jsonl'}}\nfuse: {{method: wsum, " \
           f"weights: {{a: 1, b: {weight}}}}}\n"


def _user(f: Files, name: str, *, at_import: str = "", in_search: str = "return []") -> str:
    """``python:NAME:search``, a module that runs ``at_import`` and whose search runs
    ``in_search``."""
    _module(f, name, f"import sys\n{at_import}\n\ndef search(q, k):\n    {in_search}\n")
    return f"python:{name}:search"


def _gate_user(f: Files, name: str, **code: str) -> list[str]:
    return _gate_pipeline(f, name, f"retrievers: {{a: '{_user(f, name, **code)}'}}\n")


def _plan(f: Files, name: str, fuse: str) -> list[str]:
    _write(f, "plan_corpus.jsonl", '{"id": "c1", "text": "Uno."}\n')
    plan = _write(f, f"{name}.yaml", f"golden: {f['golden'].name}\ncorpus: plan_corpus.jsonl\n"
                  f"base: {{name: b, retrieval: {{fuse: {fuse}}}}}\n")
    return ["experiment", plan, "--out", str(f["dir"] / f"{name}-out")]


CASES: dict[str, Callable[[Files], list[str]]] = {
    # pipelines: weights that are not weights, timeouts that are not timeouts
    "pipeline wsum weight -1": lambda f: _gate_pipeline(f, "w1", _wsum("-1")),
    "pipeline wsum weight .nan": lambda f: _gate_pipeline(f, "w2", _wsum(".nan")),
    "pipeline wsum weight .inf": lambda f: _gate_pipeline(f, "w3", _wsum(".inf")),
    "pipeline wsum weight -1/2": lambda f: _gate_pipeline(f, "w4", _wsum("-1/2")),
    "pipeline wsum weights all 0": lambda f: _gate_pipeline(
        f, "w5", _wsum("0").replace("a: 1", "a: 0")),
    "pipeline timeout .nan": lambda f: _gate_pipeline(
        f, "t1", "retrievers: {a: {spec: 'python:m:f', timeout: .nan}}\n"),
    "pipeline timeout 0": lambda f: _gate_pipeline(
        f, "t2", "retrievers: {a: {spec: 'python:m:f', timeout: 0}}\n"),
    "pipeline rerank timeout -1": lambda f: _gate_pipeline(
        f, "t3", "retrievers: {a: 'bm25:x.jsonl'}\nrerank: {python: 'm:f', timeout: -1}\n"),
    "plan wsum weight .nan": lambda f: _plan(
        f, "plan_nan", "{method: wsum, weights: {dense: .nan, bm25: 1}}"),
    "plan wsum weight -1": lambda f: _plan(
        f, "plan_neg", "{method: wsum, weights: {dense: -1, bm25: 2}}"),
    # user code that tries to choose the exit code
    "python: sys.exit(0) in search": lambda f: _gate_user(f, "hostile_exit0",
                                                          in_search="sys.exit(0)"),
    "python: SystemExit(5) in search": lambda f: _gate_user(f, "hostile_exit5",
                                                            in_search="raise SystemExit(5)"),
    "python: sys.exit(0) at import": lambda f: _gate_user(f, "hostile_imp0",
                                                          at_import="sys.exit(0)"),
    "python: BaseException in search": lambda f: _gate_user(f, "hostile_base",
                                                            in_search="raise GeneratorExit"),
    "--store python: sys.exit(0)": lambda f: ["gate", str(f["golden"]), "--store", _user(
        f, "hostile_store0", in_search="sys.exit(0)"), "--no-history", "--format", "json"],
    "label pool --store python: sys.exit(0)": lambda f: [
        "label", "pool", str(f["golden"]), "--out", str(f["dir"] / "pool.jsonl"), "--store",
        _user(f, "hostile_pool0", in_search="sys.exit(0)")],
    "ops reindex --store python:": lambda f: ["ops", "reindex", "--store", "python:m:f"],
    "ingest --store bm25:": lambda f: ["ingest", str(f["results"]), "--store", "bm25:c.jsonl"],

    # plan
    "plan --vectors inf": lambda f: ["bench", "plan", "--vectors", "inf", "--dim", "8"],
    "plan --vectors 1e999": lambda f: ["bench", "plan", "--vectors", "1e999", "--dim", "8"],
    "plan --vectors nan": lambda f: ["bench", "plan", "--vectors", "nan", "--dim", "8"],
    "plan --vectors 1e23": lambda f: ["bench", "plan", "--vectors", "1e23", "--dim", "8"],
    "plan --nlist > vectors": lambda f: ["bench", "plan", "--vectors", "100", "--dim", "8",
                                         "--index", "ivf", "--nlist", "1000"],
    "plan --rates DIR": lambda f: ["bench", "plan", "--vectors", "100", "--dim", "8", "--rates",
                                   str(f["dir"])],
    "plan --rates not JSON": lambda f: ["bench", "plan", "--vectors", "100", "--dim", "8",
                                        "--rates", str(f["results"])],
    # monitor
    "monitor --window 1e300d": lambda f: ["ops", "monitor", "--store", _store(f), "--probes",
                                          str(f["probes"]), "--log", str(f["ab"]), "--window",
                                          "1e300d", "--no-history"],
    "monitor --budget-days nan": lambda f: ["ops", "monitor", "--store", _store(f), "--probes",
                                            str(f["probes"]), "--budget-days", "nan",
                                            "--no-history"],
    "monitor --floor nan": lambda f: ["ops", "monitor", "--store", _store(f), "--probes",
                                      str(f["probes"]), "--floor", "nan", "--no-history"],
    "monitor --k past the rows": lambda f: ["ops", "monitor", "--store", _store(f), "--probes",
                                            str(f["probes"]), "--k", "1000000000",
                                            "--no-history"],
    "monitor --webhook file:": lambda f: ["ops", "monitor", "--store", _store(f), "--probes",
                                          str(f["probes"]), "--webhook", "file:///x",
                                          "--no-history"],
    "monitor --webhook [": lambda f: ["ops", "monitor", "--store", _store(f), "--probes",
                                      str(f["probes"]), "--webhook", "http://[::1/x",
                                      "--no-history"],
    "monitor --probes DIR": lambda f: ["ops", "monitor", "--store", _store(f), "--probes",
                                       str(f["dir"]), "--no-history"],
    # online logs
    "clicks ts year 1 +01:00": lambda f: ["online", "clicks", _log_with(
        f, "clicks", "y1.jsonl", _ts("0001-01-01T00:00:00+01:00"))],
    "ab ts 9999 -01:00": lambda f: ["online", "ab", _log_with(
        f, "ab", "y9.jsonl", _ts("9999-12-31T23:59:59-01:00"))],
    "interleave ts 9999 -01:00": lambda f: ["online", "interleave", _log_with(
        f, "il", "y9i.jsonl", _ts("9999-12-31T23:59:59-01:00"))],
    "clicks deep JSON": lambda f: ["online", "clicks", _write(f, "deep.jsonl", DEEP + "\n")],
    "ab 5000 digits": lambda f: ["online", "ab", _log_with(
        f, "ab", "long.jsonl", lambda line: line.replace('"latency_ms": ',
                                                         f'"latency_ms": {LONG_NUMBER}, "x": '))],
    "interleave lone surrogate": lambda f: ["online", "interleave", _log_with(
        f, "il", "sur.jsonl", lambda line: line.replace('"query_id": "', '"query_id": "\\ud800'))],
    "online clicks DIR": lambda f: ["online", "clicks", str(f["dir"])],
    # the gate's own files
    "gate deep results": lambda f: ["gate", str(f["golden"]), "--results",
                                    _write(f, "deep.jsonl", DEEP + "\n"), "--no-history"],
    "gate policy targets nan": lambda f: ["gate", str(f["golden"]), "--results",
                                          str(f["results"]), "--no-history", "--policy",
                                          _write(f, "p.yaml", "targets: {nDCG@10: .nan}\n")],
    "gate policy unknown target": lambda f: ["gate", str(f["golden"]), "--results",
                                             str(f["results"]), "--no-history", "--policy",
                                             _write(f, "p2.yaml", "targets: {nDCG@: 0.5}\n")],
    "gate golden DIR": lambda f: ["gate", str(f["dir"]), "--results", str(f["results"]),
                                  "--no-history"],
    # groups
    "groups --by-chunk facets.": lambda f: ["history", "groups", "latest", "--by-chunk", "facets.",
                                            "--store", _store(f), "--history", str(f["db"])],
    "groups --by nothing": lambda f: ["history", "groups", "latest", "--by", "", "--history",
                                      str(f["db"])],
    # labels and golden sets
    "label export DIR": lambda f: ["label", "export", str(f["dir"]), "--out",
                                   str(f["dir"] / "out.qrels")],
    "label merge DIR": lambda f: ["label", "merge", str(f["golden"]), str(f["dir"]), "--out",
                                  str(f["dir"] / "merged.yaml")],
    "golden split deep": lambda f: ["golden", "split", _write(f, "deep.json", DEEP),
                                    "--out", str(f["dir"] / "split.yaml")],
    # URIs and addresses
    "gate --store broken IPv6": lambda f: ["gate", str(f["golden"]), "--store",
                                           BROKEN_V6 + "?table=t", "--no-history"],
    "history list broken IPv6": lambda f: ["history", "list", "--history", BROKEN_V6],
    "history copy broken IPv6": lambda f: ["history", "copy", str(f["db"]), BROKEN_V6],
    "history show a 50 kB id": lambda f: ["history", "show", "a" * 50_000, "--history",
                                          str(f["db"])],
    "history copy to a DIR": lambda f: ["history", "copy", str(f["db"]), str(f["dir"])],
    "monitor --store bad port": lambda f: ["ops", "monitor", "--store",
                                           "postgresql://u:p@h:99999/db?table=t", "--probes",
                                           str(f["probes"]), "--no-history"],
    "gate --address without ray": lambda f: ["gate", str(f["golden"]), "--results",
                                             str(f["results"]), "--address", "::::",
                                             "--no-history"],
}


@pytest.mark.parametrize("case", CASES)
def test_hostile_input_is_a_located_error(case: str, files: Files) -> None:
    code, out, err = cli(*CASES[case](files))
    assert "Internal error" not in err and "Traceback" not in err + out, err
    assert code == 2, (out, err)
    assert err.startswith("Error: ") and err.count("\n") == 1, err
