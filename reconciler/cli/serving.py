"""``dst status`` and ``dst rollback``: what serves, and serving an earlier deployment again.

``status`` lists each lens's serving deployment and, when newer, its last
attempt with the reason, plus any lock file left under ``refs/dst/``; ``rollback``
writes a new deployment commit whose content is an older one's (DESIGN §3).
Exit codes: 0 shown or rolled back; 2 bad input (no such lens or deployment).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from reconciler.cli.common import emit, runtime, short_score
from reconciler.cli.options import Format, FormatOpt, RepoOpt


def status(repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> int:
    """Serving version and last attempt of every lens, and any lock file left on refs/dst/."""
    # lazy: the serving state readers load the engines; `dst --help` does not need them
    from reconciler.git.locks import ref_locks
    from reconciler.git.sync import UNKNOWN_STATE, state_known
    from reconciler.history import status as do_status

    rt = runtime(repo)
    known = state_known(rt.repo)
    rows = do_status(rt)
    locks = ref_locks(rt.repo)
    if fmt is Format.json:
        print(
            json.dumps(
                {
                    "schema_version": 1,
                    "command": "status",
                    "state_known": known,
                    "lenses": [r.record() for r in rows],
                    "locks": [{"path": k.path, "age_s": round(k.age_s, 1)} for k in locks],
                },
                indent=2,
                default=str,
            )
        )
        return 0
    for lock in locks:
        print(f"warning: {lock.describe()}")
    if not known and not rows:
        print(UNKNOWN_STATE)
    for r in rows:
        for line in _status_lines(r, known, UNKNOWN_STATE):
            print(line)
    return 0


def _reach(reach: Any) -> str:
    """``, reach 2/18`` of a recorded reach, nothing for a deployment without one."""
    if not isinstance(reach, dict) or not reach.get("total"):
        return ""
    return f", reach {reach.get('reached', 0)}/{reach['total']}"


def _status_lines(r: Any, known: bool, unknown: str) -> list[str]:
    """One lens of ``dst status``: what serves (or retired it), then a newer last attempt."""
    sm, am = r.serving_meta, r.attempt_meta
    served = (
        (
            f"serving {r.serving[:12]} ({sm.get('action')}, source "
            f"{str(sm.get('source', ''))[:12]}, score "
            f"{short_score(sm.get('score'))}{_reach(sm.get('reach'))})"
        )
        if r.serving
        else ("nothing serving" if known else unknown)
    )
    if r.retired and not r.serving:
        served = (
            f"retired by {r.retired[:12]} (source "
            f"{str(r.retired_meta.get('source', ''))[:12]} deleted the lens); "
            f"nothing serving"
        )
    lines = [f"{r.lens}: {served}"]
    newer = int(am.get("recorded_at", 0)) >= int(sm.get("recorded_at", 0))
    if r.attempt and (newer or not r.serving):
        lines.append(
            f"  last attempt {r.attempt[:12]}: {am.get('action')} source "
            f"{str(am.get('source', ''))[:12]} — {am.get('reason', '')}"
        )
    return lines


def rollback(
    lens: Annotated[str, typer.Argument(help="Lens name.")],
    to: Annotated[str | None, typer.Option("--to", help="Deployment to restore.")] = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Serve an earlier deployment's content again, as a new deployment commit."""
    # lazy: the rollback loads the engines; `dst --help` does not need them
    from reconciler.history import rollback as do_rollback

    return emit(do_rollback(runtime(repo), lens, to), fmt)
