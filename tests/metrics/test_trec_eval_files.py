"""Every measure of trec_eval's standard set that recallwatch names, against trec_eval 10's own
expected output on its own test files (tests/data/trec_eval, copied unchanged with their notice):
`out.test.aq` (all queries retrieved) and `out.test.aqc` (`-c`, one query absent from the run).
trec_eval prints four decimals, so values agree to 5e-5."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from recallwatch.metrics import Qrels, Run, evaluate, parse_measure

DATA = Path(__file__).parents[1] / "data" / "trec_eval"

# trec_eval's name -> recallwatch's (None: a measure recallwatch does not offer)
_FIXED = {
    "num_q": "NumQ", "num_ret": "NumRet", "num_rel": "NumRel", "num_rel_ret": "NumRelRet",
    "map": "AP", "gm_map": "GMAP", "Rprec": "Rprec", "bpref": "Bpref", "recip_rank": "RR",
    "infAP": "infAP", "11pt_avg": "AP11pt", "ndcg": "nDCG", "set_P": "SetP",
    "set_recall": "SetR", "set_F": "SetF", "rbp": "RBP(p=0.9)",
}
_CUT = {"P": "P", "recall": "R", "ndcg_cut": "nDCG", "map_cut": "AP", "relative_P": "Rcap",
        "success": "Success"}


def _ours(name: str) -> str | None:
    if name in _FIXED:
        return _FIXED[name]
    if name.startswith("iprec_at_recall_"):
        return f"IPrec@{name.rsplit('_', 1)[1]}"
    match = re.fullmatch(r"(.+)_(\d+)", name)
    if match and match.group(1) in _CUT:
        return f"{_CUT[match.group(1)]}@{match.group(2)}"
    return None


def _expected(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        if name in ("runid", "relstring"):
            continue
        out.setdefault(name, {})[qid] = float(value)
    return out


@pytest.mark.parametrize(("run_file", "out_file"),
                         [("results.test", "out.test.aq"), ("results.trunc", "out.test.aqc")])
def test_matches_trec_eval_output(run_file: str, out_file: str) -> None:
    expected = _expected(DATA / out_file)
    names = {t: o for t in expected if (o := _ours(t)) is not None}
    # the standard set this release covers, by trec_eval's names
    for name in ("num_q", "num_ret", "num_rel", "num_rel_ret", "gm_map", "bpref", "infAP",
                 "iprec_at_recall_0.50", "11pt_avg", "set_P", "set_recall", "set_F", "rbp",
                 "map_cut_10", "ndcg"):
        assert name in names
    res = evaluate(Qrels.from_trec(DATA / "qrels.test"), Run.from_trec(DATA / run_file),
                   [*names.values(), "Judged@5", "Judged@10", "Judged@20", "NumRet"])
    assert res.query_ids == ["301", "302", "303"]
    if out_file.endswith("c"):
        assert res.missing_from_run == ["302"]
    checked = 0
    for trec_name, ours in names.items():
        measure = parse_measure(ours)
        for qid, value in expected[trec_name].items():
            got = (res.aggregate[measure] if qid == "all"
                   else res.per_query[measure][res.query_ids.index(qid)])
            if trec_name == "gm_map" and qid != "all":
                got = float(np.log(max(got, 1e-5)))  # trec_eval prints log(AP) per query
            assert got == pytest.approx(value, abs=5e-5), (trec_name, qid)
            checked += 1
    assert checked > 250
    # unj.k (the unjudged share of the top k, divided by k) is Judged@k's complement here,
    # where every grade is 0 or 1
    retrieved = res.per_query[parse_measure("NumRet")]
    for k in (5, 10, 20):
        judged = res.per_query[parse_measure(f"Judged@{k}")]
        for qid, value in expected[f"unj_{k}"].items():
            if qid == "all":
                continue
            i = res.query_ids.index(qid)
            depth = min(k, retrieved[i])
            assert (depth - judged[i] * depth) / k == pytest.approx(value, abs=5e-5)
