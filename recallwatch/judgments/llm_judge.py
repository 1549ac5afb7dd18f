"""An LLM as relevance judge (optional, off by default): grades (query, passage) pairs 0–3.

Any OpenAI-compatible chat endpoint (``POST {base_url}/chat/completions``) given by the user;
the API key is read from an environment variable whose *name* is given, never stored or
recorded. Nothing in recallwatch calls this unless asked.

Its labels are only usable after they have been measured: :func:`run_judge` first grades the
pairs people have already judged, computes the agreement (weighted kappa, confusion matrix), and
refuses to label anything when kappa is below the floor or too many replies were unusable.
Replies are parsed strictly: the reply must be one digit 0–3 and nothing else; anything else is
counted as a bad reply and gets no label (never a guess). docs/online.md shows the prompt.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallwatch._progress import tracked
from recallwatch.errors import InputError, JudgeError, UsageError
from recallwatch.judgments.judgments import Judgment, JudgmentSet
from recallwatch.records import TokenUsage

if TYPE_CHECKING:
    from recallwatch.judgments.agreement import Agreement, Weights

__all__ = [
    "PROMPT_VERSION",
    "SYSTEM_PROMPT",
    "USER_TEMPLATE",
    "ChatClient",
    "JudgePair",
    "JudgeReply",
    "JudgeRun",
    "LLMJudge",
    "parse_reply",
    "read_pairs",
    "run_judge",
]

PROMPT_VERSION = "recallwatch-judge-1"
SYSTEM_PROMPT = (
    "You are a relevance assessor for a search engine. You are given a search query and a "
    "passage retrieved for it. Grade how well the passage answers the query:\n"
    "3 = the passage answers the query fully and directly;\n"
    "2 = the passage answers part of the query, or answers it among unrelated material;\n"
    "1 = the passage is on the topic of the query but does not answer it;\n"
    "0 = the passage has nothing to do with the query.\n"
    "Judge the content only, not the style or the language. Reply with the single digit of the "
    "grade and nothing else."
)
USER_TEMPLATE = "Query: {query}\n\nPassage:\n{text}"
PROMPT_SHA256 = hashlib.sha256(f"{SYSTEM_PROMPT}\n---\n{USER_TEMPLATE}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """The grade read from a reply, or None and why the reply was unusable."""

    grade: int | None
    reply: str
    problem: str | None = None


def parse_reply(content: str) -> JudgeReply:
    """Strict: the reply, without surrounding whitespace, must be exactly one of 0, 1, 2, 3."""
    text = content.strip()
    if len(text) == 1 and text in "0123":
        return JudgeReply(int(text), content)
    return JudgeReply(None, content, "not a single digit 0-3")


class ChatClient:
    """An OpenAI-compatible chat-completions endpoint (``POST {base_url}/chat/completions``), the
    API key read from the environment variable named ``api_key_env`` at each request. ``usage``
    sums the tokens its replies reported (their ``usage`` field), request by request."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None,
                 timeout: float = 60.0, max_retries: int = 3, retry_wait: float = 0.5,
                 max_chars: int = 4000, max_tokens: int = 16,
                 timeout_fix: str | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(f"the model's base URL must start with http:// or https://, "
                             f"found {base_url!r}")
        if not model:
            raise UsageError("name the model (--model)")
        if not 0.001 <= timeout <= 3600:  # NaN too
            raise UsageError(f"--timeout must be a number of seconds from 0.001 to 3600, "
                             f"found {timeout!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.base_url = base_url
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_wait = retry_wait
        self.max_chars = max_chars  # passages are cut to this many characters
        self.max_tokens = max_tokens
        # how a user waits longer, when the endpoint times out (a command's own setting)
        self.timeout_fix = timeout_fix or ("if the endpoint is only slow, raise --timeout "
                                           f"(seconds, now {timeout:g})")
        self.usage = TokenUsage()

    def _headers(self) -> dict[str, str]:
        if self.api_key_env is None:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise UsageError(f"the model's API key is read from ${self.api_key_env}, "
                             "which is not set")
        return {"Authorization": f"Bearer {key}"}

    def complete(self, system: str, user: str) -> str | None:
        """The text of the model's reply at temperature 0 (None: the reply has no text)."""
        from recallwatch._http import Call, post_json

        body = {
            "model": self.model, "temperature": 0, "max_tokens": self.max_tokens,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}],
        }
        call = Call(JudgeError, f"model {self.model!r}", timeout=self.timeout,
                    max_retries=self.max_retries, retry_wait=self.retry_wait,
                    timeout_fix=self.timeout_fix,
                    redirect_fix="give the URL it points to as the endpoint's base URL")
        answer = post_json(self.url, body, headers=self._headers(), call=call)
        self.usage = self.usage + TokenUsage.of_reply(answer)
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeError(f"{self.url} did not answer with a chat completion "
                             "(no choices[0].message.content)") from None
        return content if isinstance(content, str) else None


class LLMJudge(ChatClient):
    """Grades (query, passage) pairs through an OpenAI-compatible chat-completions endpoint."""

    def spec(self) -> dict[str, Any]:
        """What produced the labels, without secrets: recorded with them."""
        return {"base_url": self.base_url, "model": self.model, "api_key_env": self.api_key_env,
                "prompt_version": PROMPT_VERSION, "prompt_sha256": PROMPT_SHA256,
                "temperature": 0, "max_chars": self.max_chars, "max_tokens": self.max_tokens}

    def grade(self, query: str, text: str) -> JudgeReply:
        """One request, one grade (or a counted bad reply)."""
        content = self.complete(SYSTEM_PROMPT, USER_TEMPLATE.format(
            query=query, text=text[: self.max_chars]))
        if content is None:
            return JudgeReply(None, "None", "the reply has no text")
        return parse_reply(content)


@dataclass(frozen=True, slots=True)
class JudgePair:
    query_id: str
    query: str
    id: str
    text: str
    line: int | None = None


def read_pairs(path: str | PathLike[str], *, trec_ids: bool = False) -> list[JudgePair]:
    """(query, passage) pairs to grade, JSONL: ``{"query_id", "query", "id", "text"}``.
    ``trec_ids``: the labels go to a TREC file, so an id holding whitespace is refused at its
    line."""
    from recallwatch.formats.fields import check_trec_id, line_of
    from recallwatch.formats.structured import iter_jsonl

    pairs = []
    seen: dict[tuple[str, str], int | None] = {}
    for obj in iter_jsonl(Path(path)):
        line = line_of(obj)
        values = {}
        for key in ("query_id", "query", "id", "text"):
            value = obj.get(key)
            if not isinstance(value, str) or not value.strip():
                raise InputError(source=path, line=line, field=key,
                                 expected="a non-empty string",
                                 found="<nothing>" if value is None else value)
            if trec_ids and key in ("query_id", "id"):
                check_trec_id(value, key, source=path, line=line)
            values[key] = value
        key2 = (values["query_id"], values["id"])
        if key2 in seen:
            raise InputError(source=path, line=line, record=values["query_id"], field="id",
                             expected=f"each (query_id, id) pair once (first on line "
                             f"{seen[key2]})", found=values["id"])
        seen[key2] = line
        pairs.append(JudgePair(values["query_id"], values["query"], values["id"],
                               values["text"], line))
    return pairs


@dataclass(frozen=True)
class JudgeRun:
    """The outcome: the measured agreement, and the labels only when it was good enough."""

    accepted: bool
    reasons: list[str]
    calibration: Agreement | None
    calibration_pairs: int
    bad_replies: int
    requests: int
    judgments: JudgmentSet
    bad_examples: list[dict[str, str]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    tokens: TokenUsage = field(default_factory=TokenUsage)  # what the endpoint reported

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted, "reasons": self.reasons, "tokens": self.tokens.to_dict(),
            "agreement": None if self.calibration is None else self.calibration.to_dict(),
            "calibration_pairs": self.calibration_pairs, "requests": self.requests,
            "bad_replies": self.bad_replies, "bad_reply_examples": self.bad_examples,
            "labels": len(self.judgments.judgments),
            "judgments": [j.to_dict() for j in self.judgments.judgments],
            "settings": self.settings,
        }


def run_judge(judge: LLMJudge, pairs: Iterable[JudgePair], human: dict[tuple[str, str], int],
              *, min_kappa: float = 0.6, max_bad_share: float = 0.1, min_pairs: int = 30,
              weights: Weights = "quadratic") -> JudgeRun:
    """Measure the judge on the pairs people judged, then label the pairs people did not judge,
    only if: kappa ≥ ``min_kappa``, measured on at least ``min_pairs`` usable replies, with at
    most ``max_bad_share`` of the replies unusable.
    """
    import math

    from recallwatch.judgments.agreement import agreement

    if not -1.0 <= min_kappa <= 1.0:
        raise UsageError(f"--min-kappa must be between -1 and 1, got {min_kappa}")
    if not 0.0 <= max_bad_share <= 1.0:
        raise UsageError(f"the bad-reply share must be between 0 and 1, got {max_bad_share}")
    pairs = list(pairs)
    calibration = [p for p in pairs if (p.query_id, p.id) in human]
    to_label = [p for p in pairs if (p.query_id, p.id) not in human]
    source = f"llm:{judge.model}"
    settings = {"judge": judge.spec(), "min_kappa": min_kappa, "max_bad_share": max_bad_share,
                "min_pairs": min_pairs, "weights": weights}
    bad_examples: list[dict[str, str]] = []
    requests = 0

    def ask(p: JudgePair) -> JudgeReply:
        nonlocal requests
        requests += 1
        reply = judge.grade(p.query, p.text)
        if reply.grade is None and len(bad_examples) < 5:
            bad_examples.append({"query_id": p.query_id, "id": p.id, "reply": reply.reply[:200],
                                 "problem": str(reply.problem)})
        return reply

    def refused(reason: str, measured: Agreement | None, bad: int) -> JudgeRun:
        return JudgeRun(False, [reason], measured, len(calibration), bad, requests,
                        JudgmentSet([], source), bad_examples, settings, judge.usage)

    if not calibration:
        return refused("none of the pairs has a human label, so the judge's agreement cannot be "
                       "measured; add human judgments of some of these pairs (--qrels)", None, 0)
    replies = [ask(p) for p in tracked(calibration, len(calibration),
                                       "grading the human-judged pairs (measuring agreement)")]
    graded = [(human[(p.query_id, p.id)], r.grade) for p, r in zip(calibration, replies)
              if r.grade is not None]
    bad = len(replies) - len(graded)
    measured = None
    if graded:
        theirs = [h for h, _ in graded]
        ours = [g for _, g in graded if g is not None]
        measured = agreement(theirs, ours, weights=weights,
                             categories=sorted({0, 1, 2, 3} | set(theirs)),
                             rater_a="human", rater_b=source)
    if bad > max_bad_share * len(replies):
        return refused(f"{bad} of {len(replies)} replies on the human-judged pairs were not a "
                       f"single grade 0-3 (more than {max_bad_share:.0%})", measured, bad)
    if len(graded) < min_pairs:
        return refused(f"only {len(graded)} human-judged pairs got a usable grade; at least "
                       f"{min_pairs} are needed for kappa to mean something (judge more pairs "
                       "by hand, or lower --min-pairs knowingly)", measured, bad)
    kappa = measured.kappa if measured is not None else math.nan
    if not (math.isfinite(kappa) and kappa >= min_kappa):
        shown = "undefined" if not math.isfinite(kappa) else f"{kappa:.3f}"
        return refused(f"agreement with human judgments is too low to use the judge's labels: "
                       f"{weights} kappa {shown} < {min_kappa:g} on {len(graded)} pairs",
                       measured, bad)
    labels = []
    for p in tracked(to_label, len(to_label), "grading the pairs to label"):
        reply = ask(p)
        if reply.grade is None:
            bad += 1
            continue
        labels.append(Judgment(query_id=p.query_id, id=p.id, grade=reply.grade, source=source))
    reasons = [f"{weights} kappa {kappa:.3f} >= {min_kappa:g} on {len(graded)} human-judged "
               f"pairs; {len(labels)} pairs labelled, {bad} bad repl{'y' if bad == 1 else 'ies'} "
               "in all"]
    return JudgeRun(True, reasons, measured, len(calibration), bad, requests,
                    JudgmentSet(labels, source, unlabelled=len(to_label) - len(labels),
                                settings=settings),
                    bad_examples, settings, judge.usage)
