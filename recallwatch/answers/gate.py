"""The gate's answer step: a finished gate result in, the same result with its answers judged out.

    plan = open_plan(golden, answers="answers.jsonl", labels="labelled.jsonl")
    result = with_answers(result, policy, plan, chunk_reader(store, None))

:func:`with_answers` is one step after the retrieval gate and before the history records the run
(:func:`rules_not_applied` marks the policy's answer rules "not applied" in a run without answers):

1. the judge is measured against the labelled answers (:func:`~recallwatch.answers.trust.
   measure_judge`); refused, it judges nothing, and a policy with answer rules stops on rule
   ``answer_judge``;
2. each scored query gets its answer — from the answers file, or from the generator given the
   retrieved top K — and, with a generator, a second answer from the query's expected chunks (the
   oracle context);
3. both are judged (:func:`~recallwatch.answers.measures.score_answer`), and a wrong answer's
   failure is named: ``retrieval`` (the oracle answer is right), ``generation`` (the oracle
   answer is wrong too, and the retrieved context held every expected chunk) or ``both`` (the
   oracle answer is wrong and the retrieval missed expected chunks);
4. the means and the hallucination rate are computed and the policy's answer rules applied
   (``min_faithfulness``, ``min_answer_relevance``, ``max_hallucination_rate``): a rule that
   fails is a STOP reason naming the queries, as the retrieval rules' are;
5. with ``answers_out`` (``gate --generator SPEC --answers-out FILE``), the generator's answers
   from the retrieved chunks are written in the answers format, for ``label answers`` and
   ``gate --answers`` — also when the judge is refused or no labelled answers were given (the
   answers are then generated and written, and judged by no one).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from recallwatch._progress import tracked
from recallwatch.acceptance.model import Check, GateResult, QueryResult, Reason
from recallwatch.answers.generate import Generator, open_generator
from recallwatch.answers.judges import AnswerJudge, open_judge
from recallwatch.answers.measures import AnswerScore, Passage, score_answer, truth_of
from recallwatch.answers.trust import (
    DEFAULT_MIN_KAPPA,
    DEFAULT_MIN_LABELLED,
    Trust,
    measure_judge,
)
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.answers import (
    AnswerRecord,
    LabelledAnswer,
    read_answers,
    read_labelled_answers,
)
from recallwatch.formats.golden import GoldenQuery, GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.formats.policy_answers import AnswerRules
from recallwatch.records import Chunk, TokenUsage
from recallwatch.stores.base import VectorStore

__all__ = ["AnswerOptions", "AnswerPlan", "ChunkReader", "Failure", "check_contexts",
           "check_query_ids", "chunk_reader", "measure_judge_of", "open_plan",
           "rules_not_applied", "with_answers"]

ChunkReader = Callable[[Sequence[str]], Mapping[str, Chunk]]
Failure = Literal["retrieval", "generation", "both"]
_NEEDS_GENERATOR = ("which failures are retrieval's and which generation's needs --generator: "
                    "it answers each query again from its expected chunks")


@dataclass
class AnswerPlan:
    """What the answer step needs, opened and checked before the run."""

    golden: GoldenSet
    judge: AnswerJudge
    labelled: Sequence[LabelledAnswer]
    answers: Mapping[str, AnswerRecord] | None = None
    generator: Generator | None = None
    min_kappa: float = DEFAULT_MIN_KAPPA
    min_labelled: int = DEFAULT_MIN_LABELLED
    sources: dict[str, str] = field(default_factory=dict)  # the files and specs given
    answers_out: Path | None = None  # where the generator's answers are written


@dataclass(frozen=True)
class AnswerOptions:
    """What was asked of the answer step, as given (``gate --answers``, ``--generator``,
    ``--answer-judge``, ``--answer-labels``, ``--answer-min-kappa``, ``--answer-min-labelled``):
    :meth:`open` reads and checks it all against the golden set."""

    answers: str | Path | None = None
    generator: str | None = None
    judge: str = "offline"
    labels: str | Path | None = None
    min_kappa: float = DEFAULT_MIN_KAPPA
    min_labelled: int = DEFAULT_MIN_LABELLED
    answers_out: str | Path | None = None  # ``--answers-out``: where to write the answers

    def open(self, golden: GoldenSet, base_dir: Path | None = None) -> AnswerPlan | None:
        return open_plan(golden, answers=self.answers, generator=self.generator,
                         judge=self.judge, labels=self.labels, min_kappa=self.min_kappa,
                         min_labelled=self.min_labelled, base_dir=base_dir,
                         answers_out=self.answers_out)


def open_plan(golden: GoldenSet, *, answers: str | Path | None = None,
              generator: str | None = None, judge: str = "offline",
              labels: str | Path | None = None, min_kappa: float = DEFAULT_MIN_KAPPA,
              min_labelled: int = DEFAULT_MIN_LABELLED, base_dir: Path | None = None,
              answers_out: str | Path | None = None) -> AnswerPlan | None:
    """The plan for ``gate --answers/--generator`` (None when neither is given); every file is
    read and every spec opened now, so a bad one fails before the gate searches anything."""
    _check_answers_out(answers, generator, answers_out)
    if answers is None and generator is None:
        if labels is not None:
            raise UsageError("--answer-labels measures the judge of answers: give the answers "
                             "with --answers FILE or a --generator SPEC")
        return None
    if labels is None and answers_out is None:
        first = ("" if answers is not None else ", or --answers-out FILE to write the "
                 "generator's answers, to label them first")
        raise UsageError("answers are judged only by a judge measured against answers people "
                         "labelled: give --answer-labels FILE (JSON Lines of {question, answer, "
                         f"contexts, faithful, relevant}}; docs/answers.md){first}")
    labelled = read_labelled_answers(labels) if labels is not None else []
    records = None
    if answers is not None:
        records = read_answers(answers)
        check_query_ids(records, golden)
    gen = None if generator is None else open_generator(generator, base_dir=base_dir)
    sources = {"judge": judge, "labels": "none given" if labels is None else str(labels)}
    if answers is not None:
        sources["answers"] = str(answers)
    if generator is not None:
        sources["generator"] = generator
    if answers_out is not None:
        sources["answers_out"] = str(answers_out)
    return AnswerPlan(golden, open_judge(judge), labelled, records, gen, min_kappa, min_labelled,
                      sources, None if answers_out is None else Path(answers_out))


def _check_answers_out(answers: str | Path | None, generator: str | None,
                       answers_out: str | Path | None) -> None:
    """``--answers-out`` writes what ``--generator`` answered from the retrieved chunks: it
    needs a generator, and has nothing to write when the answers come from ``--answers``; its
    file must be writable (checked before anything is searched)."""
    if answers_out is None:
        return
    if generator is None:
        raise UsageError("--answers-out writes the answers --generator SPEC gives from the "
                         "retrieved chunks: give --generator")
    if answers is not None:
        raise UsageError(f"--answers-out has nothing to write with --answers {answers}: the "
                         "answers judged are that file's already (drop --answers to have the "
                         "generator answer from the retrieved chunks)")
    from recallwatch._files import check_output_file

    check_output_file(answers_out, "--answers-out", "answers.jsonl")


def chunk_reader(store: VectorStore | None, corpus: str | Path | None) -> ChunkReader | None:
    """Where the answers' chunks are read: the store, else the corpus file (None: neither)."""
    if store is not None:
        return store.get
    if corpus is None:
        return None
    from recallwatch.formats.corpus import read_corpus

    chunks = {c.id: c for c in read_corpus(corpus)}
    return lambda ids: {i: chunks[i] for i in ids if i in chunks}


def check_query_ids(records: Mapping[str, AnswerRecord], golden: GoldenSet) -> None:
    """Each answer names a query of the golden set (else an error naming its line)."""
    known = {q.id for q in golden.queries}
    for r in records.values():
        if r.query_id not in known:
            raise InputError(source=r.source, line=r.line, record=r.query_id, field="query_id",
                             expected=f"the id of a query of the golden set {golden.name!r}",
                             found=r.query_id)


# -- the step ----------------------------------------------------------------------------------


def with_answers(result: GateResult, policy: Policy, plan: AnswerPlan,
                 chunks: ChunkReader | None, trust: Trust | None = None) -> GateResult:
    """``result`` with its answers judged and the policy's answer rules applied (see the
    module's documentation). ``trust``: the judge as :func:`measure_judge` measured it on
    ``plan.labelled`` already (an experiment measures it once for all its variants: a second
    measure of an offline judge would find its thresholds set, and not hold any answers out);
    None measures it now."""
    texts = _read_texts(result, plan, chunks)  # a chunk id the index lacks fails first
    if trust is None:
        trust = measure_judge_of(plan)
    if not trust.accepted:
        written = (None if plan.answers_out is None
                   else _write_out(plan.answers_out, _served(result, plan, texts)))
        return _refused(result, policy.answers, plan, trust, written)
    by_id = {q.id: q for q in plan.golden.queries}
    # each query's answer (generated, then judged: language-model calls) counted on a terminal
    judged = [(q, _judge_query(q, by_id[q.id], plan, texts, trust.trusted))
              for q in tracked(result.queries, len(result.queries), "judging the answers")]
    queries = tuple(q if a is None else replace(q, answer=a) for q, a in judged)
    summary = _summary([a for _, a in judged if a is not None], plan, trust,
                       [q.id for q, a in judged if a is None])
    if plan.answers_out is not None:
        summary["answers_out"] = _write_out(plan.answers_out, [
            (q.id, a["text"], a["contexts"]) for q, a in judged if a is not None])
    reasons, checks = _apply_rules(policy.answers, summary, [q for q in queries if q.answer],
                                   trust)
    warnings = list(result.warnings)
    if summary["unanswered"]:
        warnings.append(f"{len(summary['unanswered'])} scored queries have no answer in "
                        f"{plan.sources.get('answers')}, and are not judged: "
                        + ", ".join(summary["unanswered"][:10]))
    return replace(result, queries=queries, answers=summary,
                   verdict="STOP" if reasons or result.verdict == "STOP" else "ACCEPT",
                   reasons=(*result.reasons, *reasons), checks=(*result.checks, *checks),
                   warnings=tuple(warnings))


def measure_judge_of(plan: AnswerPlan) -> Trust:
    """The plan's judge measured against its labelled answers (calibrated first, when it is
    the offline judge and its spec fixed no thresholds)."""
    return measure_judge(plan.judge, plan.labelled, min_kappa=plan.min_kappa,
                         min_labelled=plan.min_labelled)


def rules_not_applied(result: GateResult, policy: Policy) -> GateResult:
    """A run that judged no answers: each answer rule of the policy is a check "not applied"."""
    rules = policy.answers
    if not rules.any:
        return result
    checks = [Check(rule, "answers", "not applied",
                    f"no answers were judged ({rule} {value:g}): give --answers FILE or "
                    "--generator SPEC", {"limit": value})
              for rule, value in rules.rules_dict().items()]
    return replace(result, checks=(*result.checks, *checks))


def _served(result: GateResult, plan: AnswerPlan,
            texts: Mapping[str, str]) -> list[tuple[str, str, list[Any]]]:
    """The generator's answer to each query from its retrieved top K, not judged:
    ``(query_id, answer, contexts)``."""
    generator = plan.generator
    if generator is None:  # open_plan: --answers-out needs a generator
        return []
    out = []
    for q in tracked(result.queries, len(result.queries), "generating the answers"):
        contexts = _contexts(q, None, texts)
        text = generator.answer(q.text, [c.text for c in contexts])
        out.append((q.id, text, [c.id if c.id is not None else {"text": c.text}
                                 for c in contexts]))
    return out


def _write_out(path: Path, answers: list[tuple[str, str, list[Any]]]) -> dict[str, Any]:
    """Write the answers to ``path`` (``--answers-out``); what was written, for the run's
    JSON."""
    from recallwatch.formats.answers import write_answers

    return {"path": str(path), "answers": write_answers(path, answers)}


def _label_command(result: GateResult, plan: AnswerPlan, path: str) -> str:
    """The ``label answers`` command for the answers written to ``path``: the golden set's file
    and the store searched (its URI redacted), or a placeholder where unknown."""
    uri = result.store.get("uri")
    chunks = f"--store {shlex.quote(str(uri))}" if uri else "--corpus CORPUS"
    golden = shlex.quote(plan.golden.source) if plan.golden.source else "GOLDEN"
    return f"recallwatch label answers {shlex.quote(path)} --golden {golden} {chunks}"


def _refused(result: GateResult, rules: AnswerRules, plan: AnswerPlan,
             trust: Trust, written: dict[str, Any] | None = None) -> GateResult:
    summary: dict[str, Any] = {"faithfulness": None, "relevance": None, "correctness": None,
                               "hallucination_rate": None, "judge": _judge_dict(plan, trust)}
    if written is not None:
        summary["answers_out"] = written
    line = f"the answer judge ({plan.judge.kind}) is {trust.line()}"
    if written is not None:
        line += (f"; the generator's {written['answers']} answers were written to "
                 f"{written['path']}, not judged: label them with "
                 f"`{_label_command(result, plan, written['path'])}`")
    if not rules.any:
        return replace(result, answers=summary,
                       warnings=(*result.warnings, f"{line}; no answer was judged"))
    reason = Reason("answer_judge", f"{line}, so the policy's answer rules "
                    f"({', '.join(rules.rules_dict())}) cannot be checked")
    return replace(result, answers=summary, verdict="STOP", reasons=(*result.reasons, reason))


def _judge_dict(plan: AnswerPlan, trust: Trust) -> dict[str, Any]:
    return {**trust.to_dict(), "judge": plan.judge.describe(), "sources": plan.sources}


# -- each query --------------------------------------------------------------------------------


def _read_texts(result: GateResult, plan: AnswerPlan,
                chunks: ChunkReader | None) -> dict[str, str]:
    """The text of every chunk an answer is given, read in one batch; an answers file's chunk id
    that the index does not hold is an error naming its line."""
    named = [c.id for r in (plan.answers or {}).values() for c in r.contexts or () if c.id]
    needed = list(dict.fromkeys([*named, *(cid for q in result.queries for cid, _ in q.top),
                                 *(h.id for q in result.queries for h in q.expected)]))
    found = {} if chunks is None else {cid: c.text for cid, c in chunks(needed).items()}
    if needed and not found:
        raise UsageError("judging answers needs the chunks' texts, and this source gave none "
                         "of them: give --corpus FILE (the chunks as JSON Lines)")
    check_contexts((plan.answers or {}).values(), found)
    return found


def check_contexts(records: Iterable[AnswerRecord], found: Mapping[str, str]) -> None:
    """Each chunk id the answers name is in ``found`` (else an error naming its line)."""
    for r in records:
        for i, c in enumerate(r.contexts or ()):
            if c.id is not None and c.id not in found:
                raise InputError(source=r.source, line=r.line, record=r.query_id,
                                 field=f"contexts[{i}]", expected="a chunk id of the index "
                                 "(or {\"text\": …} for a passage that is not one)", found=c.id)


def _contexts(q: QueryResult, record: AnswerRecord | None,
              texts: Mapping[str, str]) -> list[Passage]:
    if record is not None and record.contexts is not None:
        return [Passage(texts[c.id], c.id) if c.id is not None else Passage(str(c.text))
                for c in record.contexts]
    return [Passage(texts[cid], cid) for cid, _ in q.top if cid in texts]


def right(score: AnswerScore, trusted: frozenset[str]) -> bool:
    """Right by every trusted measure: not hallucinated, relevant, correct."""
    return (("hallucination" not in trusted or not score.hallucinated)
            and ("relevance" not in trusted or score.relevant)
            and ("correctness" not in trusted or score.correct is not False))


def _shown(score: AnswerScore, trusted: frozenset[str]) -> dict[str, Any]:
    """A score as the report shows it: an untrusted measure is null."""
    d = score.to_dict()
    for measure, keys in (("faithfulness", ("faithfulness",)),
                          ("hallucination", ("hallucinated",)),
                          ("relevance", ("relevance",)), ("correctness", ("correctness",))):
        if measure not in trusted:
            d.update(dict.fromkeys(keys))
    d["right"] = right(score, trusted)
    return d


def _judge_query(q: QueryResult, gq: GoldenQuery, plan: AnswerPlan, texts: Mapping[str, str],
                 trusted: frozenset[str]) -> dict[str, Any] | None:
    record = None if plan.answers is None else plan.answers.get(q.id)
    if plan.answers is not None and record is None:
        return None
    contexts = _contexts(q, record, texts)
    spent: TokenUsage | None = None
    if record is not None:
        answer = record.answer
    elif plan.generator is not None:
        before = plan.generator.tokens()
        answer = plan.generator.answer(q.text, [c.text for c in contexts])
        after = plan.generator.tokens()
        spent = None if before is None or after is None else after - before
    else:  # open_plan gives answers or a generator
        return None
    truth = truth_of(gq.reference, [a.quote for a in gq.anchors])
    expected = [h.id for h in q.expected]
    real = score_answer(plan.judge, q.text, answer, contexts, truth, expected)
    held_all = _held_all(real, contexts, expected)
    oracle: dict[str, Any] | None = None
    failure = None
    if plan.generator is not None:
        given = [Passage(texts[e], e) for e in expected if e in texts]
        oracle_answer = plan.generator.answer(q.text, [c.text for c in given])
        oracle_score = score_answer(plan.judge, q.text, oracle_answer, given, truth, expected)
        oracle = {"text": oracle_answer, **_shown(oracle_score, trusted)}
        failure = _failure(real, oracle_score, held_all, trusted)
    shown = _shown(real, trusted)
    return {"faithfulness": shown.pop("faithfulness"), "relevance": shown.pop("relevance"),
            "correctness": shown.pop("correctness"), "hallucinated": shown.pop("hallucinated"),
            "failure": failure, **shown, "text": answer,
            "from": "answers file" if record is not None else "generator",
            "contexts": [c.id if c.id is not None else {"text": c.text} for c in contexts],
            "expected_in_context": held_all,
            "truth": truth.kind, "oracle": oracle,
            "tokens": None if spent is None else spent.to_dict()}


def _held_all(real: AnswerScore, contexts: Sequence[Passage], expected: Sequence[str]) -> bool:
    """Whether the answer's contexts held every expected chunk (by id; for contexts given as
    texts, whether they hold the whole right answer)."""
    given = {c.id for c in contexts}
    if expected and None not in given:
        return set(expected) <= given
    return real.context_recall == 1.0


def _failure(real: AnswerScore, oracle: AnswerScore, held_all: bool,
             trusted: frozenset[str]) -> Failure | None:
    """Which part failed a wrong answer (None: the answer is right). Right from the expected
    chunks alone is a retrieval failure even when the retrieval held them all: the chunks ranked
    with them misled the generator (the noise rule's case)."""
    if right(real, trusted):
        return None
    if right(oracle, trusted):
        return "retrieval"
    return "generation" if held_all else "both"


# -- the run -----------------------------------------------------------------------------------


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _summary(answers: Sequence[dict[str, Any]], plan: AnswerPlan, trust: Trust,
             unanswered: list[str]) -> dict[str, Any]:
    flags = [a["hallucinated"] for a in answers if a["hallucinated"] is not None]
    failures = {kind: sum(a["failure"] == kind for a in answers)
                for kind in ("retrieval", "generation", "both")}
    return {
        "faithfulness": _mean([a["faithfulness"] for a in answers]),
        "relevance": _mean([a["relevance"] for a in answers]),
        "correctness": _mean([a["correctness"] for a in answers]),
        "hallucination_rate": sum(flags) / len(flags) if flags else None,
        "context_precision": _mean([a["context_precision"] for a in answers]),
        "context_recall": _mean([a["context_recall"] for a in answers]),
        "answered": len(answers), "right": sum(a["right"] for a in answers),
        "unanswered": unanswered,
        "failures": failures if plan.generator is not None else None,
        "decomposition": None if plan.generator is not None else _NEEDS_GENERATOR,
        "judge": _judge_dict(plan, trust),
        "tokens": _tokens(answers, plan),
    }


def _usage(d: dict[str, Any]) -> TokenUsage:
    return TokenUsage(d["requests"], d["reported"], d["input_tokens"] or 0,
                      d["output_tokens"] or 0)


def _tokens(answers: Sequence[dict[str, Any]], plan: AnswerPlan) -> dict[str, Any]:
    """The tokens the models reported: the generator's for the answers judged (what serving
    them costs), its answers from the expected chunks (the evaluation's), and the judge's
    (the labelled answers and this run's), each None with the reason when not counted."""
    spent = [_usage(a["tokens"]) for a in answers if a.get("tokens") is not None]
    generated = plan.generator.tokens() if plan.generator is not None else None
    served = sum(spent, TokenUsage()) if spent else None
    judge = plan.judge.tokens()
    why = ("the answers came from a file: no generator was called" if plan.answers is not None
           else "the generator is python code: what its model spends is not seen from here"
           if generated is None else None)
    return {"answers": None if served is None else served.to_dict(),
            "oracle": None if generated is None else (generated - (served or TokenUsage()))
            .to_dict(),
            "judge": None if judge is None else judge.to_dict(),
            "answers_note": why,
            "judge_note": None if judge is not None else "the offline judge calls no model"}


def _named(q: QueryResult, value: str) -> str:
    failure = (q.answer or {}).get("failure")
    return f"{q.id} ({value}{'; ' + failure + ' failure' if failure else ''})"


@dataclass(frozen=True)
class _Rule:
    name: str
    measure: str  # the trusted measure it reads
    subject: str
    key: str  # in the summary
    low: bool  # a minimum (else a maximum)
    what: str  # what the culprits do


_RULES = (
    _Rule("min_faithfulness", "faithfulness", "mean faithfulness", "faithfulness", True,
          "hold a statement their contexts do not back"),
    _Rule("min_answer_relevance", "relevance", "mean answer relevance", "relevance", True,
          "do not address their question"),
    _Rule("max_hallucination_rate", "hallucination", "hallucination rate",
          "hallucination_rate", False, "hold a statement their contexts do not back"),
)


def _culprits(rule: _Rule, answered: Sequence[QueryResult]) -> list[tuple[QueryResult, str]]:
    """The queries behind a failing rule, the worst first, each with its figure in words."""
    def a(q: QueryResult) -> dict[str, Any]:
        return q.answer or {}

    if rule.measure == "relevance":
        low = sorted((q for q in answered if a(q)["relevance"] < 0.5),
                     key=lambda q: a(q)["relevance"])
        return [(q, f"relevance {a(q)['relevance']:.2f}") for q in low]
    unbacked = sorted((q for q in answered if a(q)["hallucinated"]),
                      key=lambda q: a(q)["faithfulness"] or 0.0)
    if rule.measure == "faithfulness":
        return [(q, f"faithfulness {a(q)['faithfulness']:.2f}") for q in unbacked]
    return [(q, "unbacked: " + "; ".join(repr(s["text"][:80]) for s in a(q)["statements"]
                                         if not s["backed"])[:200]) for q in unbacked]


def _apply_rules(rules: AnswerRules, summary: dict[str, Any], answered: Sequence[QueryResult],
                 trust: Trust) -> tuple[list[Reason], list[Check]]:
    """Each answer rule of the policy: a Check, and a Reason when it fails or when the judge is
    not trusted with the measure it reads."""
    reasons: list[Reason] = []
    checks: list[Check] = []
    limits = rules.rules_dict()
    for rule in _RULES:
        if rule.name not in limits:
            continue
        limit, value = limits[rule.name], summary[rule.key]
        if rule.measure not in trust.trusted:
            message = (f"the answer judge is not trusted with {rule.measure} ("
                       + "; ".join(r for r in trust.reasons if rule.measure in r)
                       + f"), so {rule.name} {limit:g} cannot be checked")
            reasons.append(Reason("answer_judge", message))
            checks.append(Check(rule.name, rule.subject, "stop", message, {"limit": limit}))
            continue
        if value is None:
            checks.append(Check(rule.name, rule.subject, "not applied",
                                f"no answer was judged ({rule.name} {limit:g})",
                                {"limit": limit}))
            continue
        fails = value < limit if rule.low else value > limit
        culprits = _culprits(rule, answered) if fails else []
        message = (f"{rule.subject} {value:.3f} is {'below' if rule.low else 'above'} "
                   f"{limit:g}: {len(culprits)} of {len(answered)} answers {rule.what}: "
                   + "; ".join(_named(q, words) for q, words in culprits[:8])
                   if fails else
                   f"{rule.subject} {value:.3f} {'>=' if rule.low else '<='} {limit:g}")
        checks.append(Check(rule.name, rule.subject, "stop" if fails else "pass", message,
                            {"value": value, "limit": limit, "answers": len(answered)}))
        if fails:
            reasons.append(Reason(rule.name, message, tuple(q.id for q, _ in culprits)))
    return reasons, checks
