"""A retriever spec where a store URI is (SPEC §6): ``gate``, ``label pool`` and ``ops
calibrate-noise`` take ``--store bm25:…``, ``--store python:…`` or ``--store http(s)://…`` and
search it as the pipeline of that one retriever, with the same results; every other command that
takes ``--store`` needs a vector store itself and refuses a retriever, saying why."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import typer.main

from recallwatch.cli import _options, app
from recallwatch.errors import RetrieverError
from recallwatch.retrievers.pipeline import single_retriever
from tests.clirun import cli
from tests.http_hosts import Answer, Host, Seen, json_answer, redirect, serving
from tests.retrievers.conftest import KEYWORDS

# what differs between two runs of one search: when it ran, how long it took, and what the
# source was called (the pipeline file's path, or the spec given to --store)
_RUN = ("run_id", "created_at", "timings")


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in report.items() if k not in _RUN}
    # the cost's counts stay; its measured times (and their intervals and per-call lists) differ
    out["cost"] = {k: v for k, v in out["cost"].items()
                   if not k.startswith("search_") and (v is None or type(v) is int)}
    out["store"] = {k: v for k, v in out["store"].items() if k != "pipeline"}
    return out


@pytest.fixture
def here(kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding the golden set, the corpus and a retriever module; every path
    given on the command line is relative to it."""
    for name in ("golden.yaml", "corpus.jsonl"):
        (tmp_path / name).write_bytes((kb / name).read_bytes())
    (tmp_path / "keywords_mod.py").write_text(textwrap.dedent(KEYWORDS), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("spec", "name"), [("python:keywords_mod:search", "python"),
                                            ("bm25:corpus.jsonl", "bm25")])
def test_gate_store_retriever_is_its_one_retriever_pipeline(here: Path, spec: str,
                                                            name: str) -> None:
    code, out, err = cli("gate", "golden.yaml", "--store", spec, "--no-history", "--format",
                         "json")
    assert code in (0, 1), err
    (here / "one.yaml").write_text(f"retrievers:\n  {name}: '{spec}'\n", encoding="utf-8")
    code_p, out_p, err_p = cli("gate", "golden.yaml", "--pipeline", "one.yaml", "--no-history",
                               "--format", "json")
    assert (code_p, err_p) == (code, err)
    by_store, by_file = json.loads(out), json.loads(out_p)
    assert comparable(by_store) == comparable(by_file)
    assert (by_store["store"]["pipeline"], by_file["store"]["pipeline"]) == (spec, "one.yaml")
    assert by_store["config_hash"] == by_file["config_hash"]


def test_gate_store_retriever_writes_its_run_files(here: Path) -> None:
    code, _, err = cli("gate", "golden.yaml", "--store", "bm25:corpus.jsonl", "--no-history",
                       "--runs-out", "runs")
    assert code in (0, 1), err
    assert sorted(p.name for p in (here / "runs").iterdir()) == ["bm25.run", "fused.run"]


def test_label_pool_store_retriever_pools_its_one_retriever_pipeline(here: Path) -> None:
    code, out, err = cli("label", "pool", "golden.yaml", "--out", "a.jsonl", "--store",
                         "python:keywords_mod:search", "--depth", "3", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["systems"] == ["store"]
    (here / "one.yaml").write_text("retrievers:\n  mine: python:keywords_mod:search\n",
                                   encoding="utf-8")
    code, _, err = cli("label", "pool", "golden.yaml", "--out", "b.jsonl", "--pipeline",
                       "one.yaml", "--depth", "3")
    assert code == 0, err

    def pairs(name: str) -> list[tuple[str, str]]:
        return [(i["query_id"], i["id"]) for i in map(json.loads, (here / name).read_text(
            encoding="utf-8").splitlines())]

    assert pairs("a.jsonl") == pairs("b.jsonl") != []
    provenance = json.loads((here / "a.jsonl.provenance.json").read_text(encoding="utf-8"))
    assert provenance["systems"]["store"]["retriever"] == "python:keywords_mod:search"


def test_calibrate_noise_store_retriever_reads_the_gate_run(here: Path) -> None:
    code, out, err = cli("ops", "calibrate-noise", "golden.yaml", "--store",
                         "bm25:corpus.jsonl", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["run_id"]


@pytest.mark.parametrize(("args", "why"), [
    (["ingest", "corpus.jsonl"], "writes chunks and their vectors into it"),
    (["ops", "reindex"], "rebuilds its index"),
    (["golden", "check", "golden.yaml"], "resolves the labels against the chunks it holds (or "
                                         "give the corpus file with --corpus)"),
    (["history", "groups", "latest", "--by-chunk", "domain"], "reads its chunks' fields (or give "
                                                              "the corpus file with --corpus)"),
    (["reindex"], "rebuilds its index"),  # an old top-level name: the command it now is
])
@pytest.mark.parametrize("spec", ["python:keywords_mod:search", "bm25:corpus.jsonl",
                                  "https://user:secret@search.example/q"])
def test_a_command_that_needs_a_store_refuses_a_retriever_saying_why(
        here: Path, args: list[str], why: str, spec: str) -> None:
    code, out, err = cli(*args, "--store", spec)
    command = "ops reindex" if args == ["reindex"] else " ".join(
        a for a in args[:2] if not a.endswith((".jsonl", ".yaml")))
    shown = spec.replace("user:secret", "user:***")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"Error: --store {shown!r} is a retriever ({spec.partition(':')[0]}:), not a vector "
        f"store, and `recallwatch {command}` needs a vector store: it {why}. A retriever is "
        "accepted by --store of gate, label pool and ops calibrate-noise, and in a pipeline "
        "file (--pipeline)")


def test_every_command_with_store_says_whether_it_takes_a_retriever() -> None:
    takes: set[str] = set()

    def walk(path: str, cmd: Any) -> None:
        if any("--store" in p.opts for p in cmd.params):
            takes.add(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(f"{path} {name}".strip(), sub)

    walk("", typer.main.get_command(app))
    assert takes == {*_options.RETRIEVER_STORES, *_options.STORE_ONLY}
    assert not set(_options.RETRIEVER_STORES) & set(_options.STORE_ONLY)


# -- http(s)://… given to --store ------------------------------------------------------------------


def _keyword_service(seen: Seen, host: Host) -> Answer:
    """KEYWORDS's search behind the default request and answer of an HTTP retriever."""
    scope: dict[str, Any] = {}
    exec(textwrap.dedent(KEYWORDS), scope)  # the test module's own text
    request = seen.json()
    return json_answer({"hits": [{"id": c, "score": s}
                                 for c, s in scope["search"](request["query"], request["k"])]})


def test_gate_store_http_is_its_one_retriever_pipeline(here: Path) -> None:
    with serving(_keyword_service) as service:
        spec = f"{service.url}/search"
        code, out, err = cli("gate", "golden.yaml", "--store", spec, "--no-history", "--format",
                             "json")
        assert code in (0, 1), err
        (here / "one.yaml").write_text(f"retrievers:\n  http: '{spec}'\n", encoding="utf-8")
        code_p, out_p, err_p = cli("gate", "golden.yaml", "--pipeline", "one.yaml",
                                   "--no-history", "--format", "json")
    assert (code_p, err_p) == (code, err)
    by_store, by_file = json.loads(out), json.loads(out_p)
    assert comparable(by_store) == comparable(by_file)
    assert by_store["config_hash"] == by_file["config_hash"]
    assert {s.path for s in service.seen} == {"/search"}


def test_an_error_of_a_store_retriever_names_store_and_how_to_set_a_setting(here: Path) -> None:
    """--store takes no settings: where a message tells to change one (here redirects:), it
    says where settings go instead, and names --store, not a pipeline file there is not."""
    def moved(seen: Seen, host: Host) -> Answer:
        return redirect(308, f"{host.url}/search") if seen.path == "/old" else \
            _keyword_service(seen, host)

    with serving(moved) as service:
        spec = f"{service.url}/old"
        code, out, err = cli("gate", "golden.yaml", "--store", spec, "--no-history")
    assert (code, out) == (2, "")
    # the queries are sent 4 at a time: whichever answer came first is the one named
    assert re.sub(r"for query '[^']*'", "for query Q", err) == (
        f"Error: --store {spec}: {spec} answered HTTP 308 for query Q "
        f"(retriever 'http'): a redirect to {service.url}/search, not followed (recallwatch "
        "follows a redirect only when asked); if you trust that URL, give it as the "
        "retriever's spec (or set redirects: same-host, which follows the redirects that stay "
        "on the service's host); --store takes a retriever's spec alone, without settings: "
        f"write a pipeline file, retrievers: {{http: {{spec: '{spec}', SETTING: VALUE}}}}, "
        "and give it with --pipeline instead\n")
    assert {s.path for s in service.seen} == {"/old"}  # the redirect was not followed


def test_a_timeout_through_store_says_where_the_timeout_is_set() -> None:
    """The message of a retriever that timed out (its text as the HTTP client words it), as
    the gate shows it for --store and for a pipeline file."""
    spec = "https://search.internal/v1/query"
    timed_out = RetrieverError(
        f"cannot reach {spec} after 4 attempts: timed out (no answer within 10 s), for query "
        "'q' (retriever 'https'); if the service is only slow, raise the retriever's timeout: "
        "(seconds, now 10)")
    assert str(single_retriever(spec).located(timed_out)) == (
        f"--store {spec}: {timed_out}; --store takes a retriever's spec alone, without settings: "
        f"write a pipeline file, retrievers: {{https: {{spec: '{spec}', SETTING: VALUE}}}}, and "
        "give it with --pipeline instead")
    from_file = dataclasses.replace(single_retriever(spec), given_as="pipeline",
                                    source="pipeline.yaml")
    assert str(from_file.located(timed_out)) == f"pipeline pipeline.yaml: {timed_out}"
