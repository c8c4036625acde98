"""The bodies of ``dst status`` and ``dst ask``, free of typer.

The typer commands (:func:`reconciler.cli.serving.status`,
:func:`reconciler.cli.ask.ask`) declare the options, their help and their checks,
and call these; :mod:`reconciler.cli.lean` calls them directly when the
arguments are plain, before typer loads. What each prints and returns is
described on its command. This module imports the standard library and the
typer-free helpers of :mod:`reconciler.cli.common`; everything a command reads
loads when it runs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.cli.common import runtime, short_score
from reconciler.cli.formats import Format

if TYPE_CHECKING:
    from reconciler.ask import AskResponse
    from reconciler.context import Runtime
    from reconciler.lens import Lens


def status(env: str | None = None, repo: Path | None = None, fmt: Format = Format.text) -> int:
    """``dst status`` (:func:`reconciler.cli.serving.status`, whose options these are)."""
    # lazy: the serving state readers load the engines; `dst --help` does not need them
    from reconciler.git.known import UNKNOWN_STATE, state_known
    from reconciler.git.locks import ref_locks
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


def ask(
    question: str,
    lens: str,
    max_repairs: int = 2,
    show_request: bool = False,
    no_cache: bool = False,
    repo: Path | None = None,
    warehouse: str | None = None,
    env: str | None = None,
    fmt: Format = Format.text,
) -> int:
    """``dst ask`` (:func:`reconciler.cli.ask.ask`, whose options these are)."""
    # lazy: reconciler.ask loads the engines, which `dst --help` does not need
    from reconciler.ask import serve
    from reconciler.candidate import load_serving

    rt = runtime(repo, warehouse, environment=env)
    rt.no_cache = no_cache
    try:
        rt.environment_config()  # an unknown --env is exit 2 before anything is read
        dep, served = load_serving(rt.repo, lens, env)
        if dep is None or served is None:
            # lazy: the serving state of every lens is read only to word this error
            from reconciler.history import not_serving

            raise not_serving(rt, lens)
        if show_request:
            return print_request(rt, served, question, None, fmt)
        resp = serve(rt, served, question, max_repairs=max_repairs)
    finally:
        rt.close()
    if fmt is Format.json:
        out = {
            "schema_version": 1,
            "command": "ask",
            "environment": env,
            "deployment": dep.oid,
            **resp.to_json(),
        }
        print(json.dumps(out, indent=2, default=str))
    else:
        for line in render_text(resp):
            print(line)
    # on stderr in both formats: a script reading the JSON sees exit 1 and, here, why
    reason = resp.unserved_reason()
    if reason is not None:
        print(f"dst ask: nothing served: {reason}", file=sys.stderr, flush=True)
    return resp.exit_code


def print_request(rt: Runtime, lens: Lens, question: str, answer: str | None, fmt: Format) -> int:
    """Print what ``question`` on ``lens`` sends each tier (:mod:`reconciler.generators.payload`).

    Assembled the way serving does (certified matching on; a question a certified
    answer matches is served by it and generates nothing, which is said) when
    ``answer`` is ``None``, else the way the suite re-asks ``answer`` (matching off,
    ``answer`` excluded from its own exemplars, DESIGN §4 step 2). Returns 0.
    """
    # lazy: the assembly and the tiers' payload builders, only when asked
    from reconciler.ask import certified_match
    from reconciler.assembly.request import assemble
    from reconciler.generators.payload import sent
    from reconciler.ids import AnswerId

    embedder = rt.embedder_for(lens)[0]
    excluded = AnswerId(answer) if answer is not None else None
    request = assemble(
        lens,
        question,
        exclude_answer=excluded,
        certified_matching=excluded is None,
        embedder=embedder,
    )
    tiers = sent(lens, request)
    matched = certified_match(lens, question) if excluded is None else None
    if fmt is Format.json:
        shown = {"schema_version": 1, "lens": lens.name, "request": request.record()}
        certified = matched.id if matched else None
        print(json.dumps({**shown, "certified_answer": certified, "tiers": tiers}, indent=2))
        return 0
    print(f"{lens.name}: request for {question!r}")
    if matched is not None:
        print(f"note: serving answers this with certified answer {matched.id}, generating nothing")
    print(json.dumps(request.record(), indent=2))
    for tier, payload in tiers.items():
        print(f"\n--- {tier} tier is sent:")
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    return 0


def render_text(resp: AskResponse) -> list[str]:
    """Route and trust state first, then the message or SQL and rows, then failed gates."""
    # lazy: the text renderer loads the report model, which `dst --help` does not need
    from reconciler.render.text import display_cell

    lines = [f"{resp.lens}: route {resp.route}, trust {resp.trust_state}"]
    if resp.answer:
        lines.append(f"certified answer: {resp.answer}")
    if resp.message:
        lines.append(resp.message)
    if resp.sql:
        lines += ["", resp.sql.strip(), ""]
    payload = resp.to_json()
    if payload["columns"]:
        lines.append(" | ".join(payload["columns"]))
        lines += [
            " | ".join("" if v is None else display_cell(v) for v in row) for row in payload["rows"]
        ]
        more = payload["row_count"] - len(payload["rows"])
        if more > 0 or payload["truncated"]:
            lines.append(
                f"… {payload['row_count']} rows" + (" (capped)" if payload["truncated"] else "")
            )
    for ev in resp.evaluations:
        if not ev.passed:
            lines.append(f"gate {ev.gate} ({ev.severity}): {ev.detail}")
    lines += [f"note: {n}" for n in resp.notes]
    return lines
