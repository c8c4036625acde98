"""GitHub Actions: annotations, the job summary and JUnit (pure rendering).

Rendering is pure: :func:`to_github` turns a :class:`~reconciler.results.RunReport`
into workflow-command text for stdout and a Markdown job summary;
:func:`reconciler.render.junit.to_junit` into JUnit XML. Neither decides the exit code.

Rules taken from GitHub's documentation of workflow commands:

* data (the message after ``::``) escapes ``%``, ``\\r`` and ``\\n`` as ``%25``,
  ``%0D``, ``%0A``; a property value (``file=``, ``title=``) also escapes ``:``
  and ``,`` as ``%3A`` and ``%2C``, because they delimit the command.
* a step shows at most 10 error, 10 warning and 10 notice annotations; the rest
  are dropped silently. So at most 10 of each kind are emitted, and when more
  exist the tenth says how many were left out (the job log has them all).
* a step summary is capped at 1 MiB; ours stops at ``summary_limit_bytes``
  with a visible truncation line.
* ``::stop-commands::TOKEN`` … ``::TOKEN::`` turns command processing off, so
  free text (answer details, SQL, warehouse cells) cannot inject a command.

JUnit decisions: one ``testsuite`` per lens, one ``testcase`` per answer that ran
(gated and self-test) plus a ``gate`` case per lens that fails when the lens
blocked, stood down or errored. A gated answer that is ``wrong``, ``flaky``,
``inconclusive``, ``error`` or ``declined`` is a ``<failure>`` whatever the gate
mode: JUnit reports outcomes, the exit code reports the policy, and ``declined``
counts against the gate (DESIGN §5), so showing it as skipped would paint a
blocked gate green. The exception is an *unreached* answer (declined, never
reproduced, so it does not block): a warning annotation and ``<skipped>``,
untested. A self-test divergence is an alert: ``<system-out>``, not a
failure — unless the answer's own certified SQL does not run, which the gate
treats as bad input. ``<skipped>`` marks stale answers the suite did not run
(gate ``off`` or stood down).

The base of a pull request is found by :mod:`reconciler.git.base`.
"""

from __future__ import annotations

import html
import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.errors import DstError, LensLoadError, LensLoadErrors
from reconciler.loader import load_yaml
from reconciler.render.text import to_text
from reconciler.results import LensRun, RunReport
from reconciler.state import Outcome

if TYPE_CHECKING:
    from reconciler.suite import AnswerResult  # annotations only: rendering runs nothing

ANNOTATIONS_PER_KIND = 10
SUMMARY_LIMIT_BYTES = 512_000
TABLE_ROWS = 10
LIST_ROWS = 50
CELL_CHARS = 120
_LEVELS = ("error", "warning", "notice")
FAILING_ACTIONS = ("blocked", "stood_down", "error")
_ICONS = {
    "blocked": "❌",
    "stood_down": "⛔",
    "error": "💥",
    "promoted": "✅",
    "unchanged": "➖",
    "skipped": "⏭️",
    "planned": "📝",
    "retire": "🗄️",
    "retired": "🗄️",
}
# XML 1.0 forbids most control characters; a warehouse cell may hold any of them.


@dataclass(frozen=True)
class Where:
    """Where an answer lives: repository-relative file and the line of its ``sql:`` key."""

    path: str
    line: int | None = None


Locations = Mapping[tuple[str, str], Where]


@dataclass(frozen=True)
class Annotation:
    """One workflow-command annotation.

    Attributes:
        level: ``error``, ``warning`` or ``notice``.
        lens: the lens it belongs to (for grouping).
        title: short title (a property: escaped as one).
        message: the text; may span lines.
        file: repository-relative path, when the finding has one.
        line: 1-based line in ``file``.
    """

    level: str
    lens: str
    title: str
    message: str
    file: str | None = None
    line: int | None = None

    def render(self) -> str:
        """The ``::level file=…,line=…,title=…::message`` line."""
        return command(self.level, self.message, file=self.file, line=self.line, title=self.title)


def escape_data(text: str) -> str:
    """Escape workflow-command data: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value: data escapes plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    """One workflow command line; ``None`` properties are left out."""
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def error_commands(exc: DstError, title: str) -> list[str]:
    """The ``::error`` lines for an error that ended a command, one per file at fault.

    A lens load error points at its file and line (``file=…,line=…``); several
    (:class:`~reconciler.errors.LensLoadErrors`) give one line each; any other
    error is one line with only its title.
    """
    errors: tuple[DstError, ...] = exc.errors if isinstance(exc, LensLoadErrors) else (exc,)
    out = []
    for error in errors:
        if isinstance(error, LensLoadError):
            where: dict[str, str | int | None] = {"file": error.path, "line": error.line}
        else:
            where = {}
        out.append(command("error", error.render(), **where, title=title))
    return out


def locate(
    report: RunReport,
    lens_files: Mapping[str, Mapping[str, str]],
    read: Callable[[str], bytes | None],
) -> dict[tuple[str, str], Where]:
    """Find the file and ``sql:`` line of every answer that ran.

    Args:
        report: the run report.
        lens_files: ``{lens: {"answers/<id>": repository-relative path}}`` —
            a lens's ``sources`` with its root prefixed.
        read: returns a file's bytes at the candidate, ``None`` if absent.

    Returns:
        ``{(lens, answer id): Where}`` for each answer whose file is known; the
        line is ``None`` when the file cannot be read or parsed.
    """
    out: dict[tuple[str, str], Where] = {}
    for run in report.lenses:
        files = lens_files.get(run.plan.lens, {})
        for result in [*run.results, *run.self_test]:
            path = files.get(f"answers/{result.answer}")
            if path is None:
                continue
            line: int | None = None
            content = read(path)
            if content is not None:
                try:
                    line = load_yaml(path, content).line_of(("sql",))
                except LensLoadError:
                    line = None
            out[(run.plan.lens, result.answer)] = Where(path, line)
    return out


# ---------------------------------------------------------------- annotations


def _pct(part: int, total: int) -> str:
    return f"{100 * part / total:.1f}%" if total else "n/a"


def score_line(score: Mapping[str, int] | None) -> str:
    """``18/21 correct (85.7%) · wrong 3 (14.3%)`` (plus declined/error when non-zero)."""
    if not score or not score.get("total"):
        return "n/a"
    total, correct, wrong = score["total"], score.get("correct", 0), score.get("wrong", 0)
    text = (
        f"{correct}/{total} correct ({_pct(correct, total)}) · wrong {wrong} ({_pct(wrong, total)})"
    )
    others = [
        f"{key} {score[key]}"
        for key in ("flaky", "declined", "error", "inconclusive", "unverified")
        if score.get(key)
    ]
    return text + (" · " + ", ".join(others) if others else "")


def reach_line(reach: Mapping[str, int] | None) -> str:
    """``2/18 reproduced (11.1%)``: active answers the generator reproduces, or ``n/a``."""
    if not reach or not reach.get("total"):
        return "n/a"
    n, m = reach.get("reached", 0), reach["total"]
    return f"{n}/{m} reproduced ({_pct(n, m)})"


def _action(run: LensRun, dry_run: bool) -> str:
    if dry_run and run.action in ("promoted", "retired"):
        return f"would {run.action[:-1]} (dry run)"
    return run.action.replace("_", " ")


def generated_sql(result: AnswerResult) -> str | None:
    last = result.attempts[-1] if result.attempts else {}
    sql = (last.get("generation") or {}).get("sql")
    return " ".join(str(sql).split()) if sql else None


def _rows_note(result: AnswerResult) -> str:
    def count(preview: Mapping[str, Any] | None) -> str:
        return "no result" if not preview else f"{preview.get('row_count', 0)} row(s)"

    return f"oracle: {count(result.oracle)}; generated: {count(result.generated)}"


def _answer_annotation(
    run: LensRun, result: AnswerResult, level: str, kind: str, locations: Locations
) -> Annotation:
    where = locations.get((run.plan.lens, result.answer))
    lines = [result.detail]
    sql = generated_sql(result)
    if sql:
        lines.append(f"generated SQL: {sql[:500]}")
    lines.append(_rows_note(result))
    return Annotation(
        level,
        run.plan.lens,
        f"dst {kind}: {run.plan.lens}/{result.answer} is {result.outcome.value}",
        "\n".join(lines),
        where.path if where else None,
        where.line if where else None,
    )


def lens_annotations(run: LensRun, locations: Locations, *, dry_run: bool) -> list[Annotation]:
    """A lens's annotations, most severe first.

    One headline per lens (error when it blocked, stood down or errored;
    warning when it promotes with findings, a skipped gate or starvation;
    notice otherwise), then one per failing answer at its file and ``sql:``
    line: errors under ``block``, warnings under ``warn``; self-test divergences
    are warnings (alerts), a self-test answer whose certified SQL does not run
    fails like a gated one.
    """
    lens, plan = run.plan.lens, run.plan
    blocking = "error" if plan.gate == "block" else "warning"
    out: list[Annotation] = []
    for r in run.results:
        if r.answer in run.unreached:
            out.append(_answer_annotation(run, r, "warning", "untested", locations))
        elif r.outcome is not Outcome.CORRECT:
            out.append(_answer_annotation(run, r, blocking, "gate", locations))
    for r in run.self_test:
        if r.answer in run.unreached:
            out.append(_answer_annotation(run, r, "warning", "untested", locations))
        elif r.oracle_failed:
            out.append(_answer_annotation(run, r, blocking, "certified SQL", locations))
        elif r.outcome is not Outcome.CORRECT:
            out.append(_answer_annotation(run, r, "warning", "self-test alert", locations))
    loud = any(m.startswith(("WARNING", "gate SKIPPED")) for m in run.messages)
    if run.action in FAILING_ACTIONS:
        level = "error"
    elif loud or any(a.level != "notice" for a in out):
        level = "warning"
    else:
        level = "notice"
    text = [f"{lens}: {_action(run, dry_run)} (gate: {plan.gate})"]
    if run.results or run.self_test:
        text.append(f"score {score_line(run.score)}; previous {score_line(run.previous_score)}")
        if run.reach is not None:
            text.append(f"reach {reach_line(run.reach)}")
    text += run.messages
    head = Annotation(level, lens, f"dst {lens}: {_action(run, dry_run)}", "\n".join(text))
    return sorted([head, *out], key=lambda a: _LEVELS.index(a.level))


def cap_annotations(
    annotations: Sequence[Annotation], limit: int = ANNOTATIONS_PER_KIND
) -> tuple[list[Annotation], dict[str, int]]:
    """Keep what GitHub will show: at most ``limit`` per level, in order.

    Returns:
        ``(kept, {level: how many were left out})``. When a level overflows,
        ``limit - 1`` are kept so that the "N more" annotation is the last one shown.
    """
    totals = Counter(a.level for a in annotations)
    shown: Counter[str] = Counter()
    kept: list[Annotation] = []
    for a in annotations:
        room = limit if totals[a.level] <= limit else limit - 1
        if shown[a.level] < room:
            kept.append(a)
            shown[a.level] += 1
    return kept, {lvl: totals[lvl] - shown[lvl] for lvl in _LEVELS if totals[lvl] > shown[lvl]}


def _severity(annotations: Iterable[Annotation]) -> int:
    return min((_LEVELS.index(a.level) for a in annotations), default=len(_LEVELS))


def workflow_commands(
    report: RunReport, locations: Locations | None = None, *, token: str | None = None
) -> str:
    """The stdout of ``--format github``: per lens a ``::group::`` with its annotations
    and its text report (command processing stopped around the free text).

    Lenses come most severe first, and so do annotations within a lens.
    """
    token = token or secrets.token_hex(16)
    per_lens = [
        (run, lens_annotations(run, locations or {}, dry_run=report.dry_run))
        for run in report.lenses
    ]
    per_lens.sort(key=lambda item: (_severity(item[1]), item[0].plan.lens))
    kept, overflow = cap_annotations([a for _, anns in per_lens for a in anns])
    kept_ids = {id(a) for a in kept}
    lines = _quoted(report.messages, token)
    for run, anns in per_lens:
        lines.append(command("group", f"dst {run.plan.lens}: {_action(run, report.dry_run)}"))
        lines += [a.render() for a in anns if id(a) in kept_ids]
        single = RunReport(
            report.command, [run], [], report.exit_code, report.dry_run, report.environment
        )
        lines += _quoted(to_text(single).splitlines(), token)
        lines.append(command("endgroup"))
    for level, count in overflow.items():
        lines.append(
            command(
                level,
                f"{count} more {level} annotation(s) not shown: GitHub shows "
                f"{ANNOTATIONS_PER_KIND} per step; the job log and summary list every one",
                title=f"dst: {count} more {level}(s)",
            )
        )
    blocked = [r.plan.lens for r in report.lenses if r.action in FAILING_ACTIONS]
    verdict = f"did not pass: {', '.join(blocked)}" if blocked else "passed"
    lines.append(f"dst {report.command}: {verdict} (exit {report.exit_code})")
    return "\n".join(lines) + "\n"


def _quoted(text: Sequence[str], token: str) -> list[str]:
    if not text:
        return []
    return [command("stop-commands", token), *text, f"::{token}::"]


# ---------------------------------------------------------------- job summary


def _md_cell(value: object) -> str:
    text = f"{value:.12g}" if isinstance(value, float) else "NULL" if value is None else str(value)
    if len(text) > CELL_CHARS:
        text = text[: CELL_CHARS - 1] + "…"
    return html.escape(text).replace("|", "&#124;").replace("\r", "").replace("\n", "<br>")


def _md_table(
    header: Sequence[object],
    rows: Sequence[Sequence[object]],
    total: int | None = None,
    limit: int = TABLE_ROWS,
) -> str:
    if not header:
        return "_(no columns)_\n"
    lines = [
        "| " + " | ".join(_md_cell(h) for h in header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows[:limit]]
    total = len(rows) if total is None else total
    if total > min(len(rows), limit):
        lines.append(f"\n_… {total - min(len(rows), limit)} more row(s)_")
    return "\n".join(lines) + "\n"


def _fence(code: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{code.strip()}\n{ticks}\n"


def _result_table(title: str, preview: Mapping[str, Any] | None) -> str:
    if not preview:
        return f"**{title}**: no result\n"
    count = int(preview.get("row_count", 0))
    more = " (over the row cap)" if preview.get("truncated") else ""
    rows = preview.get("rows", [])
    return f"**{title}** ({count} row(s){more})\n\n" + _md_table(
        preview.get("columns", []), rows, count
    )


def _failure_md(run: LensRun, result: AnswerResult, kind: str, locations: Locations) -> str:
    where = locations.get((run.plan.lens, result.answer))
    parts = [f"#### {kind} `{result.answer}` — {result.outcome.value}\n"]
    if where is not None:
        at = f" line {where.line}" if where.line else ""
        parts.append(f"`{where.path}`{at}\n")
    parts.append(_md_cell(result.detail) + "\n")
    parts.append(_result_table("Oracle result", result.oracle))
    parts.append(_result_table("Generated result", result.generated))
    hidden: list[str] = []
    last = result.attempts[-1] if result.attempts else {}
    diff = last.get("comparison") or {}
    for key, title in (
        ("missing", "Missing rows (oracle only)"),
        ("extra", "Extra rows (generated only)"),
    ):
        if diff.get(key):
            columns = (result.oracle or {}).get("columns", [])
            hidden.append(
                f"**{title}**\n\n" + _md_table(columns, diff[key], diff.get(f"{key}_count"))
            )
    sql = generated_sql(result)
    if sql:
        hidden.append("**Generated SQL**\n\n" + _fence(sql, "sql"))
    if hidden:
        parts.append(
            "<details><summary>Differing rows and generated SQL</summary>\n\n"
            + "\n".join(hidden)
            + "\n</details>\n"
        )
    return "\n".join(parts)


def _lens_md(run: LensRun, locations: Locations, dry_run: bool) -> list[str]:
    plan = run.plan
    icon = _ICONS.get(run.action, "•")
    serving = f"`{plan.serving[:12]}`" if plan.serving else "nothing"
    candidate = f"`{plan.candidate[:12]}`" if plan.candidate else "the working tree"
    head = [
        f"### {icon} {plan.lens} — {_action(run, dry_run)} (gate: `{plan.gate}`)\n",
        f"Serving {serving}; candidate {candidate}.\n",
    ]
    if run.messages:
        head.append("\n".join(f"> {_md_cell(m)}" for m in run.messages) + "\n")
    reach = f"  \n**Reach** {reach_line(run.reach)}" if run.reach is not None else ""
    head.append(
        f"**Score** {score_line(run.score)}{reach}  \n"
        f"**Previous** {score_line(run.previous_score)}\n"
    )
    chunks = ["\n".join(head)]
    if plan.changed_assets:
        assets = [(c.asset, c.change, c.path) for c in plan.changed_assets]
        chunks.append(
            f"**Changed assets** ({len(assets)})\n\n"
            + _md_table(("asset", "change", "file"), assets, limit=LIST_ROWS)
        )
    if plan.stale:
        stale = [(s.answer, ", ".join(r.value for r in s.reason_codes)) for s in plan.stale]
        chunks.append(
            f"**Stale answers** ({len(stale)})\n\n"
            + _md_table(("answer", "reasons"), stale, limit=LIST_ROWS)
        )
    for r in run.results:
        if r.outcome is not Outcome.CORRECT and r.answer not in run.unreached:
            chunks.append(_failure_md(run, r, "✗ failing", locations))
    for r in run.self_test:
        if r.outcome is not Outcome.CORRECT and r.answer not in run.unreached:
            kind = "✗ certified SQL broken:" if r.oracle_failed else "⚠️ self-test alert"
            chunks.append(_failure_md(run, r, kind, locations))
    return chunks


def job_summary(
    report: RunReport,
    locations: Locations | None = None,
    *,
    limit_bytes: int = SUMMARY_LIMIT_BYTES,
    title: str | None = None,
) -> str:
    """The Markdown job summary, at most ``limit_bytes`` bytes of UTF-8.

    An overview table (per lens: action, gate, score and previous score with
    accuracy and wrong-rate, stale and changed counts) comes first, then each
    lens most severe first: messages, changed assets, stale answers, and every
    failing answer with both executed results. Sections are added whole until
    the next would pass the limit; then a truncation line says how many were left out.
    """
    locations = locations or {}
    runs = sorted(
        report.lenses,
        key=lambda r: (_severity(lens_annotations(r, {}, dry_run=report.dry_run)), r.plan.lens),
    )
    blocked = [r.plan.lens for r in runs if r.action in FAILING_ACTIONS]
    verdict = f"❌ did not pass: {', '.join(blocked)}" if blocked else "✅ passed"
    heading = title or f"dst {report.command}"
    intro = [f"## {_md_cell(heading)}: {verdict}\n"]
    if report.dry_run:
        intro.append("Dry run: nothing was promoted.\n")
    intro += [f"- {_md_cell(m)}" for m in report.messages]
    if runs:
        rows = [
            (
                f"{_ICONS.get(r.action, '')} {r.plan.lens}",
                _action(r, report.dry_run),
                r.plan.gate,
                score_line(r.score),
                score_line(r.previous_score),
                len(r.plan.stale),
                len(r.plan.changed_assets),
            )
            for r in runs
        ]
        header = ("lens", "action", "gate", "score", "previous score", "stale", "changed assets")
        intro.append("\n" + _md_table(header, rows))
    else:
        intro.append("\nNo lens to check.\n")
    chunks = ["\n".join(intro)]
    for r in runs:
        chunks += _lens_md(r, locations, report.dry_run)
    return _fit(chunks, limit_bytes)


def _fit(chunks: Sequence[str], limit_bytes: int) -> str:
    out: list[str] = []
    used = 0
    for i, chunk in enumerate(chunks):
        size = len(chunk.encode()) + 1
        left = len(chunks) - i - 1
        reserve = len(_truncated(len(chunks), limit_bytes).encode()) if left else 0
        if used + size + reserve > limit_bytes:
            marker = _truncated(len(chunks) - i, limit_bytes)
            if used + len(marker.encode()) > limit_bytes:
                return marker.encode()[: max(0, limit_bytes)].decode(errors="ignore")
            return "\n".join(out) + ("\n" if out else "") + marker
        out.append(chunk)
        used += size
    return "\n".join(out) + "\n"


def _truncated(left: int, limit_bytes: int) -> str:
    return (
        f"\n---\n**⚠️ summary truncated**: {left} more section(s) did not fit in "
        f"{limit_bytes} bytes; the job log has the full report.\n"
    )


def to_github(
    report: RunReport,
    *,
    locations: Locations | None = None,
    summary_limit_bytes: int = SUMMARY_LIMIT_BYTES,
    title: str | None = None,
    token: str | None = None,
) -> tuple[str, str]:
    """``(workflow-command text for stdout, Markdown job summary)``.

    Args:
        report: the run report.
        locations: answer files and ``sql:`` lines (:func:`locate`).
        summary_limit_bytes: byte budget of the summary (GitHub allows 1 MiB per step).
        title: the summary heading (default ``dst <command>``).
        token: the ``stop-commands`` token (random by default; fixed in tests).
    """
    return (
        workflow_commands(report, locations, token=token),
        job_summary(report, locations, limit_bytes=summary_limit_bytes, title=title),
    )


# ---------------------------------------------------------------- JUnit
