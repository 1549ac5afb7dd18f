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
from tests.readonly import read_only

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
    return ["experiment", plan, "--out-dir", str(f["dir"] / f"{name}-out")]


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


# Third wave (issue 35): every case below was an internal error, or was accepted, or wrote where
# it should not; each is now refused with exit 2 and exactly this message.
SPAN = "(999,999 days, about 2,700 years, already reach back past the year 1, where dates begin)"
TREC = "(the labels go to a TREC qrels file, whose fields are separated by whitespace)"


def _jsonl(f: Files, name: str, *records: object) -> str:
    return _write(f, name, "".join(json.dumps(r) + "\n" for r in records))


def _interleaved_with_c(f: Files) -> str:
    return _jsonl(f, "team-c.jsonl",
                  {"query_id": "q1", "shown": [{"id": f"d{i}", "team": t}
                                               for i, t in enumerate("ABAB")], "clicks": []},
                  {"query_id": "q2", "shown": [{"id": "e0", "team": "A"},
                                               {"id": "e1", "team": "C"},
                                               {"id": "e2", "team": "B"}], "clicks": []})


def _spaced_log(f: Files) -> str:
    return _jsonl(f, "spaced.jsonl", {"query_id": "q1", "shown": [{"id": "d1"}, {"id": "doc 2"}],
                                      "clicks": [{"id": "doc 2"}]})


def _spaced_judgments(f: Files) -> str:
    return _jsonl(f, "spaced.judgments.jsonl",
                  {"query_id": "q1", "id": "d1", "grade": 1, "judge": "ana"},
                  {"query_id": "q1", "id": "doc 2", "grade": 3, "judge": "ana"})


def _judgments(f: Files) -> str:
    return _jsonl(f, "two.judgments.jsonl",
                  {"query_id": "q00", "id": "q00_a", "grade": 3, "judge": "ana"},
                  {"query_id": "q00", "id": "q00_a", "grade": 1, "judge": "bo"})


def _dangling_policy(f: Files) -> str:
    folder = f["dir"] / "dangling"
    if not folder.exists():
        folder.mkdir()
        (folder / "policy.yaml").symlink_to(f["dir"] / "outside.yaml")
    return str(folder)


def _unknown_query(f: Files) -> str:
    text = f["results"].read_text(encoding="utf-8").replace('"q05"', '"q5"')
    return _write(f, "unknown-query.jsonl", text)


def _folder(f: Files) -> str:
    return str(f["dir"] / "a-folder")


def _file(f: Files) -> str:
    return str(f["golden"])


def _out_file(f: Files, example: str) -> str:
    return (f"{_folder(f)}: expected a file name, found <a directory> (--out names the file to "
            f"write, e.g. {example})")


def _out_dir(f: Files) -> str:
    return (f"{_file(f)}: expected a directory, found <a file> (--out-dir names the directory "
            "to write the result files into)")


EXACT: dict[str, tuple[Callable[[Files], list[str]], Callable[[Files], str]]] = {
    "prune --keep-days 999999999": (
        lambda f: ["history", "prune", "--history", str(f["db"]), "--keep-days", "999999999"],
        lambda f: "field '--keep-days': expected a whole number of days from 0 to 999,999, found "
                  f"999999999 {SPAN}"),
    "prune --keep-days 999999999 --dry-run": (
        lambda f: ["history", "prune", "--history", str(f["db"]), "--keep-days", "999999999",
                   "--dry-run"],
        lambda f: "field '--keep-days': expected a whole number of days from 0 to 999,999, found "
                  f"999999999 {SPAN}"),
    "monitor --reindex-window-hours 1e300": (
        lambda f: ["ops", "monitor", "--store", _store(f), "--probes", str(f["probes"]),
                   "--reindex-window-hours", "1e300", "--no-history"],
        lambda f: "field '--reindex-window-hours': expected a number of hours from 0 to "
                  f"23,999,976, found 1e+300 {SPAN}"),
    "monitor --window 1e300d": (
        lambda f: ["ops", "monitor", "--store", _store(f), "--probes", str(f["probes"]),
                   "--log", str(f["ab"]), "--window", "1e300d", "--no-history"],
        lambda f: "--window: a window is a positive number of minutes, hours or days, e.g. 30m, "
                  f"24h or 7d, at most 999,999d; found '1e300d' {SPAN}"),
    "monitor --baseline 1e300d": (
        lambda f: ["ops", "monitor", "--store", _store(f), "--probes", str(f["probes"]),
                   "--log", str(f["ab"]), "--baseline", "1e300d", "--no-history"],
        lambda f: "--baseline: a window is a positive number of minutes, hours or days, e.g. "
                  f"30m, 24h or 7d, at most 999,999d; found '1e300d' {SPAN}"),
    "monitor --budget-days 1e300": (
        lambda f: ["ops", "monitor", "--store", _store(f), "--probes", str(f["probes"]),
                   "--budget-days", "1e300", "--no-history"],
        lambda f: "field '--budget-days': expected a number of days above 0, at most 999,999, "
                  f"found 1e+300 {SPAN}"),
    "ingest --reindex-window-hours 1e300": (
        lambda f: ["ingest", str(f["golden"]), "--store", f"lancedb://{f['dir']}/never?table=t",
                   "--reindex-window-hours", "1e300"],
        lambda f: "field '--reindex-window-hours': expected a number of hours from 0 to "
                  f"23,999,976, found 1e+300 {SPAN}"),
    "init on a file": (
        lambda f: ["init", _file(f)],
        lambda f: f"{_file(f)}: expected a folder to write golden.yaml and policy.yaml into, "
                  "found <a file> (give init a folder, or nothing for the current one)"),
    "init over a dangling policy.yaml link": (
        lambda f: ["init", _dangling_policy(f)],
        lambda f: f"{f['dir'] / 'dangling' / 'policy.yaml'}: expected a file or nothing, found "
                  f"<a symbolic link to {f['dir'] / 'outside.yaml'}, which does not exist> (init "
                  "does not write through a link: remove it, or run init with --force to replace "
                  "the link by the template)"),
    "online clicks team C": (
        lambda f: ["online", "clicks", _interleaved_with_c(f)],
        lambda f: f"{f['dir'] / 'team-c.jsonl'}:2: record 'q2': field 'shown[2].team': expected "
                  "one of this log's rankers, A, B (line 1 shows 4 results of these alone, and a "
                  "team draft gives every ranker a result in a list that long), found 'C' (a "
                  "typo, or lines of another experiment in this log?)"),
    "online interleave team C": (
        lambda f: ["online", "interleave", _interleaved_with_c(f)],
        lambda f: f"{f['dir'] / 'team-c.jsonl'}:2: record 'q2': field 'shown[2].team': expected "
                  "one of this log's rankers, A, B (line 1 shows 4 results of these alone, and a "
                  "team draft gives every ranker a result in a list that long), found 'C' (a "
                  "typo, or lines of another experiment in this log?)"),
    "online clicks --out, an id with a space": (
        lambda f: ["online", "clicks", _spaced_log(f), "--out", str(f["dir"] / "c.qrels"),
                   "--min-impressions", "1"],
        lambda f: f"{f['dir'] / 'spaced.jsonl'}:1: record 'q1': field 'shown[2].id': expected an "
                  f"id without whitespace, found 'doc 2' {TREC}"),
    "label export, an id with a space": (
        lambda f: ["label", "export", _spaced_judgments(f), "--out", str(f["dir"] / "j.qrels")],
        lambda f: f"{f['dir'] / 'spaced.judgments.jsonl'}:2: record 'q1 / doc 2': field 'id': "
                  f"expected an id without whitespace, found 'doc 2' {TREC}"),
    "online judge --out, an id with a space": (
        lambda f: ["online", "judge", "--qrels", str(f["dir"] / "h.qrels"),
                   _jsonl(f, "pairs.jsonl", {"query_id": "q1", "query": "a question",
                                             "id": "doc 2", "text": "a passage"}),
                   "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                   "--out", str(f["dir"] / "llm.qrels")],
        lambda f: f"{f['dir'] / 'pairs.jsonl'}:1: field 'id': expected an id without "
                  f"whitespace, found 'doc 2' {TREC}"),
    "gate, a results line for an unknown query": (
        lambda f: ["gate", str(f["golden"]), "--results", _unknown_query(f), "--no-history"],
        lambda f: f"{f['dir'] / 'unknown-query.jsonl'}: no results line for 1 golden query: q05; "
                  "its lines for query ids the golden set does not have: 'q5' (did you mean "
                  "'q05'?) (write {\"query_id\": ID, \"results\": []} for a query that returned "
                  "nothing, and give each line the id of its golden query)"),
    # a folder given where a file is written
    "golden sample --out DIR": (
        lambda f: ["golden", "sample", _write(f, "asked.txt", "one\ntwo\n"), "--out", _folder(f)],
        lambda f: _out_file(f, "golden.yaml")),
    "golden split --out DIR": (
        lambda f: ["golden", "split", str(f["golden"]), "--out", _folder(f)],
        lambda f: _out_file(f, "golden.yaml")),
    "golden migrate --out DIR": (
        lambda f: ["golden", "migrate", str(f["golden"]), "--from", str(f["results"]),
                   "--out", _folder(f)],
        lambda f: _out_file(f, "golden.yaml")),
    "golden generate --out DIR": (
        lambda f: ["golden", "generate", str(f["results"]), "--llm", "http://127.0.0.1:9/v1",
                   "--model", "m", "--out", _folder(f)],
        lambda f: _out_file(f, "golden.yaml")),
    "label pool --out DIR": (
        lambda f: ["label", "pool", str(f["golden"]), "--results", str(f["results"]),
                   "--out", _folder(f)],
        lambda f: _out_file(f, "queue.jsonl")),
    "label agree --out DIR": (
        lambda f: ["label", "agree", _judgments(f), "--out", _folder(f)],
        lambda f: _out_file(f, "adjudicate.jsonl")),
    "label merge --out DIR": (
        lambda f: ["label", "merge", str(f["golden"]), _judgments(f), "--out", _folder(f)],
        lambda f: _out_file(f, "golden.yaml")),
    "label export --out DIR": (
        lambda f: ["label", "export", _judgments(f), "--out", _folder(f)],
        lambda f: _out_file(f, "judged.qrels")),
    "online clicks --out DIR": (
        lambda f: ["online", "clicks", str(f["clicks"]), "--out", _folder(f)],
        lambda f: _out_file(f, "clicks.qrels")),
    "online judge --out DIR": (
        lambda f: ["online", "judge", "--qrels", str(f["dir"] / "h.qrels"),
                   str(f["dir"] / "pairs.jsonl"), "--base-url", "http://127.0.0.1:9/v1",
                   "--model", "m", "--out", _folder(f)],
        lambda f: _out_file(f, "judge.qrels")),
    "ops probes DIR": (
        lambda f: ["ops", "probes", _folder(f), "--golden", str(f["golden"])],
        lambda f: f"{_folder(f)}: expected a file name, found <a directory> (OUT names the file "
                  "to write, e.g. probes.json)"),
    "history copy into a folder": (
        lambda f: ["history", "copy", str(f["db"]), _folder(f)],
        lambda f: f"{_folder(f)}: expected a run history file, found a directory (name a file "
                  f"in it, e.g. {f['dir'] / 'a-folder' / 'history.db'})"),
    # a file given where a folder is written
    "bench quantize --out FILE": (
        lambda f: ["bench", "quantize", "--synthetic", "60x4", "--sample", "5", "--out-dir",
                   _file(f)],
        _out_dir),
    "bench filtered --out FILE": (
        lambda f: ["bench", "filtered", "--store", f"lancedb://{f['dir']}/bf?table=t",
                   "--synthetic", "60x4", "--queries", "5", "--out-dir", _file(f)],
        _out_dir),
    "bench streaming --out FILE": (
        lambda f: ["bench", "streaming", "--store", f"lancedb://{f['dir']}/bs?table=t",
                   "--synthetic", "60x4", "--queries", "5", "--out-dir", _file(f)],
        _out_dir),
    "bench reference --out FILE": (
        lambda f: ["bench", "reference", "--out-dir", _file(f)],
        _out_dir),
    "gate --runs-out FILE": (
        lambda f: ["gate", str(f["golden"]), "--pipeline",
                   _write(f, "pipeline.yaml", f"retrievers: {{r: 'bm25:{f['results']}'}}\n"),
                   "--runs-out", _file(f), "--no-history"],
        lambda f: f"{_file(f)}: expected a directory, found <a file> (--runs-out names the "
                  "directory to write the result files into)"),
}


@pytest.mark.parametrize("case", EXACT)
def test_hostile_input_gets_exactly_this_message(case: str, files: Files) -> None:
    args, message = EXACT[case]
    (files["dir"] / "a-folder").mkdir(exist_ok=True)
    (files["dir"] / "h.qrels").write_text("q1 0 d1 1\n", encoding="utf-8")
    code, out, err = cli(*args(files))
    assert (code, err) == (2, f"Error: {message(files)}\n"), out
    assert not (files["dir"] / "outside.yaml").exists()  # nothing written through a link
    assert not (files["dir"] / "never").exists()  # no store created for a refused ingest
    assert list((files["dir"] / "a-folder").iterdir()) == []


def test_a_read_only_history_and_folder_are_located_errors(files: Files, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(files["db"].read_bytes())
    for _ in range(2):  # runs the prune may remove (the latest of a dataset is always kept)
        assert cli("gate", str(files["golden"]), "--results", str(files["results"]),
                   "--history", str(db))[0] == 0
    with read_only(db):
        code, _, err = cli("history", "prune", "--history", str(db), "--keep-last", "0")
    assert (code, err) == (2, f"Error: {db}: cannot prune the run history: attempt to write a "
                              "readonly database (nothing was removed: pruning needs to write to "
                              "the history file and its folder)\n")
    assert cli("history", "list", "--history", str(db), "--format", "json")[1].count(
        '"run_id"') == 3
    folder = tmp_path / "ro"
    folder.mkdir()
    with read_only(folder):
        code, _, err = cli("init", str(folder))
        assert (code, err) == (2, f"Error: {folder / 'golden.yaml'}: cannot write the file: "
                                  "permission denied (choose a path you may write to)\n")
        code, _, err = cli("init", str(folder / "sub"))
        assert (code, err) == (2, f"Error: {folder / 'sub'}: cannot write the folder: "
                                  "permission denied (choose a path you may write to)\n")
    assert list(folder.iterdir()) == []
    queue = folder / "queue.jsonl"
    queue.write_text(json.dumps({"query_id": "q1", "query": "q", "id": "c1", "text": "t"})
                     + "\n", encoding="utf-8")
    with read_only(folder):  # the judging page refuses before it serves, not at the first grade
        code, _, err = cli("label", "serve", str(queue), "--judge", "ana", "--port", "0")
    assert (code, err) == (2, f"Error: {folder / 'queue.ana.judgments.jsonl'}: cannot write the "
                              "file: permission denied (choose a path you may write to)\n")
