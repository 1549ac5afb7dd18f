"""A held-out test split: each golden query is marked ``split: tune`` or ``split: test``.

Policies and thresholds are calibrated on ``tune``; the gate's verdict is computed on ``test``,
queries that no calibration has seen, so a threshold fitted to the set cannot flatter the
verdict.

**The assignment.** Within each stratum (a domain with ``stratify="domain"``, else the whole
set) the test part gets ``round(test × size)`` queries. Queries that already have a split keep
it (so test queries stay held out across versions of the set): only unassigned queries are
placed, those with the smallest *draw key* going to test until the stratum's quota is met. A
query's draw key is the SHA-256 of the seed and its id, so the result depends on the seed and
the ids alone, not on the order of the file, and a query added later does not move the others.
``reassign=True`` forgets every existing split first.

**The file.** Only ``split:`` lines change: in a YAML file each assigned query gains a
``split:`` key as its first key and comments and layout stay; JSON and JSONL files are written
back with the key added. The new text is read back and checked before it is written (whole).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from recallwatch.errors import InputError, UsageError
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.formats.structured import read_text

__all__ = ["SplitPlan", "apply_split", "plan_split", "split_golden"]


@dataclass(frozen=True)
class SplitPlan:
    """Every query's split after the assignment, and what changed."""

    splits: dict[str, str]  # query id -> "tune" | "test"
    kept: int  # queries whose existing split was kept
    assigned: int  # queries newly assigned (or re-assigned)
    per_stratum: dict[str, dict[str, int]]  # stratum -> {"tune": n, "test": n}

    @property
    def counts(self) -> dict[str, int]:
        values = list(self.splits.values())
        return {"tune": values.count("tune"), "test": values.count("test")}

    def to_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "kept": self.kept, "assigned": self.assigned,
                "per_stratum": self.per_stratum}


def _draw_key(seed: int, query_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{query_id}".encode()).hexdigest()


def plan_split(golden: GoldenSet, *, test: float = 0.3, seed: int = 0,
               stratify: str | None = None, reassign: bool = False) -> SplitPlan:
    """The tune/test assignment of every query of ``golden`` (nothing is written)."""
    if not 0.0 < test < 1.0:
        raise UsageError(f"the test share must be between 0 and 1 (exclusive), not {test}")
    if stratify not in (None, "domain"):
        raise UsageError(f"queries can be stratified by domain only, not {stratify!r}")
    strata: dict[str, list[Any]] = {}
    for q in golden.queries:
        strata.setdefault((q.domain or "(none)") if stratify else "(all)", []).append(q)
    splits: dict[str, str] = {}
    kept = assigned = 0
    per: dict[str, dict[str, int]] = {}
    for name, queries in strata.items():
        have = {q.id: q.split for q in queries if q.split is not None and not reassign}
        quota = int(test * len(queries) + 0.5)
        missing = max(quota - list(have.values()).count("test"), 0)
        fresh = sorted((q for q in queries if q.id not in have),
                       key=lambda q: _draw_key(seed, q.id))
        for i, q in enumerate(fresh):
            splits[q.id] = "test" if i < missing else "tune"
        splits.update(have)
        kept += len(have)
        assigned += len(fresh)
        parts = [splits[q.id] for q in queries]
        per[name] = {"tune": parts.count("tune"), "test": parts.count("test")}
    ordered = {q.id: splits[q.id] for q in golden.queries}
    return SplitPlan(ordered, kept, assigned, dict(sorted(per.items())))


def apply_split(path: str | Path, plan: SplitPlan) -> str:
    """The text of the golden file at ``path`` with ``plan``'s splits written in."""
    p = Path(path)
    text = read_text(p)
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        new = _jsonl(text, plan.splits)
    elif suffix == ".json":
        data = json.loads(text)
        for raw in data["queries"] if isinstance(data, dict) else data:
            raw["split"] = plan.splits[str(raw["id"])]
        new = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    else:
        new = _yaml(text, plan.splits, p)
    _check(new, p, plan.splits)
    return new


def _jsonl(text: str, splits: dict[str, str]) -> str:
    out = []
    for line in text.splitlines():
        if not line.strip():
            out.append(line)
            continue
        raw = json.loads(line)
        raw["split"] = splits[str(raw["id"])]
        out.append(json.dumps(raw, ensure_ascii=False))
    return "\n".join(out) + "\n"


_SPLIT_LINE = re.compile(r"^(\s*)split\s*:.*$")
_FIRST_KEY = re.compile(r"^(\s*-\s+|\s*)(\S.*)$")


def _yaml(text: str, splits: dict[str, str], source: Path) -> str:
    from recallwatch.formats.fields import line_of
    from recallwatch.formats.structured import load_structured

    data = load_structured(source)
    raw_queries = data.get("queries", []) if isinstance(data, dict) else data
    text, flow = _flow_splits(text, splits)
    lines = text.split("\n")
    starts = sorted((line_of(raw) or 0, str(raw.get("id")), raw) for raw in raw_queries)
    inserts: dict[int, Callable[[str], list[str]]] = {}
    for n, (start, qid, raw) in enumerate(starts):
        if qid in flow:
            continue
        if start < 1 or lines[start - 1].lstrip().startswith(("{", "- {")):
            raise InputError(source=source, line=start or None, record=qid,
                             expected="a query written as a block mapping (one key per line)",
                             found="<a flow mapping {…}>",
                             hint="write it one key per line, or convert the file to JSON")
        value = splits[qid]
        if "split" in raw:
            end = starts[n + 1][0] - 1 if n + 1 < len(starts) else len(lines)
            for i in range(start - 1, end):
                m = _SPLIT_LINE.match(lines[i].split(" - ", 1)[-1] if i == start - 1
                                      else lines[i])
                if m:
                    head = lines[i][: lines[i].index("split")]
                    lines[i] = f"{head}split: {value}"
                    break
            continue
        inserts[start - 1] = _prefixer(value)
    out: list[str] = []
    for i, line in enumerate(lines):
        out.extend(inserts[i](line) if i in inserts else [line])
    return "\n".join(out)


def _flow_splits(text: str, splits: dict[str, str]) -> tuple[str, set[str]]:
    """``text`` with the split written into every query written as a flow mapping
    (``{id: q1, text: …}``): ``split: VALUE, `` right after its ``{``, or its ``split`` value
    replaced; and the ids of those queries. Nothing else of the text changes (no line is added,
    so the block-mapping queries keep their line numbers)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    queries = root
    if isinstance(root, yaml.MappingNode):
        queries = next((v for k, v in root.value if getattr(k, "value", None) == "queries"), None)
    if not isinstance(queries, yaml.SequenceNode):
        return text, set()
    edits: list[tuple[int, int, str]] = []
    flow: set[str] = set()
    for node in queries.value:
        if not isinstance(node, yaml.MappingNode) or not node.flow_style:
            continue
        keys = {getattr(k, "value", None): v for k, v in node.value}
        qid = getattr(keys.get("id"), "value", None)
        if qid not in splits:
            continue
        flow.add(qid)
        old = keys.get("split")
        if old is not None:
            edits.append((old.start_mark.index, old.end_mark.index, splits[qid]))
        else:
            at = node.start_mark.index + 1
            edits.append((at, at, f"split: {splits[qid]}, "))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text, flow


def _prefixer(value: str) -> Callable[[str], list[str]]:
    """Adds ``split: VALUE`` to the mapping that starts on a line: after its first key when that
    key's value is on the line (``- id: x``, the usual layout), else as its first key."""
    def rewrite(line: str) -> list[str]:
        m = _FIRST_KEY.match(line)
        if m is None:
            return [line]
        lead, rest = m.group(1), m.group(2)
        indent = " " * len(lead)
        if _ONE_LINE_VALUE.match(rest):
            return [line, f"{indent}split: {value}"]
        if "-" in lead:  # "  - text: >" -> "  - split: v" + "    text: >"
            return [f"{lead}split: {value}", indent + rest]
        return [f"{indent}split: {value}", line]
    return rewrite


# "key: value" with the whole value on the line: a plain word-like scalar or a quoted string
# closed on the line (anything else, such as a block scalar `|` or `>`, may continue below).
_ONE_LINE_VALUE = re.compile(r"""^[\w-]+\s*:\s+([\w.@/-]+|"([^"\\]|\\.)*"|'[^']*')\s*(#.*)?$""")


def _check(new: str, source: Path, splits: dict[str, str]) -> None:
    """Read the new text back: the same queries, each with its planned split."""
    from recallwatch.formats.structured import LINE_KEY

    suffix = source.suffix.lower()
    try:
        if suffix == ".jsonl":
            data: Any = [json.loads(line) for line in new.splitlines() if line.strip()]
        elif suffix == ".json":
            data = json.loads(new)
        else:
            data = yaml.safe_load(new)
    except (ValueError, yaml.YAMLError) as exc:
        raise InputError(source=source, expected="a golden file the split can be written into",
                         found=f"<{exc}>") from None
    if isinstance(data, list):
        data = {"queries": data}
    got = GoldenSet.from_dict(_strip(data, LINE_KEY), source=source, unlabelled=True)
    if {q.id: q.split for q in got.queries} != splits:
        raise InputError(source=source, expected="a layout the split can be written into",
                         found="<a query whose keys are not one per line>",
                         hint="convert the file to JSON, or write each query one key per line")


def _strip(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v, key) for k, v in obj.items() if k != key}
    if isinstance(obj, list):
        return [_strip(v, key) for v in obj]
    return obj


def split_golden(path: str | Path, **options: Any) -> tuple[SplitPlan, str]:
    """Plan the split of the golden file at ``path`` and return it with the file's new text."""
    plan = plan_split(load_golden(path, unlabelled=True), **options)
    return plan, apply_split(path, plan)
