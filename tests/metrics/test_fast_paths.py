"""The grid path (query blocks, packed document ids) against the general path it short-cuts.

Every run the grid path takes must give, array for array, the ranking the general path gives, and
the same duplicate errors; the packed ids must keep equality and byte order exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.errors import InputError
from recallwatch.formats.arrow import strings
from recallwatch.metrics import Qrels, Run, evaluate
from recallwatch.metrics._keys import NO_MATCH, DocKeys, pack_ids, query_blocks
from recallwatch.metrics._ranking import rank_run

# short, 8-byte, 9-to-16-byte (two words), over 16 bytes (dictionary codes), non-ASCII
IDS = st.sampled_from(
    ["d1", "d2", "d10", "D1", "a", "z", "abcdefgh", "abcdefgh1", "abcdefgh2", "0123456789abcdef",
     "0123456789abcdeg", "é", "éa", "a-long-document-identifier-1", "a-long-document-identifier-2"]
)
SCORES = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.5])


@st.composite
def collections(draw: Any) -> tuple[Qrels, list[tuple[str, str, float]]]:
    n_queries = draw(st.integers(1, 5))
    qids = [f"q{i}" for i in range(n_queries)]
    judged = {q: draw(st.dictionaries(IDS, st.integers(-1, 3), min_size=1, max_size=6))
              for q in qids}
    rows: list[tuple[str, str, float]] = []
    for q in draw(st.lists(st.sampled_from([*qids, "unjudged"]), unique=True, max_size=6)):
        docs = draw(st.lists(IDS, unique=True, max_size=8))
        rows.extend((q, d, draw(SCORES)) for d in docs)
    return Qrels.from_dict(judged), rows


def _run(rows: list[tuple[str, str, float]]) -> Run:
    return Run(strings([r[0] for r in rows]), strings([r[1] for r in rows]),
               np.array([r[2] for r in rows], dtype=np.float64))


def _same_ranking(qrels: Qrels, run: Run) -> None:
    fast, general = rank_run(qrels, run), rank_run(qrels, run, general=True)
    assert fast.query_ids == general.query_ids
    assert fast.missing_from_run == general.missing_from_run
    assert fast.not_judged == general.not_judged
    for name in ("qidx", "rank", "grade", "judged_qidx", "judged_grade"):
        a, b = getattr(fast.ranking, name), getattr(general.ranking, name)
        if name in ("qidx", "rank", "grade"):  # the same rows; the grid path sorts by query
            order_a = np.lexsort((fast.ranking.rank, fast.ranking.qidx))
            order_b = np.lexsort((general.ranking.rank, general.ranking.qidx))
            a, b = a[order_a], b[order_b]
        assert a.tolist() == b.tolist(), name


@settings(max_examples=300, deadline=None)
@given(collections())
def test_grid_path_ranks_as_the_general_path(data: tuple[Qrels, list[Any]]) -> None:
    qrels, rows = data
    if not rows:
        return
    run = _run(rows)
    assert run.grid is not None  # rows built query by query: the grid path applies
    _same_ranking(qrels, run)
    measures = ["P@3", "R@5", "RR", "nDCG@5", "AP", "Rprec", "Success@2", "Rcap@4"]
    fast = evaluate(qrels, run, measures)
    assert all(np.isfinite(v).all() for v in fast.per_query.values())


@settings(max_examples=150, deadline=None)
@given(collections(), st.randoms(use_true_random=False))
def test_shuffled_runs_take_the_general_path_and_agree(
    data: tuple[Qrels, list[Any]], rnd: Any
) -> None:
    qrels, rows = data
    if len(rows) < 2:
        return
    grouped = evaluate(qrels, _run(rows), ["AP", "nDCG@5", "P@3"])
    rnd.shuffle(rows)
    shuffled = evaluate(qrels, _run(rows), ["AP", "nDCG@5", "P@3"])
    for m in grouped.measures:
        assert shuffled.per_query[m].tolist() == grouped.per_query[m].tolist()


def test_a_query_in_two_places_is_not_a_block() -> None:
    assert query_blocks(strings(["a", "a", "b", "a"])) is None
    blocks = query_blocks(strings(["a", "a", "b", "c", "c", "c"]))
    assert blocks is not None and blocks.starts.tolist() == [0, 2, 3, 6]
    assert blocks.names.to_pylist() == ["a", "b", "c"] and not blocks.uniform


@pytest.mark.parametrize("rows", [
    [("q", "d1", 1.0), ("q", "d2", 1.0), ("q", "d1", 0.5)],  # a uniform grid
    [("p", "x", 1.0), ("q", "d1", 1.0), ("q", "d2", 1.0), ("q", "d1", 0.5)],  # a padded grid
    [("q", "a-long-document-identifier-1", 1.0), ("q", "a-long-document-identifier-1", 0.5)],
])
def test_duplicates_are_found_on_the_grid_with_the_general_message(rows: list[Any]) -> None:
    with pytest.raises(InputError, match="duplicate document"):
        _run(rows)


def test_a_duplicate_in_a_trec_file_names_both_lines(tmp_path: Any) -> None:
    path = tmp_path / "run"
    path.write_text("q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\nq2 Q0 d1 1 1 t\nq2 Q0 d1 2 0 t\n")
    with pytest.raises(InputError, match=r":4: .*duplicate document 'd1' in query 'q2' \(also "
                                          r"on line 3\)"):
        Run.from_trec(path, cache=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                        min_size=1, max_size=16)
                .filter(lambda t: len(t.encode()) <= 16), min_size=1, max_size=40))
def test_packed_ids_keep_equality_and_byte_order(ids: list[str]) -> None:
    packed = pack_ids(strings(ids))
    assert packed is not None
    words = packed[0]
    keys = [tuple(int(w[i]) for w in words) for i in range(len(ids))]
    raw = [i.encode() for i in ids]
    for a in range(len(ids)):
        for b in range(len(ids)):
            assert (keys[a] == keys[b]) == (raw[a] == raw[b])
            assert (keys[a] < keys[b]) == (raw[a] < raw[b])


def test_ids_that_do_not_pack() -> None:
    assert pack_ids(strings(["a" * 17])) is None  # longer than two words
    assert pack_ids(strings(["a\0", "a"])) is None  # a NUL would make "a\0" pack as "a"
    keys = DocKeys.of(strings(["abc", "abcdefghijklmnop"]))
    looked_up = keys.lookup(strings(["abc", "abcdefghijklmnopq", "a\0", "zz"]))
    assert [int(looked_up[0][i]) for i in (1, 2)] == [int(NO_MATCH)] * 2
    assert looked_up[0][0] == keys.words[0][0] and looked_up[0][3] != keys.words[0][0]


def test_ids_packed_near_the_end_of_their_buffer() -> None:
    # the last ids' 8-byte windows would run past the data: they are packed one by one
    ids = ["x", "ab", "abcdefghij", "é", "z"]
    sliced = strings(["pad", *ids])[1:]  # an array with an offset into its buffers
    for array in (strings(ids), sliced):
        packed = pack_ids(array)
        assert packed is not None
        got = [b"".join(int(w[i]).to_bytes(8, "big") for w in packed[0]).rstrip(b"\0")
               for i in range(len(ids))]
        assert got == [i.encode() for i in ids]


def test_large_string_ids_pack_alike() -> None:
    small = strings(["d1", "d22", "d333"])
    large = small.cast(pa.large_string())
    a, b = pack_ids(small), pack_ids(large)
    assert a is not None and b is not None
    assert [w.tolist() for w in a[0]] == [w.tolist() for w in b[0]]
