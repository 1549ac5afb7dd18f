"""Parameter values without pydantic, where typer would only hand them through.

typer (0.29, the version installed here) turns every parameter of the command being run, its
defaults included, into its Python value through a pydantic ``TypeAdapter``: importing pydantic
and building the adapters took 0.3 s and 13 MB of every command (a fifth of a gate on the
example knowledge base).
For the kinds of parameter recallwatch's commands declare (str, int, float, bool, Path, an Enum
of choices, lists of these) and an input that is plainly valid, :class:`_Plain` computes the
same value directly, with typer's own functions where typer has them (choices, paths). Any other
input (a value out of range, a number written oddly, a path that would be printed differently)
goes to typer's own coercion, so every message stays typer's; so does any parameter of another
kind, and everything when typer is a version without these internals (:func:`install` then does
nothing). ``tests/cli/test_coerce.py`` checks every parameter of every command against typer.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any, get_args, get_origin

__all__ = ["install"]

_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_EXACT = 2**53  # integers a float holds exactly


class _Undecided(Exception):
    """The input is not plainly valid: typer's coercion decides (and words any error)."""


def install(command: Any) -> None:
    """Plain coercion for the parameters of ``command`` and of every command under it."""
    try:
        from typer._coercion import RuntimeParam
        from typer.core import _TyperParameter
    except ImportError:
        return
    if not isinstance(RuntimeParam, type) or "_coerce_value" not in vars(RuntimeParam):
        return

    def one(param: Any) -> None:
        if (isinstance(param, _TyperParameter) and getattr(param, "_runtime_param", 0) is None
                and _kind(getattr(param, "type_descriptor", None)) is not None):
            param._runtime_param = _runtime(param.type_descriptor)

    for each in _commands(command):
        for param in getattr(each, "params", []):
            one(param)
        made = getattr(each, "get_help_option", None)
        # --help is made when a context asks for it: plain as well (wrapped once: a command
        # object run many times in one process, as by tests or a notebook, keeps one wrapper)
        if made is not None and not getattr(made, "_plain", False):
            each.get_help_option = _then(made, one)


def _commands(command: Any) -> list[Any]:
    out = [command]
    for sub in getattr(command, "commands", {}).values():
        out += _commands(sub)
    return out


def _then(make: Any, also: Any) -> Any:
    def made(*args: Any, **kwargs: Any) -> Any:
        option = make(*args, **kwargs)
        also(option)
        return option

    made._plain = True  # type: ignore[attr-defined]
    return made


def _kind(descriptor: Any) -> str | None:
    """What :class:`_Plain` can coerce for this parameter: None for anything else."""
    info = getattr(descriptor, "parameter_info", None)
    if info is None or getattr(descriptor, "file_annotation", 1) is not None \
            or getattr(info, "parser", 1) is not None \
            or getattr(info, "click_type", None) is not None:
        return None
    annotation = descriptor.annotation
    if get_origin(annotation) is list:
        args = get_args(annotation)
        inner = _leaf(args[0], info) if len(args) == 1 else None
        return None if inner is None else f"list:{inner}"
    return _leaf(annotation, info)


def _leaf(annotation: Any, info: Any) -> str | None:
    if annotation is str or annotation is bool:
        return "str" if annotation is str else "bool"
    if annotation is int or annotation is float:
        return None if getattr(info, "clamp", True) else ("int" if annotation is int else "float")
    if annotation is Path:
        return "path" if getattr(info, "path_type", 1) is None else None
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "choice"
    return None


def _runtime(descriptor: Any) -> Any:
    kind = _kind(descriptor)
    assert kind is not None  # checked by install
    return _plain_class()(descriptor.parameter_info, descriptor.annotation, descriptor, kind)


@cache
def _plain_class() -> type:
    """:class:`_Plain`, a subclass of typer's runtime parameter (made once, when typer has it)."""
    from typer._coercion import RuntimeParam, build_runtime_param

    @dataclass(frozen=True)
    class _Plain(RuntimeParam):
        """typer's runtime parameter, computing plainly valid values itself."""

        descriptor: Any = None
        kind: str = ""
        typer_own: list[Any] = field(default_factory=list)  # typer's own, built on first need

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                if self.kind.startswith("list:"):
                    if not isinstance(value, list | tuple):
                        raise _Undecided
                    return [_plain(self.kind[5:], item, self.descriptor, param, ctx)
                            for item in value]
                return _plain(self.kind, value, self.descriptor, param, ctx)
            except _Undecided:
                if not self.typer_own:
                    self.typer_own.append(build_runtime_param(self.descriptor))
                return self.typer_own[0]._coerce_value(value, param=param, ctx=ctx)

    return _Plain


def _plain(kind: str, value: Any, descriptor: Any, param: Any, ctx: Any) -> Any:
    """``value`` coerced as typer would, or :class:`_Undecided`."""
    info = descriptor.parameter_info
    if kind == "str" and isinstance(value, str):
        return str(value)
    if kind == "int":
        whole = value if type(value) is int else (
            int(value) if isinstance(value, str) and _INTEGER.fullmatch(value) else None)
        return _in_range(whole, info)
    if kind == "float":
        number: float | None = None
        if type(value) is float:
            number = value
        elif (type(value) is int and abs(value) <= _EXACT) or (
                isinstance(value, str) and _DECIMAL.fullmatch(value)):
            number = float(value)
        if number is None or not math.isfinite(number):
            raise _Undecided
        return _in_range(number, info)
    if kind == "path":
        return _path(value, info, param, ctx)
    if kind == "choice":
        from typer._param_types import coerce_cli_choice

        try:
            return coerce_cli_choice(value, choices=list(descriptor.annotation),
                                     case_sensitive=info.case_sensitive, ctx=ctx)
        except ValueError:  # not a choice: typer says which are
            raise _Undecided from None
    raise _Undecided  # bool flags arrive as bools and are not coerced; anything else: typer


def _in_range(number: Any, info: Any) -> Any:
    if number is None or (info.min is not None and number < info.min) \
            or (info.max is not None and number > info.max):
        raise _Undecided
    return number


def _path(value: Any, info: Any, param: Any, ctx: Any) -> Any:
    """typer's path checks on ``Path(value)``, which is what its pydantic step makes of a
    string; a string that Path would print differently (``./a``, ``a/``) goes to typer, whose
    messages quote it as given."""
    from typer._param_types import coerce_cli_path

    if isinstance(value, str) and os.fspath(Path(value)) == value:
        value = Path(value)
    if not isinstance(value, Path):
        raise _Undecided
    return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
