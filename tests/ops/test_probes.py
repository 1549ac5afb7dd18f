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


def _drawn_the_documented_way(logged: list[str], exclude: set[str], k: int, seed: int) -> list[str]:
    """The definition: the distinct texts in first-seen order, k of them drawn with
    random.Random(seed).sample, put back in first-seen order."""
    import random

    pool = list(dict.fromkeys(t for t in logged if t not in exclude))
    return sorted(random.Random(seed).sample(pool, min(k, len(pool))), key=pool.index)


@pytest.mark.parametrize(("distinct", "k"), [(8, 3), (15, 15), (500, 40), (3000, 400)])
def test_a_log_file_is_sampled_in_two_passes_with_the_same_draw(
        tmp_path: Path, distinct: int, k: int) -> None:
    import random

    rng = random.Random(distinct)
    logged = [f"query {rng.randrange(distinct)}" for _ in range(distinct * 3)]
    golden_texts = {q.text for q in GOLDEN.queries}
    logged[5:5] = sorted(golden_texts)  # golden queries found in the log are not drawn again
    log = tmp_path / "log.txt"
    log.write_text("".join(f"{t}\n" for t in logged), encoding="utf-8")
    for seed in (0, 7):
        from_file = build_probes(golden=GOLDEN, logged=log, sample=k, seed=seed)
        from_list = build_probes(golden=GOLDEN, logged=logged, sample=k, seed=seed)
        assert from_file == from_list
        expected = _drawn_the_documented_way(logged, golden_texts, k, seed)
        assert from_file.texts == tuple(q.text for q in GOLDEN.queries) + tuple(expected)
    # without a sample, every distinct logged query, in first-seen order
    assert build_probes(logged=log) == build_probes(logged=logged)


def test_sampling_a_log_holds_digests_not_the_log(tmp_path: Path) -> None:
    import tracemalloc

    def peak_while_sampling(lines: int) -> tuple[int, int]:
        log = tmp_path / f"log{lines}.jsonl"
        with log.open("w", encoding="utf-8") as fh:
            for i in range(lines):  # 20 distinct queries, logged over and over
                fh.write(f'{{"text": "{"a fairly long logged question " * 4}{i % 20}"}}\n')
        tracemalloc.start()
        try:
            assert len(build_probes(logged=log, sample=5, seed=1)) == 5
            return tracemalloc.get_traced_memory()[1], log.stat().st_size
        finally:
            tracemalloc.stop()

    small, small_size = peak_while_sampling(10_000)
    big, big_size = peak_while_sampling(80_000)
    # eight times the log (9.4 MB more) adds less than a tenth of it: the log is never held whole
    assert big - small < (big_size - small_size) / 10, (small, big, small_size, big_size)


def test_a_log_file_with_nothing_usable(tmp_path: Path) -> None:
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(InputError, match="a golden set and/or logged queries"):
        build_probes(logged=blank, sample=3)
    assert build_probes(golden=GOLDEN, logged=blank, sample=3).texts == tuple(
        q.text for q in GOLDEN.queries)
    with pytest.raises(InputError, match=r"field 'sample': expected a non-negative integer"):
        build_probes(golden=GOLDEN, logged=blank, sample=-1)
