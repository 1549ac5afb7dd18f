"""The two answer judges. Both answer the same two questions, and every measure is built on them:

* **support**: is each statement backed by these passages?
* **relevance**: how well does this answer address this question (0 to 1)?

:class:`OfflineJudge` needs no LLM: a statement is backed when a unit of the passages (a sentence,
a table row with its header) is close enough to it in the embedder's space (cosine similarity at
or above the support threshold) and holds each of its numbers (but the asker's own: a number of
the question that no passage holds); a statement found word for word in a passage is backed
outright. Relevance is the cosine
similarity of the question and the answer, rescaled so that the relevance threshold reads 0.5.
Correctness asks the same question of the right answer's statements (does the answer state
them?) with a threshold of its own. The three thresholds are calibrated on answers people
labelled (:mod:`recallwatch.answers.trust`), unless the spec fixes them:
``offline?support=0.45&relevance=0.35&correct=0.6``.

:class:`LLMJudge` asks a chat model (``https://…/v1?model=NAME``) one question a statement ("1"
backed, "0" not) and one an answer (a grade 0-3, divided by 3). Replies are read strictly, as the
relevance judge of ``online judge`` reads them: anything else is a bad reply, counted, and taken
as "not backed" (relevance 0) — never a guess in the answer's favour.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import parse_qsl

from recallwatch.answers.chat import ChatSpec, is_chat_spec, parse_chat_spec
from recallwatch.answers.text import contains, numbers_of, units
from recallwatch.errors import UsageError
from recallwatch.records import TokenUsage

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.embedders.base import Embedder
    from recallwatch.judgments.llm_judge import ChatClient

__all__ = ["AnswerJudge", "LLMJudge", "OfflineJudge", "Support", "check_judge", "open_judge"]

JudgeKind = Literal["offline", "llm"]


@dataclass(frozen=True)
class Support:
    """Whether a statement is backed, and the evidence: the closest unit of the passages and its
    cosine similarity (offline judge), or the model's reply (LLM judge)."""

    backed: bool
    score: float | None = None
    evidence: str | None = None


class AnswerJudge(Protocol):
    kind: JudgeKind

    def support(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[Support]: ...

    def relevance(self, question: str, answer: str) -> float: ...

    def matches(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[bool]:
        """Whether the passages state each statement: support, as correctness asks it (the
        offline judge with its own threshold)."""
        ...

    def describe(self) -> dict[str, Any]: ...

    def tokens(self) -> TokenUsage | None:
        """The tokens the judge's model reported so far (None: it calls no model)."""
        ...


# -- offline ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    text: str
    numbers: frozenset[str]  # the numbers that may back a statement compared with this unit


def _passage_units(passage: str) -> list[_Unit]:
    """A table row is checked against its own numbers; a sentence against its passage's (a
    statement may join two sentences of one passage)."""
    whole = numbers_of(passage)
    return [_Unit(u, numbers_of(u) if "\t" in passage else whole) for u in units(passage)]


@dataclass
class OfflineJudge:
    embedder: Embedder
    support_threshold: float | None = None  # None until calibrated
    relevance_threshold: float | None = None
    correct_threshold: float | None = None
    fixed: tuple[str, ...] = ()  # the thresholds the spec fixed (not calibrated)
    kind: JudgeKind = "offline"
    _vectors: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, repr=False)

    def _embed(self, texts: Sequence[str], role: Literal["query", "document"]) -> np.ndarray:
        """Rows for ``texts``, each text embedded once per run."""
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if (role, t) not in self._vectors))
        if missing:
            embed = (self.embedder.embed_queries if role == "query"
                     else self.embedder.embed_documents)
            for text, row in zip(missing, embed(missing)):
                self._vectors[(role, text)] = row
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.stack([self._vectors[(role, t)] for t in texts])

    def support_scores(self, statements: Sequence[str], passages: Sequence[str], *,
                       question: str = "") -> list[Support]:
        """Each statement's best cosine similarity with a unit that holds its numbers (1.0
        when a passage holds it word for word; -1.0 when no unit holds its numbers), and that
        unit."""
        all_units = [u for p in passages for u in _passage_units(p)]
        vectors = self._embed([u.text for u in all_units], "document")
        claims = self._embed(list(statements), "document")
        # a number the question gives and no passage holds is the asker's own ("2.000 euros al
        # mes"): an answer may repeat it; every other number must be in the unit
        own = numbers_of(question).difference(*(numbers_of(p) for p in passages))
        out = []
        for i, s in enumerate(statements):
            if any(contains(p, s) for p in passages):
                out.append(Support(True, 1.0, s))
                continue
            needed = numbers_of(s) - own
            best, where = -1.0, None
            for j, u in enumerate(all_units):
                if needed <= u.numbers:
                    sim = float(vectors[j] @ claims[i])
                    if sim > best:
                        best, where = sim, u.text
            out.append(Support(False, best, where))
        return out

    def support(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[Support]:
        threshold = self._threshold("support", self.support_threshold)
        return [Support(s.score is not None and s.score >= threshold, s.score, s.evidence)
                for s in self.support_scores(statements, passages, question=question)]

    def matches(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[bool]:
        threshold = self._threshold("correctness", self.correct_threshold)
        return [s.score is not None and s.score >= threshold
                for s in self.support_scores(statements, passages, question=question)]

    def relevance_score(self, question: str, answer: str) -> float:
        """The cosine similarity of the question (as a query) and the answer."""
        return float(self._embed([question], "query")[0] @ self._embed([answer], "document")[0])

    def relevance(self, question: str, answer: str) -> float:
        """The similarity rescaled to 0-1 with the threshold at 0.5: linear from 0 (similarity
        0 or less) to 0.5 (the threshold) to 1 (similarity 1)."""
        t = self._threshold("relevance", self.relevance_threshold)
        sim = self.relevance_score(question, answer)
        if sim >= t:
            return 0.5 + 0.5 * (sim - t) / (1.0 - t) if t < 1.0 else 1.0
        return 0.5 * max(sim, 0.0) / t if t > 0.0 else 0.0

    def _threshold(self, name: str, value: float | None) -> float:
        if value is None:
            raise UsageError(f"the offline judge's {name} threshold is not calibrated yet: "
                             "measure the judge on labelled answers first")
        return value

    def tokens(self) -> TokenUsage | None:
        return None  # no language model: sentence embeddings only

    def describe(self) -> dict[str, Any]:
        return {"kind": "offline", "embedder": f"{self.embedder.name}@{self.embedder.version}",
                "support_threshold": self.support_threshold,
                "relevance_threshold": self.relevance_threshold,
                "correct_threshold": self.correct_threshold,
                "thresholds": "fixed" if self.fixed else "calibrated"}


# -- LLM -------------------------------------------------------------------------------------

PROMPT_VERSION = "recallwatch-answers-1"
SUPPORT_SYSTEM = (
    "You check a statement against the passages an assistant was given. Reply 1 if everything "
    "the statement says is stated in the passages or follows directly from them, and 0 if any "
    "part of it is not (missing, different or contradicted), even if it is true elsewhere. "
    "Reply with the single digit and nothing else.")
SUPPORT_USER = "Passages:\n{passages}\n\nStatement: {statement}"
RELEVANCE_SYSTEM = (
    "You grade how well an answer addresses a question, whether or not it is correct:\n"
    "3 = it answers the question directly and completely;\n"
    "2 = it answers part of the question, or answers it among unrelated material;\n"
    "1 = it is on the topic but does not answer the question;\n"
    "0 = it is unrelated, or it declines to answer.\n"
    "Reply with the single digit of the grade and nothing else.")
RELEVANCE_USER = "Question: {question}\n\nAnswer: {answer}"
PROMPT_SHA256 = hashlib.sha256("\n---\n".join(
    (SUPPORT_SYSTEM, SUPPORT_USER, RELEVANCE_SYSTEM, RELEVANCE_USER)).encode()).hexdigest()


def numbered(passages: Sequence[str], max_chars: int) -> str:
    """Passages as a model reads them: ``[1] text`` …, each cut to ``max_chars``."""
    return "\n\n".join(f"[{i}] {p[:max_chars]}" for i, p in enumerate(passages, 1))


@dataclass
class LLMJudge:
    spec: ChatSpec
    client: ChatClient
    kind: JudgeKind = "llm"
    requests: int = 0
    bad_replies: int = 0
    bad_examples: list[dict[str, str]] = field(default_factory=list)

    def _ask(self, system: str, user: str, allowed: str) -> int | None:
        self.requests += 1
        reply = self.client.complete(system, user)
        text = (reply or "").strip()
        if len(text) == 1 and text in allowed:
            return int(text)
        self.bad_replies += 1
        if len(self.bad_examples) < 5:
            self.bad_examples.append({"reply": (reply or "")[:200],
                                      "expected": f"one of {', '.join(allowed)}"})
        return None

    def support(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[Support]:
        shown = numbered(passages, self.client.max_chars)
        out = []
        for s in statements:
            grade = self._ask(SUPPORT_SYSTEM, SUPPORT_USER.format(passages=shown, statement=s),
                              "01")
            out.append(Support(grade == 1, None, None if grade is None else str(grade)))
        return out

    def matches(self, statements: Sequence[str], passages: Sequence[str], *,
                question: str = "") -> list[bool]:
        return [s.backed for s in self.support(statements, passages, question=question)]

    def relevance(self, question: str, answer: str) -> float:
        grade = self._ask(RELEVANCE_SYSTEM,
                          RELEVANCE_USER.format(question=question, answer=answer), "0123")
        return 0.0 if grade is None else grade / 3.0

    def tokens(self) -> TokenUsage | None:
        return self.client.usage

    def describe(self) -> dict[str, Any]:
        return {"kind": "llm", **self.spec.describe(), "prompt_version": PROMPT_VERSION,
                "prompt_sha256": PROMPT_SHA256, "temperature": 0, "requests": self.requests,
                "bad_replies": self.bad_replies, "bad_reply_examples": list(self.bad_examples)}


# -- opening a judge by its spec ---------------------------------------------------------------

_OFFLINE_KEYS = ("support", "relevance", "correct", "embedder")


def _offline_settings(spec: str) -> tuple[dict[str, float], str | None]:
    """The thresholds an ``offline?…`` spec fixes and the embedder it names (None: the
    packaged one)."""
    name, _, query = spec.partition("?")
    if name != "offline":
        raise UsageError(f"--answer-judge must be offline, offline?support=X&relevance=Y, or an "
                         f"OpenAI-compatible endpoint http(s)://…?model=NAME; found {spec!r}")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - set(_OFFLINE_KEYS))
    if unknown:
        raise UsageError(f"--answer-judge offline: unknown setting {unknown[0]!r}; valid: "
                         f"{', '.join(_OFFLINE_KEYS)}")
    thresholds: dict[str, float] = {}
    for key in ("support", "relevance", "correct"):
        if key in options:
            try:
                value = float(options[key])
            except ValueError:
                value = float("nan")
            if not -1.0 <= value <= 1.0:
                raise UsageError(f"--answer-judge offline: {key} is a cosine similarity from -1 "
                                 f"to 1, found {options[key]!r}")
            thresholds[key] = value
    return thresholds, options.get("embedder")


def check_judge(spec: str) -> None:
    """Raise the UsageError :func:`open_judge` would raise for ``spec``, opening nothing (no
    embedder is loaded, no endpoint asked)."""
    if is_chat_spec(spec):
        parse_chat_spec(spec, "--answer-judge")
    else:
        _offline_settings(spec)


def open_judge(spec: str = "offline") -> AnswerJudge:
    """``offline`` (thresholds calibrated on the labelled answers), ``offline?support=X&
    relevance=Y&correct=Z[&embedder=NAME]`` (fixed), or an OpenAI-compatible endpoint ``https://…?model=
    NAME[&api_key_env=VAR][&timeout=S]``."""
    if is_chat_spec(spec):
        chat = parse_chat_spec(spec, "--answer-judge")
        return LLMJudge(chat, chat.client(max_tokens=4))
    thresholds, embedder_spec = _offline_settings(spec)
    from recallwatch.embedders import embedder_from_spec, get_embedder

    embedder = (embedder_from_spec(embedder_spec) if embedder_spec is not None
                else get_embedder())
    return OfflineJudge(embedder, thresholds.get("support"), thresholds.get("relevance"),
                        thresholds.get("correct"), fixed=tuple(sorted(thresholds)))
