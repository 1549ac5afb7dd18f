"""A judge is measured against people before its figures are used: thresholds calibrated where
they agree best, kappa measured on answers the threshold was not chosen on, a floor."""

from __future__ import annotations

import pytest

from recallwatch.answers.judges import open_judge
from recallwatch.answers.trust import calibrate, measure_judge
from recallwatch.formats.answers import read_labelled_answers
from tests.answers.conftest import LABELS


def test_the_threshold_separates_the_labels_where_it_can() -> None:
    scores = [0.1, 0.2, 0.3, 0.6, 0.7, 0.8]
    labels = [False, False, False, True, True, True]
    threshold, held_out = calibrate(scores, labels)
    assert 0.3 < threshold < 0.6
    assert held_out == labels  # each half's threshold also separates the other half


def test_held_out_verdicts_are_not_chosen_on_themselves() -> None:
    # the labels alternate with no relation to the scores: whatever a half's threshold, the
    # other half's verdicts do not follow it
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    labels = [True, False, False, True, True, False, False, True]
    _, held_out = calibrate(scores, labels)
    assert held_out != labels


def test_too_few_labelled_answers_refuse_the_judge() -> None:
    labelled = read_labelled_answers(LABELS)[:5]
    trust = measure_judge(open_judge("offline?support=0.5&relevance=0.3"), labelled)
    assert not trust.accepted and trust.trusted == frozenset()
    assert trust.reasons == ("refused: only 5 labelled answers; at least 20 are needed for kappa "
                             "to mean something (label more answers, or lower "
                             "--answer-min-labelled knowingly)",)


def test_the_offline_judge_on_the_example_is_trusted_label_by_label() -> None:
    judge = open_judge("offline")
    trust = measure_judge(judge, read_labelled_answers(LABELS))
    assert judge.describe()["thresholds"] == "calibrated"
    kappas = {label: a.kappa for label, a in trust.agreement.items()}
    assert trust.trusted == {m for label, ms in (("faithful", ("faithfulness", "hallucination")),
                                                 ("relevant", ("relevance",)),
                                                 ("correct", ("correctness",)))
                             if kappas[label] >= 0.6 for m in ms}
    assert "faithfulness" in trust.trusted  # what the example's docs rely on
    assert trust.measured_on.startswith("the half of the labelled answers")


def test_the_floor_is_a_kappa() -> None:
    with pytest.raises(ValueError, match="--answer-min-kappa must be between -1 and 1"):
        measure_judge(open_judge("offline?support=0.5&relevance=0.3"), [], min_kappa=2)
