"""Watch mode (DESIGN §7): verdicts on edits, a followed branch, a scheduled full suite.

``dst watch`` runs one loop over three sources of work:

* **edits** — a settled burst of changes under ``lenses/`` re-plans the working
  tree against serving and runs the scoped suite (stale gated answers plus
  self-test) without promoting anything (:func:`check_worktree`). HEAD resolving
  to another commit (a commit, a checkout, a reset) re-plans once too.
* **a followed branch** (``--reconcile``) — each new commit on the branch is
  reconciled for real, once. A blocked commit is recorded under
  ``refs/dst/attempts/`` by the reconcile and is not retried until another
  commit arrives, also across restarts. In this mode the working tree is not
  checked: the loop is a controller, not an editor companion.
* **a schedule** — every ``interval_hours`` (``DST_EVAL_INTERVAL_HOURS``, read by
  the CLI: default 24, 0 disables) the whole active corpus of every serving lens
  re-runs as a verification (``refs/dst/verify/``), so the trend accrues in ``dst log``.

Events come from watchfiles: OS notifications, or polling where they do not work
(network and FUSE mounts, read from ``/proc/mounts``, or ``--poll``). Git's own
files are filtered out: HEAD and the followed branch are resolved on every
wake-up instead, and the loop wakes at least once per tick even when nothing
changes. While ``.git/index.lock`` exists git is mid-operation, so work waits and
runs once, after the lock is gone.

Every run opens its warehouses afresh and closes them when it ends (``dst seed``
can rewrite the embedded DuckDB file while watch runs). Ref updates are
compare-and-swap, so an interrupt leaves nothing half-written: the loop closes
its warehouses and returns 130.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import watchfiles
from watchfiles import Change, DefaultFilter

from reconciler.context import Runtime
from reconciler.errors import DstError, RefConflict, UsageError
from reconciler.git import refs as refstore, trees as gitstate
from reconciler.ids import Oid
from reconciler.reconcile import check_worktree, reconcile
from reconciler.results import RunReport
from reconciler.verify import verify

DEFAULT_DEBOUNCE_MS = 300
# Filesystems whose changes inotify does not see (made on another host, or
# through a userspace driver): the loop polls there.
POLLING_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "9p", "drvfs", "vboxsf"}
)
_STEP_MS = 50  # watchfiles' own default: how often its waiter looks at new events
_BATCH_CAP_MS = 1600  # watchfiles' default cap on grouping one batch of events
_POLL_DELAY_MS = 500
_MAX_TICK_MS = 1000
_STALE_LOCK_S = 60.0

Trigger = Literal["start", "edit", "head", "reconcile", "schedule"]


@dataclass(frozen=True)
class Verdict:
    """One run of the loop and why it ran.

    Attributes:
        trigger: ``start`` (the loop began), ``edit`` (files under ``lenses/``),
            ``head`` (HEAD moved to another commit), ``reconcile`` (a new commit
            on the followed branch) or ``schedule`` (the periodic full suite).
        report: the run's report (command ``watch``, ``apply`` or ``test``).
        paths: repository-relative paths whose changes triggered it, sorted.
        source: the commit reconciled (``reconcile``, and ``start`` in that mode),
            or the commit HEAD moved to (``head``).
        at: wall-clock time the run finished, seconds since the epoch.
    """

    trigger: Trigger
    report: RunReport
    paths: tuple[str, ...] = ()
    source: Oid | None = None
    at: float = field(default_factory=time.time)


# -- what to watch and how ----------------------------------------------------------


class WatchFilter(DefaultFilter):
    """watchfiles' :class:`DefaultFilter` plus dst's outputs, virtualenvs, caches and git.

    Everything the default ignores stays ignored (``.git``, ``.venv``,
    ``__pycache__``, editor swap files …); on top of that ``.dst/`` (the
    embedded warehouse and anything else dst writes), tool caches, root-level
    ``venv/`` and ``env/``, the repository's git directory wherever it lives,
    and the temporary files editors save through. A lens name cannot start with
    a dot, so ignoring dot-directories never hides a lens.

    Args:
        root: the working tree root (absolute, resolved).
        git_dir: the repository's git directory, when it is not ``root/.git``.
    """

    ignore_dirs = (
        *DefaultFilter.ignore_dirs,
        ".dst",
        ".nox",
        ".ruff_cache",
        ".direnv",
        ".eggs",
        ".cache",
        ".ipynb_checkpoints",
    )
    ignore_entity_patterns = (
        *DefaultFilter.ignore_entity_patterns,
        r"\.tmp$",  # write-then-rename saves
        r"^#.*#$",  # emacs auto-save
        r"^4913$",  # vim's probe that a directory is writable
        r"^sed[A-Za-z0-9]{6}$",  # GNU sed -i writes its copy here, then renames it over the file
    )

    def __init__(self, root: Path, git_dir: Path | None = None) -> None:
        self.root = root
        self.lenses = str(root / gitstate.LENSES_DIR)
        skip = [root / ".git", root / ".dst", root / "venv", root / "env"]
        if git_dir is not None:
            skip.append(git_dir)
        super().__init__(ignore_paths=[f"{str(p).rstrip(os.sep)}{os.sep}" for p in skip])

    def is_lens_change(self, change: Change, path: str) -> bool:
        """Whether a change counts: under ``lenses/`` and not ignored."""
        under = path == self.lenses or path.startswith(self.lenses + os.sep)
        return under and self(change, path)


def _unescape_mount(field_: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def polling_reason(root: Path, mounts: str) -> str | None:
    """Why ``root`` must be polled, judging by the ``/proc/mounts`` text ``mounts``.

    The mount holding ``root`` is the longest mount point that is ``root`` or
    one of its parents (the later line wins for a mount point mounted over).

    Returns:
        ``"<fstype> mount at <point>"`` when that filesystem is network-backed,
        a VM share or FUSE (any ``fuse*`` type), else ``None``.
    """
    target = root.as_posix()
    best: tuple[int, str, str] | None = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point, fstype = _unescape_mount(fields[1]), fields[2]
        holds = target == point or target.startswith(point.rstrip("/") + "/")
        if holds and (best is None or len(point) >= best[0]):
            best = (len(point), point, fstype)
    if best is None:
        return None
    _, point, fstype = best
    if fstype in POLLING_FILESYSTEMS or fstype.startswith("fuse"):
        return f"{fstype} mount at {point}"
    return None


def decide_polling(root: Path, poll: bool | None, mounts: str | None = None) -> tuple[bool, str]:
    """Whether to poll, and a phrase saying why.

    Args:
        root: the working tree root.
        poll: ``True`` for ``--poll``; ``None`` to decide from the mount table.
        mounts: ``/proc/mounts`` content; read from the system when ``None``
            (empty where there is no such file).

    Returns:
        ``(poll, reason)``.
    """
    if poll:
        return True, "polling (--poll)"
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text(errors="replace")
        except OSError:
            mounts = ""
    reason = polling_reason(root, mounts)
    if reason is not None:
        return True, f"polling ({reason}: no change notifications there)"
    return False, "change notifications"


# -- the schedule and the followed branch -----------------------------------------


@dataclass
class Schedule:
    """When the next scheduled full-suite run is due.

    Attributes:
        interval_s: seconds between runs, measured from the end of the last one.
        next_at: clock time (seconds) of the next run; ``None`` when disabled.
    """

    interval_s: float
    next_at: float | None

    @classmethod
    def every(cls, hours: float, now: float) -> Schedule:
        """A schedule whose first run is one interval after ``now``; 0 hours disables it."""
        seconds = hours * 3600.0
        return cls(seconds, now + seconds if seconds > 0 else None)

    def due(self, now: float) -> bool:
        """Whether a run is due at ``now``; a clock set back re-bases the schedule."""
        if self.next_at is None:
            return False
        if self.next_at - now > self.interval_s:
            self.next_at = now + self.interval_s
        return now >= self.next_at

    def done(self, now: float) -> None:
        """Record a run that ended at ``now``."""
        if self.next_at is not None:
            self.next_at = now + self.interval_s


def current_branch(repo: gitstate.Repository) -> str:
    """The branch HEAD is on (its short name).

    Raises:
        UsageError: HEAD is detached.
    """
    branch = refstore.head_branch(repo)
    if branch is not None:
        return branch
    raise UsageError(
        "HEAD is detached, so there is no current branch for --reconcile to follow",
        fix="pass --branch NAME",
    )


@dataclass
class Follower:
    """A branch followed by ``--reconcile``: the last tip seen and the commits attempted.

    Attributes:
        branch: the branch's short name.
        seen: the tip the loop last acted on (``None`` before the first look).
        attempted: commits already reconciled by this loop, whatever the outcome.
    """

    branch: str
    seen: Oid | None = None
    attempted: set[Oid] = field(default_factory=set)

    @property
    def ref(self) -> str:
        """``refs/heads/<branch>``."""
        return f"refs/heads/{self.branch}"


def follow(rt: Runtime, follower: Follower) -> RunReport | None:
    """Reconcile the followed branch's tip if it is new; ``None`` when there was nothing to do.

    A tip already reconciled by this loop, or recorded as the source of an
    attempt (a blocked or stood-down apply, possibly by an earlier process), is
    not retried: a new commit is needed. An error is reported, not raised, and
    the commit counts as attempted.
    """
    tip = refstore.ref_target(rt.repo, follower.ref)
    if tip is None or tip == follower.seen:
        return None
    follower.seen = tip
    if tip in follower.attempted:
        return None
    follower.attempted.add(tip)
    lens = refstore.attempt_of(rt.repo, tip)
    if lens is not None:
        rt.progress(
            f"{follower.branch} {tip[:12]}: already attempted (refs/dst/attempts/{lens}); "
            "waiting for a new commit"
        )
        return None
    try:
        return reconcile(rt, to=tip)
    except DstError as exc:
        return _error_report("apply", exc)


def _error_report(command: str, exc: DstError) -> RunReport:
    # Exit codes as the CLI maps them: a lost compare-and-swap is 1 (re-plan).
    code = 1 if isinstance(exc, RefConflict) else exc.exit_code
    return RunReport(command, [], [f"error: {exc.render()}"], exit_code=code)


def scheduled_verify(rt: Runtime) -> RunReport | None:
    """Re-verify every serving lens's whole active corpus; ``None`` when nothing serves.

    Each lens is verified on its own, so one lens whose warehouse is down does
    not keep the others from recording their verification (never the serving ref).
    """
    names = refstore.served_lenses(rt.repo)
    if not names:
        return None
    report = RunReport("test", [])
    for name in names:
        try:
            one = verify(rt, [name])
        except DstError as exc:
            failed = _error_report("test", exc)
            report.messages.append(f"{name}: {failed.messages[0]}")
            report.exit_code = max(report.exit_code, failed.exit_code)
            continue
        report.messages.extend(one.messages)
        report.lenses.extend(one.lenses)
        report.exit_code = max(report.exit_code, one.exit_code)
    return report


# -- the loop -------------------------------------------------------------------------


def _fresh(rt: Runtime) -> Runtime:
    # One runtime per run: warehouses and dimension-value caches live for that
    # run only, so a long-lived loop neither holds the DuckDB file open nor
    # serves values read hours ago. Public settings carry over, caches do not.
    settings = {
        f.name: getattr(rt, f.name)
        for f in dataclasses.fields(rt)
        if f.init and not f.name.startswith("_")
    }
    return Runtime(**settings)


class _Loop:
    """The loop's state between wake-ups; :meth:`wake` decides what runs."""

    def __init__(
        self,
        rt: Runtime,
        filt: WatchFilter,
        *,
        debounce_s: float,
        tick_s: float,
        follower: Follower | None,
        schedule: Schedule,
        on_verdict: Callable[[Verdict], None],
        clock: Callable[[], float],
    ) -> None:
        self.rt = rt
        self.filt = filt
        self.debounce_s = debounce_s
        self.tick_s = tick_s
        # Continuous editing still gets a verdict this often.
        self.max_wait_s = max(10 * debounce_s, 5.0)
        self.follower = follower
        self.schedule = schedule
        self.on_verdict = on_verdict
        self.clock = clock
        self.lock = gitstate.git_dir(rt.repo) / "index.lock"
        self.head = refstore.head_commit(rt.repo, None)
        self.started = False
        self.paused: float | None = None  # monotonic time git's lock was first seen
        self.warned: set[str] = set()  # what this pause has said already
        self.paths: set[str] = set()
        self.head_moved = False
        self.first: float | None = None  # monotonic time of the oldest pending change
        self.last = 0.0  # ... and of the newest
        self.last_wake = time.monotonic()

    def admit(self, change: Change, path: str) -> bool:
        """watchfiles' filter: relevant changes, plus a wake-up when a tick is overdue.

        Steady churn in ignored places (a virtualenv being installed) would
        otherwise keep watchfiles from ever timing out, starving the ticks that
        settle pending edits and notice commits.
        """
        if self.filt(change, path):
            return True
        return time.monotonic() - self.last_wake > 2 * self.tick_s

    def wake(self, changes: set[tuple[Change, str]]) -> None:
        """Take one batch of changes (empty on a tick) and run whatever is due."""
        now = time.monotonic()
        self.last_wake = now
        if self.follower is None:
            fresh = {p for c, p in changes if self.filt.is_lens_change(c, p)}
            if fresh:
                self.paths |= {Path(p).relative_to(self.filt.root).as_posix() for p in fresh}
                self.first = now if self.first is None else self.first
                self.last = now
            head = refstore.head_commit(self.rt.repo, self.head)
            if head != self.head:
                self.head = head
                self.head_moved = True
                self.first = now if self.first is None else self.first
        self._maybe_verify()
        if self.lock.exists():
            self._hold(now)
            return
        resumed, self.paused, self.warned = self.paused is not None, None, set()
        if not self.started:
            self.started = True
            self._run("start")
        elif self.follower is not None:
            self._run("reconcile")
        elif self.first is not None and (
            resumed or now - self.last >= self.debounce_s or now - self.first >= self.max_wait_s
        ):
            self._run("head" if self.head_moved else "edit")

    def _hold(self, now: float) -> None:
        # Say once per pause that work waits, and once more if the lock looks abandoned.
        self.paused = now if self.paused is None else self.paused
        if "busy" not in self.warned and (self.first is not None or not self.started):
            self.warned.add("busy")
            self.rt.progress("git is mid-operation (index.lock); waiting for it to finish")
        if "stale" not in self.warned and now - self.paused > _STALE_LOCK_S:
            self.warned.add("stale")
            self.rt.progress(
                f"{self.lock} has existed for {now - self.paused:.0f} s; if no git command "
                "is running, a crashed one left it: remove it and the loop resumes"
            )

    def _run(self, trigger: Trigger) -> None:
        rt = _fresh(self.rt)
        try:
            if self.follower is not None:
                report = follow(rt, self.follower)
                if report is not None:
                    self.on_verdict(Verdict(trigger, report, source=self.follower.seen))
                return
            # A directory whose files are listed too says nothing more (polling
            # reports both); one listed alone (moved in or out whole) stays.
            paths = tuple(
                sorted(p for p in self.paths if not any(q.startswith(p + "/") for q in self.paths))
            )
            head = self.head if self.head_moved else None
            self.paths.clear()
            self.head_moved = False
            self.first = None
            try:
                report = check_worktree(rt)
            except DstError as exc:
                report = _error_report("watch", exc)
            self.on_verdict(Verdict(trigger, report, paths, source=head))
        finally:
            rt.close()

    def _maybe_verify(self) -> None:
        if not self.schedule.due(self.clock()):
            return
        rt = _fresh(self.rt)
        try:
            report = scheduled_verify(rt)
        finally:
            rt.close()
        self.schedule.done(self.clock())
        if report is not None:
            self.on_verdict(Verdict("schedule", report))


def _target(root: Path, polling: bool) -> Path:
    # Polling walks the whole watched tree every round, so it walks lenses/ alone.
    lenses = root / gitstate.LENSES_DIR
    return lenses if polling and lenses.is_dir() else root


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


@dataclass(frozen=True)
class WatchSettings:
    """What ``dst watch`` was asked to do.

    Attributes:
        interval_hours: hours between scheduled full-suite runs; 0 disables them.
        debounce_ms: quiet time after the last edit before a check, milliseconds;
            also the tick (capped at 1 s) at which HEAD, the branch, the schedule
            and ``index.lock`` are looked at when nothing changes.
        poll: ``True`` forces polling; ``None`` polls only on network/FUSE mounts.
        reconcile_mode: follow ``branch`` and reconcile its new commits for real
            instead of checking the working tree.
        branch: the branch to follow (default: the current one).
    """

    interval_hours: float
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    poll: bool | None = None
    reconcile_mode: bool = False
    branch: str | None = None


def watch(
    rt: Runtime,
    settings: WatchSettings,
    *,
    on_verdict: Callable[[Verdict], None],
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.time,
    mounts: str | None = None,
) -> int:
    """Run the watch loop until ``stop`` is set or the process is interrupted.

    The loop runs once at start (a check of the working tree, or in reconcile
    mode the followed branch's tip), then on every settled burst of edits under
    ``lenses/`` (no further edit for ``debounce_ms``; continuous editing still
    gets a run every ``max(10 × debounce, 5 s)``), on HEAD moving to another
    commit, on a new commit on the followed branch, and on the schedule.

    Args:
        rt: the runtime; closed when the loop ends.
        settings: interval, debounce, polling and the branch to follow.
        stop: set it (from another thread) to end the loop; checked every 50 ms
            while waiting and after every run.
        on_verdict: receives every run's verdict, on the loop's thread
            (``cli_watch.print_verdict`` prints it).
        clock: wall clock for the schedule, seconds (injectable for tests).
        mounts: ``/proc/mounts`` content, for tests; read from the system when ``None``.

    Returns:
        0 when stopped, 130 when interrupted (Ctrl-C).

    Raises:
        UsageError: a negative debounce, a detached HEAD without ``branch``, or
            a branch that does not exist.
    """
    if settings.debounce_ms < 0:
        raise UsageError(f"--debounce-ms {settings.debounce_ms} is negative", fix="pass 0 or more")
    repo = rt.repo
    root = rt.root
    follower: Follower | None = None
    if settings.reconcile_mode:
        follower = Follower(settings.branch or current_branch(repo))
        if refstore.ref_target(repo, follower.ref) is None:
            raise UsageError(f"branch {follower.branch!r} does not exist", fix="pass --branch NAME")
    polling, how = decide_polling(root, settings.poll, mounts)
    tick_ms = min(max(settings.debounce_ms, _STEP_MS), _MAX_TICK_MS)
    loop = _Loop(
        rt,
        WatchFilter(root, gitstate.git_dir(repo).resolve()),
        debounce_s=settings.debounce_ms / 1000,
        tick_s=tick_ms / 1000,
        follower=follower,
        schedule=Schedule.every(settings.interval_hours, clock()),
        on_verdict=on_verdict,
        clock=clock,
    )
    every = f"every {settings.interval_hours:g} h" if settings.interval_hours > 0 else "disabled"
    what = f"following branch {follower.branch}" if follower else f"watching {root}"
    try:
        rt.progress(f"dst watch: {what} ({how}); full suite {every}; Ctrl-C stops")
        _serve(loop, root, polling=polling, tick_ms=tick_ms, stop=stop)
    except KeyboardInterrupt:
        rt.progress("dst watch: interrupted")
        return 130
    finally:
        rt.close()
    return 0


def _serve(
    loop: _Loop, root: Path, *, polling: bool, tick_ms: int, stop: threading.Event | None
) -> None:
    """Feed watchfiles' batches (and its timeouts, as ticks) to ``loop`` until ``stop``."""
    while stop is None or not stop.is_set():
        target = _target(root, polling)
        ident = _identity(target)
        changes = watchfiles.watch(
            target,
            watch_filter=loop.admit,
            debounce=_BATCH_CAP_MS,
            step=_STEP_MS,
            stop_event=stop,
            rust_timeout=tick_ms,
            yield_on_timeout=True,
            force_polling=True if polling else None,
            poll_delay_ms=_POLL_DELAY_MS,
        )
        try:
            for batch in changes:
                loop.wake(batch)
                if stop is not None and stop.is_set():
                    break
                if _target(root, polling) != target or _identity(target) != ident:
                    break  # lenses/ appeared, vanished or was replaced: watch anew
        finally:
            changes.close()
