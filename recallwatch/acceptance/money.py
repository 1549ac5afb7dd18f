"""What serving 1,000 queries costs in money, at the user's prices and at a measured quality.

The cost is built from what a run measured — never from guesses — and shows its arithmetic, so
a reader can check it with a calculator. For a deployment that serves queries one after
another at its measured speed:

* **compute** = 1,000 × (vCPU-seconds per query) / 3,600 × price per vCPU-hour. The gate counts
  one vCPU busy for the wall time of each query's search call and its query embedding; a
  benchmark counts the CPU time it measured;
* **memory** = GB held × hours spent on the 1,000 queries / 730 hours a month × price per
  GB-month, where the hours are 1,000 × seconds per query / 3,600: what holding the index in
  memory costs while those queries are served. A deployment that idles pays for the idle hours
  too: this is the least it costs, at full use;
* **disk** = the same with the bytes on disk and the disk price;
* **embedding tokens** = 1,000 × tokens per query / 1,000 × price per 1,000 tokens, for a
  hosted embedder: the tokens its endpoint reported for the golden queries (``usage.
  prompt_tokens``). A local model's tokens (counted by its tokenizer) are stated, not priced:
  its time is already in compute;
* **LLM tokens** = 1,000 × input tokens per query / 1,000 × input price, plus the same for the
  output tokens: the generator's answers, as the model reported them in its replies' ``usage``.

A GB is 2^30 bytes, a month 730 hours. A figure that was not measured, or a price the file does
not give, is left out of the total and named ("not priced: …"), so a partial total never passes
for a whole one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recallwatch.formats.prices import Prices

__all__ = ["EMBEDDING_IN_COMPUTE", "GB", "HOURS_PER_MONTH", "QUERIES", "Serving", "gate_serving",
           "money_lines", "price_serving"]

GB = 2**30
HOURS_PER_MONTH = 730.0
QUERIES = 1000
EMBEDDING_IN_COMPUTE = ("the query embedding's time is counted in compute; its tokens were not "
                        "counted (the embedder does not tell them, or python: or HTTP "
                        "retrievers embedded each query in their own code)")


@dataclass(frozen=True)
class Serving:
    """What serving one query takes, as measured; a figure is None when it was not, and
    ``missing`` says why."""

    seconds_per_query: float | None = None  # wall time the deployment spends on one query
    vcpu_seconds_per_query: float | None = None
    memory_bytes: float | None = None
    disk_bytes: float | None = None
    embedding_tokens_per_query: float | None = None
    llm_input_tokens_per_query: float | None = None
    llm_output_tokens_per_query: float | None = None
    missing: dict[str, str] = field(default_factory=dict)  # item -> why it is not measured
    # item -> why it is no part of this deployment's cost (no model is called for it)
    not_part: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # item -> where its figure came from
    quality: dict[str, Any] = field(default_factory=dict)  # what was measured beside it


def _n(x: float) -> str:
    """A figure of the arithmetic: 4 significant digits, no exponent for ordinary sizes."""
    return f"{x:.4g}"


def _compute(s: Serving, p: Prices) -> tuple[float, str] | str:
    if s.vcpu_seconds_per_query is None:
        return s.missing.get("compute", "the time per query was not measured")
    if p.vcpu_hour is None:
        return "no vcpu_hour price"
    hours = QUERIES * s.vcpu_seconds_per_query / 3600.0
    cost = hours * p.vcpu_hour
    return cost, (f"{QUERIES:,} queries × {_n(s.vcpu_seconds_per_query * 1000)} vCPU-ms = "
                  f"{_n(hours)} vCPU-hours × {p.vcpu_hour:g} = {_n(cost)}")


def _held(name: str, size: float | None, price: float | None, s: Serving,
          key: str) -> tuple[float, str] | str:
    if size is None:
        return s.missing.get(name, f"the {name} size was not measured")
    if s.seconds_per_query is None:
        return s.missing.get("compute", "the time per query was not measured")
    if price is None:
        return f"no {key} price"
    gb = size / GB
    hours = QUERIES * s.seconds_per_query / 3600.0
    cost = gb * hours / HOURS_PER_MONTH * price
    return cost, (f"{_n(gb)} GB × {_n(hours)} hours ({QUERIES:,} queries × "
                  f"{_n(s.seconds_per_query * 1000)} ms) / {HOURS_PER_MONTH:g} hours a month × "
                  f"{price:g} = {_n(cost)}")


def _tokens(name: str, per_query: float | None, price: float | None, s: Serving,
            key: str) -> tuple[float, str] | str:
    if per_query is None:
        return s.missing.get(name, "not reported")
    if price is None:
        return f"no {key} price"
    total = QUERIES * per_query
    cost = total / 1000.0 * price
    return cost, (f"{QUERIES:,} queries × {_n(per_query)} tokens = {_n(total)} tokens / 1,000 × "
                  f"{price:g} = {_n(cost)}")


# The figure each priced item reads (the two LLM items read the generator's tokens).
_FIGURE = {"LLM input tokens": "LLM tokens", "LLM output tokens": "LLM tokens"}


def price_serving(prices: Prices, serving: Serving) -> dict[str, Any]:
    """The cost of serving :data:`QUERIES` queries: each item with its amount and arithmetic,
    the total of the priced items, the items not priced with why (the total is then partial),
    and the items that are no part of this deployment's cost."""
    s, p = serving, prices
    items: dict[str, tuple[float, str] | str] = {
        "compute": _compute(s, p),
        "memory": _held("memory", s.memory_bytes, p.memory_gb_month, s, "memory_gb_month"),
        "disk": _held("disk", s.disk_bytes, p.disk_gb_month, s, "disk_gb_month"),
        "embedding tokens": _tokens("embedding tokens", s.embedding_tokens_per_query,
                                    p.embedding_per_1k_tokens, s, "embedding_per_1k_tokens"),
        "LLM input tokens": _tokens("LLM tokens", s.llm_input_tokens_per_query,
                                    p.llm_input_per_1k_tokens, s, "llm_input_per_1k_tokens"),
        "LLM output tokens": _tokens("LLM tokens", s.llm_output_tokens_per_query,
                                     p.llm_output_per_1k_tokens, s, "llm_output_per_1k_tokens"),
    }
    apart = [k for k in items if _FIGURE.get(k, k) in s.not_part]
    not_part = {_FIGURE.get(k, k): s.not_part[_FIGURE.get(k, k)] for k in apart}
    priced = {k: v for k, v in items.items() if isinstance(v, tuple) and k not in apart}
    total = sum(cost for cost, _ in priced.values())
    return {"currency": p.currency, "queries": QUERIES, "total": total,
            "complete": len(priced) + len(apart) == len(items),
            "items": [{"item": k, "cost": cost, "arithmetic": how,
                       "from": s.sources.get(k) or None}
                      for k, (cost, how) in priced.items()],
            "not_priced": {k: v for k, v in items.items()
                           if isinstance(v, str) and k not in apart},
            "not_part": not_part,
            "quality": s.quality, "prices": p.to_dict(),
            "units": f"a GB is 2^30 bytes, a month {HOURS_PER_MONTH:g} hours"}


def _figure(v: object) -> str:
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v)


def money_lines(money: Mapping[str, Any], what: str = "") -> list[str]:
    """The cost for a report: the total (and at which quality), then each item's arithmetic and
    each item not priced."""
    quality = ", ".join(f"{k} {_figure(v)}" for k, v in (money.get("quality") or {}).items()
                        if v is not None)
    head = (f"cost of serving {money['queries']:,} queries{what} at your prices "
            f"({money['prices'].get('source') or 'given'}): {money['total']:.4g} "
            f"{money['currency']}" + ("" if money["complete"] else " (partial: see not priced)")
            + (f", measured at {quality}" if quality else ""))
    lines = [head]
    lines += [f"  {i['item']}: {i['arithmetic']}" + (f" ({i['from']})" if i.get("from") else "")
              for i in money["items"]]
    lines += [f"  not priced: {k}: {why}" for k, why in money["not_priced"].items()]
    lines += [f"  not part of it: {k}: {why}" for k, why in (money.get("not_part") or {}).items()]
    return lines


# -- the gate ------------------------------------------------------------------------------------


def gate_serving(cost: Mapping[str, Any] | None, answers: Mapping[str, Any] | None,
                 quality: dict[str, Any]) -> Serving:
    """A gate run's serving figures: the mean search call and query embedding (one vCPU busy
    for each), the stored vectors and the ANN index (held in memory and on disk), and the
    generator's tokens per answer."""
    missing: dict[str, str] = {}
    sources: dict[str, str] = {}
    seconds = None
    if cost is None:
        missing["compute"] = "no search latency was measured (a results file carries none)"
    else:
        embed = cost.get("embed_ms_per_query")
        seconds = (float(cost["search_mean_ms"]) + float(embed or 0.0)) / 1000.0
        sources["compute"] = (f"search mean {cost['search_mean_ms']:.4g} ms over "
                              f"{cost.get('calls')} calls" + (
                                  f" + query embedding {embed:.4g} ms" if embed is not None
                                  else ", each embedding its query itself"))
    held = _held_bytes(cost, missing, sources)
    not_part: dict[str, str] = {}
    embedding = _per_query_embedding(cost, missing, sources, not_part)
    llm_in, llm_out = _per_answer(answers, missing, sources, not_part)
    return Serving(seconds, seconds, held, held, embedding, llm_in, llm_out, missing, not_part,
                   sources, quality)


def _per_query_embedding(cost: Mapping[str, Any] | None, missing: dict[str, str],
                         sources: dict[str, str], not_part: dict[str, str]) -> float | None:
    """The embedding tokens per query a hosted embedder's endpoint reported for the golden
    queries; a local model's (its tokenizer's) are stated as no part of the money cost."""
    counted = (cost or {}).get("embed_tokens")
    item = "embedding tokens"
    if not counted:
        not_part[item] = EMBEDDING_IN_COMPUTE
        return None
    texts, tokens = int(counted["texts"]), int(counted["tokens"])
    unknown = int(counted.get("unknown") or 0)
    if not counted.get("hosted"):
        per = f"{tokens / texts:.4g} tokens per query" if texts else "no tokens"
        not_part[item] = (f"a local model: its time is counted in compute; {per} "
                          f"({tokens:,} over {texts} queries), counted by {counted['from']}")
        return None
    if not texts:
        missing[item] = (f"not reported: the endpoint's replies for the {unknown} queries had "
                         "no usage.prompt_tokens")
        return None
    sources[item] = (f"{tokens:,} tokens over {texts} queries, as reported in the "
                     f"{counted['from']}" + (f"; {unknown} queries' replies did not report "
                                             "theirs" if unknown else ""))
    return float(tokens) / texts


def _held_bytes(cost: Mapping[str, Any] | None, missing: dict[str, str],
                sources: dict[str, str]) -> int | None:
    """What a search holds: the stored vectors (float32) and the ANN index, where measured."""
    vectors, index = (cost or {}).get("vector_bytes"), (cost or {}).get("index_bytes")
    if vectors is None and index is None:
        why = ("the store does not report its size" if cost else
               "no store was searched (a results file)")
        missing.update(memory=why, disk=why)
        return None
    parts = [f"stored vectors {vectors:,} bytes" if vectors is not None else None,
             f"ANN index {index:,} bytes" if index is not None
             else "ANN index not reported by the store"]
    sources["memory"] = sources["disk"] = " + ".join(p for p in parts if p)
    return int(vectors or 0) + int(index or 0)


def _per_answer(answers: Mapping[str, Any] | None, missing: dict[str, str],
                sources: dict[str, str], not_part: dict[str, str]
                ) -> tuple[float | None, float | None]:
    """The generator's input and output tokens per answer, from the replies that reported
    them."""
    tokens = (answers or {}).get("tokens") or {}
    spent = tokens.get("answers")
    if answers is None:
        not_part["LLM tokens"] = ("no answers in this run: retrieval alone (with --generator "
                                  "the answers' tokens are counted)")
        return None, None
    if spent is None or not spent.get("reported"):
        missing["LLM tokens"] = ((spent or {}).get("note") or tokens.get("answers_note")
                                 or "not reported")
        return None, None
    n = spent["reported"]
    sources["LLM input tokens"] = sources["LLM output tokens"] = (
        f"{spent['input_tokens']:,} input and {spent['output_tokens']:,} output tokens over {n} "
        f"answers" + (f" ({spent['note']})" if spent.get("note") else ""))
    return spent["input_tokens"] / n, spent["output_tokens"] / n
