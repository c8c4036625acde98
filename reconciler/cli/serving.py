"""``dst status`` and ``dst rollback``: what serves, and serving an earlier deployment again.

``status`` lists each lens's serving deployment (when it was recorded, and the
source commit's subject and author), says when a rollback serves, and, when newer,
its last attempt with the reason, and its last verification (``dst test``, watch's
schedule: ``refs/dst/verify/<lens>``) with its score; it warns when a lens has more than
``ATTEMPTS_WARN`` attempts (``dst gc``) and lists any lock file left under
``refs/dst/``; ``rollback`` writes a new deployment commit whose content is an
older one's (DESIGN §3). ``--env E`` shows (or rolls back) environment E alone;
``status`` without it shows the default environment and then every named one.
Exit codes: 0 shown or rolled back; 2 bad input (no such lens or deployment).
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer

from reconciler.cli.common import emit, runtime, short_score
from reconciler.cli.options import EnvOpt, Format, FormatOpt, RepoOpt


def status(env: EnvOpt = None, repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> int:
    """Serving version and last attempt of every lens in every environment (or ``--env``'s),
    and any lock file left on refs/dst/."""
    # lazy: the serving state readers load the engines; `dst --help` does not need them
    from reconciler.git.locks import ref_locks
    from reconciler.git.sync import UNKNOWN_STATE, state_known
    from reconciler.history import environment_names, status as do_status

    rt = runtime(repo, environment=env)
    rt.environment_config()  # an unknown --env (or a broken dst.yaml) is exit 2
    known = state_known(rt.repo)
    rows = do_status(rt)
    others = []
    if env is None:
        for name in environment_names(rt):
            rt.environment = name
            others.append((name, do_status(rt)))
        rt.environment = None
    locks = ref_locks(rt.repo)
    if fmt is Format.json:
        body: dict[str, Any] = {
            "schema_version": 1,
            "command": "status",
            "state_known": known,
            "lenses": [r.record() for r in rows],
            "locks": [{"path": k.path, "age_s": round(k.age_s, 1)} for k in locks],
        }
        if env is not None:
            body["environment"] = env
        elif others:
            body["environments"] = [
                {"environment": name, "lenses": [r.record() for r in found]}
                for name, found in others
            ]
        print(json.dumps(body, indent=2, default=str))
        return 0
    for lock in locks:
        print(f"warning: {lock.describe()}")
    if not known and not rows:
        print(UNKNOWN_STATE)
    if env is not None or others:
        print(f"environment {env}:" if env else "default environment:")
    for r in rows:
        for line in _status_lines(r, known, UNKNOWN_STATE):
            print(line)
    for name, found in others:
        print(f"environment {name}:")
        for r in found:
            for line in _status_lines(r, known, UNKNOWN_STATE):
                print(line)
    return 0


def _reach(reach: Any) -> str:
    """``, reach 2/18`` of a recorded reach, nothing for a deployment without one."""
    if not isinstance(reach, dict) or not reach.get("total"):
        return ""
    return f", reach {reach.get('reached', 0)}/{reach['total']}"


def _commit_line(what: str, meta: dict[str, Any], commit: Any, now: float) -> str:
    """``  promoted 2026-12-01T10:58:09Z (5 min ago) from 1a2b… “subject” by Ana``."""
    # lazy: reconciler.history loads the engines, which `dst --help` does not need
    from reconciler.history import ago, iso_time

    at = int(meta.get("recorded_at", 0))
    line = f"  {what} {iso_time(at)} ({ago(at, now)})"
    if commit and commit.get("subject") is not None:
        line += f" from {str(commit['commit'])[:12]} “{commit['subject']}” by {commit['author']}"
    return line


def _status_lines(r: Any, known: bool, unknown: str) -> list[str]:
    """One lens of ``dst status``: what serves (or retired it), when and from what commit,
    a rollback serving, then a newer last attempt, the last verification and a long
    attempts chain."""
    # lazy: reconciler.history loads the engines, which `dst --help` does not need
    from reconciler.history import ATTEMPTS_WARN

    sm, am, now = r.serving_meta, r.attempt_meta, time.time()
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
    if r.serving:
        lines.append(_commit_line("recorded", sm, r.serving_commit, now))
    if r.rollback is not None:
        lines.append(
            f"  serving a rollback to {str(r.rollback.rollback_to)[:12]} since "
            f"{r.rollback.deployment[:12]}: the next `dst apply` of a changed lens rolls forward"
        )
    newer = int(am.get("recorded_at", 0)) >= int(sm.get("recorded_at", 0))
    if r.attempt and (newer or not r.serving):
        lines.append(
            f"  last attempt {r.attempt[:12]}: {am.get('action')} source "
            f"{str(am.get('source', ''))[:12]} — {am.get('reason', '')}"
        )
        lines.append("  " + _commit_line("attempted", am, r.attempt_commit, now))
    vm = r.verification_meta
    if r.verification and r.serving:
        of = "" if vm.get("verified") == r.serving else f" of {str(vm.get('verified'))[:12]}"
        lines.append(
            _commit_line("last verified", vm, None, now)
            + f"{of}: score {short_score(vm.get('score'))}{_reach(vm.get('reach'))}"
            + f" ({_space(r.environment)}verify/{r.lens} {r.verification[:12]})"
        )
    if r.attempts > ATTEMPTS_WARN:
        lines.append(
            f"  more than {ATTEMPTS_WARN} attempts recorded under "
            f"{_space(r.environment)}attempts/{r.lens}; prune them with `dst gc --keep 10"
            f"{f' --env {r.environment}' if r.environment else ''}`"
        )
    return lines


def _space(environment: str | None) -> str:
    """``refs/dst/`` or ``refs/dst/env/<E>/`` (kept here: ``dst --help`` loads no engine)."""
    return "refs/dst/" if environment is None else f"refs/dst/env/{environment}/"


def rollback(
    lens: Annotated[str, typer.Argument(help="Lens name.")],
    to: Annotated[str | None, typer.Option("--to", help="Deployment to restore.")] = None,
    env: EnvOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Serve an earlier deployment's content again, as a new deployment commit."""
    # lazy: the rollback loads the engines; `dst --help` does not need them
    from reconciler.history import rollback as do_rollback

    return emit(do_rollback(runtime(repo, environment=env), lens, to), fmt)
