"""A measure is a value: ``nDCG(dcg=exp-log2)@10`` parses to a frozen, hashable ``Measure`` whose
``str`` prints the same text back. Each measure family declares its parameters as data, with a
description; the reference in docs/metrics.md is generated from those declarations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from recallwatch._registry import Registry, suggest
from recallwatch.errors import UsageError
from recallwatch.metrics._types import DCG_CHOICES, Dcg

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.metrics._ranking import Ranking

__all__ = ["MEASURES", "Dcg", "Family", "Measure", "Param", "combine", "parse_measure"]

# "level": `@x` is a recall level between 0 and 1 (IPrec@0.5), not a rank cut-off
CutoffUse = Literal["required", "optional", "none", "level"]
Aggregate = Literal["mean", "sum", "gmean"]
# What a measure reads: the ranks of the relevant documents (and |rel|) only; also the ranks of
# the retrieved documents judged with a grade <= 0; or also the number of documents retrieved;
# or subtopic judgments (which subtopics of its query each document is relevant to).
Needs = Literal["relevant", "judged", "retrieved", "subtopics"]
GMEAN_FLOOR = 1e-5  # a value below it counts as it in a geometric mean (trec_eval's gm_map)


@dataclass(frozen=True)
class Param:
    """A parameter a measure family accepts, declared as data."""

    name: str
    type: Literal["int", "str", "float"]
    default: int | str | float | None
    description: str
    choices: tuple[str, ...] = ()


CUTOFF = Param("cutoff", "int", None, "rank cut-off k, written `@k`: only the top k results count")
REL = Param(
    "rel",
    "int",
    1,
    "minimum grade for a judged document to count as relevant (inclusive, >= 1), as trec_eval `-l`",
)
DCG = Param(
    "dcg",
    "str",
    "log2",
    "gain of a document of grade g: `log2` uses g (trec_eval), `exp-log2` uses 2^g - 1; "
    "the discount is 1/log2(rank + 1) in both",
    DCG_CHOICES,
)
PERSISTENCE = Param(
    "p",
    "float",
    0.8,
    "persistence: the chance that a reader who looked at one result goes on to the next "
    "(strictly between 0 and 1)",
)
REDUNDANCY = Param(
    "alpha",
    "float",
    0.5,
    "redundancy penalty: each earlier document on the same subtopic multiplies a document's "
    "gain for that subtopic by 1 - alpha (0 <= alpha < 1; 0 does not penalise repeats)",
)


@dataclass(frozen=True)
class Family:
    """One measure family: its name, its definition, its parameters, and its kernel."""

    name: str
    title: str
    definition: str  # what it computes, in words and formula (the reference documents it)
    cutoff: CutoffUse
    params: tuple[Param, ...]  # besides the cut-off
    trec_eval: str  # the trec_eval measure it agrees with, or how it differs
    kernel: Callable[[Ranking, Measure], np.ndarray[Any, Any]] = field(repr=False)
    aliases: tuple[str, ...] = ()
    aggregate: Aggregate = "mean"  # how per-query values combine into the run's figure
    needs: Needs = "relevant"

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


MEASURES: Registry[Family] = Registry("measure")
_ALIASES: dict[str, str] = {}


def register(family: Family) -> Family:
    MEASURES.register(family.name, family, description=family.title)
    for alias in family.aliases:
        _ALIASES[alias] = family.name
    return family


def _family(name: str) -> Family:
    # MEASURES is full: importing this module first runs recallwatch/metrics/__init__.py, which
    # imports every family (recallwatch/metrics/_catalog.py)
    canonical = _ALIASES.get(name, name)
    if canonical not in MEASURES:
        valid = MEASURES.names()
        lowered = {v.lower(): v for v in [*valid, *_ALIASES]}
        hint = (
            f" (did you mean {_ALIASES.get(lowered[name.lower()], lowered[name.lower()])!r}?)"
            if name.lower() in lowered
            else suggest(name, valid)
        )
        raise UsageError(f"unknown measure {name!r}{hint}; valid measures: {', '.join(valid)}")
    return MEASURES.get(canonical)


@dataclass(frozen=True, order=True)
class Measure:
    """One measure with its parameters, e.g. ``Measure("P", cutoff=10, rel=2)`` is ``P(rel=2)@10``.

    Construction validates the combination, so an invalid measure cannot exist.
    """

    name: str
    cutoff: int | None = None
    rel: int = 1
    dcg: Dcg = "log2"
    level: float | None = None  # IPrec's recall level, written `@x`
    p: float = 0.8  # RBP's persistence
    alpha: float = 0.5  # alpha-nDCG's redundancy penalty

    def __post_init__(self) -> None:
        family = _family(self.name)
        if family.name != self.name:  # an alias: store the canonical name
            object.__setattr__(self, "name", family.name)
        if family.cutoff == "level":
            self._check_level()
        elif self.level is not None:
            raise UsageError(f"measure {self.name} takes no recall level, found {self.level!r}")
        if self.cutoff is None and family.cutoff == "required":
            raise UsageError(f"measure {self.name} needs a cut-off: write {self.name}@k")
        if self.cutoff is not None:
            if family.cutoff == "none":
                raise UsageError(f"measure {self.name} takes no cut-off, found @{self.cutoff}")
            if isinstance(self.cutoff, bool) or not isinstance(self.cutoff, int):
                raise UsageError(f"{self.name}: cut-off must be an integer, found {self.cutoff!r}")
            if self.cutoff < 1:
                raise UsageError(f"{self.name}: cut-off must be >= 1, found {self.cutoff}")
        if self.rel != REL.default:
            self._check_param("rel")
            if isinstance(self.rel, bool) or not isinstance(self.rel, int) or self.rel < 1:
                raise UsageError(f"{self.name}: rel must be an integer >= 1, found {self.rel!r}")
        if self.dcg != DCG.default:
            self._check_param("dcg")
            if self.dcg not in DCG_CHOICES:
                raise UsageError(
                    f"{self.name}: dcg must be one of {', '.join(DCG_CHOICES)}, found {self.dcg!r}"
                )
        if self.p != PERSISTENCE.default:
            self._check_param("p")
            if isinstance(self.p, bool) or not isinstance(self.p, int | float) or not (
                    0.0 < self.p < 1.0):
                raise UsageError(f"{self.name}: p must be a number strictly between 0 and 1, "
                                 f"found {self.p!r}")
            object.__setattr__(self, "p", float(self.p))
        if self.alpha != REDUNDANCY.default:
            self._check_param("alpha")
            if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float) or not (
                    0.0 <= self.alpha < 1.0):
                raise UsageError(f"{self.name}: alpha must be a number from 0 up to (not "
                                 f"including) 1, found {self.alpha!r}")
            object.__setattr__(self, "alpha", float(self.alpha))

    def _check_level(self) -> None:
        if self.cutoff is not None:
            raise UsageError(f"measure {self.name} takes a recall level, not a cut-off: write "
                             f"{self.name}@0.5 (a level between 0 and 1)")
        level = self.level
        if level is None:
            raise UsageError(f"measure {self.name} needs a recall level: write {self.name}@x "
                             "with x between 0 and 1, e.g. IPrec@0.5")
        if isinstance(level, bool) or not isinstance(level, int | float) or not (
                0.0 <= level <= 1.0):
            raise UsageError(f"{self.name}: the recall level must be a number between 0 and 1, "
                             f"found {level!r}")
        object.__setattr__(self, "level", float(level))

    @property
    def family(self) -> Family:
        return _family(self.name)

    def _check_param(self, name: str) -> None:
        family = self.family
        if family.param(name) is None:
            valid = [p.name for p in family.params] + ([] if family.cutoff == "none" else ["@k"])
            raise UsageError(
                f"measure {self.name} takes no parameter {name!r}; "
                f"its parameters: {', '.join(valid) or 'none'}"
            )

    def __str__(self) -> str:
        params = []
        if self.dcg != DCG.default:
            params.append(f"dcg={self.dcg}")
        if self.p != PERSISTENCE.default:
            params.append(f"p={self.p!r}")
        if self.alpha != REDUNDANCY.default:
            params.append(f"alpha={self.alpha!r}")
        if self.rel != REL.default:
            params.append(f"rel={self.rel}")
        text = self.name + (f"({','.join(params)})" if params else "")
        if self.level is not None:
            return f"{text}@{self.level!r}"
        return text if self.cutoff is None else f"{text}@{self.cutoff}"

    def __repr__(self) -> str:
        return f"Measure({str(self)!r})"


_SYNTAX = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@\s*(\S+))?\s*$")


def parse_measure(text: str | Measure) -> Measure:
    """Parse ir_measures syntax: ``NAME[(param=value, ...)][@k]``, e.g. ``P(rel=2)@10``."""
    if isinstance(text, Measure):
        return text
    match = _SYNTAX.match(text)
    if not match:
        raise UsageError(
            f"cannot parse measure {text!r}: expected NAME, NAME@k or NAME(param=value)@k, "
            "e.g. nDCG@10, P(rel=2)@10, nDCG(dcg=exp-log2)@10"
        )
    name, params_text, cutoff_text = match.groups()
    family = _family(name)
    kwargs: dict[str, Any] = {}
    if cutoff_text is not None and family.cutoff == "level":
        kwargs["level"] = _number(text, "recall level", cutoff_text)
    elif cutoff_text is not None:
        kwargs["cutoff"] = _integer(text, "cut-off", cutoff_text)
    for item in filter(None, (p.strip() for p in (params_text or "").split(","))):
        key, sep, value = (s.strip() for s in item.partition("="))
        value = value.strip("'\"")
        if not sep or not key or not value:
            raise UsageError(f"cannot parse measure {text!r}: expected param=value, found {item!r}")
        declared = family.param(key)
        if declared is None:
            valid = ", ".join(p.name for p in family.params) or "none"
            raise UsageError(
                f"measure {family.name} takes no parameter {key!r}{suggest(key, valid.split(', '))}"
                f"; its parameters: {valid}"
            )
        if key in kwargs:
            raise UsageError(f"cannot parse measure {text!r}: parameter {key!r} given twice")
        kwargs[key] = (_integer(text, key, value) if declared.type == "int"
                       else _number(text, key, value) if declared.type == "float" else value)
    return Measure(family.name, **kwargs)


def combine(measure: Measure, values: np.ndarray[Any, Any]) -> float:
    """The run's figure for ``measure`` from its per-query values: their mean, their sum (the
    counts), or their geometric mean with each value floored at 1e-5 (GMAP, as trec_eval)."""
    import numpy as np

    how = measure.family.aggregate
    if how == "sum":
        return float(np.sum(values))
    if how == "gmean":
        return float(np.exp(np.mean(np.log(np.maximum(values, GMEAN_FLOOR)))))
    return float(np.mean(values))


def _number(text: str, what: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if number != number or number in (float("inf"), float("-inf")):
        raise UsageError(f"cannot parse measure {text!r}: {what} must be a number, found {value!r}")
    return number


def _integer(text: str, what: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise UsageError(
            f"cannot parse measure {text!r}: {what} must be an integer, found {value!r}"
        ) from None
