"""Prices, for the cost in money of serving queries (``--prices FILE`` on ``gate``, ``bench`` and
``experiment``): a small YAML (or JSON) mapping, every price optional.

    currency: USD                    # a name shown beside every amount (default USD)
    vcpu_hour: 0.0416                # one virtual CPU for one hour
    memory_gb_month: 3.50            # one GB of memory for one month (730 hours)
    disk_gb_month: 0.10              # one GB of disk for one month
    embedding_per_1k_tokens: 0.00002 # 1,000 tokens sent to an embedding model
    llm_input_per_1k_tokens: 0.00015 # 1,000 prompt tokens of a language model
    llm_output_per_1k_tokens: 0.0006 # 1,000 completion tokens of a language model

A GB is 2^30 bytes (what cloud bills call a GB of memory or disk). A price left out is not
guessed as 0: what it would price is reported as "not priced". Every value is a number of at
least 0; a bad one is an error naming the file, the line, the field, what was expected and what
was found.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallwatch.errors import InputError
from recallwatch.formats.fields import bounded, check_keys, line_of, shown
from recallwatch.formats.structured import load_structured, without_lines

__all__ = ["PRICE_KEYS", "Prices", "load_prices", "parse_prices"]

#: The prices a file may give, and what each one is the price of.
PRICE_KEYS: dict[str, str] = {
    "vcpu_hour": "one virtual CPU for one hour",
    "memory_gb_month": "one GB of memory for one month",
    "disk_gb_month": "one GB of disk for one month",
    "embedding_per_1k_tokens": "1,000 tokens sent to an embedding model",
    "llm_input_per_1k_tokens": "1,000 prompt (input) tokens of a language model",
    "llm_output_per_1k_tokens": "1,000 completion (output) tokens of a language model",
}
# A price above this is a typo (a million per hour or per 1,000 tokens).
_MAX_PRICE = 1_000_000.0
_MAX_CURRENCY_CHARS = 12


@dataclass(frozen=True)
class Prices:
    currency: str = "USD"
    vcpu_hour: float | None = None
    memory_gb_month: float | None = None
    disk_gb_month: float | None = None
    embedding_per_1k_tokens: float | None = None
    llm_input_per_1k_tokens: float | None = None
    llm_output_per_1k_tokens: float | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"currency": self.currency, **{k: getattr(self, k) for k in PRICE_KEYS},
                "source": self.source}


def load_prices(path: str | Path) -> Prices:
    p = Path(path)
    return parse_prices(load_structured(p), p)


def parse_prices(data: Any, source: Path) -> Prices:
    """The prices of ``data`` (a file's content), checked: known keys, numbers of at least 0,
    at least one price."""
    example = "a mapping of prices, e.g. {currency: USD, vcpu_hour: 0.04}"
    if not isinstance(data, dict):
        raise InputError(source=source, expected=example, found=shown(without_lines(data)))
    check_keys(data, {"currency", *PRICE_KEYS}, source=source)
    line = line_of(data)
    values = {key: _price(data, key, source, line) for key in PRICE_KEYS}
    if all(v is None for v in values.values()):
        raise InputError(source=source, line=line, expected=f"at least one price: "
                         f"{', '.join(PRICE_KEYS)}", found="<no price>")
    return Prices(currency=_currency(data.get("currency", "USD"), source, line), **values,
                  source=str(source))


def _price(data: dict[str, Any], key: str, source: Path, line: int | None) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    return float(bounded(value, 0.0, _MAX_PRICE, source=source, line=line, field=key,
                         integer=False))


def _currency(value: Any, source: Path, line: int | None) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_CURRENCY_CHARS \
            or not value.isprintable():
        raise InputError(source=source, line=line, field="currency",
                         expected=f"a short name such as USD or EUR (at most "
                         f"{_MAX_CURRENCY_CHARS} printable characters)",
                         found=shown(without_lines(value)))
    return value.strip()
