"""Ingestion: round trip, idempotence, updates, pruning, rejections and the promotion block,
fingerprints, and resumption after a real SIGKILL."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from recallwatch.embedders.base import (
    FINGERPRINT_META_KEY,
    PROBE_SENTENCES,
    SPEC_META_KEY,
    fingerprint_of,
)
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.errors import EmbedderMismatchError, InputError, Interrupted, UsageError
from recallwatch.formats.corpus import read_corpus
from recallwatch.ops.ingest import (
    IN_PROGRESS_META_KEY,
    REPORTS_META_KEY,
    ingest,
    promotion_blockers,
    resolve_block,
)
from recallwatch.stores.lancedb.store import LanceStore

ROOT = Path(__file__).resolve().parents[2]


def hashed_vectors(texts: Sequence[str]) -> np.ndarray:
    """A deterministic text -> 16-d vector map (the same function in the killed subprocess)."""
    out = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], dtype=np.uint8) for t in texts]
    return np.asarray(out, dtype=np.float32) - 127.5


class Counting(CallableEmbedder):
    def __init__(self) -> None:
        self.embedded: list[str] = []

        def fn(texts: Sequence[str]) -> np.ndarray:
            self.embedded.extend(t for t in texts if t not in PROBE_SENTENCES)
            return hashed_vectors(texts)

        super().__init__(fn, name="hashed", version="1", dimension=16)


def write_corpus(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def records(n: int, *, prefix: str = "c") -> list[dict[str, object]]:
    return [{"id": f"{prefix}{i:05d}", "text": f"fragmento número {i} del convenio",
             "domain": ("legal", "rrhh", "finanzas")[i % 3], "doc_id": f"d{i // 5}"}
            for i in range(n)]


def test_round_trip_with_the_default_model(tmp_path: Path) -> None:
    from recallwatch.embedders.use import USEEmbedder

    src = write_corpus(tmp_path / "kb.jsonl", [
        {"id": "vac", "text": "Los trabajadores tienen 30 días naturales de vacaciones al año.",
         "domain": "rrhh", "label": "SINTESIS_CURADA"},
        {"id": "iva", "text": "El IVA trimestral se declara con el modelo 303.",
         "domain": "finanzas", "kind": "text"},
        {"id": "ret", "text": "Tabla de retenciones del IRPF", "kind": "table",
         "valid_from": "2025-01-01", "valid_to": "2025-12-31"},
    ])
    store = LanceStore(tmp_path / "kb", create=True)
    use = USEEmbedder()
    report = ingest(src, store, use, embedder_spec="use-multilingual")
    assert (len(report.added), report.unchanged, report.rejected) == (3, 0, [])
    assert report.version == store.current_version() != report.version_before
    assert store.get(["vac", "iva", "ret"]) == {c.id: c for c in read_corpus(src).chunks}
    q = use.embed_queries(["¿cuántos días de vacaciones tengo?"])
    assert store.search(q, 1)[0].ids == ["vac"]
    assert store.get_meta(FINGERPRINT_META_KEY) == fingerprint_of(use).to_dict()
    assert store.get_meta(SPEC_META_KEY) == "use-multilingual"


def test_idempotent_updates_and_prune(tmp_path: Path) -> None:
    src = write_corpus(tmp_path / "kb.jsonl", records(50))
    store = LanceStore(tmp_path / "kb", create=True)
    emb = Counting()
    first = ingest(src, store, emb, batch_size=8, commit_every=20)
    assert len(first.added) == 50 and store.count() == 50 and len(emb.embedded) == 50
    assert int(first.version) - int(first.version_before) == 3  # ceil(50 / 20) commits

    emb.embedded.clear()
    again = ingest(src, store, emb)
    assert (again.added, again.updated, again.unchanged) == ([], [], 50)
    assert again.version == first.version and emb.embedded == []  # nothing embedded or written

    changed = records(52)
    changed[7]["text"] = "texto nuevo"
    changed[9]["domain"] = "procedimientos"  # metadata only: still an update
    del changed[3]
    write_corpus(src, changed)
    third = ingest(src, store, emb)
    assert third.updated == ["c00007", "c00009"] and third.added == ["c00050", "c00051"]
    assert sorted(emb.embedded) == sorted(["texto nuevo", changed[8]["text"],
                                           *[r["text"] for r in changed[-2:]]])
    assert store.get(["c00003"]) != {}  # absent from the corpus, kept without --prune
    assert store.ids_since(first.version) == ["c00007", "c00009", "c00050", "c00051"]

    pruned = ingest(src, store, emb, prune=True)
    assert pruned.deleted == ["c00003"] and store.count() == 51
    reports = store.get_meta(REPORTS_META_KEY)
    assert [r["counts"]["added"] for r in reports] == [50, 0, 2, 0]
    assert reports[-1]["counts"]["deleted"] == 1
    with pytest.raises(UsageError, match="at least 1"):
        ingest(src, store, emb, batch_size=0)


def test_rejections_block_promotion_until_resolved(tmp_path: Path) -> None:
    good = records(5)
    src = write_corpus(tmp_path / "kb.jsonl", [*good, {"id": "bad", "text": ""},
                                               {"id": "x", "text": "t", "kind": "tabla"}])
    store = LanceStore(tmp_path / "kb", create=True)
    report = ingest(src, store, Counting())
    assert len(report.added) == 5 and [r.id for r in report.rejected] == ["bad", "x"]
    assert not report.promotable and report.to_dict()["counts"]["rejected"] == 2
    assert "kb.jsonl:6: record 'bad': field 'text'" in report.summary()
    assert "NOT promotable" in report.summary()
    blockers = promotion_blockers(store, report.version)
    assert len(blockers) == 1 and "rejected 2 record(s)" in blockers[0]
    assert "kb.jsonl:6" in blockers[0]
    assert promotion_blockers(store, report.version_before) == []
    with pytest.raises(UsageError, match="written reason"):
        resolve_block(store, report.version, " ")
    resolve_block(store, report.version, "bad and x are drafts; not part of this release")
    assert promotion_blockers(store, report.version) == []
    # the fixed corpus makes a new, clean version
    write_corpus(src, [*good, {"id": "x", "text": "t", "kind": "table"}])
    fixed = ingest(src, store, Counting())
    assert fixed.added == ["x"] and fixed.promotable
    assert promotion_blockers(store, fixed.version) == []


def test_strict_and_all_rejected_are_input_errors(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "kb", create=True)
    src = write_corpus(tmp_path / "kb.jsonl", [*records(3), {"id": "bad", "text": ""}])
    with pytest.raises(InputError, match=r"kb\.jsonl:4: record 'bad': field 'text'"):
        ingest(src, store, Counting(), strict=True)
    write_corpus(src, [{"id": "bad", "text": ""}, {"id": "b2"}])
    with pytest.raises(InputError, match=r"all 2 record\(s\) rejected; nothing ingested"):
        ingest(src, store, Counting())
    assert store.count() == 0


def test_another_embedder_is_refused_before_writing(tmp_path: Path) -> None:
    src = write_corpus(tmp_path / "kb.jsonl", records(4))
    store = LanceStore(tmp_path / "kb", create=True)
    ingest(src, store, Counting())
    other = CallableEmbedder(lambda t: hashed_vectors(t)[:, :8], name="hashed", version="2")
    write_corpus(src, records(6))
    version = store.current_version()
    with pytest.raises(EmbedderMismatchError, match=r"built with hashed@1 d=16 .* used with "
                                                    r"hashed@2 d=8"):
        ingest(src, store, other)
    assert store.current_version() == version and store.count() == 4


_KILLED_SCRIPT = textwrap.dedent("""
    import hashlib, sys, time
    import numpy as np
    from recallwatch.embedders.function import CallableEmbedder
    from recallwatch.ops.ingest import ingest
    from recallwatch.stores.lancedb.store import LanceStore

    def fn(texts):
        time.sleep(0.02)  # a slow model: the kill lands mid-run
        out = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], dtype=np.uint8)
               for t in texts]
        return np.asarray(out, dtype=np.float32) - 127.5

    store = LanceStore(sys.argv[2], create=True)
    ingest(sys.argv[1], store, CallableEmbedder(fn, name="hashed", version="1", dimension=16),
           batch_size=10, commit_every=40)
""")


def test_resumes_after_sigkill_without_duplicates_or_losses(tmp_path: Path) -> None:
    n = 1200
    src = write_corpus(tmp_path / "kb.jsonl", records(n))
    script = tmp_path / "run.py"
    script.write_text(_KILLED_SCRIPT)
    kb = tmp_path / "kb"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = tmp_path / "stderr.txt"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, str(script), str(src), str(kb)], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 120
        # wait until a few groups are committed (each commit is a new manifest), then kill
        while len(list((kb / "chunks.lance" / "_versions").glob("*.manifest"))
                   if (kb / "chunks.lance" / "_versions").exists() else []) < 4:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the ingestion never committed"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

    store = LanceStore(kb)
    partial = store.count()
    assert 0 < partial < n and partial % 40 == 0  # whole groups only
    interrupted = store.get_meta(IN_PROGRESS_META_KEY)
    assert interrupted is not None and interrupted["from_version"] == "0"
    assert any("has not finished" in b for b in promotion_blockers(store, store.current_version()))

    emb = Counting()
    report = ingest(src, store, emb, batch_size=50, commit_every=500)
    assert report.resumed
    assert report.unchanged == partial and len(report.added) == n - partial
    assert len(emb.embedded) == n - partial  # the committed groups were not embedded again
    assert store.get_meta(IN_PROGRESS_META_KEY) is None
    assert promotion_blockers(store, report.version) == []
    # no duplicate id, no lost chunk, every stored chunk is the corpus's
    tbl = store._table()
    assert tbl is not None
    ids = tbl.to_lance().to_table(columns=["id"]).column("id").to_pylist()
    assert len(ids) == len(set(ids)) == n
    want = {c.id: c for c in read_corpus(src).chunks}
    assert store.get(list(want)) == want
    stored = {c: store.search(hashed_vectors([want[c].text]), 1, exact=True)[0].ids[0]
              for c in list(want)[::97]}
    assert all(k == v for k, v in stored.items())  # vectors belong to their own chunks


def test_an_interrupted_ingestion_says_what_it_kept(tmp_path: Path) -> None:
    """Ctrl-C half-way: the committed groups stay, the error counts them, a rerun finishes."""
    n, calls = 120, []

    def fn(texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 20 and not set(texts) & set(PROBE_SENTENCES):
            calls.append(len(texts))
            if len(calls) == 5:  # the first batch of the third group of 40
                raise KeyboardInterrupt
        return hashed_vectors(texts)

    emb = CallableEmbedder(fn, name="hashed", version="1", dimension=16)
    src = write_corpus(tmp_path / "c.jsonl", [{"id": f"c{i:03d}", "text": f"text {i}"}
                                               for i in range(n)])
    store = LanceStore(tmp_path / "kb", create=True)
    with pytest.raises(Interrupted) as err:
        ingest(src, store, emb, batch_size=20, commit_every=40)
    assert store.count() == 80
    assert str(err.value) == (
        f"ingestion into {store.uri} interrupted: 80 of the 120 chunks to write were committed "
        "(2 of 3 commit(s)); the store keeps them, and its new version is not promotable until "
        "an ingestion completes. Run the same ingest again to finish: the chunks already "
        "committed are skipped")
    assert any("has not finished" in b for b in promotion_blockers(store, store.current_version()))
    calls.append(0)  # past the fifth call: no more interruptions
    report = ingest(src, store, emb, batch_size=20, commit_every=40)
    assert (report.unchanged, len(report.added), store.count()) == (80, 40, n)
