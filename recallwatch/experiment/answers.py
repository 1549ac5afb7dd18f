"""The answers of each variant: with the plan's ``answers:`` section, every variant's generator
answers each question twice — from the variant's retrieved chunks, and from the question's
expected chunks alone (the oracle context) — and the judge judges both, as ``gate --generator``
does (:func:`recallwatch.answers.gate.with_answers`), so each wrong answer is named
``retrieval``, ``generation`` or ``both``.

1. :func:`open_answers` (before anything is built): the labelled answers read, the judge opened
   and measured against them once for the whole plan (an offline judge is calibrated once: every
   variant is judged with the same thresholds and the same agreement), and each variant's
   generator opened (its code imported, its prompt read); a generator that cannot be opened is
   an error naming the plan, the variant and the field.
2. :func:`answer_variant` (after the variant's gate ran on each part of the golden set): its
   answers generated and judged part by part, the policy's answer rules applied to its verdict.

The answers run in this process, after the variants were judged (also with ``engine="ray"``),
and are generated again on every run: a generator's answers are not cached, since what its code
or its model answers can change without its spec changing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from recallwatch.acceptance.model import GateResult
from recallwatch.answers.gate import AnswerPlan, chunk_reader, measure_judge_of, with_answers
from recallwatch.answers.generate import Generator, open_generator
from recallwatch.answers.judges import open_judge
from recallwatch.answers.trust import Trust
from recallwatch.errors import InputError, UsageError
from recallwatch.experiment.evaluate import PartResult, VariantOutcome
from recallwatch.experiment.plan import _GENERATOR, Plan, VariantSpec
from recallwatch.formats.policy import Policy

__all__ = ["CHOICE_NOTE", "AnswerStep", "answer_line", "answer_variant", "generator_name",
           "open_answers"]

CHOICE_NOTE = ("the answers are shown, not used for the choice: the winner rests on mean "
               "quality and nDCG@K")
_NOT_CACHED = ("the answers are generated and judged again on every run (not cached: what a "
               "generator answers can change without its spec changing)")
# what results.json keeps of each answer (the gate's JSON has the whole of it)
_PER_QUERY = ("right", "failure", "faithfulness", "relevance", "correctness", "hallucinated")


@dataclass
class AnswerStep:
    """What every variant's answers are judged with: one judge, measured once."""

    plan: AnswerPlan  # the golden set, the judge and the labelled answers; no generator
    policy: Policy
    trust: Trust
    generators: dict[str, Generator]  # variant name -> its own generator (its own tokens)

    def judge_block(self) -> dict[str, Any]:
        """results.json's top-level ``answers``: the judge, its agreement with people, and how
        the answers were used."""
        return {**self.trust.to_dict(), "judge": self.plan.judge.describe(),
                "sources": self.plan.sources, "line": self.trust.line(),
                "used_for_choice": False, "choice_note": CHOICE_NOTE, "cached": False,
                "cache_note": _NOT_CACHED}


def open_answers(plan: Plan) -> AnswerStep | None:
    """The answer step of ``plan`` (None without an ``answers:`` section); see the module."""
    spec = plan.answers
    if spec is None:
        return None
    from recallwatch.formats.answers import read_labelled_answers
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy

    generators = {v.name: _generator(plan, v) for v in plan.all()}
    answer_plan = AnswerPlan(load_golden(plan.golden), open_judge(spec.judge),
                             read_labelled_answers(spec.labels), None, None, spec.min_kappa,
                             spec.min_labelled, {"judge": spec.judge, "labels": str(spec.labels)})
    return AnswerStep(answer_plan, load_policy(plan.policy), measure_judge_of(answer_plan),
                      generators)


def _generator(plan: Plan, variant: VariantSpec) -> Generator:
    """The variant's generator, opened: its code imported, its prompt read (an error names the
    plan, the variant and the field)."""
    given = variant.generator_spec
    if given is None:  # load_plan gives every variant a generator when the plan has answers
        raise UsageError(f"variant {variant.name!r} has no generator")
    try:
        return open_generator(given, base_dir=plan.base_dir)
    except (UsageError, InputError) as err:
        raise InputError(source=str(plan.source), line=variant.line, record=variant.name,
                         field="generator", expected=_GENERATOR, found=variant.generator,
                         hint=f"it could not be opened: {err}") from None


def answer_variant(step: AnswerStep, variant: VariantSpec, outcome: VariantOutcome,
                   corpus_file: Path) -> VariantOutcome:
    """``outcome`` with each part's answers judged (see the module)."""
    plan = replace(step.plan, generator=step.generators[variant.name],
                   sources={**step.plan.sources, "generator": variant.generator_spec or ""})
    chunks = chunk_reader(None, corpus_file)
    parts: dict[str, PartResult] = {}
    warnings = list(outcome.warnings)
    for name, part in outcome.parts.items():
        if part.gate is None:  # evaluate_variant keeps each gate for the answers
            raise UsageError(f"variant {variant.name!r}: its gate on the {name} queries was not "
                             "kept, so its answers cannot be judged")
        judged = with_answers(part.gate, step.policy, plan, chunks, trust=step.trust)
        warnings += [w for w in judged.warnings if w not in warnings]
        parts[name] = replace(part, verdict=judged.verdict, gate=None,
                              answers=_summary(judged, step.generators[variant.name]))
    return replace(outcome, parts=parts, warnings=tuple(warnings))


def _summary(judged: GateResult, generator: Generator) -> dict[str, Any]:
    """What results.json keeps of one part's answers: the gate's figures (the judge is the
    plan's, kept once at the top), the generator, and each answer's outcome."""
    block = {k: v for k, v in (judged.answers or {}).items() if k != "judge"}
    block.setdefault("answered", 0)  # a refused judge judged none
    block.setdefault("right", 0)
    block.setdefault("failures", None)
    block["generator"] = generator.describe()
    block["per_query"] = {
        q.id: {**{k: q.answer[k] for k in _PER_QUERY},
               "oracle_right": (q.answer.get("oracle") or {}).get("right")}
        for q in judged.queries if q.answer}
    return block


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def generator_name(described: dict[str, Any]) -> str:
    """A generator in a few words: its python: spec, or its model and prompt."""
    if described.get("kind") == "python":
        return str(described.get("spec"))
    prompt = described.get("prompt") or "default"
    return (f"{described.get('model')} at {described.get('base_url')}, prompt "
            f"{Path(prompt).name if prompt != 'default' else 'default'}")


def answer_line(name: str, block: dict[str, Any] | None) -> str:
    """One variant's answers in one line: the measures (— when not trusted), the answers
    right, and the wrong answers by failure."""
    if block is None or not block.get("answered"):
        return f"answers with {name}: none judged"
    failures = block.get("failures") or {}
    return (f"answers with {name} (generator {generator_name(block['generator'])}): "
            f"faithfulness {_figure(block.get('faithfulness'))}, relevance "
            f"{_figure(block.get('relevance'))}, correctness "
            f"{_figure(block.get('correctness'))}, hallucination rate "
            f"{_figure(block.get('hallucination_rate'))}; {block['right']} of "
            f"{block['answered']} answers right; wrong answers by failure: "
            + ", ".join(f"{kind} {failures.get(kind, 0)}"
                        for kind in ("retrieval", "generation", "both")))
