"""Capabilities as data: every adapter declares exactly the capabilities it implements, callers
ask for capabilities rather than engines, and the docs' table is generated from the declarations.
(That each declared capability *works* on each adapter is checked against the real engines in
test_conformance.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from recallwatch.stores.base import CAPABILITIES, update_meta
from recallwatch.stores.reference import BEGIN, END, adapter_classes, render

ROOT = Path(__file__).resolve().parents[2]


def protocol_members(capability: type) -> list[str]:
    return [name for name in vars(capability) if not name.startswith("_")]


def implements(cls: type, capability: type) -> bool:
    """Whether ``cls`` itself (not a protocol's stub) defines every member of ``capability``."""
    for name in protocol_members(capability):
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or getattr(owner, "_is_protocol", False):
            return False
    return True


def declared(cls: type) -> set[type]:
    return {cap for cap in CAPABILITIES if cap in cls.__mro__}


@pytest.fixture(scope="module")
def classes() -> dict[str, type]:
    for module in ("psycopg", "qdrant_client", "pymilvus", "chromadb", "faiss", "hnswlib"):
        pytest.importorskip(module)
    return adapter_classes()


def test_every_adapter_declares_exactly_what_it_implements(classes: dict[str, type]) -> None:
    for scheme, cls in classes.items():
        for cap in CAPABILITIES:
            assert (cap in declared(cls)) == implements(cls, cap), (scheme, cap.__name__)


def test_the_declarations_are_the_ones_documented(classes: dict[str, type]) -> None:
    names = {scheme: sorted(c.__name__ for c in declared(cls)) for scheme, cls in classes.items()}
    versioned = ["SupportsContentHashes", "SupportsMetaUpdate", "SupportsReindex", "SupportsSeal",
                 "SupportsVectors"]
    assert names == {
        "chroma": versioned, "faiss": versioned, "hnswlib": versioned, "milvus": versioned,
        "postgresql": sorted([*versioned, "SupportsAclFilter", "SupportsFilteredSearch",
                              "SupportsIndexSize", "SupportsQuantizedSearch",
                              "SupportsVectorScan"]),
        "qdrant": versioned,
        "qdrant+local": versioned,
        "lancedb": ["SupportsAclFilter", "SupportsContentHashes", "SupportsFilteredSearch",
                    "SupportsIndexBuildTime", "SupportsIndexInspection",
                    "SupportsIndexSize",
                    "SupportsIndexVariants", "SupportsMetaUpdate", "SupportsReindex",
                    "SupportsVectorScan", "SupportsVectors"],
    }


def test_every_capability_is_documented_with_its_members() -> None:
    for cap in CAPABILITIES:
        assert cap.__doc__ and protocol_members(cap), cap.__name__
        for name in protocol_members(cap):
            assert getattr(cap, name).__doc__, (cap.__name__, name)


def test_committed_capability_table_is_generated_from_the_declarations(
        classes: dict[str, type]) -> None:
    text = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == render(), (
        "docs/adapters.md is stale: run python -m recallwatch.stores.reference --write")


ENGINE_MODULES = ("chroma", "indexfile", "lancedb",
                  "milvus", "pgvector", "qdrant", "versioned", "versioned_index", "_common")
ENGINE_CLASSES = ("ChromaStore", "IndexFileStore", "LanceStore", "LanceIndex", "MilvusStore",
                  "PgVectorStore", "QdrantStore", "VersionedStore")


def test_no_caller_tests_for_a_method_or_an_engine() -> None:
    # ops, bench and the suite ask for capabilities: no getattr(store, …), no engine module or
    # class (they may name one in a docstring, to say where the mechanics live)
    for folder in ("ops", "bench", "acceptance"):
        for path in sorted((ROOT / "recallwatch" / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                        "getattr", "hasattr") and node.args:
                    assert "store" not in ast.unparse(node.args[0]), where
                if isinstance(node, ast.ImportFrom) and node.module:
                    parts = node.module.split(".")
                    assert not (parts[:2] == ["recallwatch", "stores"] and len(parts) > 2
                                and parts[2] in ENGINE_MODULES), where
                if isinstance(node, ast.Name | ast.alias):
                    name = node.id if isinstance(node, ast.Name) else node.name
                    assert name not in ENGINE_CLASSES, where


class _ThirdPartyStore:
    """A store without SupportsMetaUpdate (as a user's own adapter may be)."""

    def __init__(self) -> None:
        self.meta: dict[str, object] = {}

    def get_meta(self, key: str) -> object:
        return self.meta.get(key)

    def set_meta(self, key: str, value: object) -> None:
        self.meta[key] = value


def test_update_meta_falls_back_to_read_then_write_without_the_capability() -> None:
    store = _ThirdPartyStore()
    assert update_meta(store, "n", lambda old: (old or 0) + 1) == 1  # type: ignore[arg-type]
    assert update_meta(store, "n", lambda old: old + 1) == 2  # type: ignore[arg-type]
    assert store.meta == {"n": 2}
