"""The user's generator, run by recallwatch: the question and its contexts in, the answer out.

``gate --generator SPEC`` takes

* ``python:MODULE:ATTR[?timeout=S]`` — a function ``f(question: str, contexts: list[str]) ->
  str`` in the user's code (MODULE imported from the working directory, then the golden set's
  folder), or a function or class without arguments that returns one (a factory). It is loaded
  and called through the same place as a ``python:`` retriever
  (:mod:`recallwatch.retrievers.python`); each call (the import, the factory, an answer) may take
  ``timeout`` seconds, :data:`~recallwatch.retrievers.python.DEFAULT_TIMEOUT` unless set;
* ``http(s)://…/v1?model=NAME[&prompt=FILE][&api_key_env=VAR][&timeout=S][&max_tokens=N]`` — an
  OpenAI-compatible chat endpoint (:mod:`recallwatch.answers.chat`), asked at temperature 0 with
  :data:`SYSTEM_PROMPT` and the user message of the prompt template: :data:`USER_TEMPLATE`, or
  the file ``prompt=FILE``, in which ``{question}`` and ``{contexts}`` (the passages, numbered
  ``[1]``, ``[2]`` …) are replaced and nothing else is.

An answer must be a non-empty string; anything else is a :class:`~recallwatch.errors.
GeneratorError` naming the generator and the question.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from recallwatch._usercode import UserCode, check_timeout
from recallwatch.answers.chat import ChatSpec, is_chat_spec, parse_chat_spec
from recallwatch.answers.judges import numbered
from recallwatch.errors import GeneratorError, InputError, UsageError
from recallwatch.records import TokenUsage
from recallwatch.retrievers.python import (
    DEFAULT_TIMEOUT,
    load_attribute,
    split_python_spec,
    user_code,
)

__all__ = ["SYSTEM_PROMPT", "USER_TEMPLATE", "ChatGenerator", "Generator", "PythonGenerator",
           "check_generator", "open_generator", "read_prompt", "with_prompt"]

SYSTEM_PROMPT = (
    "You answer questions using only the numbered passages you are given. If they do not hold "
    "the answer, say so. Answer in the language of the question, in a few sentences.")
USER_TEMPLATE = "Passages:\n{contexts}\n\nQuestion: {question}"
_PLACEHOLDERS = ("{question}", "{contexts}")
_NOT_A_GENERATOR = ("--generator must be python:MODULE:ATTR or an OpenAI-compatible chat "
                    "endpoint http(s)://…?model=NAME; found {spec}")


class Generator(Protocol):
    def answer(self, question: str, contexts: Sequence[str]) -> str: ...

    def describe(self) -> dict[str, Any]: ...

    def tokens(self) -> TokenUsage | None:
        """The tokens its model reported so far (None: the generator does not say)."""
        ...


def _checked(value: object, where: str, question: str) -> str:
    if not isinstance(value, str) or not value.strip():
        found = "an empty string" if isinstance(value, str) else type(value).__name__
        raise GeneratorError(f"{where} answered {question[:60]!r} with {found}: expected the "
                             "answer's text")
    return value


def _guard(spec: str, timeout: float) -> UserCode:
    """The guard every call into a python: generator goes through, as a python: retriever's:
    its prints go to standard error, sys.exit is an input error, a call is bounded in time."""
    return replace(user_code(f"generator {spec}", "the answer's text", timeout,
                             f"--generator {spec}?timeout=SECONDS", where="in the spec"),
                   error=GeneratorError)


def _python_options(spec: str) -> tuple[str, float]:
    """``python:MODULE:ATTR[?timeout=S]`` as the code's spec and the timeout of each call."""
    from urllib.parse import parse_qsl

    code, _, query = spec.partition("?")
    timeout = DEFAULT_TIMEOUT
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key != "timeout":
            raise UsageError(f"--generator {spec}: unknown option {key!r}; a python: generator "
                             "takes only ?timeout=SECONDS")
        try:
            number: object = float(value)
        except ValueError:
            number = value
        timeout = check_timeout(number, field="--generator timeout")
    return code, timeout


@dataclass
class PythonGenerator:
    target: Callable[[str, list[str]], Any]
    spec: str
    guard: UserCode

    def answer(self, question: str, contexts: Sequence[str]) -> str:
        value = self.guard.call(self.target, question, list(contexts),
                                during=f"on question {question[:60]!r}")
        return _checked(value, f"generator {self.spec}", question)

    def describe(self) -> dict[str, Any]:
        return {"kind": "python", "spec": self.spec}

    def tokens(self) -> TokenUsage | None:
        return None  # the user's own code: what it spends is not seen from here


def _takes(fn: Callable[..., Any], *args: Any) -> bool:
    """Whether ``fn`` can be called with ``args`` (an object whose signature cannot be read is
    taken at its word)."""
    try:
        inspect.signature(fn).bind(*args)
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def _python(given: str, base_dir: Path) -> PythonGenerator:
    spec, timeout = _python_options(given)
    where = f"generator {spec}"
    guard = _guard(spec, timeout)
    target = load_attribute(spec, base_dir=base_dir, what=where, guard=guard)
    if callable(target) and (inspect.isclass(target) or _takes(target)):
        target = guard.call(target, during="while building the generator")
    if not callable(target) or not _takes(target, "question", ["context"]):
        raise UsageError(f"{where} is a {type(target).__name__}: expected a function "
                         "f(question, contexts) -> answer text, or a factory returning one")
    return PythonGenerator(target, spec, guard)


@dataclass
class ChatGenerator:
    spec: ChatSpec
    template: str
    template_source: str | None
    max_tokens: int

    def __post_init__(self) -> None:
        self.client = self.spec.client(max_tokens=self.max_tokens)

    def answer(self, question: str, contexts: Sequence[str]) -> str:
        user = self.template.replace("{contexts}", numbered(contexts, self.client.max_chars)) \
            .replace("{question}", question)
        reply = self.client.complete(SYSTEM_PROMPT, user)
        return _checked(reply, f"generator {self.spec.model!r} at {self.spec.base_url}",
                        question)

    def tokens(self) -> TokenUsage | None:
        return self.client.usage

    def describe(self) -> dict[str, Any]:
        import hashlib

        return {"kind": "chat", **self.spec.describe(), "max_tokens": self.max_tokens,
                "prompt": self.template_source or "default", "prompt_sha256": hashlib.sha256(
                    f"{SYSTEM_PROMPT}\n---\n{self.template}".encode()).hexdigest()}


def _template(path: str | None, base_dir: Path) -> tuple[str, str | None]:
    if path is None:
        return USER_TEMPLATE, None
    p = Path(path) if Path(path).is_absolute() or Path(path).exists() else base_dir / path
    return read_prompt(p), str(p)


def read_prompt(p: Path) -> str:
    """A prompt template file's text; one without ``{question}`` or ``{contexts}`` is an
    InputError naming the file and the placeholder missing."""
    from recallwatch.formats.structured import text_lines

    text = "\n".join(line for _, line in text_lines(p))
    missing = [ph for ph in _PLACEHOLDERS if ph not in text]
    if missing:
        raise InputError(source=p, field="prompt",
                         expected="a prompt template holding {question} and {contexts}",
                         found=f"<no {' and no '.join(missing)}>")
    return text


def _chat_spec(spec: str) -> tuple[ChatSpec, int]:
    """A chat generator's spec parsed and its max_tokens checked (nothing is opened)."""
    chat = parse_chat_spec(spec, "--generator", extra=("prompt", "max_tokens"))
    raw = chat.options.get("max_tokens", "512")
    if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
        raise UsageError(f"--generator: max_tokens must be a whole number from 1 to 100000, "
                         f"found {raw!r}")
    return chat, int(raw)


def _chat(spec: str, base_dir: Path) -> ChatGenerator:
    chat, max_tokens = _chat_spec(spec)
    template, source = _template(chat.options.get("prompt"), base_dir)
    return ChatGenerator(chat, template, source, max_tokens)


def check_generator(spec: str) -> None:
    """Raise the UsageError :func:`open_generator` would raise for the form of ``spec``,
    opening nothing (no code imported, no prompt file read, no endpoint asked)."""
    if spec.startswith("python:"):
        code, _ = _python_options(spec)
        split_python_spec(code, f"generator {code}")
    elif is_chat_spec(spec):
        _chat_spec(spec)
    else:
        raise UsageError(_NOT_A_GENERATOR.format(spec=repr(spec)))


def with_prompt(spec: str, prompt: Path) -> str:
    """A chat generator's ``spec`` with its prompt template set to the file ``prompt`` (any
    ``prompt=`` it had is replaced)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(spec)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "prompt"]
    query.append(("prompt", str(prompt)))
    return urlunsplit(parts._replace(query=urlencode(query, safe="/:")))


def open_generator(spec: str, *, base_dir: Path | None = None) -> Generator:
    """The generator ``spec`` names (see the module's documentation)."""
    folder = base_dir or Path.cwd()
    if spec.startswith("python:"):
        return _python(spec, folder)
    if is_chat_spec(spec):
        return _chat(spec, folder)
    raise UsageError(_NOT_A_GENERATOR.format(spec=repr(spec)))
