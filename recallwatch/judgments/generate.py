"""Candidate questions written by a language model from sampled chunks (optional, never the
default): each question expects its chunk, anchored by content (``{doc_id, quote}``) so it
survives a re-chunking, and is marked ``source: generated`` so that reports tell it apart from
questions people wrote. They are candidates: a person reviews them before they count.

Any OpenAI-compatible chat endpoint given by the user (see :class:`ChatClient`). Replies are read
strictly: a JSON object ``{"questions": ["…", …]}``; anything else is counted as a bad reply and
that chunk gets no question (never a guess). A question longer than ``MAX_QUESTION_CHARS``
(1,000 characters) is no question a user types: it is left out, and the chunk named.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from recallwatch._progress import tracked
from recallwatch.errors import InputError
from recallwatch.judgments.llm_judge import ChatClient
from recallwatch.records import Chunk

__all__ = ["GENERATE_PROMPT", "MAX_QUESTION_CHARS", "Generated", "anchor_quote",
           "generate_questions", "golden_yaml", "parse_questions", "sample_chunks"]

GENERATE_PROMPT = (
    "You write test questions for a search engine. You are given a passage from a knowledge "
    "base. Write {n} different question(s) that a user of this knowledge base could ask and "
    "that this passage answers, in the language of the passage, each on its own, without "
    "quoting the passage or referring to it. Reply with a JSON object and nothing else: "
    '{{"questions": ["first question", ...]}}'
)
# The quote that anchors a question to its chunk: its first sentence, at most this long.
QUOTE_CHARS = 160
# The longest question kept (whitespace-normalised); a search box question is far shorter.
MAX_QUESTION_CHARS = 1000
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sample_chunks(chunks: Sequence[Chunk], n: int, seed: int) -> list[Chunk]:
    """``n`` chunks drawn without replacement (all when there are fewer), in corpus order."""
    if n < 1:
        raise InputError(field="--sample", expected="at least 1 chunk", found=n)
    picked = set(random.Random(seed).sample(range(len(chunks)), min(n, len(chunks))))
    return [c for i, c in enumerate(chunks) if i in picked]


def anchor_quote(text: str) -> str:
    """The first sentence of ``text`` (cut at a word, at most ``QUOTE_CHARS``): a quote the
    chunk holds, whitespace-normalised as anchors are matched."""
    flat = " ".join(text.split())
    first = _SENTENCE.split(flat, maxsplit=1)[0]
    if len(first) <= QUOTE_CHARS:
        return first
    cut = first[:QUOTE_CHARS]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def parse_questions(content: str | None, n: int) -> list[str] | None:
    """The questions of a reply, or None when the reply is not what was asked for."""
    if content is None:
        return None
    text = content.strip()
    if text.startswith("```"):  # a fenced block around the object is common; nothing else is
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return None
    questions = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(questions, list) or not questions:
        return None
    if not all(isinstance(q, str) and q.strip() for q in questions):
        return None
    return [" ".join(q.split()) for q in questions[:n]]


@dataclass(frozen=True)
class Generated:
    """What a generation produced: the queries (golden entries) and the chunks that got none."""

    queries: tuple[dict[str, Any], ...]
    bad_replies: tuple[str, ...] = ()  # chunk ids whose reply was unusable
    spec: dict[str, Any] = field(default_factory=dict)
    # (chunk id, length) of each question left out for being over MAX_QUESTION_CHARS
    too_long: tuple[tuple[str, int], ...] = ()

    def skipped(self) -> list[str]:
        """What was left out, one line each (empty when nothing was)."""
        lines = []
        if self.bad_replies:
            lines.append(f"no usable reply for {len(self.bad_replies)} chunk(s): "
                         + ", ".join(self.bad_replies[:10]))
        if self.too_long:
            lines.append(f"left out {len(self.too_long)} question(s) longer than "
                         f"{MAX_QUESTION_CHARS:,} characters: " + ", ".join(
                             f"chunk {c} ({n:,} characters)" for c, n in self.too_long[:10]))
        return lines


def generate_questions(client: ChatClient, chunks: Sequence[Chunk], per_chunk: int = 1
                       ) -> Generated:
    """``per_chunk`` questions for each chunk, each expecting that chunk."""
    if per_chunk < 1:
        raise InputError(field="--per-chunk", expected="at least 1 question", found=per_chunk)
    system = GENERATE_PROMPT.format(n=per_chunk)
    queries: list[dict[str, Any]] = []
    bad: list[str] = []
    too_long: list[tuple[str, int]] = []
    for chunk in tracked(chunks, len(chunks), f"writing questions with {client.model}"):
        questions = parse_questions(client.complete(system, chunk.text[: client.max_chars]),
                                    per_chunk)
        if questions is None:
            bad.append(chunk.id)
            continue
        too_long += [(chunk.id, len(q)) for q in questions if len(q) > MAX_QUESTION_CHARS]
        questions = [q for q in questions if len(q) <= MAX_QUESTION_CHARS]
        quote = anchor_quote(chunk.text)
        for i, text in enumerate(questions, 1):
            # a new object per question: a shared one would be written as a YAML alias
            expected: Any = ({"doc_id": chunk.doc_id, "quote": quote} if chunk.doc_id
                             else chunk.id)
            entry: dict[str, Any] = {"id": f"gen_{chunk.id}_{i}", "text": text,
                                     "expected": [expected], "source": "generated"}
            if chunk.domain:
                entry["domain"] = chunk.domain
            queries.append(entry)
    spec = {"base_url": client.base_url, "model": client.model,
            "api_key_env": client.api_key_env,
            "prompt_sha256": hashlib.sha256(GENERATE_PROMPT.encode()).hexdigest(),
            "per_chunk": per_chunk, "temperature": 0}
    return Generated(tuple(queries), tuple(bad), spec, tuple(too_long))


def golden_yaml(generated: Generated, name: str, sampled: int, seed: int) -> str:
    """The generated queries as a golden set file, headed by how they were made."""
    import yaml

    head = [
        f"# {len(generated.queries)} candidate questions written by model "
        f"{generated.spec.get('model')} from {sampled} sampled chunks (seed {seed}),",
        "# each marked `source: generated`: review every one (keep, reword or delete it; "
        "`recallwatch label serve`",
        "# can show them with their results) before the gate relies on them.",
    ]
    head += [f"# {line}" for line in generated.skipped()]
    body = yaml.safe_dump({"name": name, "version": "1", "top_k": 10,
                           "queries": list(generated.queries)},
                          allow_unicode=True, sort_keys=False, width=100)
    return "\n".join(head) + "\n" + body
