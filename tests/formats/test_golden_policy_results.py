"""Golden, policy and results files: valid ones load, every bad one names file:line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallwatch.errors import InputError
from recallwatch.formats.golden import load_golden
from recallwatch.formats.policy import Policy, load_policy
from recallwatch.formats.results import load_results

GOOD = """\
name: demo
version: "3"
top_k: 5
queries:
  - id: q1
    text: ¿Cuántos días de vacaciones?
    expected: [a, b]
    gold: [a]
    domain: rrhh
    tags: [numeric]
  - id: q2
    text: Otra pregunta
    expected: [c]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_golden_yaml_loads_and_hash_is_stable(tmp_path: Path) -> None:
    g = load_golden(write(tmp_path, "g.yaml", GOOD))
    assert (g.name, g.version, g.top_k, len(g.queries)) == ("demo", "3", 5, 2)
    q = g.queries[0]
    assert q.expected == ("a", "b") and q.gold == ("a",) and q.tags == ("numeric",)
    # Same content in JSON and JSONL-equivalent structure gives the same canonical hash.
    as_json = write(tmp_path, "g.json", json.dumps(g.to_dict()))
    assert load_golden(as_json).hash == g.hash
    changed = write(tmp_path, "g2.yaml", GOOD.replace("expected: [c]", "expected: [c, d]"))
    assert load_golden(changed).hash != g.hash


def test_golden_jsonl(tmp_path: Path) -> None:
    lines = [{"id": "q1", "text": "t", "expected": ["a"]}, {"id": "q2", "text": "u",
                                                            "expected": ["b"]}]
    p = write(tmp_path, "set.jsonl", "\n".join(json.dumps(x) for x in lines))
    g = load_golden(p)
    assert g.name == "set" and [q.id for q in g.queries] == ["q1", "q2"]


@pytest.mark.parametrize(("mutation", "message"), [
    (("id: q2", "id: q1"), "g.yaml:11: record 'q1': field 'id': duplicate query id"),
    (("expected: [c]", "expected: []"),
     "g.yaml:11: record 'q2': field 'expected': expected a non-empty list of chunk ids, found []"),
    (("gold: [a]", "gold: [z]"),
     "g.yaml:5: record 'q1': field 'gold': expected a subset of expected (its chunk ids, or "
     "members of its groups of alternatives), found ['z']"),
    (("top_k: 5", "top_k: 0"),
     "g.yaml:1: field 'top_k': expected an integer in [1, 10000], found 0"),
    (("    tags: [numeric]", "    tagz: [numeric]"),
     "g.yaml:5: record 'q1': field 'tagz': unknown key (did you mean 'tags'?)"),
    (("    text: Otra pregunta\n", ""),
     "g.yaml:11: record 'q2': field 'text': expected a non-empty string, found <nothing>"),
])
def test_golden_errors_name_file_line_field(tmp_path: Path, mutation: tuple[str, str],
                                            message: str) -> None:
    p = write(tmp_path, "g.yaml", GOOD.replace(*mutation))
    with pytest.raises(InputError) as err:
        load_golden(p)
    assert str(err.value).startswith(f"{tmp_path}/{message}")


def test_golden_invalid_yaml_and_encoding(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"g.yaml:4: invalid YAML"):
        load_golden(write(tmp_path, "g.yaml", "name: x\nqueries:\n  - id: [\n"))
    bad = tmp_path / "b.yaml"
    bad.write_bytes(b"name: x\nqueries: \xff\n")
    with pytest.raises(InputError, match=r"b.yaml:2: expected UTF-8 text, found <byte 0xff"):
        load_golden(bad)
    with pytest.raises(InputError, match="expected an existing file"):
        load_golden(tmp_path / "absent.yaml")
    with pytest.raises(InputError, match="empty file"):
        load_golden(write(tmp_path, "e.yaml", "  \n"))


def test_policy_defaults_and_file(tmp_path: Path) -> None:
    default = load_policy(None)
    assert (default.recall_floor, default.min_mean_quality, default.noise_ceiling,
            default.gold_failures_allowed,
            default.other_failures_allowed) == (0.9, 95, 0.3, 0, 0.05)
    p = write(tmp_path, "p.yaml", "noise_ceiling:\n  default: 0.3\n  per_domain: {legal: 0.5}\n"
              "waivers:\n  q7: tabla pendiente de descripción\n")
    pol = load_policy(p)
    assert pol.ceiling_for("legal") == 0.5 and pol.ceiling_for("rrhh") == 0.3
    assert pol.waivers == {"q7": "tabla pendiente de descripción"}
    assert pol.hash != default.hash
    # The search section is configuration, not policy: it does not change the policy hash.
    with_search = write(tmp_path, "s.yaml", "search: {depth: 50}\n")
    assert load_policy(with_search).hash == Policy().hash
    assert Policy.allowed_noise(0.3, 10) == 3


@pytest.mark.parametrize(("text", "message"), [
    ("recall_flor: 0.9\n", "field 'recall_flor': unknown key (did you mean 'recall_floor'?)"),
    ("recall_floor: 1.5\n", "field 'recall_floor': expected a number in [0, 1], found 1.5"),
    ("waivers:\n  q1: ''\n", "record 'q1': field 'waivers': expected a written diagnosis"),
    ("noise_ceiling: {per_domain: {legal: 2}}\n",
     "field 'noise_ceiling.per_domain.legal': expected a fraction in [0, 1], found 2"),
    ("top_k: 0\n", "field 'top_k': expected an integer in [1, 10000], found 0"),
])
def test_policy_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        load_policy(write(tmp_path, "p.yaml", text))
    assert message in str(err.value)
    assert str(tmp_path / "p.yaml") in str(err.value)


def test_results_file(tmp_path: Path) -> None:
    p = write(tmp_path, "r.jsonl",
              '{"query_id": "q1", "results": [{"id": "a", "score": 0.9}, '
              '{"id": "b", "score": 0.5}]}\n'
              '\n{"query_id": "q2", "results": []}\n')
    res = load_results(p)
    assert res["q1"].ids == ["a", "b"] and list(res["q1"].scores) == [0.9, 0.5]
    assert res["q2"].ids == []


@pytest.mark.parametrize(("line2", "message"), [
    ('{"query_id": "q1", "results": []}', "r.jsonl:2: record 'q1': duplicate query_id"),
    ('{"query_id": "q2", "results": [{"id": "a", "score": "high"}]}',
     "r.jsonl:2: record 'q2': field 'results[1].score': expected a finite number, found 'high'"),
    ('{"query_id": "q2", "results": [{"id": "a", "score": 1}, {"id": "a", "score": 0.5}]}',
     "r.jsonl:2: record 'q2': field 'results[2].id': chunk 'a' appears twice in the results"),
    ('{"query_id": "q2", "result": []}',
     "r.jsonl:2: record 'q2': field 'result': unknown key (did you mean 'results'?)"),
    ('{"query_id": "q2", "results": [}', "r.jsonl:2: invalid JSON"),
])
def test_results_errors(tmp_path: Path, line2: str, message: str) -> None:
    p = write(tmp_path, "r.jsonl", '{"query_id": "q1", "results": []}\n' + line2 + "\n")
    with pytest.raises(InputError) as err:
        load_results(p)
    assert message in str(err.value)
