"""Making user-provided text (queries, chunk ids, metadata) safe to show.

Hostile text is shown, never obeyed: ANSI escapes and other control characters become visible
``\\x1b`` sequences in every report; each format then applies its own escaping on top.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["alternatives_line", "anchor_line", "md_escape", "twin_line", "visible"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: object) -> str:
    """Control characters (ESC included) as \\xNN; newlines and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def md_escape(text: object) -> str:
    """Text safe inside a Markdown table cell or paragraph (GitHub flavour): no markup, no HTML,
    one line."""
    one_line = visible(text).replace("\r", " ").replace("\n", " ")
    escaped = _MD_SPECIAL.sub(r"\\\1", one_line)
    return escaped.replace("&", "&amp;")



def alternatives_line(group: dict[str, Any]) -> str:
    """One group of alternatives of a query result (its ``alternatives`` entry) as every report
    shows it: the members, how many it needs, which reached the top-K, which were counted."""
    def name(m: Any) -> str:
        if isinstance(m, dict):
            quote = " ".join(str(m.get("quote", "")).split())
            return f"{m.get('doc_id')} “{quote if len(quote) <= 30 else quote[:29] + '…'}”"
        return str(m)

    members = [name(m) for m in group.get("members", [])]
    need = int(group.get("need", 1))
    head = (f"any of {', '.join(members)}" if need == 1
            else f"at least {need} of {', '.join(members)}")
    found = list(group.get("found", []))
    if group.get("satisfied"):
        return f"{head}: satisfied, {len(found)} in the top-K ({', '.join(found)})"
    counted = ", ".join(group.get("counted", []))
    return (f"{head}: {len(found)} of {need} needed in the top-K"
            + (f" ({', '.join(found)})" if found else "") + f"; counted as expected: {counted}")


def twin_line(twin: dict[str, Any]) -> str:
    """An expected chunk found through its identical twin (a query result's ``twins`` entry)
    as every report shows it."""
    return (f"{twin.get('expected')} found through its identical twin {twin.get('found')} at "
            f"rank {twin.get('rank')} (same text under another id; counted as found)")


def anchor_line(anchor: dict[str, Any]) -> str:
    """One content anchor of a query result (its ``anchors`` entry) as every report shows it:
    the passage, what it resolved to, and whether the quote reached the top-K."""
    quote = " ".join(str(anchor.get("quote", "")).split())
    quote = quote if len(quote) <= 50 else quote[:49] + "…"
    chunks = list(anchor.get("chunks", []))
    if anchor.get("kind") == "split":
        where = f"split across {' + '.join(chunks)}"
    elif len(chunks) > 1:
        where = f"in any of {', '.join(chunks)} (counted: {', '.join(anchor.get('expected', []))})"
    else:
        where = f"in {', '.join(chunks)}"
    if anchor.get("match") == "normalised" and anchor.get("kind") == "whole":
        where += " after case/whitespace normalisation"
    seen = "in the top-K" if anchor.get("in_context") else "NOT in the top-K"
    return f"anchor {anchor.get('doc_id')} “{quote}”: {where}; quote {seen}"
