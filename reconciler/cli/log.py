"""``dst log LENS``: a lens's deployment history and its accuracy trend.

The history is the first-parent walk of ``refs/dst/serving/<lens>`` (DESIGN
§3) interleaved with the blocked and stood-down attempts under
``refs/dst/attempts/<lens>`` (marked ✗, never served) and the verifications of what
served under ``refs/dst/verify/<lens>`` (``dst test``, watch's schedule; marked ○),
newest first. Each entry
shows when it was recorded (UTC, and how long ago), the action, score, accuracy,
wrong-rate and reach, and the source commit's subject and author. The text form
ends with accuracy and wrong-rate sparklines over the deployments and verifications
(oldest → newest); ``--plot out.png`` also draws both lines with matplotlib
(the optional ``plot`` extra). Each line also shows the deployment's reach and,
where the active corpus changed size since the deployment before, a
``[corpus 18 → 17]`` mark (``corpus_change`` in JSON; DESIGN §5).
:mod:`reconciler.cli.app` registers :func:`log`.

Exit codes: 0 shown; 2 bad input (no serving version, matplotlib missing for
``--plot``, an unwritable plot path).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reconciler.cli.common import runtime, short_score
from reconciler.cli.options import EnvOpt, Format, FormatOpt, RepoOpt

if TYPE_CHECKING:
    from reconciler.history import LogEntry


def log(
    lens: Annotated[str, typer.Argument(help="Lens name.")],
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Also draw accuracy and wrong-rate per deployment to this PNG "
            "(needs matplotlib: pip install matplotlib).",
        ),
    ] = None,
    env: EnvOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Deployments, attempts and verifications of a lens, newest first, with its trend."""
    # lazy: reconciler.history loads the engines, which `dst --help` does not need
    from reconciler.history import timeline
    from reconciler.render.trend import corpus_marks, points, summary_lines

    rt = runtime(repo, environment=env)
    rt.environment_config()  # an unknown --env is bad input (exit 2)
    entries = timeline(rt, lens)
    deps = [e.deployment for e in entries if not e.attempt]
    trend = points([(d.oid, d.meta) for d in deps])
    if plot is not None:
        # lazy: matplotlib (the optional plot extra) loads only for --plot
        from reconciler.render.plot import plot_trend

        width, height = plot_trend(lens, trend, plot)
        print(f"plot written to {plot} ({width}×{height} px)", file=sys.stderr)
    marks = corpus_marks(trend)
    if fmt is Format.json:
        obj = _log_object(lens, entries, marks)
        if env is not None:  # the default environment's object stays as it was
            obj = {**obj, "environment": env}
        print(json.dumps(obj, indent=2, default=str))
        return 0
    now = time.time()
    if env is not None:
        print(f"environment {env}")
    for e in entries:
        for line in _entry_lines(e, marks, now):
            print(line)
    for line in summary_lines(trend):
        print(line)
    return 0


def _log_object(lens: str, entries: list[LogEntry], marks: dict[str, str]) -> dict[str, Any]:
    """``dst log --format json``: ``deployments`` (the serving history, as before, plus
    ``kind``, ``recorded_at_iso``, ``source_commit``) and ``history``, deployments and
    attempts interleaved newest first."""
    # lazy: the trend functions load with the renderers, which `dst --help` does not need
    from reconciler.render.trend import rates

    def obj(e: LogEntry) -> dict[str, Any]:
        accuracy, wrong = rates(e.deployment.meta.get("score"))
        return {
            **e.record(),
            "accuracy": accuracy,
            "wrong_rate": wrong,
            "corpus_change": marks.get(e.deployment.oid),
        }

    return {
        "schema_version": 1,
        "command": "log",
        "lens": lens,
        "deployments": [obj(e) for e in entries if not (e.attempt or e.verification)],
        "history": [obj(e) for e in entries],
    }


def _entry_lines(e: LogEntry, marks: dict[str, str], now: float) -> list[str]:
    """Two lines per entry: what and when, then the source commit (attempts marked ✗)."""
    # lazy: reconciler.history loads the engines, which `dst --help` does not need
    from reconciler.history import ago, iso_time
    from reconciler.render.trend import percent, rates

    d, meta = e.deployment, e.deployment.meta
    at = int(meta.get("recorded_at", 0))
    accuracy, wrong = rates(meta.get("score"))
    reach = d.info.reach
    action = str(meta.get("action", ""))
    what = f"{action.upper()} (attempt)" if e.attempt else action
    if e.verification:
        what = f"{action} (verification)"
    head = (
        f"{'✗' if e.attempt else '○' if e.verification else '●'} {d.oid[:12]}  "
        f"{what:<20} "
        f"{iso_time(at)} ({ago(at, now)})  score {short_score(meta.get('score'))}, "
        f"accuracy {percent(accuracy)}, wrong {percent(wrong)}"
        + (f", reach {reach.get('reached', 0)}/{reach.get('total', 0)}" if reach else "")
        + (f"  [{marks[d.oid]}]" if d.oid in marks else "")
    )
    src = e.source
    source = (
        f"    source {src.oid[:12]} “{src.subject}” by {src.author}"
        if src is not None
        else f"    source {str(d.source)[:12]} (not in this clone)"
    )
    lines = [head, source]
    for aid, rate in sorted((meta.get("flake_rates") or {}).items()):
        n, m = rate.get("flaky_samples", 0), rate.get("samples", 0)
        lines.append(f"    flaky: {aid}, flake rate {n}/{m} ({percent(n / m if m else 0.0)})")
    if action == "rollback" and meta.get("rollback_to"):
        lines.append(f"    serves again the content of {str(meta['rollback_to'])[:12]}")
    if e.attempt and meta.get("reason"):
        lines.append(f"    reason: {meta['reason']}")
    return lines
