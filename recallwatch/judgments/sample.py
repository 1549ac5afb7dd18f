"""Real queries for a golden set: read from a log, near-duplicates merged, drawn at random.

    log = read_query_log("queries.jsonl")          # an interaction log, a JSONL or a .txt list
    merged = merge_near_duplicates(log.counts)      # one entry per distinct question
    picked = draw(merged, 200, seed=7, stratify="domain")

**What is read.** An interaction log (one impression per line, with ``shown``; the format of
``recallwatch online``) gives one asking of its ``query`` text per impression, and its
``domain`` when logged; impressions that carry only a ``query_id`` are counted and skipped. A
plain JSON Lines file gives one query per line in ``query`` (or ``text``), with an optional
``domain`` and ``count`` (how many times it was asked, default 1). A ``.txt`` file gives one
query per line.

**Near-duplicates.** Two wordings are the same question when their *normalised* texts are equal
(case, accents, punctuation and spacing removed, words sorted), or when the character trigrams
of the normalised texts overlap by at least ``similarity`` (Jaccard index, default 0.8): this
merges typos, plurals and reordered words. Embedding similarity is not used: with the default
embedder, two different questions of the example knowledge base can score higher (0.76) than an
unaccented rewording of one question (0.65), so no threshold separates them. Merging is greedy
from the most asked wording: each distinct wording joins the most asked question it is similar
to, so one question never absorbs a chain of ever more different ones.

**Drawing.** ``frequency`` weighting draws questions with probability proportional to how often
they were asked (without replacement: the Efraimidis–Spirakis method), ``uniform`` gives every
distinct question the same chance. With ``stratify="domain"`` the ``n`` draws are shared among
domains in proportion to their weight (largest remainder; every domain gets at least one while
draws remain). The same log, options and seed give the same sample.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from recallwatch._hashing import canonical_hash
from recallwatch.errors import InputError, UsageError

__all__ = [
    "DEFAULT_SIMILARITY",
    "LoggedQuery",
    "QueryLog",
    "draw",
    "golden_yaml",
    "merge_near_duplicates",
    "normalise",
    "read_query_log",
    "trigram_jaccard",
]

Weighting = Literal["frequency", "uniform"]
DEFAULT_SIMILARITY = 0.8


@dataclass(frozen=True)
class LoggedQuery:
    """One distinct question of a log: its most asked wording, how often it was asked (all its
    wordings), its domain, and every wording merged into it, most asked first."""

    text: str
    count: int
    domain: str | None
    variants: tuple[tuple[str, int], ...]

    @property
    def id(self) -> str:
        """A stable id from the normalised text: the same question sampled again, from another
        log or with another seed, keeps its id (and so its labels)."""
        return "q-" + canonical_hash(normalise(self.text))[:10]


@dataclass
class QueryLog:
    """The query texts of a log, counted: ``counts[(text, domain)]`` = times asked."""

    path: str
    kind: str  # "interaction log" | "query list"
    sha256: str
    counts: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    skipped: int = 0  # impressions without a query text (only a query_id)

    @property
    def asked(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "sha256": self.sha256,
                "asked": self.asked, "distinct_texts": len(self.counts), "skipped": self.skipped}


# -- reading -------------------------------------------------------------------------------------

def read_query_log(path: str | Path) -> QueryLog:
    """The query texts of an interaction log, a JSON Lines query list or a ``.txt`` list."""
    p = Path(path)
    if _is_interaction_log(p):
        return _read_interactions(p)
    return _read_query_list(p)


def _is_interaction_log(p: Path) -> bool:
    from recallwatch._files import starts_as_gzip
    from recallwatch.formats.structured import parse_json_line, read_text, text_lines

    try:
        if starts_as_gzip(p):
            return True
    except OSError:
        read_text(p)  # names the problem (missing file, a directory) the usual way
        raise
    if p.suffix.lower() == ".txt":
        return False
    for n, line in text_lines(p):
        if line.strip():
            return "shown" in parse_json_line(line, p, n)
    return False


def _read_interactions(p: Path) -> QueryLog:
    from recallwatch.online.log import InteractionLog

    log = InteractionLog(p)
    counts: Counter[tuple[str, str | None]] = Counter()
    skipped = 0
    for imp in log:
        if imp.query is None or not imp.query.strip():
            skipped += 1
            continue
        counts[(imp.query.strip(), imp.domain)] += 1
    if not counts:
        raise InputError(source=p, field="query", expected="query texts in the log",
                         found=f"<only query_id, on {skipped} impressions>",
                         hint="log the text the user typed in `query`")
    return QueryLog(str(p), "interaction log", log.summary.sha256, counts, skipped)


def _read_query_list(p: Path) -> QueryLog:
    from recallwatch.formats.fields import bounded
    from recallwatch.formats.structured import parse_json_line, text_lines

    counts: Counter[tuple[str, str | None]] = Counter()
    as_txt = p.suffix.lower() == ".txt"
    digest = hashlib.sha256()
    for n, line in text_lines(p):
        digest.update(line.encode("utf-8") + b"\n")
        if not line.strip():
            continue
        if as_txt:
            counts[(line.strip(), None)] += 1
            continue
        obj = parse_json_line(line, p, n)
        query = obj.get("query", obj.get("text"))
        if not isinstance(query, str) or not query.strip():
            raise InputError(source=p, line=n, field="query",
                             expected="a non-empty string (or a `text` field)",
                             found=query if query is not None else "<nothing>")
        domain = obj.get("domain")
        if domain is not None and (not isinstance(domain, str) or not domain.strip()):
            raise InputError(source=p, line=n, field="domain", expected="a non-empty string",
                             found=domain)
        count = bounded(obj.get("count", 1), 1, 2**62, source=p, line=n, field="count")
        counts[(query.strip(), domain)] += int(count)
    if not counts:
        raise InputError(source=p, expected="at least one query", found="<an empty file>")
    # of the lines as read (each ended by one \n): names the input in the sample's header
    return QueryLog(str(p), "query list", digest.hexdigest(), counts)


# -- near-duplicates -----------------------------------------------------------------------------

_PUNCT = re.compile(r"[^\w\s]|_", re.UNICODE)


def normalise(text: str) -> str:
    """Lower case, without accents, punctuation or repeated spaces, words sorted: the key under
    which two wordings are one question for certain."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(sorted(_PUNCT.sub(" ", bare).split()))


def _trigrams(key: str) -> set[str]:
    padded = f" {key} "
    return {padded[i:i + 3] for i in range(max(len(padded) - 2, 1))}


def trigram_jaccard(a: str, b: str) -> float:
    """Jaccard index of the character trigrams of two normalised texts."""
    x, y = _trigrams(normalise(a)), _trigrams(normalise(b))
    return len(x & y) / len(x | y) if x | y else 1.0


def merge_near_duplicates(
    counts: Counter[tuple[str, str | None]] | dict[tuple[str, str | None], int], *,
    similarity: float = DEFAULT_SIMILARITY,
) -> list[LoggedQuery]:
    """Distinct questions, most asked first (ties by text). ``similarity`` 1 merges equal
    normalised texts only."""
    if not 0.0 < similarity <= 1.0:
        raise UsageError(f"the near-duplicate similarity must be in (0, 1], not {similarity}")
    # 1. exact: equal normalised texts
    groups: dict[str, Counter[tuple[str, str | None]]] = {}
    for (text, domain), n in counts.items():
        groups.setdefault(normalise(text), Counter())[(text, domain)] += n
    keys = sorted(groups, key=lambda k: (-sum(groups[k].values()), k))
    # 2. near: trigram Jaccard, greedy from the most asked (leader clustering)
    leader_of = _leaders([_trigrams(k) for k in keys], similarity) if similarity < 1.0 \
        else list(range(len(keys)))
    merged: dict[int, Counter[tuple[str, str | None]]] = {}
    for i, lead in enumerate(leader_of):
        merged.setdefault(lead, Counter()).update(groups[keys[i]])
    out = [_logged(members) for members in merged.values()]
    return sorted(out, key=lambda q: (-q.count, q.text))


def _leaders(grams: Sequence[set[str]], similarity: float) -> list[int]:
    """For each key (most asked first), the index of the question it joins: the first earlier
    leader it is similar enough to, else itself. Similarities come from one sparse product."""
    from scipy import sparse

    vocab: dict[str, int] = {}
    rows, cols = [], []
    for r, g in enumerate(grams):
        for t in g:
            rows.append(r)
            cols.append(vocab.setdefault(t, len(vocab)))
    m = sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                          shape=(len(grams), max(len(vocab), 1)))
    sizes = np.asarray([len(g) for g in grams], np.float32)
    leader = list(range(len(grams)))
    is_leader = np.zeros(len(grams), bool)
    block = 256
    for start in range(0, len(grams), block):
        inter = (m[start:start + block] @ m[:start + block].T).tocoo()
        near: dict[int, list[int]] = {}
        union = sizes[start + inter.row] + sizes[inter.col] - inter.data
        keep = (inter.col < start + inter.row) & (inter.data >= similarity * union)
        for r, c in zip((start + inter.row[keep]).tolist(), inter.col[keep].tolist()):
            near.setdefault(r, []).append(c)
        for i in range(start, min(start + block, len(grams))):
            candidates = [c for c in near.get(i, []) if is_leader[c]]
            if candidates:
                leader[i] = min(candidates)  # the most asked leader it resembles
            else:
                is_leader[i] = True
    return leader


def _logged(members: Counter[tuple[str, str | None]]) -> LoggedQuery:
    wordings: Counter[str] = Counter()
    domains: Counter[str] = Counter()
    for (text, domain), n in members.items():
        wordings[text] += n
        if domain is not None:
            domains[domain] += n
    ranked = sorted(wordings.items(), key=lambda kv: (-kv[1], kv[0]))
    domain = min(domains.items(), key=lambda kv: (-kv[1], kv[0]))[0] if domains else None
    return LoggedQuery(ranked[0][0], sum(wordings.values()), domain, tuple(ranked))


# -- drawing -------------------------------------------------------------------------------------

def draw(queries: Sequence[LoggedQuery], n: int, *, seed: int = 0,
         weighting: Weighting = "frequency", stratify: str | None = None) -> list[LoggedQuery]:
    """``n`` distinct questions drawn without replacement (all of them when there are fewer),
    most asked first."""
    if n < 1:
        raise UsageError(f"the sample size must be at least 1, not {n}")
    if stratify not in (None, "domain"):
        raise UsageError(f"queries can be stratified by domain only, not {stratify!r}")
    rng = np.random.default_rng(seed)
    ordered = sorted(queries, key=lambda q: (-q.count, q.text))
    weights = np.asarray([q.count if weighting == "frequency" else 1 for q in ordered], float)
    # Efraimidis–Spirakis: key log(u)/w, the n largest keys are a weighted draw without
    # replacement; every query's key is drawn, so a stratum's draw does not depend on another's.
    keys = np.log(rng.random(len(ordered))) / weights
    if stratify is None:
        chosen = np.argsort(-keys, kind="stable")[:n].tolist()
    else:
        strata: dict[str, list[int]] = {}
        for i, q in enumerate(ordered):
            strata.setdefault(q.domain or "", []).append(i)
        if list(strata) == [""]:
            raise InputError(field="domain", expected="queries with a domain to stratify by",
                             found="<no domain in the log>",
                             hint="log `domain` with each query, or drop --stratify")
        quota = _allocate({s: float(weights[ix].sum()) for s, ix in strata.items()},
                          {s: len(ix) for s, ix in strata.items()}, n)
        chosen = []
        for s, ix in strata.items():
            order = sorted(ix, key=lambda i: -keys[i])
            chosen += order[:quota[s]]
    return sorted((ordered[i] for i in chosen), key=lambda q: (-q.count, q.text))


def _allocate(mass: dict[str, float], size: dict[str, int], n: int) -> dict[str, int]:
    """``n`` draws shared in proportion to ``mass`` (largest remainder), one at least per stratum
    while draws remain, never more than a stratum holds."""
    quota = {s: 0 for s in mass}
    left = min(n, sum(size.values()))
    open_ = [s for s in mass if size[s] > 0]
    for s in sorted(open_, key=lambda s: (-mass[s], s))[:left]:  # everyone is represented
        quota[s] = 1
    left -= sum(quota.values())
    while left > 0:
        room = [s for s in open_ if quota[s] < size[s]]
        total = sum(mass[s] for s in room)
        share = {s: left * mass[s] / total for s in room}
        give = {s: min(int(share[s]), size[s] - quota[s]) for s in room}
        if sum(give.values()) == 0:  # hand out the remainders, largest first
            s = max(room, key=lambda s: (share[s] - int(share[s]), mass[s], s))
            give = {s: 1}
        for s, g in give.items():
            quota[s] += g
        left -= sum(give.values())
    return quota


# -- writing -------------------------------------------------------------------------------------

def golden_yaml(picked: Iterable[LoggedQuery], *, name: str, log: QueryLog,
                settings: dict[str, Any], top_k: int = 10) -> str:
    """A golden-set file (YAML) of the sampled questions, ``expected: []`` to be labelled, with
    each query's frequency and, as comments, the wordings merged into it."""
    picked = list(picked)
    lines = [
        f"# Sampled by `recallwatch golden sample` from {log.kind} {log.path}",
        f"# (sha256 {log.sha256}; {log.asked} askings of {len(log.counts)} distinct texts).",
        "# Settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()) + ".",
        "# `expected` is empty: list the chunks that answer each query before the gate reads",
        "# this file. `frequency` is how often the query was asked (all wordings merged into it).",
        f"name: {_scalar(name)}",
        'version: "1"',
        f"top_k: {top_k}",
        "queries:",
    ]
    for q in picked:
        lines.append(f"  - id: {q.id}")
        lines.append(f"    text: {_scalar(q.text)}")
        lines.append("    expected: []")
        if q.domain is not None:
            lines.append(f"    domain: {_scalar(q.domain)}")
        lines.append(f"    frequency: {q.count}")
        for text, n in q.variants[1:6]:
            lines.append(f"    # also asked as ({n}×): {_comment(text)}")
        if len(q.variants) > 6:
            lines.append(f"    # … and {len(q.variants) - 6} more wordings")
    return "\n".join(lines) + "\n"


def _scalar(text: str) -> str:
    # A JSON string is a YAML double-quoted scalar: any text, read back exactly.
    return json.dumps(text, ensure_ascii=False)


def _comment(text: str) -> str:
    return " ".join(text.split())
