"""The interaction-log reader: every field, gzip, hashing, streaming, and one located error per
kind of bad line."""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from recallwatch.errors import InputError
from recallwatch.online import InteractionLog

FULL = {
    "query_id": "q1", "query": "iva reducido", "ts": "2025-06-13T17:40:00Z", "session": "s1",
    "user": "u1", "variant": "B",
    "shown": [{"id": "d1", "score": 0.9}, {"id": "d2", "score": 0.8}, {"id": "d3", "score": 0.5}],
    "clicks": [{"id": "d3", "ts": "2025-06-13T17:40:04Z", "dwell_ms": 12000}, {"id": "d1"}],
    "conversion": True, "latency_ms": 41.5, "experiment": "extra keys are ignored",
}


def write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def test_every_field_is_read(tmp_path: Path) -> None:
    log = InteractionLog(write(tmp_path / "log.jsonl", [FULL]))
    (imp,) = list(log)
    assert imp.line == 1 and imp.query_key == "q1" and imp.query == "iva reducido"
    assert imp.ts == datetime(2025, 6, 13, 17, 40, tzinfo=UTC)
    assert (imp.session, imp.user, imp.variant) == ("s1", "u1", "B")
    assert imp.shown == ("d1", "d2", "d3") and imp.scores == (0.9, 0.8, 0.5)
    assert imp.teams is None
    # positions are 1-based indexes into shown, in the order the clicks were logged
    assert imp.click_positions == (3, 1) and imp.clicked_ids == ("d3", "d1")
    assert imp.click_ts == (datetime(2025, 6, 13, 17, 40, 4, tzinfo=UTC), None)
    assert imp.click_dwell_ms == (12000, None)
    assert imp.conversion is True and imp.latency_ms == 41.5


def test_minimal_lines_and_query_text_as_key(tmp_path: Path) -> None:
    log = InteractionLog(write(tmp_path / "log.jsonl", [
        {"query": "only text", "shown": [], "clicks": []},
        "",
        {"query_id": "q2", "shown": [{"id": "a", "team": "A"}, {"id": "b", "team": "B"}],
         "clicks": [{"id": "b"}]},
    ]))
    first, second = list(log)
    assert first.query_key == "only text" and first.shown == () and first.click_positions == ()
    assert second.line == 3 and second.teams == ("A", "B")
    assert log.summary.lines == 3 and log.summary.impressions == 2


def test_gzip_reads_alike_and_the_hash_is_of_the_file_bytes(tmp_path: Path) -> None:
    plain = write(tmp_path / "log.jsonl", [FULL] * 50)
    packed = tmp_path / "log.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = InteractionLog(plain), InteractionLog(packed)
    assert list(a) == list(b)
    assert a.summary.sha256 == hashlib.sha256(plain.read_bytes()).hexdigest()
    assert b.summary.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()
    assert a.summary.complete and a.summary.impressions == 50


def test_lines_are_streamed_not_loaded(tmp_path: Path) -> None:
    # the second line is broken: the first impression is still handed out before it is read
    path = write(tmp_path / "log.jsonl", [FULL, "{broken"])
    impressions = iter(InteractionLog(path))
    assert next(impressions).query_id == "q1"
    with pytest.raises(InputError, match=r"log\.jsonl:2: invalid JSON"):
        next(impressions)


def _line(**changes: Any) -> dict[str, Any]:
    record = {k: v for k, v in FULL.items() if k != "experiment"}
    for key, value in changes.items():
        if value is _DROP:
            record.pop(key, None)
        else:
            record[key] = value
    return record


_DROP = object()

BAD = [
    (_line(clicks=[{"id": "d9"}]),
     "field 'clicks[1].id': expected the id of a shown result (a click on something not shown), "
     "found 'd9'"),
    (_line(query_id=_DROP, query=_DROP), "field 'query_id': expected a query_id or a query"),
    (_line(query_id=7), "field 'query_id': expected a non-empty string, found <a number>"),
    (_line(shown=_DROP), "field 'shown': expected a list of shown results (required"),
    (_line(shown={"id": "d1"}), "field 'shown': expected a list of {\"id\": …} objects, found "
                                "<an object>"),
    (_line(shown=["d1"]), "field 'shown[1]': expected an object {\"id\": …}, found <a string>"),
    (_line(shown=[{"id": "d1"}, {"id": ""}]), "field 'shown[2].id': expected a non-empty string"),
    (_line(shown=[{"id": "d1"}, {"id": "d1"}], clicks=[]),
     "field 'shown[2].id': expected ids shown once (already at position 1), found 'd1'"),
    (_line(shown=[{"id": "d1", "score": "high"}], clicks=[]),
     "field 'shown[1].score': expected a number, found <a string>"),
    (_line(shown=[{"id": "d1", "team": 3}], clicks=[]),
     "field 'shown[1].team': expected a ranker's name: \"A\" or \"B\" when interleaving two, "
     "any name when multileaving more, found <a number>"),
    (_line(shown=[{"id": "d1", "team": "A"}, {"id": "d2"}], clicks=[]),
     "field 'shown[2].team': expected a team on every item of an interleaved impression"),
    (_line(clicks=_DROP), "field 'clicks': expected a list of clicks (required"),
    (_line(clicks=[{"id": "d1", "dwell_ms": -3}]),
     "field 'clicks[1].dwell_ms': expected a whole number of milliseconds ≥ 0, found -3"),
    (_line(clicks=[{"id": "d1", "ts": "yesterday"}]),
     "field 'clicks[1].ts': expected an ISO-8601 timestamp such as 2025-06-13T17:40:00Z, "
     "between years 1 and 9999 once its offset is applied (in UTC), found 'yesterday'"),
    (_line(ts="0001-01-01T00:00:00+01:00"), "field 'ts': expected an ISO-8601 timestamp such "
     "as 2025-06-13T17:40:00Z, between years 1 and 9999 once its offset is applied (in UTC), "
     "found '0001-01-01T00:00:00+01:00'"),
    (_line(ts="9999-12-31T23:59:59-01:00"), "between years 1 and 9999 once its offset is "
     "applied (in UTC), found '9999-12-31T23:59:59-01:00'"),
    (_line(ts=1718300400), "field 'ts': expected an ISO-8601 timestamp string, found <a number>"),
    (_line(conversion="yes"), "field 'conversion': expected true or false, found 'yes'"),
    (_line(latency_ms=-1), "field 'latency_ms': expected a finite number ≥ 0, found -1"),
    (_line(user=""), "field 'user': expected a non-empty string, found ''"),
    ("[1, 2]", "expected a JSON object (one impression), found <a list>"),
]


@pytest.mark.parametrize(("record", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_bad_lines_are_located(tmp_path: Path, record: Any, message: str) -> None:
    path = write(tmp_path / "log.jsonl", [FULL, record])
    with pytest.raises(InputError) as err:
        list(InteractionLog(path))
    text = str(err.value)
    assert text.startswith(f"{path}:2: "), text
    assert message in text, text
    assert "\n" not in text


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        list(InteractionLog(tmp_path / "missing.jsonl"))
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="expected at least one impression"):
        list(InteractionLog(tmp_path / "empty.jsonl"))
    (tmp_path / "latin1.jsonl").write_bytes(b'{"query": "caf\xe9", "shown": [], "clicks": []}\n')
    with pytest.raises(InputError, match=r"latin1\.jsonl:1: expected UTF-8 text"):
        list(InteractionLog(tmp_path / "latin1.jsonl"))
    whole = gzip.compress((json.dumps(FULL) + "\n").encode() * 200)
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match="expected a complete gzip stream"):
        list(InteractionLog(tmp_path / "cut.jsonl.gz"))


def test_duplicate_lines_are_counted_without_copying_the_hashes(tmp_path: Path) -> None:
    """Every line after the first of its text counts once, as a set of the lines says; the
    count sorts the 8-byte hashes in place (numpy.unique held several times their size)."""
    import tracemalloc
    from array import array

    import numpy as np

    from recallwatch.online.log import _duplicates

    rng = np.random.default_rng(4)
    lines = [json.dumps({**FULL, "query_id": f"q{int(i)}"}) for i in rng.integers(0, 900, 3000)]
    lines += [" " + lines[5] + " ", lines[7]]  # the same line with spaces around, and again
    log = InteractionLog(write(tmp_path / "log.jsonl", lines))
    for _ in log:
        pass
    assert log.summary is not None
    assert log.summary.duplicate_lines == len(lines) - len({x.strip() for x in lines})
    hashes = array("q", rng.integers(-2**63, 2**63 - 1, 400_000, dtype=np.int64).tobytes())
    hashes.extend(hashes[:1000])
    tracemalloc.start()
    try:
        assert _duplicates(hashes) == 1000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(hashes) * 8 / 4, peak


def _interleaved(*lists: str) -> list[dict[str, object]]:
    """One impression per string of team names, one shown result per letter."""
    return [{"query_id": f"q{n}", "shown": [{"id": f"d{i}", "team": t} for i, t in enumerate(s)],
             "clicks": []} for n, s in enumerate(lists, 1)]


def test_a_team_that_is_not_one_of_the_logs_rankers_is_refused(tmp_path: Path) -> None:
    log = InteractionLog(write(tmp_path / "log.jsonl", _interleaved("ABBA", "BAB", "ABC")))
    with pytest.raises(InputError) as refused:
        list(log)
    assert str(refused.value) == (
        f"{tmp_path / 'log.jsonl'}:3: record 'q3': field 'shown[3].team': expected one of this "
        "log's rankers, A, B (line 1 shows 4 results of these alone, and a team draft gives "
        "every ranker a result in a list that long), found 'C' (a typo, or lines of another "
        "experiment in this log?)")


@pytest.mark.parametrize("lists", [
    ("ABC", "CAB", "BCAB"),  # multileaving three rankers
    ("ABCDEFGHIJ", "KABCDEFGHI", "LKABCDEFGH"),  # twelve rankers, ten results a list
    ("AB", "BCA"),  # a list of two cannot show every one of three rankers
    ("AAAA", "ABAB"),  # B had nothing to add to the first list (one team is no evidence)
    ("A", "B", "AB"),
])
def test_multileaved_and_short_lists_keep_every_ranker(tmp_path: Path,
                                                       lists: tuple[str, ...]) -> None:
    impressions = list(InteractionLog(write(tmp_path / "log.jsonl", _interleaved(*lists))))
    assert [imp.teams for imp in impressions] == [tuple(s) for s in lists]
