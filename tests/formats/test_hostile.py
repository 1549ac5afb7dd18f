"""Hostile golden, policy, results and corpus files: each one exact error line, exit 2.

Each case reproduces a report: before the fix it crashed (exit 3, an abort inside a native
library) or was accepted silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import InputError
from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.structured import load_structured

runner = CliRunner()

GOLDEN = 'name: g\nqueries:\n  - {id: q1, text: "hola", expected: [a]}\n'
RESULTS = '{"query_id": "q1", "results": [{"id": "a", "score": 0.9}]}\n'


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _gate(tmp_path: Path, *, golden: str = GOLDEN, golden_name: str = "g.yaml",
          results: str = RESULTS, policy: str | None = None, corpus: str | None = None,
          store: bool = False) -> tuple[int, str, str]:
    args = ["gate", str(_write(tmp_path / golden_name, golden)), "--no-history"]
    if store:  # never opened: the golden set or the policy is refused first
        args += ["--store", f"lancedb://{tmp_path}/kb?table=chunks"]
    else:
        args += ["--results", str(_write(tmp_path / "r.jsonl", results))]
    if policy is not None:
        args += ["--policy", str(_write(tmp_path / "p.yaml", policy))]
    if corpus is not None:
        args += ["--corpus", str(_write(tmp_path / "c.jsonl", corpus))]
    result = runner.invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def _error(code: int, err: str) -> str:
    """The single error line, after checking exit 2 and that nothing else was printed."""
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0].removeprefix("Error: ")


# --- depth and top_k that reached the store as an allocation ---------------------------------

def test_search_depth_beyond_the_bound_is_refused_before_the_store_opens(tmp_path: Path) -> None:
    code, _, err = _gate(tmp_path, policy="search:\n  depth: 3000000000\n", store=True)
    assert _error(code, err) == (f"{tmp_path}/p.yaml:2: field 'search.depth': expected an "
                                 "integer in [1, 100000], found 3000000000")
    assert not (tmp_path / "kb").exists()


def test_golden_top_k_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    code, _, err = _gate(tmp_path, golden="top_k: 100000000000\n" + GOLDEN, store=True)
    assert _error(code, err) == (f"{tmp_path}/g.yaml:1: field 'top_k': expected an integer in "
                                 "[1, 10000], found 100000000000")


# --- deep nesting: a RecursionError inside json / yaml ---------------------------------------

def test_deeply_nested_golden_json(tmp_path: Path) -> None:
    deep = '{"name": "g", "queries":\n' + "[" * 100_000 + "]" * 100_000 + "}"
    code, _, err = _gate(tmp_path, golden=deep, golden_name="g.json")
    assert _error(code, err) == (f"{tmp_path}/g.json:2: invalid JSON (nested deeper than 20 "
                                 "levels)")


def test_deeply_nested_golden_yaml(tmp_path: Path) -> None:
    deep = "name: g\nqueries: " + "[" * 100_000 + "]" * 100_000 + "\n"
    code, _, err = _gate(tmp_path, golden=deep)
    assert _error(code, err) == (f"{tmp_path}/g.yaml:2: invalid YAML (nested deeper than 20 "
                                 "levels)")


def test_deeply_nested_results_line(tmp_path: Path) -> None:
    deep = RESULTS + '{"query_id": "q2", "results": ' + "[" * 5000 + "]" * 5000 + "}\n"
    code, _, err = _gate(tmp_path, results=deep)
    assert _error(code, err) == (f"{tmp_path}/r.jsonl:2: invalid JSON (nested deeper than 20 "
                                 "levels)")


def test_nesting_within_the_parser_limit_is_still_bounded(tmp_path: Path) -> None:
    deep = '{"query_id": "q1", "results": ' + "[" * 50 + "]" * 50 + "}\n"
    code, _, err = _gate(tmp_path, results=deep)
    assert _error(code, err) == (f"{tmp_path}/r.jsonl:1: invalid JSON (nested deeper than 20 "
                                 "levels)")


def test_deeply_nested_corpus_record(tmp_path: Path) -> None:
    deep = '{"id": "a", "text": "t", "facets": ' + "[" * 5000 + "]" * 5000 + "}\n"
    code, _, err = _gate(tmp_path, corpus=deep)
    assert _error(code, err) == (f"{tmp_path}/c.jsonl:1: invalid JSON (nested deeper than 20 "
                                 "levels)")


# --- search.filter / search.boost of the wrong shape -----------------------------------------

@pytest.mark.parametrize(("section", "message"), [
    ("filter: [domain, legal]", "field 'search.filter': expected a mapping {field: value or "
     "[values]}, found ['domain', 'legal']"),
    ("filter: legal", "field 'search.filter': expected a mapping {field: value or [values]}, "
     "found 'legal'"),
    ("boost: [label]", "field 'search.boost': expected a mapping {field: {value: score added}}, "
     "found ['label']"),
    ("boost: SINTESIS_CURADA", "field 'search.boost': expected a mapping {field: {value: score "
     "added}}, found 'SINTESIS_CURADA'"),
])
def test_filter_and_boost_must_be_mappings(tmp_path: Path, section: str, message: str) -> None:
    code, _, err = _gate(tmp_path, policy=f"search:\n  {section}\n", store=True)
    assert _error(code, err) == f"{tmp_path}/p.yaml:2: {message}"


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "11"])
def test_a_non_finite_or_huge_boost_is_refused(tmp_path: Path, value: str) -> None:
    policy = f"search:\n  boost:\n    label:\n      SINTESIS_CURADA: {value}\n"
    code, _, err = _gate(tmp_path, policy=policy, store=True)
    found = {".nan": "nan", ".inf": "inf", "-.inf": "-inf", "11": "11"}[value]
    assert _error(code, err) == (f"{tmp_path}/p.yaml:4: field 'search.boost.label."
                                 "SINTESIS_CURADA': expected a number in [-10, 10], found "
                                 f"{found}")


def test_a_filter_on_an_unknown_field_is_refused(tmp_path: Path) -> None:
    code, _, err = _gate(tmp_path, policy="search:\n  filter: {region: madrid}\n")
    assert _error(code, err) == (f"{tmp_path}/p.yaml:2: field 'search.filter.region': expected "
                                 "a filterable field: doc_id, domain, label, kind, found 'region'")


def test_a_filter_cannot_be_applied_to_a_results_file(tmp_path: Path) -> None:
    code, _, err = _gate(tmp_path, policy="recall_floor: 0.9\nsearch:\n  filter: {domain: rrhh}\n")
    assert _error(code, err) == (
        f"{tmp_path}/p.yaml:3: field 'search.filter': a results file carries no chunk metadata, "
        "so search.filter cannot be applied (filter in the system that wrote the results and "
        "remove search.filter, or give --corpus FILE to check failures against the filter)")


def test_a_filter_with_a_corpus_still_diagnoses(tmp_path: Path) -> None:
    corpus = json.dumps({"id": "a", "text": "hola", "domain": "rrhh"}) + "\n"
    code, _, err = _gate(tmp_path, policy="search:\n  filter: {domain: rrhh}\n", corpus=corpus)
    assert code == 0, err


# --- text that is not Unicode ----------------------------------------------------------------

@pytest.mark.parametrize(("record", "field"), [
    ('{"id": "a\\ud800", "text": "t"}', "id"),
    ('{"id": "a", "text": "t \\udc00 t"}', "text"),
    ('{"id": "a", "text": "t", "facets": {"region": "\\ud800"}}', "facets.region"),
])
def test_a_lone_surrogate_in_a_corpus_record(tmp_path: Path, record: str, field: str) -> None:
    code, _, err = _gate(tmp_path, corpus=record + "\n")
    assert _error(code, err) == (
        f"{tmp_path}/c.jsonl:1: field '{field}': expected valid Unicode text, found <an unpaired "
        "UTF-16 surrogate escape> (\\ud800-\\udfff escapes must come in pairs, each pair one "
        "character)")


def test_paired_surrogate_escapes_are_text(tmp_path: Path) -> None:
    p = _write(tmp_path / "c.jsonl", '{"id": "a", "text": "caf\\u00e9 \\ud83d\\ude00"}\n')
    assert read_corpus(p).chunks[0].text == "café \U0001F600"


def test_a_lone_surrogate_in_parquet_facets_text(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["a"], "text": ["t"], "facets": ['{"r": "\\ud800"}']}), p)
    with pytest.raises(InputError) as err:
        read_corpus(p)
    assert str(err.value) == (f"{p}:1: record 'a': field 'facets.r': expected valid Unicode "
                              "text, found <an unpaired UTF-16 surrogate>")


def test_invalid_utf8_in_a_parquet_string_column_names_the_row(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = pa.array([b"ok", b"also ok", b"\xff\xfe"], type=pa.binary())
    ids = pa.Array.from_buffers(pa.string(), 3, raw.buffers())
    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ids, "text": ["a", "b", "c"]}), p)
    with pytest.raises(InputError, match=rf"^{p}:3: expected values Python can read, found "
                                         r"<UnicodeDecodeError: "):
        read_corpus(p)


# --- accepted silently before ----------------------------------------------------------------

def test_a_duplicate_key_in_a_yaml_golden_set(tmp_path: Path) -> None:
    code, _, err = _gate(tmp_path, golden="name: a\nname: b\n" + GOLDEN.split("\n", 1)[1])
    assert _error(code, err) == (f"{tmp_path}/g.yaml:2: invalid YAML (duplicate key 'name', "
                                 "first at line 1)")


def test_a_duplicate_key_in_a_query_mapping(tmp_path: Path) -> None:
    golden = "name: g\nqueries:\n  - id: q1\n    text: a\n    expected: [a]\n    text: b\n"
    code, _, err = _gate(tmp_path, golden=golden)
    assert _error(code, err) == (f"{tmp_path}/g.yaml:6: invalid YAML (duplicate key 'text', "
                                 "first at line 4)")


def test_a_duplicate_key_in_json(tmp_path: Path) -> None:
    golden = ('{"name": "g",\n "queries": [{"id": "q1", "text": "a",\n'
              ' "expected": ["a"], "id": "q2"}]}')
    code, _, err = _gate(tmp_path, golden=golden, golden_name="g.json")
    assert _error(code, err) == f"{tmp_path}/g.json:3: invalid JSON (duplicate key 'id')"


@pytest.mark.parametrize("chunk_id", ['""', '"  "'])
def test_an_empty_chunk_id_in_a_results_file(tmp_path: Path, chunk_id: str) -> None:
    results = f'{{"query_id": "q1", "results": [{{"id": {chunk_id}, "score": 0.9}}]}}\n'
    code, _, err = _gate(tmp_path, results=results)
    assert _error(code, err) == (f"{tmp_path}/r.jsonl:1: record 'q1': field 'results[1].id': "
                                 f"expected a non-empty chunk id, found {chunk_id[1:-1]!r}")


def test_a_float_id_is_refused_rather_than_rewritten(tmp_path: Path) -> None:
    code, _, err = _gate(tmp_path, golden="queries:\n  - {id: 1.10, text: a, expected: [a]}\n")
    assert _error(code, err) == (f"{tmp_path}/g.yaml:2: record '#1': field 'id': expected a "
                                 "non-empty query id, found 1.1")


# --- the loader itself -----------------------------------------------------------------------

def test_yaml_aliases_are_refused_before_they_expand(tmp_path: Path) -> None:
    bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    bomb += [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    p = _write(tmp_path / "bomb.yaml", "\n".join(bomb) + "\n")
    with pytest.raises(InputError) as err:
        load_structured(p)
    assert str(err.value) == (f"{p}:2: invalid YAML (aliases (*name) are not accepted: write "
                              "the value out in full)")


@pytest.mark.parametrize(("text", "message"), [
    ("version: 2025-02-30\n", ":1: invalid YAML (cannot read the value '2025-02-30': day is out "
     "of range for month)"),
    ("top_k: 1" + "0" * 5000 + "\n", ":1: invalid YAML (a number longer than 4300 digits)"),
    ("? [a]\n: 1\n", ":1: invalid YAML (a key must be a single value, not a list or mapping)"),
    ("__line__: 3\n", ":1: invalid YAML ('__line__' is a reserved key)"),
    ('a: "\\ud800"\n', ":1: invalid YAML (an unpaired UTF-16 surrogate escape: \\ud800-\\udfff "
     "must come in pairs)"),
    ("a: 1\nb: \x07\n", ":2: invalid YAML (control character U+0007 is not allowed)"),
])
def test_yaml_values_python_cannot_read(tmp_path: Path, text: str, message: str) -> None:
    p = _write(tmp_path / "x.yaml", text)
    with pytest.raises(InputError) as err:
        load_structured(p)
    assert str(err.value) == f"{p}{message}"


def test_a_json_number_too_long_to_read(tmp_path: Path) -> None:
    p = _write(tmp_path / "x.json", '{"top_k":\n 1' + "0" * 5000 + "}")
    with pytest.raises(InputError) as err:
        load_structured(p)
    assert str(err.value) == f"{p}:2: invalid JSON (a number longer than 4300 digits)"


def test_a_merge_key_with_an_override_is_not_a_duplicate(tmp_path: Path) -> None:
    p = _write(tmp_path / "x.yaml", "c:\n  <<: {x: 1, y: 1}\n  x: 2\n")
    assert load_structured(p)["c"] == {"x": 2, "y": 1, "__line__": 2}
