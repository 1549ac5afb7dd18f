"""Results files from any external search system: one JSON line per query,
``{"query_id": id, "results": [{"id": chunk_id, "score": float}, …]}`` in rank order."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recallwatch.errors import InputError
from recallwatch.formats.fields import check_keys, line_of, shown, text_id
from recallwatch.formats.structured import iter_jsonl

__all__ = ["RankedList", "load_results"]


@dataclass(frozen=True)
class RankedList:
    ids: list[str]
    scores: np.ndarray  # float64, rank order as given


def load_results(path: str | Path) -> dict[str, RankedList]:
    p = Path(path)
    out: dict[str, RankedList] = {}
    first_line: dict[str, int | None] = {}
    for obj in iter_jsonl(p):
        line = line_of(obj)
        qid = text_id(obj.get("query_id"))
        if qid is None:
            raise InputError(source=p, line=line, field="query_id", expected="a query id",
                             found=shown(obj.get("query_id")))
        check_keys(obj, {"query_id", "results"}, source=p, record=qid)
        if qid in out:
            raise InputError("duplicate query_id", source=p, line=line, record=qid,
                             hint=f"first at line {first_line[qid]}")
        results = obj.get("results")
        if not isinstance(results, list):
            raise InputError(source=p, line=line, record=qid, field="results",
                             expected="a list of {id, score}", found=shown(results))
        ids: list[str] = []
        scores: list[float] = []
        seen: set[str] = set()
        for pos, item in enumerate(results, start=1):
            if not isinstance(item, dict):
                raise InputError(source=p, line=line, record=qid, field=f"results[{pos}]",
                                 expected="an object {id, score}", found=item)
            cid, score = text_id(item.get("id")), item.get("score")
            if cid is None:
                raise InputError(source=p, line=line, record=qid, field=f"results[{pos}].id",
                                 expected="a non-empty chunk id", found=shown(item.get("id")))
            if (isinstance(score, bool) or not isinstance(score, (int, float))
                    or not math.isfinite(score)):
                raise InputError(source=p, line=line, record=qid, field=f"results[{pos}].score",
                                 expected="a finite number", found=shown(score))
            if cid in seen:
                raise InputError(f"chunk {cid!r} appears twice in the results", source=p,
                                 line=line, record=qid, field=f"results[{pos}].id")
            seen.add(cid)
            ids.append(cid)
            scores.append(float(score))
        out[qid] = RankedList(ids, np.asarray(scores, dtype=np.float64))
        first_line[qid] = line
    return out
