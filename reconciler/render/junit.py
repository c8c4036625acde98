"""JUnit XML for a run report (pure rendering; never decides the exit code).

One ``<testsuite>`` per lens, one ``<testcase>`` per scored answer; a wrong,
flaky, declined, error or inconclusive outcome is a ``<failure>`` (its ``type`` the
outcome) whose text holds both
executed results; an unreached answer (declined, never reproduced) is
``<skipped>``. XML 1.0 cannot carry every character, so text is passed through
:data:`_XML_INVALID` first (invalid code points become U+FFFD).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reconciler.render.github import (
    CELL_CHARS,
    FAILING_ACTIONS,
    TABLE_ROWS,
    Locations,
    generated_sql,
    score_line,
)
from reconciler.results import LensRun, RunReport
from reconciler.state import Outcome

if TYPE_CHECKING:
    from reconciler.suite import AnswerResult  # annotations only: rendering runs nothing

_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _XML_INVALID.sub("\ufffd", text)


def _plain_cell(value: object) -> str:
    text = f"{value:.12g}" if isinstance(value, float) else "NULL" if value is None else str(value)
    return " ".join(text.split())[:CELL_CHARS]


def _plain_result(title: str, preview: Mapping[str, Any] | None) -> list[str]:
    if not preview:
        return [f"{title}: no result"]
    columns = " | ".join(str(c) for c in preview.get("columns", []))
    lines = [f"{title} ({preview.get('row_count', 0)} row(s)): {columns}"]
    for row in preview.get("rows", [])[:TABLE_ROWS]:
        lines.append("  " + " | ".join(_plain_cell(v) for v in row))
    return lines


def _case_body(result: AnswerResult) -> str:
    lines = [result.detail]
    sql = generated_sql(result)
    if sql:
        lines.append(f"generated SQL: {sql}")
    lines += _plain_result("oracle result", result.oracle)
    lines += _plain_result("generated result", result.generated)
    return _xml_text("\n".join(lines))


def _testcase(
    suite: ET.Element, run: LensRun, result: AnswerResult, kind: str, locations: Locations
) -> str | None:
    case = ET.SubElement(
        suite, "testcase", classname=f"dst.{run.plan.lens}.{kind}", name=result.answer
    )
    where = locations.get((run.plan.lens, result.answer))
    if where is not None:
        case.set("file", where.path)
        if where.line:
            case.set("line", str(where.line))
    if result.outcome is Outcome.CORRECT:
        if result.flaky:
            ET.SubElement(case, "system-out").text = _xml_text(result.detail)
        return None
    if result.answer in run.unreached:
        message = f"untested: unreached by the generator: {result.detail}"
        ET.SubElement(case, "skipped", message=_xml_text(message[:500]))
        return "skipped"
    if kind == "gate" or result.oracle_failed:
        failure = ET.SubElement(
            case, "failure", type=result.outcome.value, message=_xml_text(result.detail[:500])
        )
        failure.text = _case_body(result)
        return "failure"
    out = ET.SubElement(case, "system-out")
    out.text = f"self-test ALERT ({result.outcome.value}): " + _case_body(result)
    return None


def to_junit(report: RunReport, locations: Locations | None = None) -> str:
    """JUnit XML: one ``testsuite`` per lens (see the module docstring for the mapping)."""
    locations = locations or {}
    root = ET.Element("testsuites", name=f"dst {report.command}")
    totals: Counter[str] = Counter()
    for run in report.lenses:
        plan = run.plan
        suite = ET.SubElement(root, "testsuite", name=plan.lens)
        props = ET.SubElement(suite, "properties")
        for key, value in (
            ("action", run.action),
            ("gate", plan.gate),
            ("candidate", plan.candidate or ""),
            ("serving_before", plan.serving or ""),
            ("score", score_line(run.score)),
            ("previous_score", score_line(run.previous_score)),
        ):
            ET.SubElement(props, "property", name=key, value=_xml_text(value))
        counts: Counter[str] = Counter()
        gate = ET.SubElement(suite, "testcase", classname=f"dst.{plan.lens}", name="gate")
        counts["tests"] += 1
        if run.action in FAILING_ACTIONS:
            failure = ET.SubElement(gate, "failure", type=run.action, message=run.action)
            failure.text = _xml_text("\n".join(run.messages))
            counts["failures"] += 1
        elif run.messages:
            ET.SubElement(gate, "system-out").text = _xml_text("\n".join(run.messages))
        ran = set()
        for kind, results in (("gate", run.results), ("self_test", run.self_test)):
            for result in results:
                ran.add(result.answer)
                counts["tests"] += 1
                verdict = _testcase(suite, run, result, kind, locations)
                if verdict == "failure":
                    counts["failures"] += 1
                elif verdict == "skipped":
                    counts["skipped"] += 1
        for aid in plan.gated:
            if aid not in ran and run.action != "unchanged":
                case = ET.SubElement(suite, "testcase", classname=f"dst.{plan.lens}.gate", name=aid)
                reason = "gate off" if plan.gate == "off" else "; ".join(run.messages) or "not run"
                ET.SubElement(case, "skipped", message=_xml_text(f"not run: {reason}"))
                counts["tests"] += 1
                counts["skipped"] += 1
        for key in ("tests", "failures", "errors", "skipped"):
            suite.set(key, str(counts[key]))
            totals[key] += counts[key]
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
