"""A chunk's access list (acl) as engines keep it, and the store-side filter that honours it.

Every adapter already stores a chunk's ``facets`` as JSON text, so the acl travels there, under
the reserved key ``__acl__``, as the text ``"|g1|g2|"``, written *last*. An engine's own filter
then needs only two string functions that LanceDB's and PostgreSQL's SQL share (``strpos``,
``substr``): everything after ``"__acl__": "`` is the acl (a quote inside a facet is escaped in
JSON, so that text appears nowhere else), and a chunk is visible to a group ``g`` when ``|g|``
occurs there. A chunk without the key is everyone's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ACL_KEY", "acl_from_facets", "facets_text", "visible_sql"]

ACL_KEY = "__acl__"
_MARK = f'"{ACL_KEY}": "'


def facets_text(facets: Mapping[str, str], acl: Sequence[str] | None) -> str:
    """The facets as sorted JSON text, with the acl (when any) as the last entry."""
    text = json.dumps(dict(facets), sort_keys=True, ensure_ascii=False)
    if acl is None:
        return text
    entry = _MARK + "|" + "".join(f"{g}|" for g in acl) + '"'
    return "{" + entry + "}" if text == "{}" else text[:-1] + ", " + entry + "}"


def acl_from_facets(facets: Mapping[str, Any]) -> tuple[dict[str, str], tuple[str, ...] | None]:
    """Split parsed facets into the chunk's own facets and its acl (None: everyone)."""
    own = {k: v for k, v in facets.items() if k != ACL_KEY}
    raw = facets.get(ACL_KEY)
    if raw is None:
        return own, None
    return own, tuple(g for g in str(raw).split("|") if g)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def visible_sql(column: str, groups: Sequence[str]) -> str:
    """A SQL predicate (LanceDB and PostgreSQL alike) true for the chunks a user in ``groups``
    may see, on the text column (or expression) ``column`` that holds the facets JSON."""
    at = f"strpos({column}, {_literal(_MARK)})"
    tests = [f"{at} = 0"]
    tests += [f"strpos(substr({column}, {at}), {_literal('|' + g + '|')}) > 0" for g in groups]
    return "(" + " OR ".join(tests) + ")"
