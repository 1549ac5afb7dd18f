"""Access lists (acl) in the stores: carried through a write and a read, and honoured by the
engine's own filter (SupportsAclFilter) on LanceDB and on pgvector (a real embedded PostgreSQL),
checked against the rule itself (records.may_see) and numpy brute force."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from recallwatch.records import Chunk, may_see
from recallwatch.stores import open_store
from recallwatch.stores.base import SupportsAclFilter, VectorStore
from recallwatch.vectors import cosine_scores
from tests.pg import PostgresServer

CHUNKS = [
    Chunk("public", "everyone's"),
    Chunk("hr-only", "payroll", acl=("hr",)),
    Chunk("legal-or-hr", "contracts", acl=("legal", "hr")),
    Chunk("nobody", "sealed", acl=()),
    # a facet that looks like an acl entry, after the real one would be: never a grant
    Chunk("legal-with-facets", "appeal", facets={"zz": "|hr|", "a": '"__acl__": "|hr|'},
          acl=("legal",)),
    Chunk("quoted", "odd names", acl=("o'neil", "50%_off")),
]
GROUPS: list[tuple[str, ...]] = [(), ("hr",), ("legal",), ("sales",), ("hr", "legal"),
                                 ("o'neil",), ("50%_off",), ("50",)]


@pytest.fixture(params=["lancedb", "pgvector"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    if request.param == "pgvector":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        request.getfixturevalue("pg_env")
        uri = server.uri(f"acl_{abs(hash(tmp_path.name)) % 10**8}")
    else:
        uri = f"lancedb://{tmp_path}/db?table=chunks"
    s = open_store(uri, create=True)
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(CHUNKS), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    s.upsert(CHUNKS, vectors)
    s.vectors_for_test = vectors  # type: ignore[attr-defined]
    yield s
    s.close()


def test_acl_survives_a_write_and_a_read(store: VectorStore) -> None:
    got = store.get([c.id for c in CHUNKS])
    for c in CHUNKS:
        assert got[c.id].acl == c.acl, c.id
        assert dict(got[c.id].facets) == dict(c.facets)


@pytest.mark.parametrize("exact", [True, False])
def test_the_engines_filter_keeps_what_the_groups_may_see(store: VectorStore,
                                                          exact: bool) -> None:
    assert isinstance(store, SupportsAclFilter)
    vectors = store.vectors_for_test  # type: ignore[attr-defined]
    query = np.random.default_rng(3).normal(size=(2, 8)).astype(np.float32)
    for groups in GROUPS:
        hits = store.search_visible(query, len(CHUNKS), groups, exact=exact)
        for row, h in zip(query, hits, strict=True):
            visible = [i for i, c in enumerate(CHUNKS) if may_see(groups, c.acl)]
            scores = cosine_scores(row, vectors[visible])[0]
            order = np.argsort(-scores, kind="stable")
            assert sorted(h.ids) == sorted(CHUNKS[visible[i]].id for i in order), groups
            assert h.ids == [CHUNKS[visible[i]].id for i in order], groups
    # and with the shared metadata filter on top
    hits = store.search_visible(query[:1], 10, ("hr",), filter={"kind": "table"}, exact=exact)
    assert hits[0].ids == []


def test_may_see() -> None:
    assert may_see(None, ("hr",)) and may_see(("x",), None)
    assert may_see(("hr", "x"), ("hr",)) and not may_see(("x",), ("hr",))
    assert not may_see((), ()) and not may_see(("hr",), ())
