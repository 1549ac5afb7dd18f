"""`golden split`: a deterministic, stratified tune/test split that never moves an existing
assignment unless asked, written into the file without losing its comments."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from recallwatch.errors import InputError
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.judgments.split import plan_split, split_golden
from tests.clirun import cli

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


@pytest.fixture
def kb_golden(tmp_path: Path) -> Path:
    return Path(shutil.copy(KB / "golden.yaml", tmp_path / "golden.yaml"))


def test_stratified_split_holds_out_the_share_of_every_domain() -> None:
    g = load_golden(KB / "golden.yaml")
    plan = plan_split(g, test=0.3, seed=7, stratify="domain")
    sizes = Counter(q.domain for q in g.queries)
    for domain, n in sizes.items():
        assert plan.per_stratum[domain]["test"] == int(0.3 * n + 0.5)
        assert plan.per_stratum[domain]["tune"] + plan.per_stratum[domain]["test"] == n
    assert plan.assigned == len(g.queries) and plan.kept == 0


def test_the_split_depends_on_seed_and_ids_not_on_file_order() -> None:
    g = load_golden(KB / "golden.yaml")
    shuffled = GoldenSet(g.name, g.version, tuple(reversed(g.queries)), g.top_k)
    assert plan_split(g, seed=5).splits == plan_split(shuffled, seed=5).splits
    assert plan_split(g, seed=5).splits != plan_split(g, seed=6).splits


def test_existing_assignments_stay_unless_reassigned(kb_golden: Path) -> None:
    first, text = split_golden(kb_golden, test=0.3, seed=1, stratify="domain")
    kb_golden.write_text(text, encoding="utf-8")
    # another seed and share: nothing moves, the file is unchanged
    second, again = split_golden(kb_golden, test=0.5, seed=2, stratify="domain")
    assert second.splits == first.splits and second.kept == len(first.splits)
    assert again == text
    # new queries join: only they are placed, the old test queries stay held out
    data = yaml.safe_load(text)
    data["queries"] += [{"id": f"new_{i}", "text": f"pregunta nueva {i}", "expected": ["x"],
                         "domain": "faq"} for i in range(10)]
    grown = GoldenSet.from_dict(data)
    plan = plan_split(grown, test=0.3, seed=2, stratify="domain")
    assert all(plan.splits[q] == s for q, s in first.splits.items())
    assert plan.assigned == 10
    # --reassign draws everything again
    moved = plan_split(load_golden(kb_golden), test=0.3, seed=2, stratify="domain",
                       reassign=True)
    assert moved.assigned == len(first.splits) and moved.splits != first.splits


def test_yaml_keeps_every_line_and_comment(kb_golden: Path) -> None:
    before = kb_golden.read_text(encoding="utf-8").splitlines()
    code, out, err = cli("golden", "split", str(kb_golden), "--test-share", "0.3", "--stratify",
                         "domain", "--seed", "7")
    assert code == 0, err
    after = kb_golden.read_text(encoding="utf-8").splitlines()
    added = [line for line in after if line.strip().startswith("split:")]
    assert len(added) == 78 and [line for line in after if line not in added] == before
    g = load_golden(kb_golden)
    assert Counter(q.split for q in g.queries) == {"tune": 55, "test": 23}
    assert "55 tune, 23 test" in out


def test_json_and_jsonl_files(tmp_path: Path) -> None:
    g = load_golden(KB / "golden.yaml")
    (tmp_path / "g.json").write_text(json.dumps(g.to_dict(), ensure_ascii=False),
                                     encoding="utf-8")
    (tmp_path / "g.jsonl").write_text("\n".join(json.dumps(q.to_dict(), ensure_ascii=False)
                                                for q in g.queries) + "\n", encoding="utf-8")
    expected = plan_split(g, seed=3).splits
    for name in ("g.json", "g.jsonl"):
        assert cli("golden", "split", str(tmp_path / name), "--seed", "3")[0] == 0
        assert {q.id: q.split for q in load_golden(tmp_path / name).queries} == expected


def test_flow_style_yaml_is_split_in_place(tmp_path: Path) -> None:
    """Queries written as flow mappings, alone or beside block ones, get their split inside the
    braces; every other character of the file stays."""
    g = load_golden(KB / "golden.yaml")
    flows = [json.dumps(q.to_dict(), ensure_ascii=False) for q in g.queries]
    text = ("# a flow-style set\nname: " + g.name + "\nversion: '" + g.version + "'\nqueries:\n"
            + "".join(f"  - {f}  # query {i}\n" for i, f in enumerate(flows[:-1]))
            + f"  - id: {g.queries[-1].id}\n    text: block one\n    expected: [x]\n")
    path = tmp_path / "flow.yaml"
    path.write_text(text, encoding="utf-8")
    expected = plan_split(load_golden(path), seed=5).splits
    for reassign in ((), ("--reassign",)):
        code, _, err = cli("golden", "split", str(path), "--seed", "5", *reassign)
        assert code == 0, err
        assert {q.id: q.split for q in load_golden(path).queries} == expected
    after = path.read_text(encoding="utf-8")
    assert after.replace("split: tune, ", "").replace("split: test, ", "").replace(
        f"    split: {expected[g.queries[-1].id]}\n", "") == text
    whole = tmp_path / "whole.yaml"  # the whole set on one line
    whole.write_text("{name: g, version: '1', queries: [" + ", ".join(flows[:4]) + "]}\n",
                     encoding="utf-8")
    assert cli("golden", "split", str(whole), "--seed", "5")[0] == 0
    assert all(q.split for q in load_golden(whole).queries)


def test_out_and_dry_run_leave_the_input_alone(kb_golden: Path, tmp_path: Path) -> None:
    original = kb_golden.read_bytes()
    assert cli("golden", "split", str(kb_golden), "--dry-run")[0] == 0
    assert cli("golden", "split", str(kb_golden), "--out", str(tmp_path / "s.yaml"))[0] == 0
    assert kb_golden.read_bytes() == original and load_golden(tmp_path / "s.yaml").has_split


def test_a_bad_split_value_is_a_located_error(tmp_path: Path) -> None:
    bad = tmp_path / "g.yaml"
    bad.write_text("name: g\nqueries:\n  - id: a\n    text: t\n    expected: [x]\n"
                   "    split: train\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_golden(bad)
    assert str(err.value).startswith(f"{bad}:3: record 'a': field 'split': expected tune or "
                                     "test, found 'train'")
    code, _, stderr = cli("golden", "split", str(bad))
    assert code == 2 and stderr.count("\n") == 1 and "field 'split'" in stderr


def test_a_sampled_unlabelled_set_can_be_split(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text('name: s\nqueries:\n  - id: q-1\n    text: "a"\n    expected: []\n'
                 '    frequency: 3\n  - id: q-2\n    text: "b"\n    expected: []\n',
                 encoding="utf-8")
    assert cli("golden", "split", str(f), "--test-share", "0.5")[0] == 0
    assert Counter(q.split for q in load_golden(f, unlabelled=True).queries) == {
        "tune": 1, "test": 1}
