"""Rendering run reports as text or JSON (pure; never decides the exit code).

Text comes in two layouts. The default is compact, as a dbt user reads a run:
per lens a heading (gate, what changed, how many stale), one line per answer
that ran (``✓ <answer>: correct  1 attempt  0.04s``), the details of failures
only (both executed results once, the block's commands), and one summary line
(action, score, wrong-rate, reach, the previous score when there is one).
``verbose`` restores the full listing (every changed asset, stale answer,
self-test and step). :func:`to_lines` gives the same text as
:data:`Segment` runs with a :data:`Style` each, which the command line turns
into colour; :func:`to_text` is their plain text.

The JSON object is the stable contract of DESIGN §6::

    {"schema_version": 1, "command": ..., "lenses": [{"lens", "gate", "serving_before",
     "serving_after", "candidate", "action", "changed_assets", "stale", "self_test",
     "results", "score", "previous_score", "messages"}]}

plus, additively, ``"reach": {"reached", "total"}`` (``null`` when the run did not
plan the lens's corpus) and, on each result a command timed, ``"seconds"``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from reconciler.results import Action, LensRun, RunReport
from reconciler.state import Outcome

if TYPE_CHECKING:
    from reconciler.suite import AnswerResult  # annotations only: rendering runs nothing

SCHEMA_VERSION = 1
_PUBLIC_SCORE = ("correct", "wrong", "declined", "error", "total")


def _score(counts: Mapping[str, int] | None) -> dict[str, int] | None:
    if counts is None:
        return None
    out = {k: int(counts.get(k, 0)) for k in _PUBLIC_SCORE}
    for extra in ("inconclusive", "unverified", "flaky"):
        out[extra] = int(counts.get(extra, 0))
    return out


def _timed(
    lens: str, results: Sequence[AnswerResult], seconds: Mapping[str, float] | None
) -> list[dict[str, Any]]:
    records = []
    for r in results:
        record = r.record()
        took = (seconds or {}).get(f"{lens}/{r.answer}")
        if took is not None:
            record["seconds"] = round(took, 3)
        records.append(record)
    return records


def lens_object(
    run: LensRun, *, explain: bool = False, seconds: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """One lens's JSON object; ``seconds`` (``{"<lens>/<answer id>": s}``) adds a
    ``"seconds"`` field, the answer's wall-clock time, to each result that has one."""
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
        "self_test": _timed(plan.lens, run.self_test, seconds)
        if run.self_test
        else [{"answer": a, "outcome": None} for a in plan.self_test],
        "results": _timed(plan.lens, run.results, seconds),
        "cases": [c.record() for c in run.cases],
        "score": _score(run.score),
        "reach": run.reach,
        "previous_score": _score(run.previous_score) if run.previous_score else None,
        "starvation": plan.starvation,
        "recorded": run.recorded,
        "messages": list(run.messages),
        "notifications": list(run.notifications),
    }


def to_json(
    report: RunReport, *, explain: bool = False, seconds: Mapping[str, float] | None = None
) -> str:
    """The whole report as one JSON object (one line per key, stable key order);
    ``seconds`` as for :func:`lens_object`."""
    obj = {
        "schema_version": SCHEMA_VERSION,
        "command": report.command,
        "exit_code": report.exit_code,
        "dry_run": report.dry_run,
        "environment": report.environment,
        "messages": report.messages,
        "lenses": [lens_object(r, explain=explain, seconds=seconds) for r in report.lenses],
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


def _detailed(report: RunReport, *, explain: bool = False) -> list[str]:
    """The ``verbose`` layout: per lens, the action, the whole plan and every failure in full."""
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
    return lines


Style = Literal["ok", "fail", "warn", "muted", "strong"]
"""What a span of text means, for the command line to colour: ``ok`` (green),
``fail`` (red), ``warn`` (yellow), ``muted`` (dim), ``strong`` (bold)."""

Segment = tuple[str, "Style | None"]
"""``(text, style)``; ``None`` is plain text."""

Line = tuple[Segment, ...]
"""One output line as segments; its plain text is their concatenation."""

_ACTION_STYLE: dict[Action, Style] = {
    Action.PROMOTED: "ok",
    Action.UNCHANGED: "muted",
    Action.RETIRED: "warn",
    Action.SKIPPED: "warn",
    Action.STOOD_DOWN: "warn",
    Action.BLOCKED: "fail",
    Action.ERROR: "fail",
    Action.VERIFIED: "ok",
    Action.FAILED: "fail",
    Action.RETIRE: "warn",
    Action.ROLLED_BACK: "warn",
}


def _action(report: RunReport, run: LensRun) -> str:
    if report.dry_run and run.action in ("promoted", "retired"):
        return f"WOULD {run.action[:-1].upper()} (dry run)"
    return run.action.upper()


def _heading(run: LensRun) -> Line | None:
    """``<lens> (gate: block): 16 assets added, 19 answers added; 19 stale (never_verified)``."""
    plan = run.plan
    kinds: dict[str, int] = {}
    for c in plan.changed_assets:
        kinds[c.change] = kinds.get(c.change, 0) + 1
    answers: dict[str, int] = {}
    for _, change in plan.changed_answers:
        answers[change] = answers.get(change, 0) + 1
    few = 0 < len(plan.changed_assets) <= 3
    names = f" ({', '.join(c.asset for c in plan.changed_assets)})" if few else ""
    parts = [", ".join(f"{n} asset(s) {k}" for k, n in sorted(kinds.items())) + names]
    parts.append(", ".join(f"{n} answer(s) {k}" for k, n in sorted(answers.items())))
    if plan.stale:
        reasons = sorted({r.value for s in plan.stale for r in s.reason_codes})
        parts.append(f"{len(plan.stale)} stale ({', '.join(reasons)})")
    if plan.self_test:
        parts.append(f"{len(plan.self_test)} to self-test")
    said = "; ".join(p for p in parts if p)
    if not said:
        return None
    cand = plan.candidate[:12] if plan.candidate else "working tree"
    return ((f"{plan.lens}", "strong"), (f" (gate: {plan.gate}, candidate {cand}): {said}", None))


def _mark(run: LensRun, r: AnswerResult) -> Segment:
    if r.outcome is Outcome.CORRECT:
        return ("✓", "ok")
    if r.answer in run.unreached:
        return ("○", "warn")
    return ("✗", "fail")


def _answer_lines(run: LensRun, seconds: Mapping[str, float] | None, verbose: bool) -> list[Line]:
    """One line per answer that ran; failures followed by their details."""
    ran = [(r, False) for r in run.results] + [(r, True) for r in run.self_test]
    width = max((len(f"{r.answer}: {r.outcome.value}") for r, _ in ran), default=0)
    lines: list[Line] = []
    for r, self_tested in ran:
        mark = _mark(run, r)
        head = f"{r.answer}: {r.outcome.value}"
        tries = len(r.attempts)
        info = [f"{tries} attempt{'s' if tries != 1 else ''}"]
        took = (seconds or {}).get(f"{run.plan.lens}/{r.answer}")
        if took is not None:
            info.append(f"{took:.2f}s")
        if self_tested:
            info.append("self-test")
        if r.flaky:
            info.append("flaky")
        if r.answer in run.unreached:
            info.append("untested: unreached by the generator")
        lines.append(
            (
                ("  ", None),
                mark,
                (" ", None),
                (head, mark[1] if mark[1] != "ok" else None),
                (" " * (width - len(head) + 2), None),
                ("  ".join(info), "muted"),
            )
        )
        if r.outcome is not Outcome.CORRECT and r.answer not in run.unreached:
            body = _failure(r)[1:] if verbose else _failure_brief(r)
            lines += [((text, None),) for text in body]
    return lines


def _failure_brief(r: AnswerResult) -> list[str]:
    """A failure's details: why, the generated SQL, both executed results (once each)."""
    lines = [f"    {r.detail}"]
    last = r.attempts[-1] if r.attempts else {}
    sql = (last.get("generation") or {}).get("sql")
    if sql:
        lines.append("    generated SQL: " + " ".join(str(sql).split()))
    if r.oracle is not None or r.generated is not None:
        lines.append("    oracle result:")
        lines += _table(r.oracle, "      ")
        lines.append("    generated result:")
        lines += _table(r.generated, "      ")
    return lines


def _summary(report: RunReport, run: LensRun) -> Line:
    """``<lens>: PROMOTED → 4437ce3ab4dc  score: … · reach: … · previous score: …``."""
    plan = run.plan
    segs: list[Segment] = [
        (f"{plan.lens}: ", "strong"),
        (_action(report, run), _ACTION_STYLE.get(run.action, "strong")),
    ]
    before = plan.serving[:12] if plan.serving else "nothing"
    after = run.serving_after[:12] if run.serving_after else "nothing"
    where = f"serving {before}" if before == after else f"serving {before} → {after}"
    segs.append((f"  (gate: {plan.gate}; {where})", "muted"))
    if run.results or run.self_test:
        score = run.score
        bad = score.get("wrong", 0) + score.get("error", 0) + score.get("inconclusive", 0)
        segs += [("  score: ", None), (_fmt_score(score), "fail" if bad else "ok")]
        if run.reach is not None and run.reach.get("total"):
            n, m = run.reach.get("reached", 0), run.reach["total"]
            segs.append((f" · reach: {n}/{m} ({100 * n / m:.0f}%)", None))
        if run.previous_score:
            segs.append((f" · previous score: {_fmt_brief(run.previous_score)}", "muted"))
    return tuple(segs)


def _fmt_brief(s: Mapping[str, int]) -> str:
    """``21/21 correct (100%), wrong 0 (0%)``."""
    total = s.get("total", 0)
    if not total:
        return "n/a"
    correct, wrong = s.get("correct", 0), s.get("wrong", 0)
    acc, rate = 100 * correct / total, 100 * wrong / total
    return f"{correct}/{total} correct ({acc:.0f}%), wrong {wrong} ({rate:.0f}%)"


def _stale_lines(run: LensRun, explain: bool) -> list[Line]:
    """The plan's stale answers, one line each with its reasons (the chain with ``explain``)."""
    lines: list[Line] = []
    for s in run.plan.stale:
        codes = ", ".join(r.value for r in s.reason_codes)
        lines.append((("  ", None), ("~ ", "warn"), (f"{s.answer}: ", None), (codes, "muted")))
        if explain:
            lines += [((f"      - {r.describe()}", None),) for r in s.reasons]
    return lines


def _message_style(message: str) -> Style | None:
    if message.startswith(("WARNING", "lost reach", "untested")) or "SKIPPED" in message:
        return "warn"
    if message.startswith(("gate BLOCKED", "gate STOOD DOWN")):
        return "fail"
    return None


def _compact(
    report: RunReport, *, explain: bool, seconds: Mapping[str, float] | None
) -> list[Line]:
    lines: list[Line] = [((m, _message_style(m)),) for m in report.messages]
    for run in report.lenses:
        heading = _heading(run)
        if heading is not None:
            lines.append(heading)
        if run.results or run.self_test:
            lines += _answer_lines(run, seconds, verbose=False)
        else:
            lines += _stale_lines(run, explain)
        if run.cases:
            passed = sum(c.passed for c in run.cases)
            style: Style = "ok" if passed == len(run.cases) else "fail"
            lines.append(
                (("  behavioural cases: ", None), (f"{passed}/{len(run.cases)} passed", style))
            )
            lines += [
                ((f"    FAILED {c.question!r}: {c.detail}", "fail"),)
                for c in run.cases
                if not c.passed
            ]
        messages: list[Line] = [((f"  {m}", _message_style(m)),) for m in run.messages]
        if heading is None and not (run.results or run.self_test or run.cases):
            lines += [_summary(report, run), *messages]  # nothing above to conclude
        else:
            lines += [*messages, _summary(report, run)]
    return lines


def to_lines(
    report: RunReport,
    *,
    explain: bool = False,
    verbose: bool = False,
    seconds: Mapping[str, float] | None = None,
) -> list[Line]:
    """The text report as styled lines (see the module docstring for the layouts).

    Args:
        report: the run report.
        explain: each stale answer's reasons with their asset chains.
        verbose: the full listing instead of the compact layout.
        seconds: ``{"<lens>/<answer id>": wall-clock seconds}`` of answers that ran,
            shown on their lines when given.

    Returns:
        Lines of ``(text, style)`` segments, in print order.
    """
    if not verbose:
        return _compact(report, explain=explain, seconds=seconds)
    return [((line, None),) for line in _detailed(report, explain=explain)]


def to_text(
    report: RunReport,
    *,
    explain: bool = False,
    verbose: bool = False,
    seconds: Mapping[str, float] | None = None,
) -> str:
    """The text report as plain text (:func:`to_lines` without styles)."""
    lines = to_lines(report, explain=explain, verbose=verbose, seconds=seconds)
    return "\n".join("".join(text for text, _ in line) for line in lines)
