"""JUnit XML: one test case per golden query; a failing query carries its diagnosis."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from recallwatch.acceptance.model import GateResult
from recallwatch.report._text import visible

__all__ = ["to_junit"]


def to_junit(result: GateResult) -> str:
    d = result.dataset
    failing = result.failing()
    suite = ET.Element("testsuite", {
        "name": f"recallwatch gate {visible(d['name'])} v{visible(d['version'])}",
        "tests": str(len(result.queries) + len(result.checks)),
        "failures": str(len(failing) + sum(c.status == "stop" for c in result.checks)),
        "errors": "0",
        "time": f"{result.timings.total:.3f}",
        "timestamp": result.created_at,
    })
    props = ET.SubElement(suite, "properties")
    for name, value in (("verdict", result.verdict), ("run_id", result.run_id),
                        ("dataset_hash", result.dataset_hash), ("policy_hash", result.policy_hash),
                        ("config_hash", result.config_hash),
                        ("mean_quality", f"{result.aggregate.mean_quality:.3f}")):
        ET.SubElement(props, "property", {"name": name, "value": visible(value)})
    for q in result.queries:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"recallwatch.{visible(q.domain or 'queries')}",
            "name": visible(f"{q.id}: {q.text}"),
            "time": "0",
        })
        if not q.passed:
            missing = ", ".join(f"{h.id}@{h.rank or '>depth'}" for h in q.expected
                                if not h.in_top_k)
            message = (f"{'+'.join(q.failed_rules)}: recall {q.recall:.3f}, quality "
                       f"{q.quality:.0f}, noise {q.noise}/{q.allowed_noise}"
                       + (f", missing {missing}" if missing else ""))
            failure = ET.SubElement(case, "failure", {"message": visible(message),
                                                      "type": "+".join(q.failed_rules)})
            lines = [x.line() for x in q.diagnosis]
            if q.waiver:
                lines.append(f"waiver: {q.waiver}")
            failure.text = visible("\n".join(lines))
    for c in result.checks:  # one test case per run-level limit of the policy
        case = ET.SubElement(suite, "testcase", {
            "classname": f"recallwatch.policy.{c.rule}", "name": visible(c.subject), "time": "0"})
        if c.status == "stop":
            ET.SubElement(case, "failure", {"message": visible(c.message), "type": c.rule})
        elif c.status == "not applied":
            ET.SubElement(case, "skipped", {"message": visible(c.message)})
        else:
            ET.SubElement(case, "system-out").text = visible(f"{c.status}: {c.message}")
    if result.warnings:  # what the verdict's reader should know that is no rule
        ET.SubElement(suite, "system-out").text = visible(
            "\n".join(f"warning: {w}" for w in result.warnings))
    ET.indent(suite)
    body = ET.tostring(suite, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
