"""The pipeline file: what it holds, and every mistake a located error (file, line, field,
expected, found) that the gate turns into exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallwatch.errors import InputError, UsageError
from recallwatch.retrievers import open_retriever
from recallwatch.retrievers.pipeline import FuseSpec, load_pipeline
from tests.clirun import cli


def write(tmp: Path, text: str) -> Path:
    path = tmp / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_full_pipeline_file(tmp_path: Path) -> None:
    spec = load_pipeline(write(tmp_path, """\
retrievers:
  dense: lancedb://./kb?table=chunks
  keyword: bm25:corpus.jsonl
  api:
    spec: https://search.example/api
    api_key_env: SEARCH_TOKEN
depth: 50
fuse:
  method: wsum
  weights: {dense: 0.5, keyword: 0.3, api: 0.2}
rerank: {python: 'my_rerank:score', depth: 20}
top_k: 10
"""))
    assert spec.retrievers == {"dense": "lancedb://./kb?table=chunks",
                               "keyword": "bm25:corpus.jsonl",
                               "api": "https://search.example/api"}
    assert spec.options == {"api": {"api_key_env": "SEARCH_TOKEN"}}
    assert spec.fuse == FuseSpec("wsum", 60, "min-max", {"dense": 0.5, "keyword": 0.3, "api": 0.2})
    assert spec.rerank is not None and spec.rerank.python == "python:my_rerank:score"
    assert (spec.depth, spec.top_k, spec.rerank.depth) == (50, 10, 20)


def test_rrf_has_no_normalisation_by_default_and_comb_methods_min_max(tmp_path: Path) -> None:
    two = "retrievers: {a: 'bm25:c.jsonl', b: 'bm25:d.jsonl'}\n"
    assert load_pipeline(write(tmp_path, two + "fuse: {method: rrf}\n")).fuse == FuseSpec("rrf")
    fuse = load_pipeline(write(tmp_path, two + "fuse: combmnz\n")).fuse
    assert fuse is not None and fuse.norm == "min-max"


@pytest.mark.parametrize(("text", "message"), [
    ("retrievers: {a: 'bm25:c', b: 'bm25:d'}\nfuse: {method: rfr}\n",
     r"pipeline.yaml:2: field 'fuse': unknown fusion method 'rfr' \(did you mean 'rrf'\?\); "
     r"valid: rrf, combsum, combmnz, combmax, wsum"),
    ("retrievers: {a: 'bm25:c', b: 'bm25:d'}\nfuse: {method: wsum}\n",
     r"field 'fuse': wsum needs weights: give one per retriever \(a, b\)"),
    ("retrievers: {a: 'bm25:c', b: 'bm25:d'}\nfuse: {method: wsum, weights: {a: 1, c: 1}}\n",
     r"field 'fuse.weights': weights name unknown retriever\(s\) 'c'"),
    *((f"retrievers: {{a: 'bm25:c', b: 'bm25:d'}}\n"
       f"fuse: {{method: wsum, weights: {{a: 1, b: {w}}}}}\n",
       rf"pipeline.yaml:2: field 'fuse.weights': the weight of 'b' must be a finite number >= 0, "
       rf"found {found}")
      for w, found in (("-1", "-1"), ("-0.5", r"-0\.5"), (".nan", "nan"), (".inf", "inf"),
                       ("-.inf", "-inf"), ("'-1/2'", "'-1/2'"), ("true", "True"),
                       ("null", "None"))),
    ("retrievers: {a: 'bm25:c', b: 'bm25:d'}\nfuse: {method: wsum, weights: {a: 0, b: 0.0}}\n",
     r"pipeline.yaml:2: field 'fuse.weights': the weights are all 0 \(a, b\): give at least one "
     r"retriever a weight above 0"),
    *((f"retrievers: {{a: {{spec: 'python:m:f', timeout: {t}}}}}\n",
       rf"pipeline.yaml:1: field 'retrievers.a.timeout': expected a number of seconds from "
       rf"0.001 to 86400 \(a day\), found {found}")
      for t, found in (("0", "0"), ("-1", "-1"), (".nan", "nan"), (".inf", "inf"),
                       ("1.0e+300", r"1e\+300"), ("'10s'", "'10s'"), ("true", "True"))),
    ("retrievers: {a: 'bm25:c'}\nrerank: {cross_encoder: ce, timeout: 5}\n",
     r"field 'rerank.timeout': expected no timeout for a cross_encoder"),
    ("retrievers: {a: 'bm25:c'}\nrerank: {python: 'm:f', timeout: -5}\n",
     r"field 'rerank.timeout': expected a number of seconds from 0.001 to 86400 \(a day\), "
     r"found -5"),
    ("retrievers: {a: 'bm25:c', b: 'bm25:d'}\nfuse: {method: wsum, weights: {a: 1}}\n",
     r"missing: b"),
    ("retrievers: {a: 'bm25:c', b: 'bm25:d'}\n",
     r"field 'fuse': expected a fusion step for 2 retrievers"),
    ("retrievers: {a: 'bm25:c'}\ndepth: 5\ntop_k: 10\n",
     r"field 'top_k': expected at most depth \(5\), found 10"),
    ("retrievers: {a: 'bm25:c'}\ndepth: 0\n", r"field 'depth': expected a whole number"),
    ("retrievers: {}\n", r"field 'retrievers': expected a mapping \{name: retriever spec\}"),
    ("retrievers: {a: 42}\n", r"field 'retrievers.a': expected a retriever spec"),
    ("retrievers: {a: 'bm25:c'}\nrerank: {python: 'm:f', cross_encoder: ce}\n",
     r"field 'rerank': expected exactly one of python: MODULE:ATTR or cross_encoder: PATH"),
    ("retrievers: {a: 'bm25:c'}\nfusion: {method: rrf}\n",
     r"field 'fusion': unknown key \(did you mean 'fuse'\?\)"),
])
def test_mistakes_are_located(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_pipeline(write(tmp_path, text))


def test_an_unknown_retriever_kind_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown kind 'elastic://x'; a retriever is one of: "
                                          r"bm25:, http:, https:, python:, .*lancedb://"):
        open_retriever("elastic://x", name="a")


def test_a_bad_pipeline_exits_2_with_the_location(tmp_path: Path) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text('{"name": "g", "queries": [{"id": "q", "text": "t", "expected": ["c"]}]}',
                      encoding="utf-8")
    path = write(tmp_path, "retrievers: {a: 'bm25:c', b: 'bm25:d'}\nfuse: {method: rfr}\n")
    code, _, err = cli("gate", str(golden), "--pipeline", str(path), "--no-history")
    assert code == 2 and "pipeline.yaml:2" in err and "valid: rrf" in err
    code, _, err = cli("gate", str(golden), "--pipeline", str(path), "--store", "lancedb://x",
                       "--no-history")
    assert code == 2 and "exactly one of --store URI or --results FILE (or --pipeline FILE)" in err
