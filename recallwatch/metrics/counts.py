"""NumQ, NumRet, NumRel, NumRelRet: the counts trec_eval prints first, summed over queries."""

from __future__ import annotations

from typing import Any

import numpy as np

from recallwatch.metrics._measure import REL, Family, Measure, register
from recallwatch.metrics._ranking import Ranking


def num_q(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return np.ones(r.n_queries, dtype=np.float64)


def num_ret(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return r.num_ret.copy()


def num_rel(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return r.num_rel(m.rel).copy()


def num_rel_ret(r: Ranking, m: Measure) -> np.ndarray[Any, Any]:
    return r.count(m.rel).copy()


_SUM = "The run's figure is the sum over queries, not the mean."

NUM_Q = register(
    Family(
        name="NumQ",
        title="Number of queries",
        definition="1 for every evaluated query (every query of the judgments, retrieved or "
        f"not). {_SUM}",
        cutoff="none",
        params=(),
        trec_eval="`num_q` (with `-c`: every judged query)",
        kernel=num_q,
        aggregate="sum",
    )
)

NUM_RET = register(
    Family(
        name="NumRet",
        title="Number of documents retrieved",
        definition="How many documents the run returned for the query (0 for a query absent "
        f"from the run). {_SUM}",
        cutoff="none",
        params=(),
        trec_eval="`num_ret`",
        kernel=num_ret,
        aggregate="sum",
        needs="retrieved",
    )
)

NUM_REL = register(
    Family(
        name="NumRel",
        title="Number of relevant documents",
        definition="|rel|: how many judged documents of the query have a grade >= `rel`, "
        f"retrieved or not. {_SUM}",
        cutoff="none",
        params=(REL,),
        trec_eval="`num_rel`",
        kernel=num_rel,
        aggregate="sum",
    )
)

NUM_REL_RET = register(
    Family(
        name="NumRelRet",
        title="Number of relevant documents retrieved",
        definition="How many of the documents the run returned have a grade >= `rel`. "
        f"{_SUM}",
        cutoff="none",
        params=(REL,),
        trec_eval="`num_rel_ret`",
        kernel=num_rel_ret,
        aggregate="sum",
    )
)
