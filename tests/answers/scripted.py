"""A scripted RAG generator for the tests, deterministic: for each question of the example's
golden set it answers right when its contexts hold the passage the answer needs, and wrong
otherwise (a made-up figure, as a model that guesses). The question ``modelo_190`` gets a wrong
date whatever its context: a generator that ignores what it is given. It is a fake of the
user's generator, which is not what the tests are about; the judges and the gate are real.

``python:tests.answers.scripted:answer`` names it as a generator; :func:`chat_reply` plays the
same generator (and a judge) behind a local OpenAI-compatible server."""

from __future__ import annotations

import re
from dataclasses import dataclass

from recallwatch.answers import generate, judges
from recallwatch.answers.text import numbers_of


@dataclass(frozen=True)
class Script:
    needle: str  # what the contexts must hold for the right answer
    right: str
    wrong: str
    ignores_context: bool = False


SCRIPT = {
    "Alquilo un local a un particular para mi negocio, ¿tengo que practicar retención?": Script(
        "deben retener el 19 % de la renta sin IVA",
        "Sí, hay que retener el 19 % de la renta sin IVA e ingresarlo cada trimestre con el "
        "modelo 115.",
        "Sí, debes retener el 21 % de la renta y presentarlo con el modelo 303."),
    "¿Cuándo se presenta el resumen anual de retenciones, el modelo 190?": Script(
        "Se presenta del 1 al 31 de enero",
        "El modelo 190 se presenta del 1 al 31 de enero.",
        "El modelo 190 se presenta del 1 al 20 de abril.", ignores_context=True),
    "¿Cuál es el salario mínimo interprofesional en 2025?": Script(
        "fija el SMI en 1.184 euros al mes",
        "El salario mínimo interprofesional de 2025 es de 1.184 euros al mes en catorce pagas.",
        "El salario mínimo interprofesional de 2025 es de 1.080 euros al mes."),
    "¿Con cuánta antelación tengo que avisar si me quiero ir de la empresa?": Script(
        "antelación mínima de un mes para el Grupo 1",
        "Hay que avisar por escrito con un mes de antelación en el Grupo 1 y con quince días "
        "naturales en el resto de grupos.",
        "Hay que avisar con 3 meses de antelación."),
    "¿Cuánto dura la tarifa plana de 80 euros?": Script(
        "paga una cuota reducida de 80 euros al mes durante los primeros doce meses",
        "La tarifa plana de 80 euros al mes dura los primeros doce meses.",
        "La tarifa plana de 80 euros dura 36 meses."),
}


def answer(question: str, contexts: list[str]) -> str:
    script = SCRIPT[question]
    if not script.ignores_context and any(script.needle in c for c in contexts):
        return script.right
    return script.wrong


# -- behind a chat endpoint -------------------------------------------------------------------

_PASSAGE = re.compile(r"^\[\d+\] ", re.MULTILINE)
_WORD = re.compile(r"\w+")


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.casefold()) if len(w) >= 4}


def _passages(block: str) -> list[str]:
    return [p.strip() for p in _PASSAGE.split(block) if p.strip()]


def backed(statement: str, passages: str) -> bool:
    """The scripted judge: every number of the statement is in the passages, and most of its
    words too."""
    words = _stems(statement)
    return (numbers_of(statement) <= numbers_of(passages)
            and len(words & _stems(passages)) >= 0.6 * len(words))


def chat_reply(system: str, user: str) -> str:
    """What the scripted model says to a chat request of the generator or of the judge."""
    if system == generate.SYSTEM_PROMPT:
        head, _, question = user.rpartition("\n\nQuestion: ")
        return answer(question, _passages(head.removeprefix("Passages:\n")))
    if system == judges.SUPPORT_SYSTEM:
        head, _, statement = user.rpartition("\n\nStatement: ")
        return "1" if backed(statement, head) else "0"
    if system == judges.RELEVANCE_SYSTEM:
        question, _, reply = user.removeprefix("Question: ").partition("\n\nAnswer: ")
        return "3" if _stems(question) & _stems(reply) else "0"
    return "I do not understand."
