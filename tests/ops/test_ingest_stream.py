"""Ingestion reads its corpus file as a stream, twice: the store it leaves (ids, texts, metadata,
vectors bit for bit, report counts) is the one an ingestion of the same chunks given whole (a
Corpus object) leaves, with many commit groups and batches cut; rejections and strict mode say
what they said; a corpus that changes between the two reads is refused with only whole groups
written; and memory does not grow with the corpus as holding it would."""

from __future__ import annotations

import gzip
import json
import os
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.embedders.base import PROBE_SENTENCES
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.errors import InputError
from recallwatch.formats.corpus import read_corpus
from recallwatch.ops import _ingest_read
from recallwatch.ops.ingest import IngestReport, ingest
from recallwatch.stores.lancedb.store import LanceStore
from tests.clirun import cli
from tests.ops.test_ingest import hashed_vectors

DIM = 16


def batch_dependent(texts: Sequence[str]) -> np.ndarray:
    """A text's vector depends on the other texts of its batch (as padding makes it in real
    models): a batch cut elsewhere gives other bytes."""
    v = hashed_vectors(texts)
    return v + v.mean(axis=0, keepdims=True) * 0.5 + len(texts)


def embedder(calls: list[list[str]] | None = None) -> CallableEmbedder:
    def fn(texts: Sequence[str]) -> np.ndarray:
        if calls is not None and not set(texts) & set(PROBE_SENTENCES):
            calls.append(list(texts))
        return batch_dependent(texts)

    return CallableEmbedder(fn, name="batchy", version="1", dimension=DIM)


def rows(n: int, *, rev: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"id": f"c{i:04d}", "text": f"fragmento {i} revisión {rev if i % 4 == 0 else 0}",
         "domain": ("legal", "rrhh", "finanzas")[i % 3], "doc_id": f"d{i // 5}",
         "facets": {"region": "madrid" if i % 2 else "norte"}, "acl": ["staff"] if i % 6 == 0
         else None, "kind": "table" if i % 7 == 0 else "text"} for i in range(n)]
    for r in out:
        if r["acl"] is None:
            del r["acl"]
    return out


BAD = [{"id": "bad", "text": ""}, {"id": "x", "text": "t", "kind": "tabla"},
       {"id": "c0003", "text": "a second c0003"}]  # the last: a duplicate id


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    name = path.name
    if name.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        flat = [{**r, "facets": json.dumps(r["facets"]) if "facets" in r else None,
                 "acl": json.dumps(r["acl"]) if "acl" in r else None} for r in records]
        # small row groups and pieces: the reader crosses many of both
        pq.write_table(pa.Table.from_pylist(flat), path, row_group_size=9)
        return path
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(lines.encode()))
    else:
        path.write_text(lines, encoding="utf-8")
    return path


def contents(store: LanceStore) -> tuple[dict[str, Any], bytes]:
    chunks = {c.id: c for c in store.chunks()}
    ids = sorted(chunks)
    return {i: chunks[i] for i in ids}, store.vectors(ids).tobytes()


def counts(report: IngestReport) -> dict[str, Any]:
    d = report.to_dict()
    return {"counts": d["counts"], "added": d["added"], "updated": d["updated"],
            "deleted": d["deleted"], "rejected": d["rejected"]}


def reference_vectors(chunks: list[Any], commit_every: int, batch_size: int) -> dict[str, bytes]:
    """What the vectors must be, cut independently: groups of the chunks to write, batches
    within each group."""
    out, model = {}, embedder()
    for g in range(0, len(chunks), commit_every):
        group = chunks[g:g + commit_every]
        for b in range(0, len(group), batch_size):
            part = group[b:b + batch_size]
            vectors = model.embed_documents([c.text for c in part])
            for c, v in zip(part, vectors, strict=True):
                out[c.id] = v.tobytes()
    return out


@pytest.mark.parametrize("name", ["kb.jsonl", "kb.jsonl.gz", "kb.parquet"])
def test_a_streamed_ingestion_leaves_the_store_of_the_whole_corpus(tmp_path: Path,
                                                                   name: str) -> None:
    src = write(tmp_path / name, [*rows(40)[:20], *BAD, *rows(40)[20:]])
    streamed, whole = (LanceStore(tmp_path / d, create=True) for d in ("a", "b"))
    opts: dict[str, Any] = {"commit_every": 7, "batch_size": 3}
    calls: list[list[str]] = []
    a = ingest(src, streamed, embedder(calls), **opts)
    b = ingest(read_corpus(src, on_error="collect"), whole, embedder(), **opts)
    assert counts(a) == counts(b) and a.read == b.read == 43 and len(a.added) == 40
    assert [r.reason for r in a.rejected] == [r.reason for r in
                                             read_corpus(src, on_error="collect").rejected]
    assert "first seen at" in a.rejected[2].reason
    assert contents(streamed) == contents(whole)
    assert [len(c) for c in calls] == [3, 3, 1] * 5 + [3, 2]  # groups of 7, batches of 3
    chunks = read_corpus(src, on_error="collect").chunks
    want = reference_vectors(chunks, 7, 3)
    got = streamed.vectors([c.id for c in chunks])
    assert {c.id: v.tobytes() for c, v in zip(chunks, got, strict=True)} == want

    # a second corpus: some records changed, some new, one gone, the rest unchanged
    src = write(tmp_path / name, [*rows(45, rev=1)[1:20], *BAD, *rows(45, rev=1)[20:]])
    a = ingest(src, streamed, embedder(), prune=True, **opts)
    b = ingest(read_corpus(src, on_error="collect"), whole, embedder(), prune=True, **opts)
    assert counts(a) == counts(b)
    assert (len(a.updated), len(a.added), a.deleted) == (9, 5, ["c0000"])
    assert contents(streamed) == contents(whole)


def vectors_for(n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.standard_normal((n, DIM)).astype(np.float32)


@pytest.mark.parametrize("where", ["field", "field.parquet", "npy", "npy.fortran"])
def test_precomputed_vectors_are_written_as_given(tmp_path: Path, where: str) -> None:
    recs = [*rows(30)[:10], *BAD, *rows(30)[10:]]
    v = vectors_for(len(recs))
    if where.startswith("field"):
        recs = [{**r, "vector": v[i].tolist()} for i, r in enumerate(recs)]
    src = write(tmp_path / ("kb.parquet" if where.endswith("parquet") else "kb.jsonl"), recs)
    if where == "npy":
        np.save(tmp_path / "kb.npy", v.astype(np.float64))  # any float type is taken as float32
    elif where == "npy.fortran":  # stored column by column
        np.save(tmp_path / "kb.npy", np.asfortranarray(v))
    streamed, whole = (LanceStore(tmp_path / d, create=True) for d in ("a", "b"))
    calls: list[list[str]] = []
    a = ingest(src, streamed, embedder(calls), precomputed=True, commit_every=7, batch_size=3,
               embedder_spec="batchy")
    # the record at row i of the file has vector i; a duplicate id keeps its first record's
    given = {}
    for i, r in enumerate(recs):
        given.setdefault(r["id"], v[i])
    b = ingest(read_corpus(src, on_error="collect"), whole, embedder(), vectors=given,
               commit_every=7, batch_size=3, embedder_spec="batchy")
    assert calls == []  # nothing embedded
    assert counts(a) == counts(b) and len(a.added) == 30 and len(a.rejected) == 3
    assert contents(streamed) == contents(whole)
    ids = [r["id"] for r in rows(30)]
    np.testing.assert_array_equal(streamed.vectors(ids), np.stack([given[i] for i in ids]))


def test_npy_rows_read_a_block_at_a_time_are_the_files(tmp_path: Path) -> None:
    n, dim = 700, 512  # 256 rows of 512 numbers are read at a time: three blocks
    src = write(tmp_path / "kb.jsonl", [{"id": f"r{i:04d}", "text": f"t{i}"} for i in range(n)])
    v = np.random.default_rng(5).standard_normal((n, dim)).astype(np.float32)
    np.save(tmp_path / "kb.npy", v)
    store = LanceStore(tmp_path / "db", create=True)
    emb = CallableEmbedder(lambda t: np.ones((len(t), dim), dtype=np.float32), name="ones",
                           version="1", dimension=dim)
    ingest(src, store, emb, precomputed=True, commit_every=100, batch_size=64)
    assert store.vectors([f"r{i:04d}" for i in range(n)]).tobytes() == v.tobytes()


def test_bad_vectors_are_located_before_any_bad_record_in_strict_mode(tmp_path: Path) -> None:
    recs: list[dict[str, Any]] = [{**r, "vector": [0.5] * DIM} for r in rows(6)]
    recs[1]["text"] = ""  # a bad record first
    recs[4]["vector"] = [0.5, 1.0]  # then a bad vector: the vectors were always checked first
    src = write(tmp_path / "kb.jsonl", recs)
    store = LanceStore(tmp_path / "db", create=True)
    with pytest.raises(InputError) as err:
        ingest(src, store, embedder(), precomputed=True, strict=True, embedder_spec="batchy")
    assert str(err.value) == (f"{src}:5: record 'c0004': field 'vector': expected 16 finite "
                              "numbers (the dimension of the embedder batchy), found '2 numbers'")
    recs[4]["vector"] = [0.5] * DIM
    write(src, recs)
    with pytest.raises(InputError) as err:
        ingest(src, store, embedder(), precomputed=True, strict=True)
    assert str(err.value) == str(_strict_error(src))
    del recs[0]["vector"]  # a record without a vector, found once a later one has one
    write(src, recs)
    with pytest.raises(InputError, match=r"kb\.jsonl:1: record 'c0000': field 'vector': "
                                         r"expected 16 finite numbers .* found <no vector>"):
        ingest(src, store, embedder(), precomputed=True)
    assert store.count() == 0


def _strict_error(src: Path) -> InputError:
    try:
        read_corpus(src)
    except InputError as exc:
        return exc
    raise AssertionError("read_corpus accepted a bad corpus")


def test_an_npy_row_that_is_not_finite_is_located_across_blocks(tmp_path: Path) -> None:
    n = 9000  # past two blocks of rows checked at once
    src = write(tmp_path / "kb.jsonl", [{"id": f"r{i}", "text": f"t{i}"} for i in range(n)])
    v = vectors_for(n)
    v[8500, 3] = np.inf
    np.save(tmp_path / "kb.npy", v)
    store = LanceStore(tmp_path / "db", create=True)
    with pytest.raises(InputError) as err:
        ingest(src, store, embedder(), precomputed=True)
    assert str(err.value) == (f"{tmp_path / 'kb.npy'}:8501: record 'r8500': expected finite "
                              "numbers, found <NaN or infinity>")
    np.save(tmp_path / "kb.npy", v[:10])
    with pytest.raises(InputError, match=r"expected an array of 9000 rows .* found 'shape "
                                         r"\(10, 16\)'"):
        ingest(src, store, embedder(), precomputed=True)
    assert store.count() == 0


def test_strict_and_rejections_read_as_before(tmp_path: Path) -> None:
    src = write(tmp_path / "kb.jsonl", [*rows(5), *BAD])
    store = LanceStore(tmp_path / "db", create=True)
    with pytest.raises(InputError) as err:
        ingest(src, store, embedder(), strict=True)
    assert str(err.value) == str(_strict_error(src))
    assert store.count() == 0
    write(src, [BAD[0], BAD[1], {"nope": 1}])
    with pytest.raises(InputError, match=r"all 3 record\(s\) rejected; nothing ingested"):
        ingest(src, store, embedder())


# -- a corpus that changes between the two reads ----------------------------------------------

class Rewriting(LanceStore):
    """A store whose first commit is followed by a change to the corpus file."""

    change: Any = None

    def upsert(self, chunks: Sequence[Any], vectors: np.ndarray) -> None:
        super().upsert(chunks, vectors)
        if self.change is not None:
            change, self.change = self.change, None
            change()


def _edit(src: Path, *, keep_stamp: bool) -> None:
    st = os.stat(src)
    text = src.read_text(encoding="utf-8").replace("fragmento 30 ", "fragmento XX ")
    src.write_text(text, encoding="utf-8")
    if keep_stamp:  # same size, same modification time: only the content tells
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_corpus_changed_between_commits_is_refused(tmp_path: Path) -> None:
    src = write(tmp_path / "kb.jsonl", rows(40))
    store = Rewriting(tmp_path / "db", create=True)
    store.change = lambda: _edit(src, keep_stamp=False)  # after the first commit
    with pytest.raises(InputError) as err:
        ingest(src, store, embedder(), commit_every=10, batch_size=4)
    assert str(err.value) == (f"{src}: changed while it was being ingested; run the ingestion "
                              "again (the groups already committed are kept and skipped)")
    assert store.count() == 10  # the first group, whole; nothing after the change
    report = ingest(src, store, embedder(), commit_every=10, batch_size=4)
    assert report.resumed and (report.unchanged, len(report.added)) == (10, 30)
    assert store.get(["c0030"])["c0030"].text.startswith("fragmento XX")


def test_a_changed_record_is_found_even_when_the_file_looks_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write(tmp_path / "kb.jsonl", rows(40))
    written = _ingest_read.FileCorpus.written

    def edited_first(self: _ingest_read.FileCorpus, write_: bytearray) -> Iterator[Any]:
        _edit(src, keep_stamp=True)  # between the reads: same size, same modification time
        yield from written(self, write_)

    monkeypatch.setattr(_ingest_read.FileCorpus, "written", edited_first)
    store = LanceStore(tmp_path / "db", create=True)
    with pytest.raises(InputError, match="changed while it was being ingested"):
        ingest(src, store, embedder(), commit_every=10, batch_size=4)
    assert store.count() == 30  # the groups before the changed record's, whole
    assert store.get(["c0030"]) == {}


def test_through_the_command_a_changed_corpus_exits_2(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    src = write(tmp_path / "kb.jsonl", rows(6))
    v = np.ones((6, 512), dtype=np.float32)  # use-multilingual's dimension
    np.save(tmp_path / "kb.npy", v)
    written = _ingest_read.FileCorpus.written

    def then_changed(self: _ingest_read.FileCorpus, write_: bytearray) -> Iterator[Any]:
        for n, item in enumerate(written(self, write_)):
            if n == 3:  # a new .npy replaces the old one while the second group is read
                np.save(tmp_path / "new.npy", v * 2)
                os.replace(tmp_path / "new.npy", tmp_path / "kb.npy")
            yield item

    monkeypatch.setattr(_ingest_read.FileCorpus, "written", then_changed)
    uri = f"lancedb://{tmp_path / 'db'}?table=chunks"
    code, _, err = cli("ingest", str(src), "--store", uri, "--precomputed", "--embedder",
                       "use-multilingual", "--commit-every", "3", "--no-history")
    assert code == 2, err
    assert f"{src}: changed while it was being ingested; run the ingestion again" in err
    assert "Traceback" not in err
    store = LanceStore(tmp_path / "db")
    assert store.count() == 3  # the first group, whole


# -- memory -------------------------------------------------------------------------------------

def _peak(tmp: Path, n: int, dim: int, *, traced: bool = True) -> int:
    src = write(tmp / f"kb{n}.jsonl", [{"id": f"r{i:06d}", "text": f"t{i}"} for i in range(n)])
    np.save(tmp / f"kb{n}.npy", np.ones((n, dim), dtype=np.float32))
    store = LanceStore(tmp / f"db{n}", create=True)
    emb = CallableEmbedder(lambda t: np.ones((len(t), dim), dtype=np.float32), name="ones",
                           version="1", dimension=dim)
    if traced:
        tracemalloc.start()
    try:
        report = ingest(src, store, emb, precomputed=True, commit_every=100)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(report.added) == n and store.count() == n
    return peak


def test_memory_follows_the_commit_group_not_the_corpus(tmp_path: Path) -> None:
    dim, n = 512, 300
    _peak(tmp_path, 100, dim, traced=False)  # the first one imports the store's libraries
    small, large = _peak(tmp_path, n, dim), _peak(tmp_path, 10 * n, dim)
    held = 9 * n * dim * 4  # what the vectors alone of the 9n more rows would take, held
    # per row only an id, a content hash, a line and the report's id: about 200 B, a tenth of a
    # vector (the corpus and its vectors read whole, as before, grew by 2.5 KB a row here)
    assert large - small < held / 2, (small, large, held)
