"""Rendering run reports as text or JSON (pure; never decides the exit code).

The JSON object is the stable contract of DESIGN §6::

    {"schema_version": 1, "command": ..., "lenses": [{"lens", "gate", "serving_before",
     "serving_after", "candidate", "action", "changed_assets", "stale", "self_test",
     "results", "score", "previous_score", "messages"}]}

plus, additively, ``"reach": {"reached", "total"}`` (``null`` when the run did not
plan the lens's corpus).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from reconciler.results import LensRun, RunReport
from reconciler.suite import AnswerResult, Outcome

SCHEMA_VERSION = 1
_PUBLIC_SCORE = ("correct", "wrong", "declined", "error", "total")


def _score(counts: Mapping[str, int] | None) -> dict[str, int] | None:
    if counts is None:
        return None
    out = {k: int(counts.get(k, 0)) for k in _PUBLIC_SCORE}
    for extra in ("inconclusive", "unverified", "flaky"):
        out[extra] = int(counts.get(extra, 0))
    return out


def lens_object(run: LensRun, *, explain: bool = False) -> dict[str, Any]:
    """One lens's JSON object."""
    plan = run.plan
    planned = plan.record()
    stale = (
        planned["stale"]
        if explain
        else [{"answer": s["answer"], "reasons": s["reasons"]} for s in planned["stale"]]
    )
    return {
        "lens": plan.lens,
        "gate": plan.gate,
        "serving_before": plan.serving,
        "serving_after": run.serving_after,
        "candidate": plan.candidate,
        "action": run.action,
        "changed_assets": planned["changed_assets"],
        "changed_answers": planned["changed_answers"],
        "stale": stale,
        "self_test": [r.record() for r in run.self_test]
        if run.self_test
        else [{"answer": a, "outcome": None} for a in plan.self_test],
        "results": [r.record() for r in run.results],
        "cases": [c.record() for c in run.cases],
        "score": _score(run.score),
        "reach": run.reach,
        "previous_score": _score(run.previous_score) if run.previous_score else None,
        "starvation": plan.starvation,
        "recorded": run.recorded,
        "messages": list(run.messages),
    }


def to_json(report: RunReport, *, explain: bool = False) -> str:
    """The whole report as one JSON object (one line per key, stable key order)."""
    obj = {
        "schema_version": SCHEMA_VERSION,
        "command": report.command,
        "exit_code": report.exit_code,
        "dry_run": report.dry_run,
        "messages": report.messages,
        "lenses": [lens_object(r, explain=explain) for r in report.lenses],
    }
    return json.dumps(obj, indent=2, default=str)


def _fmt_score(s: Mapping[str, int] | None) -> str:
    if not s:
        return "n/a"
    total = s.get("total", 0)
    acc = f"{100 * s.get('correct', 0) / total:.0f}%" if total else "n/a"
    wrong = f"{100 * s.get('wrong', 0) / total:.0f}%" if total else "n/a"
    text = (
        f"{s.get('correct', 0)}/{total} correct ({acc}), wrong {s.get('wrong', 0)} "
        f"({wrong}), declined {s.get('declined', 0)}, error "
        f"{s.get('error', 0) + s.get('inconclusive', 0)}"
    )
    if s.get("flaky"):
        text += f", flaky {s['flaky']}"
    if s.get("unverified"):
        text += f", unverified {s['unverified']}"
    return text


def fmt_reach(reach: Mapping[str, int] | None) -> str:
    """``1/2 active answers reproduced by the generator (50%)``, or ``n/a``."""
    if not reach or not reach.get("total"):
        return "n/a"
    n, m = reach.get("reached", 0), reach["total"]
    return f"{n}/{m} active answers reproduced by the generator ({100 * n / m:.0f}%)"


DISPLAY_DIGITS = 12
"""Significant digits a float cell shows in text output (JSON keeps every bit)."""


def display_cell(value: object) -> str:
    """One result cell as text output shows it: ``NULL``, or the value rounded for reading.

    Aggregation order leaves noise in a DOUBLE's last bits (``2514885.82000001``),
    so a ``float`` shows :data:`DISPLAY_DIGITS` significant digits
    (``2514885.82``), in positional notation below 1e16 (``123456789012``, not
    ``1.23456789012e+11``). Display only: JSON output and every comparison use the
    exact value. Other values (``Decimal`` included: it is exact) show ``str(value)``.
    """
    if value is None:
        return "NULL"
    if not isinstance(value, float) or not math.isfinite(value):
        return str(value)
    text = f"{value:.{DISPLAY_DIGITS}g}"
    if "e" in text and 1e-4 <= abs(value) < 1e16:
        text = format(Decimal(text), "f")
    return text


def _rows(title: str, rows: Sequence[Sequence[object]], count: int, indent: str) -> list[str]:
    if not rows:
        return []
    lines = [f"{indent}{title} ({count}):"]
    lines += [f"{indent}  {' | '.join(display_cell(v) for v in row)}" for row in rows[:10]]
    if count > min(len(rows), 10):
        lines.append(f"{indent}  … {count - min(len(rows), 10)} more")
    return lines


def _failure(r: AnswerResult) -> list[str]:
    lines = [f"  ✗ {r.answer}: {r.outcome.value} — {r.detail}"]
    last = r.attempts[-1] if r.attempts else {}
    sql = (last.get("generation") or {}).get("sql")
    if sql:
        lines.append("    generated SQL: " + " ".join(str(sql).split()))
    diff = last.get("comparison") or {}
    lines += _rows(
        "missing rows (oracle only)",
        diff.get("missing", []),
        int(diff.get("missing_count", 0)),
        "    ",
    )
    lines += _rows(
        "extra rows (generated only)",
        diff.get("extra", []),
        int(diff.get("extra_count", 0)),
        "    ",
    )
    if r.oracle is not None or r.generated is not None:
        lines.append("    oracle result:")
        lines += _table(r.oracle, "      ")
        lines.append("    generated result:")
        lines += _table(r.generated, "      ")
    return lines


def _table(result: Mapping[str, Any] | None, indent: str) -> list[str]:
    if not result:
        return [f"{indent}(no result)"]
    cols = result.get("columns", [])
    rows = result.get("rows", [])
    lines = [f"{indent}{' | '.join(str(c) for c in cols)}"]
    lines += [f"{indent}{' | '.join(display_cell(v) for v in row)}" for row in rows[:10]]
    more = result.get("row_count", len(rows)) - min(len(rows), 10)
    if more > 0:
        lines.append(f"{indent}… {more} more rows")
    return lines


def to_text(report: RunReport, *, explain: bool = False) -> str:
    """Human-readable report: per lens, the action, the plan and every failure in full."""
    lines: list[str] = list(report.messages)
    for run in report.lenses:
        plan = run.plan
        action = run.action.upper()
        if report.dry_run and run.action in ("promoted", "retired"):
            action = f"WOULD {run.action[:-1].upper()} (dry run)"
        head = f"{plan.lens}: {action}  (gate: {plan.gate})"
        lines.append(head)
        serving = plan.serving[:12] if plan.serving else "nothing"
        after = run.serving_after[:12] if run.serving_after else "nothing"
        cand = plan.candidate[:12] if plan.candidate else "working tree"
        lines.append(f"  serving {serving} → {after}; candidate {cand}")
        for c in plan.changed_assets:
            extra = f" from {c.old_path}" if c.old_path and c.old_path != c.path else ""
            lines.append(f"  {c.change:<9} {c.asset} ({c.path}){extra}")
        for aid, change in plan.changed_answers:
            lines.append(f"  answer    {aid}: {change}")
        if plan.stale:
            lines.append(f"  stale answers: {len(plan.stale)}")
            for s in plan.stale:
                if explain:
                    lines.append(f"    {s.answer}")
                    lines += [f"      - {r.describe()}" for r in s.reasons]
                else:
                    codes = ", ".join(r.value for r in s.reason_codes)
                    lines.append(f"    {s.answer}: {codes}")
        if plan.self_test:
            lines.append(f"  self-test: {', '.join(plan.self_test)}")
        if run.results or run.self_test:
            lines.append(f"  score: {_fmt_score(run.score)}")
            if run.reach is not None:
                lines.append(f"  reach: {fmt_reach(run.reach)}")
            lines.append(f"  previous score: {_fmt_score(run.previous_score)}")
        for r in [*run.results, *run.self_test]:
            if r.outcome is not Outcome.CORRECT and r.answer not in run.unreached:
                lines += _failure(r)
        if run.cases:
            passed = sum(c.passed for c in run.cases)
            lines.append(f"  behavioural cases: {passed}/{len(run.cases)} passed")
            lines += [f"    FAILED {c.question!r}: {c.detail}" for c in run.cases if not c.passed]
        lines += [f"  {m}" for m in run.messages]
    return "\n".join(lines)
