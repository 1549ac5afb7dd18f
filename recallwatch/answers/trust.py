"""No answer judge is used before it has been measured against people.

:func:`measure_judge` judges the labelled answers (``gate --answer-labels FILE``,
:func:`recallwatch.formats.answers.read_labelled_answers`) and compares its decisions with the
people's, label by label, with Cohen's kappa (:mod:`recallwatch.judgments.agreement`, the one
implementation ``online judge`` uses too):

* ``faithful`` — the judge found no unbacked statement (not hallucinated);
* ``relevant`` — its relevance is 0.5 or more;
* ``correct`` (on the records that carry it) — its correctness is 0.5 or more.

Each label vouches for the measures it checks (:data:`MEASURES_OF`): a measure is **trusted**
only when its label's kappa is at least ``min_kappa``; an untrusted measure is reported as
``null`` and decides nothing (a policy rule on it stops the run, rule ``answer_judge``). A
measure no label checks — correctness without ``correct`` labels — is never trusted. The whole
judge is **refused** when fewer than ``min_labelled`` answers are labelled, or when more than
``max_bad_share`` of an LLM's replies were unusable, or when no measure is trusted.

The offline judge's three thresholds (support, relevance, correctness) are calibrated here,
each on its own label, where it agrees best with people (highest kappa; among equals, the middle
one). Its kappa is then measured on answers the threshold was not chosen on: the labelled
answers are cut in two halves (odd and even lines), the threshold chosen on one half judges the
other, and kappa is computed over both halves' verdicts so obtained. The threshold the run uses
is then chosen on all of them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from recallwatch.answers.judges import AnswerJudge, LLMJudge, OfflineJudge
from recallwatch.answers.measures import CORRECT_AT, Passage, score_answer, truth_of
from recallwatch.answers.text import statements
from recallwatch.errors import UsageError
from recallwatch.formats.answers import LabelledAnswer
from recallwatch.judgments.agreement import Agreement, agreement, weighted_kappa

__all__ = ["DEFAULT_MIN_KAPPA", "DEFAULT_MIN_LABELLED", "MEASURES_OF", "Trust", "calibrate",
           "measure_judge"]

DEFAULT_MIN_KAPPA = 0.6
DEFAULT_MIN_LABELLED = 20
DEFAULT_MAX_BAD_SHARE = 0.1
# Which measures each label vouches for.
MEASURES_OF = {"faithful": ("faithfulness", "hallucination"), "relevant": ("relevance",),
               "correct": ("correctness",)}


@dataclass(frozen=True)
class Trust:
    """The measured agreement of a judge with people, and whether it may be used."""

    reasons: tuple[str, ...]  # why a label, or the whole judge, is refused
    labelled: int
    agreement: dict[str, Agreement] = field(default_factory=dict)
    trusted_labels: frozenset[str] = frozenset()
    measured_on: str = "all labelled answers"
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return bool(self.trusted_labels)

    @property
    def trusted(self) -> frozenset[str]:
        """The measures the judge may report."""
        return frozenset(m for label in self.trusted_labels for m in MEASURES_OF[label])

    def line(self) -> str:
        """One sentence for every report: what is trusted or refused, and the kappas."""
        kappas = ", ".join(f"{label} kappa {_k(a.kappa)}" for label, a in self.agreement.items())
        head = ("REFUSED" if not self.accepted else "trusted for " + ", ".join(
            m for label in MEASURES_OF if label in self.trusted_labels
            for m in MEASURES_OF[label]))
        return (f"{head} on {self.labelled} labelled answers"
                + (f" ({kappas}; floor {self.settings.get('min_kappa', DEFAULT_MIN_KAPPA):g}, "
                   f"measured on {self.measured_on})" if kappas else "")
                + (": " + "; ".join(self.reasons) if self.reasons else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "trusted": sorted(self.trusted),
                "reasons": list(self.reasons), "labelled": self.labelled,
                "measured_on": self.measured_on,
                "agreement": {k: a.to_dict() for k, a in self.agreement.items()},
                **self.settings}


def _k(kappa: float) -> str:
    return f"{kappa:.3f}" if math.isfinite(kappa) else "undefined"


# -- the offline judge's thresholds ------------------------------------------------------------


def _kappa(labels: Sequence[bool], verdicts: Sequence[bool]) -> float:
    if not labels:
        return math.nan
    return weighted_kappa([int(x) for x in labels], [int(x) for x in verdicts],
                          weights="unweighted", categories=[0, 1])


def _best(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The threshold (verdict: score >= threshold) that agrees best with ``labels``: candidates
    halfway between successive distinct scores, and one past each end."""
    values = sorted(set(scores))
    candidates = ([values[0] - 1e-6] + [(a + b) / 2 for a, b in itertools.pairwise(values)]
                  + [values[-1] + 1e-6])
    kappas = [_kappa(labels, [s >= t for s in scores]) for t in candidates]
    top = max((k for k in kappas if math.isfinite(k)), default=math.nan)
    if not math.isfinite(top):
        return candidates[len(candidates) // 2]
    tied = [t for t, k in zip(candidates, kappas) if math.isfinite(k) and k >= top - 1e-12]
    return tied[(len(tied) - 1) // 2]


def calibrate(scores: Sequence[float], labels: Sequence[bool]) -> tuple[float, list[bool]]:
    """The threshold chosen on all the answers, and each answer's verdict by the threshold
    chosen on the other half (odd and even positions)."""
    halves = [list(range(0, len(scores), 2)), list(range(1, len(scores), 2))]
    held_out: dict[int, bool] = {}
    for mine, other in (halves, halves[::-1]):
        if not other:
            continue
        t = _best([scores[i] for i in other], [labels[i] for i in other])
        held_out.update({i: scores[i] >= t for i in mine})
    return _best(scores, labels), [held_out.get(i, False) for i in range(len(scores))]


def _offline_thresholds(judge: OfflineJudge, labelled: Sequence[LabelledAnswer]
                        ) -> dict[str, tuple[list[bool], list[bool]]]:
    """Calibrate the thresholds the spec did not fix; the (people, judge) verdicts each was
    measured on, held out."""
    measured: dict[str, tuple[list[bool], list[bool]]] = {}
    if judge.support_threshold is None:
        faith = []
        for r in labelled:
            said = statements(r.answer)
            scores = [s.score if s.score is not None else -1.0 for s in judge.support_scores(
                said, r.contexts, question=r.question)]
            faith.append(min(scores, default=math.inf))
        people = [r.faithful for r in labelled]
        threshold, held_out = calibrate([min(f, 2.0) for f in faith], people)
        judge.support_threshold = threshold
        measured["faithful"] = (people, held_out)
    if judge.relevance_threshold is None:
        sims = [judge.relevance_score(r.question, r.answer) for r in labelled]
        people = [r.relevant for r in labelled]
        threshold, held_out = calibrate(sims, people)
        judge.relevance_threshold = threshold
        measured["relevant"] = (people, held_out)
    if judge.correct_threshold is None:
        marked = [r for r in labelled if r.correct is not None]
        if not marked:  # correctness is not trusted then; any threshold will do
            judge.correct_threshold = judge.support_threshold
            return measured
        threshold, held_out = calibrate([_correct_score(judge, r) for r in marked],
                                        [bool(r.correct) for r in marked])
        judge.correct_threshold = threshold
        measured["correct"] = ([bool(r.correct) for r in marked], held_out)
    return measured


def _correct_score(judge: OfflineJudge, r: LabelledAnswer) -> float:
    """The threshold under which the answer would be judged correct: at least half of the
    right answer's statements (or facts) are stated at that similarity."""
    truth = truth_of(r.reference, r.facts)
    said = statements(r.answer)
    if not said:
        return -1.0
    if truth.kind == "reference":
        scores = [s.score if s.score is not None else -1.0
                  for s in judge.support_scores(truth.items, [r.answer], question=r.question)]
    else:
        scores = [max((s.score if s.score is not None else -1.0 for s in judge.support_scores(
            said, [fact], question=r.question)), default=-1.0) for fact in truth.items]
    ranked = sorted(scores, reverse=True)
    return ranked[math.ceil(CORRECT_AT * len(ranked)) - 1]


# -- measuring ---------------------------------------------------------------------------------


def _verdicts(judge: AnswerJudge, labelled: Sequence[LabelledAnswer]
              ) -> dict[str, tuple[list[bool], list[bool]]]:
    """(people, judge) per label, as the gate would decide with the judge as it stands."""
    out: dict[str, tuple[list[bool], list[bool]]] = {
        "faithful": ([], []), "relevant": ([], []), "correct": ([], [])}
    for r in labelled:
        score = score_answer(judge, r.question, r.answer, [Passage(c) for c in r.contexts],
                             truth_of(r.reference, r.facts))
        pairs = [("faithful", r.faithful, not score.hallucinated),
                 ("relevant", r.relevant, score.relevant)]
        if r.correct is not None and score.correctness is not None:
            pairs.append(("correct", r.correct, score.correctness >= CORRECT_AT))
        for label, person, verdict in pairs:
            out[label][0].append(person)
            out[label][1].append(verdict)
    return {k: v for k, v in out.items() if v[0]}


def measure_judge(judge: AnswerJudge, labelled: Sequence[LabelledAnswer], *,
                  min_kappa: float = DEFAULT_MIN_KAPPA,
                  min_labelled: int = DEFAULT_MIN_LABELLED,
                  max_bad_share: float = DEFAULT_MAX_BAD_SHARE) -> Trust:
    """Calibrate (offline judge) and measure ``judge`` on ``labelled``; see the module."""
    if not -1.0 <= min_kappa <= 1.0:
        raise UsageError(f"--answer-min-kappa must be between -1 and 1, found {min_kappa:g}")
    if min_labelled < 2:
        raise UsageError(f"--answer-min-labelled must be at least 2, found {min_labelled}")
    settings: dict[str, Any] = {"min_kappa": min_kappa, "min_labelled": min_labelled}
    n = len(labelled)
    if n < min_labelled:
        return Trust((f"refused: only {n} labelled answer{'s' if n != 1 else ''}; at least "
                      f"{min_labelled} are needed for kappa to mean something (label more "
                      "answers, or lower --answer-min-labelled knowingly)",), n,
                     settings=settings)
    held_out = _offline_thresholds(judge, labelled) if isinstance(judge, OfflineJudge) else {}
    verdicts = {**_verdicts(judge, labelled), **held_out}
    measured = {label: agreement([int(x) for x in people], [int(x) for x in mine],
                                 weights="unweighted", categories=[0, 1], rater_a="people",
                                 rater_b=f"{judge.kind} judge")
                for label, (people, mine) in sorted(verdicts.items())}
    low = [label for label, a in measured.items()
           if not (math.isfinite(a.kappa) and a.kappa >= min_kappa)]
    reasons = [f"{' and '.join(MEASURES_OF[label])} not trusted: {label} kappa "
               f"{_k(measured[label].kappa)} < {min_kappa:g} on {measured[label].n} answers"
               for label in low]
    if "correct" not in measured:
        reasons.append("correctness not trusted: no labelled answer says whether it is correct")
    trusted = frozenset(measured) - set(low)
    if isinstance(judge, LLMJudge) and judge.bad_replies > max_bad_share * judge.requests:
        reasons = [f"refused: {judge.bad_replies} of {judge.requests} replies were not the single "
                   f"digit asked for (more than {max_bad_share:.0%})"]
        trusted = frozenset()
    rest = [label for label in measured if label not in held_out]
    where = "all labelled answers"
    if held_out:
        where = ("the half of the labelled answers its thresholds were not chosen on, for "
                 + ", ".join(held_out) + (f"; all of them for {', '.join(rest)}" if rest
                                          else ""))
    return Trust(tuple(reasons), n, measured, trusted, where,
                 {**settings, "judge": judge.describe()})
