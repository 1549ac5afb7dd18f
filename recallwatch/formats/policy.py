"""The acceptance policy: every threshold of the gate, written down and hashed.

An absent file means the default rules. A ``search`` section (depth, filter, boost) describes
how the system is queried; it is part of the run's configuration hash, not of the policy hash.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from recallwatch.errors import InputError
from recallwatch.formats.fields import bounded, check_keys, line_of, shown, text_id
from recallwatch.formats.golden import MAX_TOP_K, canonical_hash
from recallwatch.formats.policy_answers import ANSWER_KEYS, AnswerRules, parse_answer_rules
from recallwatch.formats.policy_limits import LIMIT_KEYS, Limits, parse_limits
from recallwatch.formats.structured import LINE_KEY, load_structured
from recallwatch.records import FILTER_FIELDS

__all__ = ["MAX_BOOST", "MAX_SEARCH_DEPTH", "NOISE_UNLISTED", "NoiseUnlisted", "Policy",
           "SearchSettings", "StalenessSettings", "load_policy"]

# The search depth reaches the store as k: a typo of a few digits must not allocate gigabytes.
MAX_SEARCH_DEPTH = 100_000
# Scores are cosine similarities in [-1, 1]: a boost beyond ±10 only hides a typo.
MAX_BOOST = 10.0

_KEYS = {
    "top_k", "recall_floor", "min_mean_quality", "noise_ceiling", "gold_failures_allowed",
    "other_failures_allowed", "waivers", "search", "min_group_quality", "staleness",
    "noise_unlisted", "drift_alarm_p", "twins_count_as_found", *LIMIT_KEYS, *ANSWER_KEYS,
}
# What the noise rule assumes of a top-K result that is neither expected nor judged: "unjudged"
# (unknown: a query whose labels are too sparse for the rule is not judged on noise) or
# "irrelevant" (the golden set lists every relevant chunk, so anything else is noise).
NoiseUnlisted = Literal["unjudged", "irrelevant"]
NOISE_UNLISTED: tuple[str, ...] = get_args(NoiseUnlisted)
_NOISE_KEYS = {"default", "per_domain"}
_SEARCH_KEYS = {"depth", "filter", "boost"}


@dataclass(frozen=True)
class SearchSettings:
    """How the gate queries a store. ``boost`` adds a fixed amount to the score of chunks whose
    metadata matches (``{"label": {"SINTESIS_CURADA": 0.05}}``) and re-sorts: a consumer boost,
    written down so that it is hashed."""

    depth: int = 100
    filter: dict[str, str | list[str]] = field(default_factory=dict)
    boost: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StalenessSettings:
    """When the gate warns that the golden set has gone stale (a warning: never the verdict).

    * the set has not changed for ``unchanged_runs`` runs while the corpus grew by at least
      ``corpus_growth`` (a share of its size when the set last changed);
    * with a query log: the cosine distance between the centroids of the log's and the set's
      query embeddings exceeds ``max_centroid_distance``, or the share of the log's askings
      whose topic (one of ``topics`` clusters of the log's queries) holds no golden query is
      above 1 - ``min_topic_coverage``."""

    unchanged_runs: int = 10
    corpus_growth: float = 0.20
    max_centroid_distance: float = 0.20
    min_topic_coverage: float = 0.80
    topics: int = 20

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_STALENESS_KEYS = set(StalenessSettings.__dataclass_fields__)


@dataclass(frozen=True)
class Policy:
    top_k: int | None = None  # None: the golden set's top_k
    recall_floor: float = 0.90
    min_mean_quality: float = 95.0
    noise_ceiling: float = 0.30
    noise_ceiling_per_domain: dict[str, float] = field(default_factory=dict)
    noise_unlisted: NoiseUnlisted = "unjudged"
    # An expected chunk missing from the top K is found when a chunk of identical text (its
    # twin: the same content under another id) is in the top K; the report names the twin.
    twins_count_as_found: bool = True
    gold_failures_allowed: int = 0
    other_failures_allowed: float = 0.05
    waivers: dict[str, str] = field(default_factory=dict)
    min_group_quality: float | None = None  # optional: no domain's mean quality below this
    search: SearchSettings = field(default_factory=SearchSettings)
    # a warning's settings, not a rule: outside rules_dict, so outside the policy hash
    staleness: StalenessSettings = field(default_factory=StalenessSettings)
    # the monitor's, not the gate's (outside rules_dict): alarm when the data-drift test's
    # p-value is under this; None (the default) never alarms on it
    drift_alarm_p: float | None = None
    # Run-level limits: rank-measure targets, max_drop against the baseline, cost caps.
    limits: Limits = field(default_factory=Limits)
    # Rules on the answers of a RAG assistant (gate --answers/--generator), each None if unset.
    answers: AnswerRules = field(default_factory=AnswerRules)
    source: str | None = None
    search_line: int | None = field(default=None, compare=False)  # for errors about `search`

    def ceiling_for(self, domain: str | None) -> float:
        if domain is not None and domain in self.noise_ceiling_per_domain:
            return self.noise_ceiling_per_domain[domain]
        return self.noise_ceiling

    @staticmethod
    def allowed_noise(ceiling: float, k: int) -> int:
        """floor(ceiling × K): 3 for 0.30 and K = 10 (the epsilon absorbs 0.3*10 = 2.9999…)."""
        return math.floor(ceiling * k + 1e-9)

    def rules_dict(self) -> dict[str, Any]:
        """Everything that decides the verdict (the policy hash covers exactly this)."""
        return {
            "top_k": self.top_k,
            "recall_floor": self.recall_floor,
            "min_mean_quality": self.min_mean_quality,
            "noise_ceiling": {"default": self.noise_ceiling,
                              "per_domain": dict(sorted(self.noise_ceiling_per_domain.items()))},
            "gold_failures_allowed": self.gold_failures_allowed,
            "other_failures_allowed": self.other_failures_allowed,
            "waivers": dict(sorted(self.waivers.items())),
            "min_group_quality": self.min_group_quality,
            # only when set: the policy hash of every policy that does not set it is unchanged
            **({"noise_unlisted": self.noise_unlisted}
               if self.noise_unlisted != "unjudged" else {}),
            **({} if self.twins_count_as_found else {"twins_count_as_found": False}),
            **self.limits.rules_dict(),
            **self.answers.rules_dict(),
        }

    @property
    def hash(self) -> str:
        return canonical_hash(self.rules_dict())


def load_policy(path: str | Path | None) -> Policy:
    if path is None:
        return Policy()
    p = Path(path)
    data = load_structured(p)
    if data is None:
        return Policy(source=str(p))
    return parse_policy(data, p)


def parse_policy(data: Any, source: Path) -> Policy:
    if not isinstance(data, dict):
        raise InputError(source=source, expected="a mapping of policy settings",
                         found=type(data).__name__)
    check_keys(data, _KEYS, source=source)
    line = line_of(data)

    def number(key: str, default: float, lo: float, hi: float, *, integer: bool = False) -> Any:
        return bounded(data.get(key, default), lo, hi, source=source, line=line, field=key,
                       integer=integer)

    top_k_raw = data.get("top_k")
    top_k = None if top_k_raw is None else number("top_k", 10, 1, MAX_TOP_K, integer=True)
    ceiling, per_domain = _noise(data.get("noise_ceiling", 0.30), source, line)
    waivers = data.get("waivers")
    waivers = {} if waivers is None else waivers  # an empty list is not "no waivers"
    if not isinstance(waivers, dict):
        raise InputError(source=source, line=line, field="waivers",
                         expected="a mapping {query_id: written diagnosis}", found=waivers)
    clean_waivers: dict[str, str] = {}
    for key, reason in waivers.items():
        if key == LINE_KEY:
            continue
        qid = text_id(key)
        if qid is None:
            raise InputError(source=source, line=line_of(waivers), field="waivers",
                             expected="query ids as keys", found=key)
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(source=source, line=line_of(waivers), record=qid,
                             field="waivers", expected="a written diagnosis (non-empty text)",
                             found=shown(reason))
        clean_waivers[qid] = reason.strip()
    group = data.get("min_group_quality")
    drift_p = data.get("drift_alarm_p")
    return Policy(
        top_k=top_k,
        recall_floor=float(number("recall_floor", 0.90, 0.0, 1.0)),
        min_mean_quality=float(number("min_mean_quality", 95.0, 0.0, 100.0)),
        noise_ceiling=ceiling,
        noise_ceiling_per_domain=per_domain,
        noise_unlisted=_noise_unlisted(data.get("noise_unlisted", "unjudged"), source, line),
        twins_count_as_found=_flag(data.get("twins_count_as_found", True),
                                   "twins_count_as_found", source, line),
        gold_failures_allowed=int(number("gold_failures_allowed", 0, 0, 1_000_000, integer=True)),
        other_failures_allowed=float(number("other_failures_allowed", 0.05, 0.0, 1.0)),
        waivers=clean_waivers,
        min_group_quality=None if group is None else float(
            number("min_group_quality", 0.0, 0.0, 100.0)),
        search=_search(data.get("search"), source, line),
        staleness=_staleness(data.get("staleness"), source, line),
        drift_alarm_p=None if drift_p is None else float(
            number("drift_alarm_p", 0.01, 0.0, 1.0)),
        limits=parse_limits(data, source, line),
        answers=parse_answer_rules(data, source, line),
        source=str(source),
        search_line=line_of(data.get("search")) or line,
    )


def _fraction(value: Any, source: Path, line: int | None, fld: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InputError(source=source, line=line, field=fld, expected="a fraction in [0, 1]",
                         found=value)
    return float(value)


def _noise(value: Any, source: Path, line: int | None) -> tuple[float, dict[str, float]]:
    if not isinstance(value, dict):
        return _fraction(value, source, line, "noise_ceiling"), {}
    check_keys(value, _NOISE_KEYS, source=source, record="noise_ceiling")
    sub_line = line_of(value)
    default = _fraction(value.get("default", 0.30), source, sub_line, "noise_ceiling.default")
    per = value.get("per_domain")
    per = {} if per is None else per
    if not isinstance(per, dict):
        raise InputError(source=source, line=sub_line, field="noise_ceiling.per_domain",
                         expected="a mapping {domain: fraction}", found=per)
    return default, {
        str(d): _fraction(v, source, line_of(per), f"noise_ceiling.per_domain.{d}")
        for d, v in per.items() if d != LINE_KEY
    }


def _flag(value: Any, fld: str, source: Path, line: int | None) -> bool:
    if not isinstance(value, bool):
        raise InputError(source=source, line=line, field=fld, expected="true or false",
                         found=shown(value))
    return value


def _noise_unlisted(value: Any, source: Path, line: int | None) -> NoiseUnlisted:
    if value == "unjudged":
        return "unjudged"
    if value == "irrelevant":
        return "irrelevant"
    raise InputError(source=source, line=line, field="noise_unlisted",
                     expected=" or ".join(NOISE_UNLISTED), found=shown(value),
                     hint="unjudged (default): a result neither expected nor judged is unknown, "
                     "and a query with too few labels is not judged on noise; irrelevant: the "
                     "golden set lists every relevant chunk, anything else counts as noise")


def _staleness(value: Any, source: Path, line: int | None) -> StalenessSettings:
    if value is None:
        return StalenessSettings()
    if not isinstance(value, dict):
        raise InputError(source=source, line=line, field="staleness", expected="a mapping",
                         found=shown(value))
    check_keys(value, _STALENESS_KEYS, source=source, record="staleness")
    line = line_of(value) or line
    d = StalenessSettings()

    def get(key: str, lo: float, hi: float, integer: bool) -> Any:
        return bounded(value.get(key, getattr(d, key)), lo, hi, source=source, line=line,
                       field=f"staleness.{key}", integer=integer)

    return StalenessSettings(
        unchanged_runs=get("unchanged_runs", 1, 1_000_000, True),
        corpus_growth=float(get("corpus_growth", 0.0, 1_000.0, False)),
        max_centroid_distance=float(get("max_centroid_distance", 0.0, 2.0, False)),
        min_topic_coverage=float(get("min_topic_coverage", 0.0, 1.0, False)),
        topics=get("topics", 1, 1_000, True),
    )


def _search(value: Any, source: Path, line: int | None) -> SearchSettings:
    if value is None:
        return SearchSettings()
    if not isinstance(value, dict):
        raise InputError(source=source, line=line, field="search", expected="a mapping",
                         found=value)
    check_keys(value, _SEARCH_KEYS, source=source, record="search")
    line = line_of(value) or line
    depth = bounded(value.get("depth", 100), 1, MAX_SEARCH_DEPTH, source=source, line=line,
                    field="search.depth")
    return SearchSettings(depth=depth, filter=_filter(value.get("filter"), source, line),
                          boost=_boost(value.get("boost"), source, line))


def _filter(value: Any, source: Path, line: int | None) -> dict[str, str | list[str]]:
    """Equality (a string) or IN (a list of strings) on the metadata columns every store has."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(source=source, line=line, field="search.filter",
                         expected="a mapping {field: value or [values]}", found=value)
    line = line_of(value) or line
    out: dict[str, str | list[str]] = {}
    for fld, wanted in value.items():
        if fld == LINE_KEY:
            continue
        if fld not in FILTER_FIELDS:
            raise InputError(source=source, line=line, field=f"search.filter.{fld}",
                             expected=f"a filterable field: {', '.join(FILTER_FIELDS)}",
                             found=fld)
        values = wanted if isinstance(wanted, list) else [wanted]
        if not values or not all(isinstance(v, str) and v.strip() for v in values):
            raise InputError(source=source, line=line, field=f"search.filter.{fld}",
                             expected="a non-empty string or a non-empty list of them",
                             found=shown(wanted))
        out[fld] = wanted
    return out


def _boost(value: Any, source: Path, line: int | None) -> dict[str, dict[str, float]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(source=source, line=line, field="search.boost",
                         expected="a mapping {field: {value: score added}}", found=value)
    line = line_of(value) or line
    boost: dict[str, dict[str, float]] = {}
    for fld, table in value.items():
        if fld == LINE_KEY:
            continue
        if not isinstance(table, dict):
            raise InputError(source=source, line=line, field=f"search.boost.{fld}",
                             expected="a mapping {value: score added}", found=table)
        boost[str(fld)] = {
            str(k): float(bounded(v, -MAX_BOOST, MAX_BOOST, source=source,
                                  line=line_of(table) or line, field=f"search.boost.{fld}.{k}",
                                  integer=False))
            for k, v in table.items() if k != LINE_KEY
        }
    return boost
