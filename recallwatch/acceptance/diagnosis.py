"""Why a query failed, checked in order of repair (the most frequent and cheapest fix first):
(1) chunking, (2) missing description, (3) labelling, (4) embedding — each with evidence computed
from chunk metadata and the index — and the failure patterns across the dataset, each with what it
usually means and where to look."""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from recallwatch.acceptance.model import Diagnosis, Pattern, QueryResult
from recallwatch.acceptance.noise import RULE_WORDS, noise_explanation
from recallwatch.formats.policy import SearchSettings
from recallwatch.stores.base import Chunk
from recallwatch.vectors import cosine_pairs

__all__ = ["DiagnosisContext", "diagnose", "patterns", "prose_words", "shared_domains"]

NUMERIC_TAGS = frozenset({"numeric", "table"})
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
_SENTENCE_END = tuple(".!?…:;)]»\"'”")
# Below this many prose words, a table's representation field cannot resemble a question.
MIN_PROSE_WORDS = 12
# A chunk this much shorter or longer than its document's median chunk looks cut or merged.
LENGTH_RATIO = 4.0
# Two halves of one chunk this dissimilar (cosine) talk about different things.
MIXED_SIMILARITY = 0.15
# What to do about each cause, said after its findings.
FIXES = {
    "chunking": "re-chunk its document so that each chunk is whole (a table with its header, one "
                "topic per chunk)",
    "description": "write a description in the users' words at the head of the "
                   "representation field",
    "labelling": "correct its domain, validity dates or facets, or the search filter",
}


def prose_words(text: str) -> int:
    return len(_WORD.findall(text))


def _digit_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(c.isdigit() for c in chars) / len(chars) if chars else 0.0


def _table_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.count("|") >= 2 or ln.count("\t") >= 1]


def _is_tabular(chunk: Chunk) -> bool:
    return chunk.kind == "table" or len(_table_lines(chunk.text)) >= 3


def _cells(line: str) -> list[str]:
    sep = "|" if "|" in line else "\t"
    return [c.strip() for c in line.strip().strip("|").split(sep) if c.strip()]


def _numeric_cell(cell: str) -> bool:
    return bool(re.fullmatch(r"[-+]?[\d.,\s%€$]+", cell)) and any(c.isdigit() for c in cell)


@dataclass
class DiagnosisContext:
    chunks: Mapping[str, Chunk]
    siblings: Mapping[str, list[Chunk]]  # doc_id -> every chunk of that document
    run_date: date
    settings: SearchSettings
    halves_similarity: Mapping[str, float]  # chunk id -> cosine between its two halves
    # chunk id -> the content anchor split across it and its neighbours (see suite.anchors)
    splits: Mapping[str, str] = field(default_factory=dict)
    # chunk id -> the content anchor found in it: the gate expects it for its content, wherever
    # a re-chunking put that content, not for its id
    holders: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # (in words, quote)
    # whether the golden set's query domains name the corpus's domains (shared_domains): only
    # then does a chunk labelled with another domain than its query's look mislabelled
    domains_shared: bool = True


# A line that is whole although it does not end a sentence: code, a call signature, a doctest
# prompt or its output, a list item, a heading, a URL.
_WHOLE_LINE = re.compile(
    r"^(\s{2,}|\t|>>>|\.\.\.|[-*•]\s|\d+[.)]\s|#|@|```|def\s|class\s|https?://)"
    r"|\s=\s|==|->|\(\)|`|^[\w.]+\(")


def _ends_whole(text: str) -> bool:
    """Whether ``text`` ends where a reader would expect it to: a sentence, or a line of code, a
    signature, a list item or a doctest (whose last line is its output, after a ``>>>`` line)."""
    if not text or text.endswith(_SENTENCE_END):
        return True
    lines = [ln for ln in text.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    doctest = len(lines) >= 2 and lines[-2].lstrip().startswith((">>>", "..."))
    return doctest or bool(_WHOLE_LINE.search(last))


def _starts_whole(text: str) -> bool:
    """Whether ``text`` starts as a reader would expect a passage to: a capital, a digit or
    symbol, or code (``perf_counter() -> float``, ``>>> x``, a list item)."""
    first = text.splitlines()[0] if text else ""
    return not first or not first[0].islower() or bool(_WHOLE_LINE.search(first))


def _neighbours(chunk: Chunk, ctx: DiagnosisContext) -> tuple[Chunk | None, Chunk | None]:
    """The chunks before and after ``chunk`` in its document (the store's order)."""
    doc = ctx.siblings.get(chunk.doc_id or "", [])
    at = next((i for i, c in enumerate(doc) if c.id == chunk.id), None)
    if at is None:
        return None, None
    return (doc[at - 1] if at > 0 else None), (doc[at + 1] if at + 1 < len(doc) else None)


def cut_signs(chunk: Chunk, ctx: DiagnosisContext) -> tuple[list[str], list[str]]:
    """Where the chunk's text looks cut: (evidence, hints). Evidence is a cut its document
    shows: the text ends mid-sentence and the document's next chunk carries on mid-sentence
    (or the mirror at its start). A mid-sentence edge with no such neighbour is only a hint:
    code, signatures, lists and doctests end and start as they like."""
    text = chunk.text.strip()
    before, after = _neighbours(chunk, ctx)
    evidence: list[str] = []
    hints: list[str] = []
    if not _ends_whole(text):
        nxt = (after.text.strip() if after is not None else "")
        if nxt and not _starts_whole(nxt):
            evidence.append(f"cut mid-sentence: …{text[-40:]!r} carries on in the next chunk "
                            f"of document {chunk.doc_id}, {after.id if after else ''}: "
                            f"{nxt[:40]!r}…")
        else:
            hints.append(f"ends mid-sentence (…{text[-40:]!r}), but no next chunk of its "
                         "document shows the text was cut")
    if not _starts_whole(text):
        prev = (before.text.strip() if before is not None else "")
        if prev and not _ends_whole(prev):
            evidence.append(f"starts mid-sentence: {text[:40]!r}…, continuing the previous "
                            f"chunk of document {chunk.doc_id}, {before.id if before else ''}")
        else:
            hints.append(f"starts mid-sentence ({text[:40]!r}…), but the previous chunk of its "
                         "document ends whole")
    return evidence, hints


def chunking_findings(chunk: Chunk, ctx: DiagnosisContext) -> list[str]:
    found = []
    text = chunk.text.strip()
    if _is_tabular(chunk):
        rows = _table_lines(text)
        if rows:
            has_separator = any(
                re.fullmatch(r"\|?[\s:|-]+\|?", r.strip()) and "-" in r for r in rows)
            first = _cells(rows[0])
            numeric_first = sum(_numeric_cell(c) for c in first)
            if not has_separator and first and numeric_first >= max(1, len(first) // 2):
                found.append("table rows without a header: the first row is data "
                             f"({' | '.join(first[:4])})")
    else:
        found += cut_signs(chunk, ctx)[0]
    others = [c for c in ctx.siblings.get(chunk.doc_id or "", []) if c.id != chunk.id]
    if len(others) >= 2:
        median = statistics.median(len(c.text) for c in others)
        if median > 0:
            ratio = len(chunk.text) / median
            if ratio < 1 / LENGTH_RATIO or ratio > LENGTH_RATIO:
                found.append(f"{len(chunk.text)} characters against a median of {median:.0f} "
                             f"for the other {len(others)} chunks of document {chunk.doc_id}")
    if chunk.id in ctx.splits:
        found.append(ctx.splits[chunk.id])
    sim = ctx.halves_similarity.get(chunk.id)
    if sim is not None and sim < MIXED_SIMILARITY:
        found.append(f"its two halves are unrelated (cosine {sim:.2f}): content of different "
                     "documents merged into one chunk")
    return found


def _offset(chunk: Chunk, quote: str) -> int:
    """Where ``quote`` starts in the chunk (case and white space aside), -1 if not whole in it."""
    wanted = " ".join(quote.split()).casefold()
    for text in (chunk.content, chunk.text):
        at = " ".join((text or "").split()).casefold().find(wanted)
        if at >= 0:
            return at
    return -1


def moved_findings(chunk: Chunk, q: QueryResult, ctx: DiagnosisContext) -> list[str]:
    """A passage the query expects (a content anchor), moved by a re-chunking into a chunk
    labelled with another domain: a chunk made of text from two domains keeps the label of one
    of them, so the label is wrong because of the chunking. Said when the passage comes after
    other text in the chunk and other chunks of its document carry the query's domain."""
    if chunk.id not in ctx.holders or not q.domain or not chunk.domain \
            or chunk.domain == q.domain:
        return []
    passage, quote = ctx.holders[chunk.id]
    same = [c for c in ctx.siblings.get(chunk.doc_id or "", [])
            if c.id != chunk.id and c.domain == q.domain]
    after = _offset(chunk, quote)
    if not same or after <= 0:
        return []
    return [f"moved by re-chunking: {passage} now lies in {chunk.id} after {after} characters "
            f"of other text; the chunk is labelled domain {chunk.domain!r}, the query's is "
            f"{q.domain!r}, as are {len(same)} other chunk(s) of document {chunk.doc_id}: a "
            "chunk joining text of two domains keeps the label of only one (keep the domains in "
            "separate chunks, or correct its domain)"]


def description_findings(chunk: Chunk) -> list[str]:
    numeric = _is_tabular(chunk) or _digit_share(chunk.text) >= 0.3
    if not numeric:
        return []
    words = prose_words(chunk.text)
    if words >= MIN_PROSE_WORDS:
        return []
    what = "table" if _is_tabular(chunk) else "numeric chunk"
    desc = (chunk.description or "").strip()
    tail = ("its description is empty" if not desc
            else "a description exists but is not in the representation field")
    return [f"{what} whose representation field (the embedded text) has {words} prose word(s); "
            f"{tail}"]


# Fewer (query domain, expected chunk domain) pairs than this cannot show that a golden set
# groups its questions otherwise than the corpus: its domains are taken as the corpus's.
MIN_DOMAIN_PAIRS = 5


def shared_domains(pairs: Sequence[tuple[str | None, str | None]]) -> bool:
    """Whether queries and chunks use one vocabulary of domains: unless, of
    ``MIN_DOMAIN_PAIRS`` or more (query domain, expected chunk domain) pairs where both are set,
    fewer than half agree. A golden set that groups its questions otherwise (topics of its own,
    not the corpus's domains) disagrees on most, and then a mismatch says nothing about the
    chunk's label."""
    both = [(a, b) for a, b in pairs if a and b]
    return len(both) < MIN_DOMAIN_PAIRS or 2 * sum(a == b for a, b in both) >= len(both)


def labelling_findings(chunk: Chunk, q: QueryResult, ctx: DiagnosisContext, *,
                       moved: bool = False) -> list[str]:
    """``moved``: the domain mismatch is already explained by a re-chunking (moved_findings)."""
    found = []
    if q.domain and chunk.domain and chunk.domain != q.domain and not moved \
            and ctx.domains_shared:
        found.append(f"labelled domain {chunk.domain!r}, the query's domain is {q.domain!r}")
    if chunk.valid_to is not None and chunk.valid_to < ctx.run_date:
        found.append(f"validity ended {chunk.valid_to.isoformat()} (run date "
                     f"{ctx.run_date.isoformat()})")
    if chunk.valid_from is not None and chunk.valid_from > ctx.run_date:
        found.append(f"valid only from {chunk.valid_from.isoformat()} (run date "
                     f"{ctx.run_date.isoformat()})")
    for fld, wanted in ctx.settings.filter.items():
        value = getattr(chunk, fld, None) if fld in ("domain", "label", "kind", "doc_id") \
            else chunk.facets.get(fld)
        allowed = [wanted] if isinstance(wanted, str) else list(wanted)
        if value not in allowed:
            found.append(f"excluded by the configured filter {fld}={wanted!r} (it has {value!r})")
    return found


def _embedding_evidence(q: QueryResult, cid: str) -> dict[str, Any]:
    hit = next(h for h in q.expected if h.id == cid)
    kth = q.top[-1][1] if q.top else None
    expected_ids = {h.id for h in q.expected}
    outranking = [{"id": i, "score": round(s, 4)} for i, s in q.top if i not in expected_ids][:5]
    return {
        "rank": hit.rank,
        "score": None if hit.score is None else round(hit.score, 4),
        "kth_score": None if kth is None else round(kth, 4),
        "gap_to_kth": None if (kth is None or hit.score is None) else round(kth - hit.score, 4),
        "outranked_by": outranking,
    }


def diagnose(q: QueryResult, ctx: DiagnosisContext) -> tuple[Diagnosis, ...]:
    """One diagnosis per expected chunk missing from the top-K, plus one for excess noise."""
    out: list[Diagnosis] = []
    for hit in q.expected:
        if hit.in_top_k:
            continue
        chunk = ctx.chunks.get(hit.id)
        where = f"at rank {hit.rank}" if hit.rank else "beyond the search depth"
        evidence = _embedding_evidence(q, hit.id)
        if chunk is None:
            out.append(Diagnosis(4, "embedding", hit.id,
                                 f"{hit.id} is {where}; no chunk metadata to inspect",
                                 evidence))
            continue
        moved = moved_findings(chunk, q, ctx)
        steps: list[tuple[int, Any, list[str]]] = [
            (1, "chunking", [*moved, *chunking_findings(chunk, ctx)]),
            (2, "description", description_findings(chunk)),
            (3, "labelling", labelling_findings(chunk, q, ctx, moved=bool(moved))),
        ]
        first = next(((s, c, f) for s, c, f in steps if f), None)
        if first is None:
            gap = evidence["gap_to_kth"]
            hints = [] if _is_tabular(chunk) else cut_signs(chunk, ctx)[1]
            if hints:  # not evidence enough to name chunking: said as what else may fit
                evidence["also"] = {"chunking": hints}
            out.append(Diagnosis(
                4, "embedding", hit.id,
                f"{hit.id} looks well formed, described and labelled, yet is buried {where}"
                + (f", {gap:.3f} below the K-th result" if gap is not None else "")
                + ": make its description more concrete, in the users' words, or revisit the "
                "representation field"
                + (f" (also possible, not certain: chunking — {'; '.join(hints)})"
                   if hints else ""),
                evidence,
            ))
            continue
        step, cause, findings = first
        evidence["findings"] = findings
        evidence["also"] = {c: f for s, c, f in steps if f and s != step}
        out.append(Diagnosis(step, cause, hit.id, f"{hit.id} ({where}): " + "; ".join(findings)
                             + f" — fix: {FIXES[cause]}", evidence))
    if "noise" in q.failed_rules:
        below = [{"id": i, "score": round(s, 4)} for i, s in q.top
                 if q.noise_threshold is not None and s < q.noise_threshold - 1e-6]
        out.append(Diagnosis(
            5, "noise", None, noise_explanation(q),
            {"noise": q.noise, "allowed": q.allowed_noise, "threshold": q.noise_threshold,
             "below_threshold": below, "unjudged": q.noise_unjudged,
             "labels_sparse": q.labels_sparse},
        ))
    return tuple(out)


def halves_similarity(chunks: Sequence[Chunk], embed: Any) -> dict[str, float]:
    """Cosine between the first and second half (by sentences) of each prose chunk."""
    pairs: list[tuple[str, str, str]] = []
    for c in chunks:
        if _is_tabular(c):
            continue
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", c.text.strip()) if s]
        if len(sentences) < 4:
            continue
        mid = len(sentences) // 2
        pairs.append((c.id, " ".join(sentences[:mid]), " ".join(sentences[mid:])))
    if not pairs or embed is None:
        return {}
    vectors = embed([p[1] for p in pairs] + [p[2] for p in pairs])
    if vectors is None:
        return {}
    n = len(pairs)
    sims = cosine_pairs(vectors[:n], vectors[n:])
    return {p[0]: float(s) for p, s in zip(pairs, sims)}


def patterns(queries: Sequence[QueryResult]) -> list[Pattern]:
    """Failure patterns across the dataset, each with what it usually means and where to look."""
    failing = [q for q in queries if not q.passed]
    if not failing:
        return []
    out: list[Pattern] = []
    ids = tuple(q.id for q in failing)
    by_domain: dict[str, list[QueryResult]] = defaultdict(list)
    for q in queries:
        if q.domain:
            by_domain[q.domain].append(q)
    on_recall = [q for q in failing if "noise" not in q.failed_rules or "recall" in q.failed_rules]
    for domain, qs in sorted(by_domain.items()):
        if len(qs) >= 2 and all(not q.passed for q in qs):
            if all(q.failed_rules == ("noise",) for q in qs):
                out.append(Pattern(
                    "domain_failing",
                    f"every query of domain {domain!r} fails, all on the noise rule alone: their "
                    "expected chunks are found, but too many other results score below them — "
                    "look at which chunks fill their top K, or calibrate this domain's noise "
                    "ceiling on a run with enough healthy queries "
                    "(`recallwatch ops calibrate-noise`)",
                    tuple(q.id for q in qs),
                ))
                continue
            out.append(Pattern(
                "domain_failing",
                f"every query of domain {domain!r} fails, "
                f"{sum('recall' in q.failed_rules for q in qs)} of {len(qs)} on recall: look at "
                "how that domain was ingested and classified (its sources, chunking, domain "
                "labels and facets), not at the index as a whole",
                tuple(q.id for q in qs),
            ))
    if on_recall and all(NUMERIC_TAGS & set(q.tags) for q in failing):
        out.append(Pattern(
            "numeric_only",
            "only numeric/table queries fail: tables cut off, missing their header, or without "
            "a written description — the most frequent pattern of a first deployment",
            ids,
        ))
    if (any("recall" in q.failed_rules for q in failing) and all(q.has_gold for q in failing)
            and any(q.passed and not q.has_gold for q in queries)):
        out.append(Pattern(
            "gold_only",
            "only queries expecting a Gold chunk (a curated synthesis) fail: the curated answers "
            "do not reach the top — check that they carry the label SINTESIS_CURADA or "
            "CURATED_SYNTHESIS and the boost the search configuration gives them",
            ids,
        ))
    if all(q.failed_rules == ("noise",) for q in failing):
        out.append(Pattern(
            "noise_high",
            "recall is fine but noise is high: " + RULE_WORDS + ". Irrelevant chunks crowd the "
            "top — make generic descriptions specific, split chunks that mix topics, tighten "
            "loose facets",
            ids,
        ))
    return out
