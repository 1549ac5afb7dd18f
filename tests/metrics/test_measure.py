"""Measures as values: parsing, printing, hashing, validation, and the generated reference."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallwatch.errors import UsageError
from recallwatch.metrics import MEASURES, Measure, parse_measure
from recallwatch.metrics.reference import render

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


@pytest.mark.parametrize(
    "text",
    [
        "P@10",
        "R@100",
        "Rcap@10",
        "RR",
        "RR@10",
        "nDCG",
        "nDCG@10",
        "nDCG(dcg=exp-log2)@10",
        "AP",
        "AP@5",
        "Success@1",
        "Rprec",
        "P(rel=2)@10",
        "Rprec(rel=3)",
        "AP(rel=2)",
    ],
)
def test_canonical_names_round_trip(text: str) -> None:
    m = parse_measure(text)
    assert str(m) == text
    assert parse_measure(str(m)) == m
    assert hash(m) == hash(parse_measure(text))


def test_equivalent_spellings_parse_to_the_same_value() -> None:
    assert parse_measure("nDCG(dcg='exp-log2')@10") == parse_measure("nDCG(dcg=exp-log2)@10")
    assert parse_measure("P(rel=1)@10") == Measure("P", cutoff=10)
    assert str(parse_measure("P(rel=1)@10")) == "P@10"
    assert parse_measure("MAP") == Measure("AP") and str(parse_measure("MRR@10")) == "RR@10"
    assert {parse_measure("nDCG@10"), Measure("nDCG", 10)} == {Measure("nDCG", cutoff=10)}


@given(
    st.sampled_from(["P", "R", "Rcap", "Success", "RR", "AP", "nDCG"]),
    st.integers(1, 10_000),
    st.integers(1, 5),
)
def test_round_trip_property(name: str, k: int, rel: int) -> None:
    family = MEASURES.get(name)
    m = Measure(name, cutoff=k, rel=rel) if family.param("rel") else Measure(name, cutoff=k)
    assert parse_measure(str(m)) == m


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "ndcg@10",
            "unknown measure 'ndcg' (did you mean 'nDCG'?); valid measures: AP, AP11pt, "
            "Bpref, ERR, GMAP, IPrec, Judged, NumQ, NumRel, NumRelRet, NumRet, P, R, RBP, RR, "
            "Rcap, Rprec, SetF, SetP, SetR, Success, alpha_nDCG, infAP, nDCG",
        ),
        ("Recall@10", "unknown measure 'Recall'"),
        ("P", "measure P needs a cut-off: write P@k"),
        ("Rprec@10", "measure Rprec takes no cut-off, found @10"),
        ("P@0", "P: cut-off must be >= 1, found 0"),
        ("P@ten", "cut-off must be an integer, found 'ten'"),
        ("P(rel=0)@10", "P: rel must be an integer >= 1, found 0"),
        ("nDCG(dcg=exp)@10", "nDCG: dcg must be one of log2, exp-log2, found 'exp'"),
        ("nDCG(rel=2)@10", "measure nDCG takes no parameter 'rel'; its parameters: dcg"),
        ("P(rel)@10", "expected param=value, found 'rel'"),
        ("P(rel=2,rel=3)@10", "parameter 'rel' given twice"),
        ("@10", "cannot parse measure '@10'"),
    ],
)
def test_invalid_measures_explain_themselves(text: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_measure(text)
    assert message in str(err.value)


def test_every_family_declares_described_parameters() -> None:
    for entry in MEASURES.entries():
        family = MEASURES.get(entry.name)
        assert family.definition and family.trec_eval and family.title
        for param in family.params:
            assert param.description


def test_committed_reference_is_generated_from_the_declarations() -> None:
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/metrics.md is stale: run python -m recallwatch.metrics.reference --write"
    )
