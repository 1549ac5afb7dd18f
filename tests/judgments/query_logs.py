"""Query logs built from real queries (the example knowledge base's questions, Cranfield's
queries): each query is asked a Zipf-distributed number of times, in its own words and in the
ways people mistype it (lower case, no accents, no punctuation, a dropped letter). Seeded."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def wordings(text: str, rng: np.random.Generator) -> list[str]:
    """The query as written, and four ways users type it."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))
    # punctuation typed as a space ("shock-induced" -> "shock induced"), then spaces collapsed
    plain = " ".join("".join(c if c.isalnum() else " " for c in bare.lower()).split())
    cut = int(rng.integers(1, max(len(plain) - 1, 2)))
    typo = plain[:cut] + plain[cut + 1:] if plain[cut].isalpha() else plain
    return [text, text.lower(), bare, plain, typo]


def askings(queries: Sequence[tuple[str, str | None]], *, total: int, seed: int,
            exponent: float = 1.1) -> list[tuple[str, str | None, str]]:
    """(wording, domain, original text) for ``total`` askings: query i (in a seeded order) is
    asked with Zipf weight 1/(rank^exponent), in one of its wordings (the original most often)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(queries))
    weights = 1.0 / np.arange(1, len(queries) + 1) ** exponent
    picks = rng.choice(order, size=total, p=weights / weights.sum())
    out = []
    for i in picks.tolist():
        text, domain = queries[i]
        forms = wordings(text, np.random.default_rng(seed * 7919 + i))
        form = forms[0] if rng.random() < 0.6 else forms[int(rng.integers(1, len(forms)))]
        out.append((form, domain, text))
    return out


def write_interaction_log(path: Path, queries: Sequence[tuple[str, str | None]], *,
                          total: int, seed: int) -> list[tuple[str, str | None, str]]:
    """An interaction log (the `recallwatch online` format) with `query` text and `domain` on
    each impression; what was shown does not matter to sampling (two fixed ids, no click)."""
    rows = askings(queries, total=total, seed=seed)
    with path.open("w", encoding="utf-8") as fh:
        for n, (form, domain, _) in enumerate(rows):
            rec = {"query": form, "ts": f"2025-03-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z",
                   "shown": [{"id": "a"}, {"id": "b"}], "clicks": []}
            if domain is not None:
                rec["domain"] = domain
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return rows


def write_query_list(path: Path, queries: Sequence[tuple[str, str | None]], *, total: int,
                     seed: int) -> list[tuple[str, str | None, str]]:
    """A plain JSONL of queries: one {"query": …} per asking."""
    rows = askings(queries, total=total, seed=seed)
    with path.open("w", encoding="utf-8") as fh:
        for form, domain, _ in rows:
            rec = {"query": form} if domain is None else {"query": form, "domain": domain}
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return rows
