"""The permission rule: a chunk in a query's top K that the asking user's groups may not see is
a permission leak, and the query fails with rule ``permission`` whatever its recall.

A chunk carries ``acl`` (the groups that may see it; absent: everyone) and a golden query
``groups`` (the asking user's; absent: not checked). The gate searches with the store's own acl
filter where the store has one (``SupportsAclFilter``), so a leak there means the filter or the
acl it reads is wrong; elsewhere it searches unfiltered and says so, and a leak is what that
search would serve the user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from recallwatch.acceptance.model import Check, Diagnosis, PermissionLeak, QueryResult, Reason
from recallwatch.formats.golden import GoldenQuery
from recallwatch.records import may_see
from recallwatch.stores.base import Chunk

__all__ = ["PERMISSION_RULE", "apply_permissions", "leak_diagnoses", "permission_verdict"]

PERMISSION_RULE = "permission"


def apply_permissions(queries: Sequence[GoldenQuery], scored: Sequence[QueryResult],
                      chunks: Mapping[str, Chunk]) -> list[QueryResult]:
    """Each scored query with its groups and leaks; a query with a leak fails."""
    groups = {q.id: q.groups for q in queries}
    out = []
    for q in scored:
        asking = groups.get(q.id)
        if asking is None:
            out.append(q)
            continue
        leaks = tuple(PermissionLeak(cid, tuple(chunk.acl or ()))
                      for cid, _ in q.top
                      if (chunk := chunks.get(cid)) is not None and not may_see(asking,
                                                                                  chunk.acl))
        q = replace(q, groups=asking, permission_leaks=leaks)
        if leaks:
            q = replace(q, passed=False, failed_rules=(*q.failed_rules, PERMISSION_RULE))
        out.append(q)
    return out


def permission_verdict(scored: Sequence[QueryResult], store_filter: str | None
                       ) -> tuple[list[Reason], list[Check]]:
    """The STOP reason for leaks (a leak blocks whatever the tolerance or a waiver says) and the
    check that says how the run searched: with the store's acl filter (``store_filter`` names
    the store) or without one (None)."""
    checked = [q for q in scored if q.groups is not None]
    if not checked:
        return [], []
    how = (f"searched with the store's own acl filter ({store_filter})" if store_filter else
           "the store has no acl filter: searched unfiltered, as the user would be served")
    leaking = [q for q in checked if q.permission_leaks]
    figures = {"queries": len(checked), "leaking": len(leaking),
               "store_filter": store_filter is not None}
    if not leaking:
        return [], [Check(PERMISSION_RULE, "permissions", "pass",
                          f"no chunk outside the asking user's groups in the top K of the "
                          f"{len(checked)} queries that carry groups; {how}", figures)]
    first = leaking[0]
    message = (f"{len(leaking)} quer{'y shows' if len(leaking) == 1 else 'ies show'} a chunk "
               f"the asking user may not see (a permission leak), e.g. {first.id}: "
               f"{first.permission_leaks[0].line(first.groups)}; {how}")
    reason = Reason(PERMISSION_RULE, message, tuple(q.id for q in leaking))
    return [reason], [Check(PERMISSION_RULE, "permissions", "stop", message, figures)]


def leak_diagnoses(q: QueryResult) -> tuple[Diagnosis, ...]:
    """One finding per leak, shown first among a failing query's diagnoses in every report."""
    return tuple(
        Diagnosis(step=0, cause="permission", chunk_id=leak.id,
                  summary=f"{leak.line(q.groups)}: grant the user one of its groups, or keep "
                  "the chunk out of their results (an acl filter in the search)",
                  evidence={"acl": list(leak.acl), "groups": list(q.groups or ())})
        for leak in q.permission_leaks)
