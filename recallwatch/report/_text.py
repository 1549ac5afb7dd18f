"""Making user-provided text (queries, chunk ids, metadata) safe to show.

Hostile text is shown, never obeyed: ANSI escapes and other control characters become visible
``\\x1b`` sequences in every report; each format then applies its own escaping on top.
"""

from __future__ import annotations

import re

__all__ = ["md_escape", "visible"]

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

