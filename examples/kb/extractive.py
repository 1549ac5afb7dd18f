"""An extractive stand-in for an LLM, so that the answer-level example runs offline and gives the
same answers on every machine: it answers with the sentence of its contexts (or the table row,
read with its header) that shares the most words with the question, ties going to the earlier
one, and the two sentences after it. It reads what it is given and never invents, but it
cannot reason: a table lookup by range ("2.000 euros al mes" in "1.850 - 2.030") is beyond it.

    recallwatch gate examples/kb/golden_answers.yaml --store "lancedb://kb?table=chunks" \\
        --generator python:extractive:answer --answer-labels examples/kb/answer_labels.jsonl

(``python:extractive:answer`` is found in the golden set's folder.) Any function
``f(question, contexts) -> str`` works the same way; an LLM behind an OpenAI-compatible endpoint
is ``--generator "http://127.0.0.1:8000/v1?model=NAME"``.
"""

from __future__ import annotations

import re

from recallwatch.answers.text import units

_WORD = re.compile(r"\w+")


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.casefold()) if len(w) >= 4}


def answer(question: str, contexts: list[str]) -> str:
    """The unit that shares the most words with the question, and the two after it in its
    passage."""
    wanted = _stems(question)
    best: list[str] = []
    best_shared = 0
    for passage in contexts:
        parts = units(passage)
        for i, unit in enumerate(parts):
            shared = len(wanted & _stems(unit))
            if shared > best_shared:
                best, best_shared = parts[i:i + 3], shared
    return " ".join(best) or "No encuentro la respuesta en los documentos."




def terse(question: str, contexts: list[str]) -> str:
    """A worse generator, for the experiment's example (examples/kb/experiment_answers.yaml):
    the same reader answering with the best unit alone, without the two after it — as a prompt
    that asks for one sentence."""
    wanted = _stems(question)
    best = max((u for p in contexts for u in units(p)),
               key=lambda u: len(wanted & _stems(u)), default="")
    return best or "No encuentro la respuesta en los documentos."
