"""Probe sets: built from a golden set and logged queries, versioned by hash, read back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recallwatch.errors import InputError
from recallwatch.formats.golden import GoldenSet
from recallwatch.ops.probes import build_probes, load_probes, read_logged_queries, write_probes

GOLDEN = GoldenSet.from_dict({"name": "g", "queries": [
    {"id": "q1", "text": "vacaciones", "expected": ["c1"]},
    {"id": "q2", "text": "nómina", "expected": ["c2"]}]})


def test_build_is_seeded_deduplicated_and_round_trips(tmp_path: Path) -> None:
    logged = [f"log {i}" for i in range(50)] + ["vacaciones", "log 3"]
    a = build_probes(golden=GOLDEN, logged=logged, sample=10, seed=7)
    b = build_probes(golden=GOLDEN, logged=logged, sample=10, seed=7)
    c = build_probes(golden=GOLDEN, logged=logged, sample=10, seed=8)
    assert a.texts == b.texts and a.hash == b.hash and a.hash != c.hash
    assert a.texts[:2] == ("vacaciones", "nómina") and len(a) == 12
    assert len(set(a.texts)) == len(a.texts)
    path = tmp_path / "p.json"
    write_probes(a, path)
    back = load_probes(path)
    assert back.texts == a.texts and back.hash == a.hash


def test_a_hand_edited_probe_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_probes(build_probes(golden=GOLDEN), path)
    data = json.loads(path.read_text())
    data["probes"].append({"text": "otra"})
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"field 'hash': expected .* edited by hand"):
        load_probes(path)


def test_logged_query_files_and_their_errors(tmp_path: Path) -> None:
    txt = tmp_path / "q.txt"
    txt.write_text("uno\n\n dos \n")
    assert read_logged_queries(txt) == ["uno", "dos"]
    jl = tmp_path / "q.jsonl"
    jl.write_text('{"text": "uno"}\n{"query": "dos"}\n{"q": 3}\n')
    with pytest.raises(InputError, match=r"q.jsonl:3: field 'text': expected a non-empty"):
        read_logged_queries(jl)
    assert load_probes(txt).texts == ("uno", "dos")


def test_logged_queries_go_through_the_structured_loader(tmp_path: Path) -> None:
    # Once read with a bare json.loads: a Latin-1 byte was a UnicodeDecodeError (an internal
    # error) and a duplicate key silently kept the last value.
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"text": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"latin.jsonl:1: expected UTF-8 text"):
        read_logged_queries(latin)
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"text": "uno"}\n{"text": "a", "text": "b"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"twice.jsonl:2: invalid JSON \(duplicate key 'text'\)"):
        read_logged_queries(twice)


def test_vector_probes(tmp_path: Path) -> None:
    good = tmp_path / "v.npy"
    np.save(good, np.eye(3, 8, dtype=np.float64))
    probes = load_probes(good)
    assert probes.vectors is not None and probes.vectors.dtype == np.float32 and len(probes) == 3
    assert probes.describe()["kind"] == "vectors"
    bad = tmp_path / "b.npy"
    np.save(bad, np.arange(4))
    with pytest.raises(InputError, match=r"b.npy: expected a non-empty 2-D float matrix"):
        load_probes(bad)
    with pytest.raises(InputError, match="a golden set and/or logged queries"):
        build_probes()
