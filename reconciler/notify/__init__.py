"""Notifications: each lens event of an apply, POSTed to the webhooks ``dst.yaml`` lists.

``notify:`` in ``dst.yaml`` (DESIGN §7)::

    notify:
      - url_env: DST_SLACK_WEBHOOK      # the variable holding the URL, never the URL
        events: [blocked, stood_down, recovered]
        retries: 2                      # optional, 0-5 (default 2)
        deadline_s: 30                  # optional: one wall-clock bound per event, <= 30 s

:func:`announce` runs once per ``dst apply``, ``dst ci apply`` and watch-mode apply,
after the serving refs moved or the blocked attempts were recorded; dry runs, the
pre-push hook and ``dst ci check`` never call it. It reads the apply's
:class:`~reconciler.results.RunReport`, tells a recovery from a promotion by the
lens's attempt and serving history, and hands the events to
:func:`reconciler.notify.webhooks.deliver`. It never raises and never changes a
verdict or an exit code: a failing webhook is a warning on stderr. What each
webhook did with each event (delivered or not, tries, status, a redirect's
``Location``, seconds) is kept on the lens's run, so the command's report
(``--format json``: ``"notifications"`` per lens) says it; the git record of
the run was written before (the payload names it), so it cannot.
"""

from __future__ import annotations

import sys

from reconciler.context import Runtime
from reconciler.errors import DstError
from reconciler.git import refs as refstore, trees as gitstate
from reconciler.git.commits import commit_info
from reconciler.lens import Webhook
from reconciler.notify.events import LensEvent, lens_event
from reconciler.notify.webhooks import Delivery, deliver
from reconciler.results import Action, LensRun, RunReport

__all__ = ["Delivery", "LensEvent", "announce", "webhooks_of"]


def webhooks_of(rt: Runtime) -> tuple[Webhook, ...]:
    """``notify:`` of ``dst.yaml`` as the candidate commit holds it (empty without one); the
    working tree's copy is never read (:meth:`Runtime.committed_config`).

    Raises:
        LensLoadError: ``dst.yaml`` does not validate (file and line named).
    """
    return rt.committed_config().notify


def recovered(rt: Runtime, run: LensRun) -> bool:
    """A promoted lens recovers when its last attempt blocked (or stood down) after the
    deployment this promotion replaced was recorded (or with nothing serving before).

    Times are whole seconds; on a tie the attempt is the later one unless the
    deployment's source commit contains the attempt's (it was the fix).
    """
    attempt = refstore.ref_target(rt.repo, refstore.attempts_ref(run.plan.lens, rt.environment))
    if attempt is None:
        return False
    last = refstore.read_deployment(rt.repo, attempt).info
    if last.action not in (Action.BLOCKED.value, Action.STOOD_DOWN.value):
        return False
    if run.plan.serving is None:
        return True
    before = refstore.read_deployment(rt.repo, run.plan.serving).info
    if last.recorded_at != before.recorded_at:
        return last.recorded_at > before.recorded_at
    # Recorded in the same second: the attempt came after the deployment unless the
    # deployment's source already contains the commit the attempt tried.
    return not gitstate.contains(rt.repo, before.source, last.source)


def events_of(rt: Runtime, report: RunReport) -> list[LensEvent]:
    """The lens events of an apply's report, in report order."""
    out = []
    for run in report.lenses:
        is_promotion = run.action is Action.PROMOTED
        if is_promotion and run.recorded is None:
            continue  # only after the ref moved
        source_oid = run.plan.candidate
        info = commit_info(rt.repo, source_oid)
        source: dict[str, object] = info.record() if info else {"commit": source_oid}
        # an unchanged lens recovered when the apply recorded it (a revert of the block)
        unblocked = run.action is Action.UNCHANGED and run.recorded is not None
        event = lens_event(
            run,
            recovered=unblocked or (is_promotion and recovered(rt, run)),
            source=source,
            environment=rt.environment,
        )
        if event is not None:
            out.append(event)
    return out


def announce(rt: Runtime, report: RunReport) -> list[Delivery]:
    """Send the lens events of a finished (not dry-run) apply to the configured webhooks.

    Returns:
        What happened to each delivery; failures were already printed to stderr.
    """
    if report.dry_run:
        return []
    try:
        hooks = webhooks_of(rt)
        events = events_of(rt, report) if hooks else []
    except Exception as exc:  # the refs already moved: nothing here may change the outcome
        why = exc.render() if isinstance(exc, DstError) else f"{type(exc).__name__}: {exc}"
        print(f"warning: notifications not sent: {why}", file=sys.stderr, flush=True)
        return []
    if not events:
        return []
    done = deliver(hooks, rt.env, events)
    for d in done:
        if not d.ok:
            print(d.warning(), file=sys.stderr, flush=True)
    for run in report.lenses:
        run.notifications = [d.record() for d in done if d.lens == run.plan.lens]
    return done
