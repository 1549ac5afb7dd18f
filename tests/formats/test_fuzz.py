"""Malformed structured files, generated systematically, through the real CLI.

Each format starts from a valid file (checked to pass) and is broken one way at a time: every
field given each wrong type, out-of-range and non-finite numbers, empty strings, missing and
duplicate fields, and file-level damage (syntax, truncation, bad UTF-8, deep nesting, aliases,
surrogates, huge numbers). Every case must exit 2 with exactly one ``Error:`` line on stderr
that names the file and, where the reader knows it, the line; nothing on stdout, no traceback.
Golden, policy, results and corpus files go through ``recallwatch gate``, sweep files through
``recallwatch bench``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
import yaml
from click.testing import CliRunner

from recallwatch.cli import app

runner = CliRunner()
# The click command `recallwatch` runs, built once: typer's runner rebuilds it on every call.
COMMAND = typer.main.get_command(app)

FILE_NAMES = {"golden.yaml": "golden.yaml", "golden.json": "golden.json",
              "golden.jsonl": "golden.jsonl", "policy": "policy.yaml",
              "results": "results.jsonl", "corpus.jsonl": "corpus.jsonl",
              "corpus.parquet": "corpus.parquet", "sweep": "sweep.yaml"}


@dataclass(frozen=True)
class Case:
    fmt: str  # a key of FILE_NAMES
    name: str
    content: bytes | Callable[[Path], None] | None  # None: no file at that path
    line: int | None  # the line (Parquet: row) the error must name; None when there is none

    @property
    def id(self) -> str:
        return f"{self.fmt}:{self.name}"


def _text(fmt: str, name: str, text: str, line: int | None) -> Case:
    return Case(fmt, name, text.encode("utf-8"), line)


# --- valid files every case breaks one way -------------------------------------------------

GOLDEN_TOP = {"name": "g", "version": '"1"', "top_k": "5"}
GOLDEN_QUERY = {"id": "q1", "text": "hola", "expected": "[a]", "gold": "[a]", "domain": "rrhh",
                "tags": "[x]", "language": "es", "source": "manual", "top_k": "5"}
GOLDEN_QUERY_LINE = 5  # where the query mapping starts (top fields, then "queries:")


def golden_yaml(top: dict[str, str] | None = None, query: dict[str, str | None] | None = None,
                tail: str = "") -> str:
    """The valid golden set with fields replaced (a value of None drops the field)."""
    tops = {**GOLDEN_TOP, **(top or {})}
    fields = {k: v for k, v in {**GOLDEN_QUERY, **(query or {})}.items() if v is not None}
    lines = [f"{k}: {v}" for k, v in tops.items() if v is not None] + ["queries:"]
    lines += [("  - " if i == 0 else "    ") + f"{k}: {v}" for i, (k, v) in
              enumerate(fields.items())]
    return "\n".join(lines) + "\n" + tail


RESULTS_OK = '{"query_id": "q1", "results": [{"id": "a", "score": 0.9}, {"id": "z", "score": 0.5}]}'
CORPUS_OK = '{"id": "a", "text": "hola", "domain": "rrhh", "label": "SINTESIS_CURADA"}'
POLICY_TOP = {"top_k": "10", "recall_floor": "0.9", "min_mean_quality": "95",
              "noise_ceiling": "0.3", "gold_failures_allowed": "0",
              "other_failures_allowed": "0.05", "min_group_quality": "50",
              "waivers": "{q9: written reason}"}
POLICY_SEARCH = {"depth": "100", "filter": "{domain: rrhh}", "boost": "{label: {X: 0.05}}"}
POLICY_SEARCH_LINE = len(POLICY_TOP) + 2  # "search:" follows the top fields


def policy_yaml(top: dict[str, str | None] | None = None,
                search: dict[str, str | None] | None = None) -> str:
    tops = {k: v for k, v in {**POLICY_TOP, **(top or {})}.items() if v is not None}
    sub = {k: v for k, v in {**POLICY_SEARCH, **(search or {})}.items() if v is not None}
    lines = [f"{k}: {v}" for k, v in tops.items()] + ["search:"]
    return "\n".join(lines + [f"  {k}: {v}" for k, v in sub.items()]) + "\n"


def corpus_table(**columns: list[object]) -> pa.Table:
    base: dict[str, list[object]] = {"id": ["a", "b"], "text": ["hola", "adios"],
                                     "domain": ["rrhh", "rrhh"]}
    base.update(columns)
    return pa.table({k: v for k, v in base.items() if v is not None})


def _parquet(table: pa.Table) -> Callable[[Path], None]:
    return lambda path: pq.write_table(table, path)


# --- what can be wrong with a value ----------------------------------------------------------

NOT_TEXT = ["[]", "{}", "[a]", "{a: b}", "true", "1.5", '""', '"  "', ".nan"]
BAD_TOP_K = ["0", "-1", "10001", "100000000000", '"5"', "1.5", "true", ".nan", ".inf", "[]",
             "{}"]
BAD_ID_LISTS = {
    "expected": ["[]", "a", "{}", '[""]', "[null]", "[[]]", "[{}]", "[true]", "[1.5]",
                 "[a, a]", "null"],
    "gold": ["a", "{}", "[z]", "[null]", "[true]", "[[a]]"],
    "tags": ["x", "{}", "[null]", "[{}]", "[1.5]", '[""]'],
}
# The same damage for every YAML file: (name, text replacing the whole file, line). Lines refer
# to the text given here.
YAML_DAMAGE = [
    ("alias", "a: &x [1, 2]\nb: *x\n", 2),
    ("billion-laughs", "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")), 2),
    ("duplicate-key", "a: 1\nb: 2\na: 3\n", 3),
    ("deep-nesting", "a: 1\nb: " + "[" * 50 + "]" * 50 + "\n", 2),
    ("very-deep-nesting", "a: 1\nb: " + "[" * 100_000 + "]" * 100_000 + "\n", 2),
    ("truncated-flow", "a: 1\nb: [1, 2", 2),
    ("tab-indent", "a:\n\tb: 1\n", 2),
    ("surrogate", 'a: 1\nb: "x\\ud800"\n', 2),
    ("huge-int", "a: 1\nb: 1" + "0" * 5000 + "\n", 2),
    ("bad-date", "a: 1\nb: 2025-02-30\n", 2),
    ("unhashable-key", "a: 1\n? [x]\n: 1\n", 2),
    ("reserved-key", "a: 1\n__line__: 1\n", 2),
    ("two-documents", "a: 1\n---\nb: 2\n", 2),
    ("python-tag", "a: 1\nb: !!python/object/apply:os.system [ls]\n", 2),
    ("unknown-tag", "a: 1\nb: !secret x\n", 2),
    ("nul-byte", "a: 1\nb: x\x00\n", 2),
    ("control-char", "a: 1\nb: \x07\n", 2),
]
# The same damage for every JSON Lines file, on line 2 (line 1 is valid).
JSONL_DAMAGE = [
    ("array", "[1, 2]"), ("string", '"x"'), ("number", "1"), ("null", "null"),
    ("invalid", '{"a": }'), ("truncated", '{"query_id": "q2", "res'), ("garbage-after", "{} x"),
    ("duplicate-key", '{"id": "b", "id": "c"}'), ("reserved-key", '{"__line__": 1}'),
    ("deep", '{"x": ' + "[" * 50 + "]" * 50 + "}"),
    ("very-deep", '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("lone-surrogate-value", '{"x": "\\ud800"}'), ("lone-low-surrogate", '{"x": "\\udc00x"}'),
    ("surrogate-key", '{"\\ud800": 1}'), ("long-number", '{"x": 1' + "0" * 5000 + "}"),
]


def _file_damage(fmt: str, good: str) -> Iterator[Case]:
    """Damage no reader can survive: missing, a directory, empty, not UTF-8."""
    yield Case(fmt, "missing-file", None, None)
    yield Case(fmt, "a-directory", lambda path: path.mkdir(), None)
    yield _text(fmt, "empty", "", None)
    yield _text(fmt, "blank", "  \n\n", None)
    lines = good.splitlines()
    yield Case(fmt, "bad-utf8", ("\n".join(lines[:1]) + "\n").encode() + b"x\xff\xfe\n", 2)


def golden_yaml_cases() -> Iterator[Case]:
    fmt, q = "golden.yaml", GOLDEN_QUERY_LINE
    for fld in ("name", "version"):
        for bad in [*NOT_TEXT, "null"]:
            yield _text(fmt, f"{fld}={bad}", golden_yaml(top={fld: bad}), 1)
    for fld in ("id", "text", "domain", "language", "source"):
        for bad in NOT_TEXT + ([] if fld == "domain" else ["null"]):
            yield _text(fmt, f"query.{fld}={bad}", golden_yaml(query={fld: bad}), q)
    for bad in BAD_TOP_K:
        yield _text(fmt, f"top_k={bad}", golden_yaml(top={"top_k": bad}), 1)
        yield _text(fmt, f"query.top_k={bad}", golden_yaml(query={"top_k": bad}), q)
    yield _text(fmt, "top_k=null", golden_yaml(top={"top_k": "null"}), 1)
    for fld, bads in BAD_ID_LISTS.items():
        for bad in bads:
            yield _text(fmt, f"query.{fld}={bad}", golden_yaml(query={fld: bad}), q)
    for fld in ("id", "text", "expected"):
        yield _text(fmt, f"missing-{fld}", golden_yaml(query={fld: None}), q)
    yield _text(fmt, "unknown-top-key", golden_yaml(top={"nmae": "g"}), 1)
    yield _text(fmt, "unknown-query-key", golden_yaml(query={"txet": "x"}), q)
    second = "  - {id: q1, text: otra, expected: [a]}\n"
    yield _text(fmt, "duplicate-query-id", golden_yaml(tail=second), q + len(GOLDEN_QUERY))
    head = "".join(f"{k}: {v}\n" for k, v in GOLDEN_TOP.items())
    for bad in ("[]", "x", "{}", "null"):
        yield _text(fmt, f"queries={bad}", f"{head}queries: {bad}\n", 1)
    for bad in ("[1]", "[null]", "[[]]", '["q"]'):  # scalar items carry no line: record #1
        yield _text(fmt, f"queries={bad}", f"{head}queries: {bad}\n", None)
    yield _text(fmt, "missing-queries", head, 1)
    for name, text in (("top-level-list", "- a\n- b\n"), ("top-level-scalar", "hello\n"),
                       ("comments-only", "# nothing\n")):
        yield _text(fmt, name, text, None)
    for name, text, line in YAML_DAMAGE:
        yield _text(fmt, name, text, line)
    yield _text(fmt, "truncated-mid-query", golden_yaml()[:-40], 11)
    yield from _file_damage(fmt, golden_yaml())


def _json_value(snippet: str) -> object:
    return yaml.safe_load(snippet)


def golden_json_cases() -> Iterator[Case]:
    fmt = "golden.json"
    doc = {"name": "g", "top_k": 5, "queries": [{"id": "q1", "text": "hola", "expected": ["a"]}]}

    def with_query(**changes: object) -> str:
        query = {**doc["queries"][0], **changes}
        return json.dumps({**doc, "queries": [query]}, indent=1)

    # a whole JSON file's mappings carry no lines: the field error names the file only
    for fld in ("id", "text"):
        for bad in NOT_TEXT:
            yield _text(fmt, f"query.{fld}={bad}", with_query(**{fld: _json_value(bad)}), None)
    for bad in BAD_TOP_K:
        yield _text(fmt, f"top_k={bad}", json.dumps({**doc, "top_k": _json_value(bad)}), None)
    for bad in BAD_ID_LISTS["expected"]:
        yield _text(fmt, f"query.expected={bad}", with_query(expected=_json_value(bad)), None)
    good = json.dumps(doc, indent=1)
    damaged = {"invalid": good.replace('"hola"', "hola"),
               "truncated": good[:good.index('"hola"')] + '"ho',
               "duplicate-key": good.replace('"top_k": 5', '"top_k": 5,\n "name": "h"'),
               "reserved-key": good.replace('"top_k": 5', '"__line__": 5'),
               "deep": good.replace('"hola"', "[" * 50 + "]" * 50),
               "very-deep": good.replace('"hola"', "[" * 100_000 + "]" * 100_000),
               "surrogate": good.replace('"hola"', '"\\ud800"'),
               "long-number": good.replace('"top_k": 5', '"top_k": 1' + "0" * 5000)}
    lines = {"duplicate-key": good.count("\n", 0, good.index('"top_k"')) + 2,
             "reserved-key": good.count("\n", 0, good.index('"top_k"')) + 1,
             "long-number": good.count("\n", 0, good.index('"top_k"')) + 1}
    for name, text in damaged.items():
        yield _text(fmt, name, text, lines.get(name, good.count("\n", 0, good.index('"hola"')) + 1))
    yield _text(fmt, "top-level-array-of-numbers", "[1, 2]", None)
    yield _text(fmt, "top-level-empty-array", "[]", None)
    yield from _file_damage(fmt, good)


def golden_jsonl_cases() -> Iterator[Case]:
    fmt = "golden.jsonl"
    first = '{"id": "q1", "text": "hola", "expected": ["a"]}'
    for fld in ("id", "text"):
        for bad in [*NOT_TEXT, "null"]:
            record = {"id": "q2", "text": "x", "expected": ["a"], fld: _json_value(bad)}
            yield _text(fmt, f"{fld}={bad}", f"{first}\n{json.dumps(record)}\n", 2)
    for fld, bads in BAD_ID_LISTS.items():
        for bad in bads[:4]:
            record = {"id": "q2", "text": "x", "expected": ["a"], fld: _json_value(bad)}
            yield _text(fmt, f"{fld}={bad}", f"{first}\n{json.dumps(record)}\n", 2)
    yield _text(fmt, "duplicate-id", f"{first}\n{first}\n", 2)
    for name, bad in JSONL_DAMAGE:
        yield _text(fmt, name, f"{first}\n{bad}\n", 2)
    yield from _file_damage(fmt, first)


def policy_cases() -> Iterator[Case]:
    fmt = "policy"
    numbers = {"top_k": BAD_TOP_K,
               "recall_floor": ["-0.1", "1.5", ".nan", ".inf", '"x"', "true", "[]"],
               "min_mean_quality": ["-1", "101", ".nan", '"95"', "{}"],
               "gold_failures_allowed": ["-1", "1.5", "10000000", '"0"', "true"],
               "other_failures_allowed": ["2", "-.inf", ".nan", '"0.05"'],
               "min_group_quality": ["101", '"50"', ".nan", "[50]"]}
    for fld, bads in numbers.items():
        for bad in bads:
            yield _text(fmt, f"{fld}={bad}", policy_yaml(top={fld: bad}), 1)
    noise_line = list(POLICY_TOP).index("noise_ceiling") + 1
    for bad, line in (("2", 1), (".nan", 1), ('"x"', 1), ("true", 1), ("[]", 1),
                      ("{default: 2}", noise_line), ("{per_domain: []}", noise_line),
                      ("{per_domain: {legal: 2}}", noise_line), ("{bogus: 1}", noise_line),
                      ("{default: .nan}", noise_line)):
        yield _text(fmt, f"noise_ceiling={bad}", policy_yaml(top={"noise_ceiling": bad}), line)
    waiver_line = list(POLICY_TOP).index("waivers") + 1
    for bad, line in (("[]", 1), ('"x"', 1), ('{q1: ""}', waiver_line),
                      ("{q1: 3}", waiver_line), ("{q1: null}", waiver_line),
                      ("{q1: [a]}", waiver_line), ("{q1: {a: b}}", waiver_line),
                      ("{1.5: reason}", waiver_line), ("{true: reason}", waiver_line)):
        yield _text(fmt, f"waivers={bad}", policy_yaml(top={"waivers": bad}), line)
    s = POLICY_SEARCH_LINE
    for bad in ("0", "-1", "100001", "3000000000", '"100"', "1.5", "true", ".nan", "[]"):
        yield _text(fmt, f"search.depth={bad}", policy_yaml(search={"depth": bad}), s)
    for bad, line in (("[domain]", s), ("legal", s), ("{nosuch: x}", s + 1),
                      ("{domain: []}", s + 1), ('{domain: ""}', s + 1), ("{domain: 5}", s + 1),
                      ("{domain: [5]}", s + 1), ("{domain: {a: b}}", s + 1),
                      ("{domain: null}", s + 1), ("{kind: [table, true]}", s + 1)):
        yield _text(fmt, f"search.filter={bad}", policy_yaml(search={"filter": bad}), line)
    for bad, line in (("[label]", s), ("x", s), ("{label: 3}", s + 2), ("{label: [a]}", s + 2),
                      ("{label: {X: .nan}}", s + 2), ("{label: {X: .inf}}", s + 2),
                      ("{label: {X: -.inf}}", s + 2), ('{label: {X: "a"}}', s + 2),
                      ("{label: {X: true}}", s + 2), ("{label: {X: 11}}", s + 2),
                      ("{label: {X: null}}", s + 2)):
        yield _text(fmt, f"search.boost={bad}", policy_yaml(search={"boost": bad}), line)
    yield _text(fmt, "unknown-top-key", policy_yaml(top={"recal_floor": "0.9"}), 1)
    yield _text(fmt, "unknown-search-key", policy_yaml(search={"dept": "100"}), s)
    for bad in ("[]", "x", "5"):
        yield _text(fmt, f"search={bad}", policy_yaml().split("search:")[0] + f"search: {bad}\n",
                    1)
    yield _text(fmt, "top-level-list", "- a\n", None)
    for name, text, line in YAML_DAMAGE:
        yield _text(fmt, name, text, line)
    yield from _file_damage(fmt, policy_yaml())


def results_cases() -> Iterator[Case]:
    fmt = "results"

    def line2(obj: object) -> str:
        return f"{RESULTS_OK}\n{json.dumps(obj)}\n"

    for bad in [*NOT_TEXT, "null"]:
        yield _text(fmt, f"query_id={bad}",
                    line2({"query_id": _json_value(bad), "results": []}), 2)
    for bad in ('"x"', "{}", "null", "1", "true"):
        yield _text(fmt, f"results={bad}", line2({"query_id": "q2", "results": _json_value(bad)}),
                    2)
    for bad in ('"a"', "1", "null", "[]"):
        yield _text(fmt, f"item={bad}", line2({"query_id": "q2", "results": [_json_value(bad)]}),
                    2)
    for bad in [*NOT_TEXT, "null"]:
        item = {"id": _json_value(bad), "score": 0.5}
        yield _text(fmt, f"item.id={bad}", line2({"query_id": "q2", "results": [item]}), 2)
    for bad in ('"0.5"', "true", "null", "[]", "{}"):
        item = {"id": "a", "score": _json_value(bad)}
        yield _text(fmt, f"item.score={bad}", line2({"query_id": "q2", "results": [item]}), 2)
    for bad in ("NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 5000):
        text = f'{RESULTS_OK}\n{{"query_id": "q2", "results": [{{"id": "a", "score": {bad}}}]}}\n'
        yield _text(fmt, f"item.score={bad[:12]}", text, 2)
    yield _text(fmt, "missing-score", line2({"query_id": "q2", "results": [{"id": "a"}]}), 2)
    twice = [{"id": "a", "score": 0.9}, {"id": "a", "score": 0.8}]
    yield _text(fmt, "chunk-twice", line2({"query_id": "q2", "results": twice}), 2)
    yield _text(fmt, "query-twice", f"{RESULTS_OK}\n{RESULTS_OK}\n", 2)
    yield _text(fmt, "unknown-key", line2({"query_id": "q2", "results": [], "rank": 1}), 2)
    yield _text(fmt, "missing-results", line2({"query_id": "q2"}), 2)
    yield _text(fmt, "no-line-for-a-golden-query", '{"query_id": "q2", "results": []}\n', None)
    for name, bad in JSONL_DAMAGE:
        yield _text(fmt, name, f"{RESULTS_OK}\n{bad}\n", 2)
    yield from _file_damage(fmt, RESULTS_OK)


def corpus_jsonl_cases() -> Iterator[Case]:
    fmt = "corpus.jsonl"

    def line2(**fields: object) -> str:
        record = {"id": "b", "text": "adios", **fields}
        return f"{CORPUS_OK}\n{json.dumps({k: v for k, v in record.items() if v != '<drop>'})}\n"

    for fld in ("id", "text"):
        for bad in ["5", "[]", "{}", "true", "null", '""', '"  "', "<drop>"]:
            value = bad if bad == "<drop>" else _json_value(bad)
            yield _text(fmt, f"{fld}={bad}", line2(**{fld: value}), 2)
    for fld in ("content", "doc_id", "domain", "label", "description"):
        for bad in ("5", "[]", "{}", "true"):
            yield _text(fmt, f"{fld}={bad}", line2(**{fld: _json_value(bad)}), 2)
    for bad in ('"tabel"', "5", "[]"):
        yield _text(fmt, f"kind={bad}", line2(kind=_json_value(bad)), 2)
    for bad in ('"{bad"', '"x"', "5", '{"r": 5}', '{"r": null}', '"[1, 2]"'):
        yield _text(fmt, f"facets={bad}", line2(facets=json.loads(bad)), 2)
    for fld in ("valid_from", "valid_to"):
        for bad in ('"2025-13-01"', '"x"', "5", "[]"):
            yield _text(fmt, f"{fld}={bad}", line2(**{fld: json.loads(bad)}), 2)
    yield _text(fmt, "valid_to-before-valid_from",
                line2(valid_from="2025-02-01", valid_to="2025-01-01"), 2)
    yield _text(fmt, "unknown-key", line2(colour="red"), 2)
    yield _text(fmt, "duplicate-id", f"{CORPUS_OK}\n{CORPUS_OK}\n", 2)
    yield _text(fmt, "surrogate-in-id", f'{CORPUS_OK}\n{{"id": "b\\ud800", "text": "x"}}\n', 2)
    yield _text(fmt, "surrogate-in-text", f'{CORPUS_OK}\n{{"id": "b", "text": "\\udfff"}}\n', 2)
    for name, bad in JSONL_DAMAGE:
        yield _text(fmt, name, f"{CORPUS_OK}\n{bad}\n", 2)
    yield from _file_damage(fmt, CORPUS_OK)


def corpus_parquet_cases() -> Iterator[Case]:
    fmt = "corpus.parquet"
    tables = {
        "id-int": (corpus_table(id=[1, 2]), 1),
        "id-null": (corpus_table(id=["a", None]), 2),
        "id-empty": (corpus_table(id=["a", ""]), 2),
        "id-duplicate": (corpus_table(id=["a", "a"]), 2),
        "text-missing": (corpus_table(text=None), 1),
        "text-blank": (corpus_table(text=["hola", "  "]), 2),
        "text-binary": (corpus_table(text=pa.array([b"hola", b"x"], type=pa.binary())), 1),
        "text-list": (corpus_table(text=[["a"], ["b"]]), 1),
        "kind-typo": (corpus_table(kind=["text", "tabel"]), 2),
        "facets-bad-json": (corpus_table(facets=['{"r": "x"}', "{bad"]), 2),
        "facets-not-text": (corpus_table(facets=['{"r": "x"}', '{"r": 5}']), 2),
        "facets-surrogate": (corpus_table(facets=['{"r": "x"}', '{"r": "\\ud800"}']), 2),
        "facets-deep": (corpus_table(facets=["{}", "[" * 5000 + "]" * 5000]), 2),
        "facets-map-int": (corpus_table(facets=pa.array(
            [[("r", 1)], [("r", 2)]], type=pa.map_(pa.string(), pa.int64()))), 1),
        "valid_from-bad": (corpus_table(valid_from=["2025-01-01", "2025-13-01"]), 2),
        "valid_from-int": (corpus_table(valid_from=[1, 2]), 1),
        "valid-window-reversed": (corpus_table(valid_from=["2025-02-01", "2025-02-01"],
                                               valid_to=["2025-03-01", "2025-01-01"]), 2),
        "unknown-column": (corpus_table(colour=["red", "blue"]), 1),
        "domain-int": (corpus_table(domain=[1, 2]), 1),
    }
    for name, (table, row) in tables.items():
        yield Case(fmt, name, _parquet(table), row)
    raw = pa.array([b"a", b"\xff\xfe"], type=pa.binary())
    bad_utf8 = corpus_table(id=pa.Array.from_buffers(pa.string(), 2, raw.buffers()))
    yield Case(fmt, "invalid-utf8", _parquet(bad_utf8), 2)

    def truncated(path: Path) -> None:
        pq.write_table(corpus_table(), path)
        path.write_bytes(path.read_bytes()[:-30])

    yield Case(fmt, "truncated", truncated, None)
    yield Case(fmt, "not-parquet", b"PAR1 this is not a parquet file", None)
    yield Case(fmt, "empty", b"", None)
    yield Case(fmt, "missing-file", None, None)


SWEEP_SECTIONS: dict[str, dict[str, str]] = {
    "top": {"name": "fuzz", "k": "10", "recall_at": "[1, 10]", "threads": "1",
            "targets": "[0.9]"},
    "synthetic": {"n": "300", "dim": "8", "topics": "4", "queries": "5", "seed": "1"},
    "dataset": {"metric": "ip"},
    "timing": {"warmup": "2", "single_queries": "5", "batch_repeats": "1"},
    "load": {"threads": "[1]", "seconds": "1"},
    "entry": {"engine": "hnswlib"},
    "build": {"M": "8", "ef_construction": "50", "seed": "1"},
    "query": {"ef": "[10, 20]"},
}
# Where the error of each section is reported, in the file sweep_yaml writes.
SWEEP_LINES = {"top": 1, "synthetic": 3, "dataset": 3, "timing": 8, "load": 9, "entry": 12,
               "build": 13, "query": 14}


def _flow(fields: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}"


def sweep_yaml(**changes: dict[str, str | None]) -> str:
    """The valid sweep, with fields of a section replaced (None drops one)."""
    sec = {name: {k: v for k, v in {**fields, **changes.get(name, {})}.items() if v is not None}
           for name, fields in SWEEP_SECTIONS.items()}
    top = sec["top"]
    other = {k: v for k, v in top.items() if k not in ("name", "k", "recall_at", "threads",
                                                        "targets")}
    lines = [f"name: {top['name']}" if "name" in top else "# no name", "dataset:",
             f"  synthetic: {_flow(sec['synthetic'])}",
             *[f"  {k}: {v}" for k, v in sec["dataset"].items()],
             *[f"{k}: {top[k]}" if k in top else f"# no {k}" for k in
               ("k", "recall_at", "threads")],
             f"timing: {_flow(sec['timing'])}", f"load: {_flow(sec['load'])}",
             f"targets: {top['targets']}" if "targets" in top else "# no targets",
             "engines:",
             "  - " + "\n    ".join(f"{k}: {v}" for k, v in sec["entry"].items()),
             f"    build: {_flow(sec['build'])}", f"    query: {_flow(sec['query'])}",
             *[f"{k}: {v}" for k, v in other.items()]]
    return "\n".join(lines) + "\n"


def _engine(engine: str, build: dict[str, str], query: dict[str, str]) -> str:
    """The sweep with another engine: its own valid build and query fields, then changes."""
    return sweep_yaml(entry={"engine": engine},
                      build={**dict.fromkeys(SWEEP_SECTIONS["build"]), **build},
                      query={**dict.fromkeys(SWEEP_SECTIONS["query"]), **query})


def sweep_cases() -> Iterator[Case]:
    fmt = "sweep"
    bad_values = {
        "top": {"k": ["0", "-1", "10001", "3000000000", '"10"', "1.5", "true", ".nan", "[]"],
                "recall_at": ["[]", "x", "[0]", "[20000]", '["a"]', "[1.5]", "{}"],
                "threads": ["0", "2000", '"x"', "1.5", "true"],
                "targets": ["[0]", "[1.5]", "[.nan]", '["x"]', "[true]", "0"],
                "name": ["[]", "{}", '""', "true"], "cache": ["[]", '""', "{}"],
                "out": ["{}", '""'], "engnes": ["[]"]},
        "synthetic": {"n": ["0", "-1", "100000000000", '"300"', "1.5", "true", ".nan"],
                      "dim": ["0", "70000", '"8"'], "topics": ["0", "200000"],
                      "queries": ["0", "2000000"],
                      "seed": ["-1", '"abc"', "4294967296", "1.5"], "bogus": ["1"]},
        "dataset": {"metric": ["x", "[]", "5"], "dim": ["0", "100000"], "embedder": ["5"],
                    "queries": ["5"], "bogus": ["1"], "hdf5": ["x.h5"]},
        "timing": {"warmup": ["-5", '"abc"', "1.5", "100001", "true"],
                   "single_queries": ["0", "-1", '"5"'], "batch_repeats": ["0", "1001"],
                   "bogus": ["1"]},
        "load": {"threads": ["0", "[0]", "[1, 1000]", '"x"', "[1.5]"],
                 "seconds": ["0", "-1", ".nan", ".inf", "1000", '"2"'], "bogus": ["1"]},
        "entry": {"engine": ["nope", "5", "null", "[]"], "bild": ["{}"], "label": ["[]", '""']},
        "build": {"M": ["0", "1", "-1", "2000", '"8"', "8.5", "true", "null", "[]", "[[8]]",
                        "[8, 0]"],
                  "ef_construction": ["0", "100001"], "seed": ["-1", "4294967296", '"1"'],
                  "Mx": ["8"]},
        "query": {"ef": ["0", "100001", '"10"', "[10, 0]", ".nan"], "efs": ["1"]},
    }
    for section, fields in bad_values.items():
        for fld, bads in fields.items():
            for bad in bads:
                yield _text(fmt, f"{section}.{fld}={bad}", sweep_yaml(**{section: {fld: bad}}),
                            SWEEP_LINES[section])
    good = sweep_yaml()
    for section in ("timing", "load"):
        for bad in ("[1]", "x", "[]"):
            text = good.replace(f"{section}: {_flow(SWEEP_SECTIONS[section])}", f"{section}: {bad}")
            yield _text(fmt, f"{section}={bad}", text, 1)
    for bad in ("{sample: 0}", "{seed: -1}", "{bogus: 1}", "{sample: x}"):
        yield _text(fmt, f"dataset.queries={bad}", sweep_yaml(dataset={"queries": bad}), 5)
    yield _text(fmt, "synthetic-too-large", sweep_yaml(synthetic={"n": "10000000", "dim": "60"}),
                3)
    synthetic = f"  synthetic: {_flow(SWEEP_SECTIONS['synthetic'])}\n"
    for form in ("base: 5", 'base: ""', "store: []", "corpus: {}", "synthetic: []",
                 "synthetic: 5"):
        yield _text(fmt, f"dataset.{form}", good.replace(synthetic, f"  {form}\n"), 3)
    yield _text(fmt, "dataset-no-form", good.replace(synthetic, ""), 3)
    dataset = "dataset:\n" + synthetic + "  metric: ip\n"
    for bad in ("[]", "x", "null"):
        yield _text(fmt, f"dataset={bad}", good.replace(dataset, f"dataset: {bad}\n"), 1)
    yield _text(fmt, "dataset-missing", good.replace(dataset, ""), 1)
    head = sweep_yaml().split("engines:")[0]
    for bad, line in (("[]", 1), ("x", 1), ("null", 1), ("[5]", 1), ("[{}]", 11)):
        yield _text(fmt, f"engines={bad}", f"{head}engines: {bad}\n", line)
    engines = [("faiss-ivf", {"nlist": "0"}, {}), ("faiss-ivf", {"nlist": "2000000"}, {}),
               ("faiss-ivf", {}, {"nprobe": "0"}), ("faiss-ivfpq", {"nbits": "0"}, {}),
               ("faiss-ivfpq", {"nbits": "17"}, {}), ("faiss-ivfpq", {"m": "0"}, {}),
               ("faiss-hnsw", {"M": "0"}, {}), ("faiss-hnsw", {"M": "1"}, {}),
               ("faiss-hnsw", {"efConstruction": "0"}, {}), ("faiss-hnsw", {}, {"efSearch": "0"}),
               ("faiss-sq", {"type": "x"}, {}), ("faiss-sq", {"type": "5"}, {}),
               *[("faiss", {"factory": bad}, {}) for bad in (
                   "'HNSW0,Flat'", "'HNSW1,Flat'", "'IVF16,PQ4x0'", "'IVF0,Flat'", "5",
                   "'IVF99999999999,Flat'")],
               ("faiss", {}, {"nprobe": "0"}), ("faiss", {}, {"nprobe": '"x"'}),
               ("faiss", {}, {"nprobe": ".nan"}), ("faiss-binary", {}, {"R": "-1"}),
               ("faiss-binary", {}, {"R": "2000000"}), ("usearch", {"connectivity": "1"}, {}),
               ("usearch", {"connectivity": "0"}, {}), ("usearch", {"dtype": "zz"}, {}),
               ("usearch", {"expansion_add": "0"}, {}), ("usearch", {}, {"expansion_search": "0"}),
               ("store", {"batch": "0"}, {}), ("store", {"uri": "5"}, {}),
               ("store", {"uri": "[]"}, {}), ("store", {"populate": '"yes"'}, {}),
               ("store", {"populate": "1"}, {}), ("store", {}, {"exact": '"no"'})]
    for engine, build, query in engines:
        change = ", ".join(f"{k}={v}" for k, v in {**build, **query}.items())
        yield _text(fmt, f"{engine}:{change}", _engine(engine, build, query),
                    SWEEP_LINES["query" if query else "build"])
    many = ", ".join(str(i) for i in range(1, 201))
    yield _text(fmt, "grid-too-large",
                sweep_yaml(build={"M": f"[{', '.join(str(i) for i in range(2, 102))}]",
                                  "ef_construction": f"[{many}]"}), 13)
    for name, text, line in YAML_DAMAGE:
        yield _text(fmt, name, text, line)
    yield from _file_damage(fmt, sweep_yaml())


ALL_CASES = [*golden_yaml_cases(), *golden_json_cases(), *golden_jsonl_cases(),
             *policy_cases(), *results_cases(), *corpus_jsonl_cases(), *corpus_parquet_cases(),
             *sweep_cases()]


def _write(case: Case, path: Path) -> None:
    if callable(case.content):
        case.content(path)
    elif case.content is not None:
        path.write_bytes(case.content)


def _args(fmt: str, path: Path, tmp: Path) -> list[str]:
    """``recallwatch gate`` with the file under test and valid files for the others (a sweep:
    ``recallwatch bench``)."""
    if fmt == "sweep":
        return ["bench", str(path), "--quiet"]
    golden, results, corpus = tmp / "ok-golden.yaml", tmp / "ok-results.jsonl", None
    golden.write_text(golden_yaml(), encoding="utf-8")
    results.write_text(RESULTS_OK + "\n", encoding="utf-8")
    policy = None
    if fmt.startswith("golden"):
        golden = path
    elif fmt == "results":
        results = path
    elif fmt == "policy":
        policy = path
        corpus = tmp / "ok-corpus.jsonl"  # the policy filters: a corpus lets it apply
        corpus.write_text(CORPUS_OK + "\n", encoding="utf-8")
    else:
        corpus = path
    args = ["gate", str(golden), "--results", str(results), "--no-history"]
    args += [] if policy is None else ["--policy", str(policy)]
    return args + ([] if corpus is None else ["--corpus", str(corpus)])


def check_one_error_line(result: object, path: Path, line: int | None) -> None:
    """Exit 2, nothing on stdout, one ``Error:`` line naming the file (and the line)."""
    exit_code, stdout, stderr = (getattr(result, a) for a in ("exit_code", "stdout", "stderr"))
    assert exit_code == 2, (exit_code, stderr, stdout)
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    where = f"Error: {path}:{line}: " if line is not None else f"Error: {path}"
    assert lines[0].startswith(where), (where, lines[0][:300])
    if line is None:  # and no line made up
        assert not re.match(rf"{re.escape(where)}:\d+:", lines[0]), lines[0]


def test_the_valid_files_pass(tmp_path: Path) -> None:
    for fmt in ("golden.yaml", "policy", "results", "corpus.jsonl"):
        path = tmp_path / fmt
        path.mkdir()
        target = path / FILE_NAMES[fmt]
        good = {"golden.yaml": golden_yaml(), "policy": policy_yaml(),
                "results": RESULTS_OK + "\n", "corpus.jsonl": CORPUS_OK + "\n"}[fmt]
        target.write_text(good, encoding="utf-8")
        result = runner.invoke(COMMAND, _args(fmt, target, path))
        assert result.exit_code == 0, (fmt, result.stderr)
    target = tmp_path / "corpus.parquet"
    pq.write_table(corpus_table(), target)
    assert runner.invoke(COMMAND, _args("corpus.parquet", target, tmp_path)).exit_code == 0
    target = tmp_path / "sweep.yaml"
    target.write_text(sweep_yaml(), encoding="utf-8")
    result = runner.invoke(COMMAND, _args("sweep", target, tmp_path))
    assert result.exit_code == 0, result.stderr


def test_there_are_enough_distinct_cases() -> None:
    assert len({c.id for c in ALL_CASES}) == len(ALL_CASES) >= 240


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_malformed_file_is_one_located_error_line(case: Case, tmp_path: Path) -> None:
    path = tmp_path / FILE_NAMES[case.fmt]
    _write(case, path)
    check_one_error_line(runner.invoke(COMMAND, _args(case.fmt, path, tmp_path)), path, case.line)
