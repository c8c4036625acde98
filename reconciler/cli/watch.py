"""``dst watch``: the long-running mode's command line and its verdict lines.

It uses the shared options and renderer (:mod:`reconciler.cli.options`,
:mod:`reconciler.cli.common`); :mod:`reconciler.cli.app` registers :func:`watch`.

Exit codes: 0 stopped (SIGTERM) or, with ``--once``, every lens would promote or
is unchanged; 1 with ``--once`` when a lens blocks or stands down; 2 bad input
(a lens that does not load, a bad flag or ``DST_EVAL_INTERVAL_HOURS``); 130
interrupted (Ctrl-C).
"""

from __future__ import annotations

import json
import math
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reconciler.cli.common import emit, runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt, WarehouseOpt
from reconciler.errors import UsageError

if TYPE_CHECKING:
    from reconciler.results import LensRun
    from reconciler.watch import Verdict

INTERVAL_ENV = "DST_EVAL_INTERVAL_HOURS"
DEFAULT_INTERVAL_HOURS = 24.0


def interval_hours(env: Mapping[str, str]) -> float:
    """``DST_EVAL_INTERVAL_HOURS`` as hours (default 24; 0 disables; fractions allowed).

    Raises:
        UsageError: the value is not a finite, non-negative number.
    """
    raw = env.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_HOURS
    try:
        hours = float(raw)
    except ValueError:
        hours = math.nan
    if not (math.isfinite(hours) and hours >= 0):
        raise UsageError(
            f"{INTERVAL_ENV}={raw!r} is not a number of hours",
            fix=f"set {INTERVAL_ENV} to the hours between full-suite runs (e.g. 24 or 0.5); "
            "0 disables them",
        )
    return hours


def _lens_line(run: LensRun, dry_run: bool) -> list[str]:
    action = str(run.action)
    if dry_run and action in ("promoted", "retired"):
        action = f"would {action[:-1]}"
    parts = [f"{run.plan.lens}: {action.replace('_', ' ')}"]
    score = run.score
    if score.get("total"):
        parts.append(f"{score.get('correct', 0)}/{score['total']} correct")
        if score.get("wrong"):
            parts.append(f"{score['wrong']} wrong")
    untested = set(run.unreached)
    failing = [
        r.answer for r in run.results if r.outcome.value != "correct" and r.answer not in untested
    ]
    alerts = [
        r.answer for r in run.self_test if r.outcome.value != "correct" and r.answer not in untested
    ]
    if failing:
        parts.append("failing: " + ", ".join(failing))
    if alerts:
        parts.append("self-test alerts: " + ", ".join(alerts))
    if untested:
        parts.append("unreached: " + ", ".join(run.unreached))
    extra: list[str] = []
    notes = [m for m in run.messages if not m.startswith(("self-test ALERT", "already serving"))]
    if notes and not failing:
        first, *rest = notes[0].splitlines()
        parts.append(f"— {first if len(first) <= 160 else first[:157] + '...'}")
        if run.action == "error":
            extra = [f"    {line.strip()}" for line in rest]
    return ["  " + "  ".join(parts), *extra]


def verdict_lines(verdict: Verdict) -> list[str]:
    """The compact text form: a header (time, trigger, what changed), one line per lens.

    A lens line holds the action (``would promote`` for a working-tree check
    that passes), the standing score, the failing answers, self-test alerts,
    and otherwise the first message (why it stood down, did not load …).
    """
    stamp = time.strftime("%H:%M:%S", time.localtime(verdict.at))
    what: str = verdict.trigger
    if verdict.source is not None:
        what += f" {verdict.source[:12]}"
    if verdict.paths:
        more = len(verdict.paths) - 1
        what += f": {verdict.paths[0]}" + (f" (+{more} more)" if more else "")
    if verdict.trigger == "schedule":
        what += ": full suite of every serving lens"
    lines = [f"[{stamp}] {what}"]
    lines += [f"  {m}" for m in verdict.report.messages]
    for run in verdict.report.lenses:
        lines += _lens_line(run, verdict.report.dry_run)
    return lines


def verdict_json(verdict: Verdict) -> str:
    """One line of JSON: the report's object (DESIGN §6) plus what triggered it.

    ``command`` is ``watch``; added keys: ``run`` (the report's own command:
    ``watch``, ``apply`` or ``test``), ``trigger``, ``paths``, ``source`` and
    ``at`` (seconds since the epoch).
    """
    # lazy: the renderer loads the report model; only --format json needs it here
    from reconciler.render.text import to_json

    obj = json.loads(to_json(verdict.report))
    obj.update(
        command="watch",
        run=verdict.report.command,
        trigger=verdict.trigger,
        paths=list(verdict.paths),
        source=verdict.source,
        at=verdict.at,
    )
    return json.dumps(obj, default=str)


def print_verdict(verdict: Verdict, *, as_json: bool = False) -> None:
    """Print a verdict to stdout: compact text, or one JSON line."""
    text = verdict_json(verdict) if as_json else "\n".join(verdict_lines(verdict))
    # A reader that went away (`dst watch | head`) raises BrokenPipeError out of
    # the loop; the CLI boundary ends quietly with 0, as for every command.
    print(text, flush=True)


def watch(
    poll: Annotated[
        bool,
        typer.Option(
            "--poll",
            help="Poll the filesystem instead of using change notifications "
            "(network and FUSE mounts are detected and polled anyway).",
        ),
    ] = False,
    reconcile: Annotated[
        bool,
        typer.Option(
            "--reconcile",
            help="Follow a branch and apply each new commit once (a blocked commit is "
            "not retried until another arrives) instead of checking the working tree.",
        ),
    ] = False,
    branch: Annotated[
        str | None,
        typer.Option("--branch", help="Branch --reconcile follows (default: the current one)."),
    ] = None,
    debounce_ms: Annotated[
        int,
        typer.Option(
            "--debounce-ms", min=0, help="Quiet time after the last edit before a check (ms)."
        ),
    ] = 300,  # watch.DEFAULT_DEBOUNCE_MS; imported lazily, like every command's engine
    once: Annotated[
        bool,
        typer.Option(
            "--once", help="Check the working tree once, print the verdict and exit (0, 1, 2)."
        ),
    ] = False,
    warehouse: WarehouseOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Re-plan and gate the working tree on every edit; re-verify serving lenses on a schedule.

    Nothing is promoted unless --reconcile is given. The full suite of every
    serving lens re-runs every DST_EVAL_INTERVAL_HOURS (default 24, 0 disables)
    and is recorded under refs/dst/verify/ (never moving a serving ref). With
    --format json every run prints one JSON line.
    """
    # lazy: the reconcile loads the engines, which `dst --help` does not need
    from reconciler.reconcile import check_worktree

    if branch is not None and not reconcile:
        raise UsageError("--branch only applies with --reconcile", fix="add --reconcile")
    if once and reconcile:
        raise UsageError(
            "--once checks the working tree; it does not follow a branch",
            fix="for a one-off apply of a branch use `dst apply --to BRANCH`",
        )
    rt = runtime(repo, warehouse)
    if once:
        try:
            return emit(check_worktree(rt), fmt)
        finally:
            rt.close()
    follow = _Follow(poll, reconcile, branch, debounce_ms)
    return _loop(rt, follow, as_json=fmt is Format.json)


@dataclass(frozen=True)
class _Follow:
    """How the loop watches: ``--poll``, ``--reconcile``, ``--branch``, ``--debounce-ms``."""

    poll: bool
    reconcile: bool
    branch: str | None
    debounce_ms: int


def _loop(rt: Any, follow: _Follow, *, as_json: bool) -> int:
    """Run the watch loop until SIGTERM (exit 0) or Ctrl-C (raised; the boundary's 130)."""
    # lazy: watch mode loads watchfiles and the reconcile, which `dst --help` does not need
    from reconciler import watch as watching

    hours = interval_hours(rt.env)
    stop = threading.Event()

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        # Finish the run in progress, then leave the loop like a stop request.
        stop.set()

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_term) if main else None
    try:
        settings = watching.WatchSettings(
            interval_hours=hours,
            debounce_ms=follow.debounce_ms,
            poll=True if follow.poll else None,
            reconcile_mode=follow.reconcile,
            branch=follow.branch,
        )
        return watching.watch(
            rt,
            settings,
            stop=stop,
            on_verdict=lambda v: print_verdict(v, as_json=as_json),
        )
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
