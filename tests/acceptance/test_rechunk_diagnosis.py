"""A passage that only moved in a re-chunking is diagnosed as moved by re-chunking, not as a
labelling fault: a handbook of one section on staff matters and three legal ones, re-chunked by
examples/kb/rechunk.py (`merge`: two sections per chunk, the new chunk keeps the first one's
labels), ingested into a real LanceDB store and gated with a content anchor. A chunk that was
always labelled wrong is still a labelling fault."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import Diagnosis
from recallwatch.embedders import get_embedder
from recallwatch.embedders.base import Embedder
from recallwatch.errors import DatasetError
from recallwatch.formats.golden import GoldenSet
from recallwatch.ops.ingest import ingest
from recallwatch.stores import open_store
from tests.acceptance.test_anchors import _rechunker

# one sentence each: a merged chunk has two, too few for the check that compares a chunk's
# halves, and nothing else about it looks cut; before this change it was blamed on labelling
SECTIONS = [
    ("hr", "Holidays are booked through the staff portal and approved by managers."),
    ("legal", "Notice of termination must be given in writing thirty days ahead."),
    ("legal", "Liability for indirect loss is excluded from every agreement."),
    ("legal", "Disputes go to the courts of the city where the company is registered."),
]
QUOTE = "Notice of termination must be given in writing thirty days ahead."
FILLER = [  # they outrank the handbook for the question (shared words), so it misses the top K
    f"Termination notice questions and answers, part {i}. How many days of notice are needed "
    "for the termination of a contract in writing." for i in range(3)]


def _records() -> list[dict[str, Any]]:
    rows = [{"id": f"HANDBOOK/{i + 1}", "doc_id": "HANDBOOK", "text": text, "domain": domain}
            for i, (domain, text) in enumerate(SECTIONS)]
    rows += [{"id": f"FAQ-{i}/1", "doc_id": f"FAQ-{i}", "text": text, "domain": "legal"}
             for i, text in enumerate(FILLER)]
    return rows


def _bag_of_words(texts: list[str]) -> np.ndarray[Any, Any]:
    """A deterministic embedder: hashed word counts, normalised."""
    out = np.zeros((len(texts), 256), np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % 256] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def _store(tmp_path: Path, records: list[dict[str, Any]], embedder: Embedder) -> Any:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    store = open_store(f"lancedb://{tmp_path / 'db'}?table=chunks", create=True)
    ingest(corpus, store, embedder, embedder_spec="callable")
    return store


def _golden() -> GoldenSet:
    return GoldenSet.from_dict({"name": "handbook", "version": "1", "top_k": 3, "queries": [
        {"id": "notice", "text": "How many days of notice for the termination of a contract?",
         "domain": "legal", "expected": [{"doc_id": "HANDBOOK", "quote": QUOTE}]}]})


def _diagnosis(tmp_path: Path, records: list[dict[str, Any]]) -> Diagnosis:
    embedder = get_embedder("callable", fn=_bag_of_words)
    result = run_gate(_golden(), store=_store(tmp_path, records, embedder), embedder=embedder)
    q = result.query("notice")
    assert not q.passed
    (diagnosis,) = [d for d in q.diagnosis if d.chunk_id is not None]
    return diagnosis


def test_a_passage_moved_into_a_chunk_of_another_domain_is_blamed_on_the_rechunking(
        tmp_path: Path) -> None:
    merged = _rechunker().rechunk(_records(), "merge")
    holder = next(r for r in merged if QUOTE in r["text"])
    assert holder["domain"] == "hr" and holder["id"] == "HANDBOOK/m1"  # kept h1's label
    d = _diagnosis(tmp_path, merged)
    assert d.chunk_id == "HANDBOOK/m1"
    assert d.cause == "chunking", d.summary
    text = " ".join(d.summary.split())
    assert "moved by re-chunking: the expected passage 'Notice of termination" in text
    assert "now lies in HANDBOOK/m1 after" in text and "characters of other text" in text
    assert "labelled domain 'hr', the query's is 'legal', as are 1 other chunk(s)" in text
    # the domain mismatch is not also reported as a labelling fault
    assert "labelling" not in d.evidence["also"]


def test_a_chunk_always_labelled_wrong_is_still_a_labelling_fault(tmp_path: Path) -> None:
    records = _records()
    for row in records[1:4]:  # the legal sections, all mislabelled; no re-chunking
        row["domain"] = "hr"
    d = _diagnosis(tmp_path, records)
    assert d.chunk_id == "HANDBOOK/2"
    assert d.cause == "labelling", d.summary
    assert "labelled domain 'hr', the query's domain is 'legal'" in d.summary
    assert "moved by re-chunking" not in d.summary


def test_the_same_passage_before_the_rechunking_fails_for_the_embedding(
        tmp_path: Path) -> None:
    # control: on the original chunks the passage is in a chunk of the query's domain, and the
    # miss is the ranking's (the filler outranks it), named as such
    d = _diagnosis(tmp_path, _records())
    assert d.chunk_id == "HANDBOOK/2" and d.cause == "embedding", d.summary


def test_an_id_the_rechunking_renamed_is_a_dataset_error_that_names_the_way_out(
        tmp_path: Path) -> None:
    # without an anchor the gate cannot know where the passage went: it refuses the golden set
    # before searching, and says how to turn ids into anchors
    embedder = get_embedder("callable", fn=_bag_of_words)
    store = _store(tmp_path, _rechunker().rechunk(_records(), "merge"), embedder)
    golden = GoldenSet.from_dict({"name": "handbook", "version": "1", "top_k": 3, "queries": [
        {"id": "notice", "text": "notice", "domain": "legal", "expected": ["HANDBOOK/2"]}]})
    with pytest.raises(DatasetError) as err:
        run_gate(golden, store=store, embedder=embedder)
    text = " ".join(str(err.value).split())
    assert "1 expected chunk id(s) do not exist in" in text and "HANDBOOK/2 (query notice)" in text
    assert "after a re-chunking, which renames chunks" in text
    assert "recallwatch golden migrate GOLDEN --from OLD_CORPUS --to NEW_CORPUS" in text
