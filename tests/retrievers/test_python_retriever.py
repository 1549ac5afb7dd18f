"""``python:MODULE:ATTR``: a plain function, a real LangChain retriever and a real LlamaIndex
retriever (each a subclass of the framework's own BaseRetriever over a real LanceDB store) are
gated end to end; a missing attribute, garbage answers and exceptions are located errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from recallwatch.errors import RetrieverError, UsageError
from recallwatch.retrievers import open_retriever
from tests.clirun import cli
from tests.retrievers.conftest import QUERIES, store_uri

SEARCH = """
from recallwatch.embedders import get_embedder
from recallwatch.stores import open_store

_store = open_store({uri!r})
_embedder = get_embedder()


def hits(query, k):
    found = _store.search(_embedder.embed_queries([query]), k)[0]
    return list(zip(found.ids, (float(s) for s in found.scores)))
"""

LANGCHAIN = SEARCH + """
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


class StoreRetriever(BaseRetriever):
    k: int = 20

    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(page_content="", metadata={{"chunk": cid}})
                for cid, _ in hits(query, self.k)]


retriever = StoreRetriever()
"""

LLAMAINDEX = SEARCH + """
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, TextNode


class StoreRetriever(BaseRetriever):
    def _retrieve(self, query_bundle):
        return [NodeWithScore(node=TextNode(text="", id_=cid, metadata={{"id": cid}}), score=s)
                for cid, s in hits(query_bundle.query_str, 20)]


def make():
    return StoreRetriever()
"""


def module(tmp: Path, name: str, code: str, kb: Path) -> None:
    (tmp / f"{name}.py").write_text(textwrap.dedent(code.format(uri=store_uri(kb))),
                                    encoding="utf-8")


def gate(kb: Path, tmp: Path, retriever: str) -> dict[str, object]:
    pipeline = tmp / "pipeline.yaml"
    pipeline.write_text(f"retrievers:\n  mine: {retriever}\ndepth: 20\n", encoding="utf-8")
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(pipeline),
                         "--no-history", "--format", "json")
    assert code in (0, 1), err
    result: dict[str, object] = json.loads(out)
    return result


def store_tops(kb: Path) -> dict[str, list[str]]:
    code, out, err = cli("gate", str(kb / "golden.yaml"), "--store", store_uri(kb),
                         "--no-history", "--format", "json")
    assert code in (0, 1), err
    return {q["id"]: [t["id"] for t in q["top"]] for q in json.loads(out)["queries"]}


@pytest.mark.parametrize(("name", "code", "spec"), [
    ("plain_fn", SEARCH, "python:plain_fn:hits"),
    ("lc_retriever", LANGCHAIN, "{spec: 'python:lc_retriever:retriever', id_field: chunk}"),
    ("li_retriever", LLAMAINDEX, "python:li_retriever:make"),
])
def test_a_framework_retriever_is_gated_like_the_store(kb: Path, tmp_path: Path, name: str,
                                                       code: str, spec: str) -> None:
    module(tmp_path, name, code, kb)
    result = gate(kb, tmp_path, spec)
    tops = {q["id"]: [t["id"] for t in q["top"]]  # type: ignore[index]
            for q in result["queries"]}  # type: ignore[attr-defined]
    assert tops == store_tops(kb)
    assert result["config"]["pipeline"]["retrievers"]["mine"]["kind"] == "python"  # type: ignore[index]


def opened(tmp: Path, name: str, code: str, spec: str, **options: object) -> list[object]:
    (tmp / f"{name}.py").write_text(textwrap.dedent(code), encoding="utf-8")
    r = open_retriever(spec, name="mine", base_dir=tmp, options=options)
    return r.search([QUERIES[0][1]], 5)  # type: ignore[return-value]


def test_a_missing_attribute_lists_what_the_module_defines(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"module 'miss_mod' has no attribute 'serch'; it "
                                          r"defines: search"):
        opened(tmp_path, "miss_mod", "def search(q, k):\n    return []\n", "python:miss_mod:serch")


def test_a_missing_module_names_where_it_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"cannot import module 'nowhere_mod'.*working directory"):
        open_retriever("python:nowhere_mod:f", base_dir=tmp_path)


@pytest.mark.parametrize(("code", "message"), [
    ("def f(q, k):\n    return 'x1'\n", r"answered query .* with str 'x1': expected a list of "
                                        r"\(chunk id, score\) pairs"),
    ("def f(q, k):\n    return [('x1', 'high')]\n", r"item 1 \(chunk x1\) has score 'high': "
                                                    r"expected a finite number"),
    ("def f(q, k):\n    return [(None, 1.0)]\n", r"item 1 has chunk id None"),
    ("def f(q, k):\n    return [('x1', float('nan'))]\n", r"has score nan"),
    ("def f(q, k):\n    raise KeyError('index offline')\n",
     r"retriever 'mine' \(python:.*:f\) raised KeyError on query .*index offline"),
])
def test_garbage_and_exceptions_are_located_errors(tmp_path: Path, code: str,
                                                   message: str) -> None:
    name = f"bad_{abs(hash(code))}"
    with pytest.raises(RetrieverError, match=message):
        opened(tmp_path, name, code, f"python:{name}:f")


def test_a_document_without_the_id_field_says_which_field_to_set(tmp_path: Path) -> None:
    code = """
    class Doc:
        metadata = {"source": "a.pdf"}

    class R:
        def invoke(self, query):
            return [Doc()]

    r = R()
    """
    with pytest.raises(RetrieverError, match=r"document 1 .* has no metadata field 'id' \(its "
                                             r"metadata: source\).*id_field"):
        opened(tmp_path, "noid_mod", code, "python:noid_mod:r")


def test_an_object_of_no_known_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"is a int, which is none of: a function f\(query, k\)"):
        opened(tmp_path, "int_mod", "r = 3\n", "python:int_mod:r")


def test_a_bad_retriever_in_a_pipeline_exits_2(kb: Path, tmp_path: Path) -> None:
    (tmp_path / "boom_mod.py").write_text("def f(q, k):\n    raise RuntimeError('down')\n",
                                          encoding="utf-8")
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("retrievers:\n  mine: python:boom_mod:f\n", encoding="utf-8")
    code, _, err = cli("gate", str(kb / "golden.yaml"), "--pipeline", str(pipeline),
                       "--no-history")
    assert code == 2
    assert "raised RuntimeError" in err and "down" in err and "Traceback" not in err
