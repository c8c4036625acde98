"""Watch mode: verdicts on edits, HEAD moves, index.lock, reconcile mode, the schedule.

The loop runs in a background thread on a real promoted repository, with a
``stop`` event and an ``on_verdict`` callback that records every run. Waits are
bounded and the assertions count runs rather than time them; "nothing else ran"
is checked over a quiet window several debounce periods long.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pygit2
import pytest
import typer
from typer.testing import CliRunner
from watchfiles import Change, DefaultFilter

import reconciler.cli.app  # before cli_watch: cli.py imports cli_watch at its end
from reconciler.cli.watch import interval_hours, verdict_json, verdict_lines, watch as watch_command
from reconciler.context import Runtime
from reconciler.errors import UsageError
from reconciler.git import refs as refstore
from reconciler.reconcile import check_worktree, reconcile
from reconciler.watch import (
    DEFAULT_DEBOUNCE_MS,
    Schedule,
    Verdict,
    WatchFilter,
    WatchSettings,
    decide_polling,
    polling_reason,
    watch,
)
from tests.helpers import GIT_ENV, commit, git, invoke

DEBOUNCE_MS = 150
QUIET_S = 2.0  # many debounce periods: long enough for a spurious run to show up
TIME_MD = "lenses/sales/skills/time.md"


def _runtime(path: Path, progress: Callable[[str], None] = lambda _m: None) -> Runtime:
    return Runtime(pygit2.Repository(str(path)), env={}, progress=progress)


@pytest.fixture(scope="module")
def _promoted_template(_seeded_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("promoted") / "repo"
    shutil.copytree(_seeded_template, path, symlinks=True)
    rt = _runtime(path)
    try:
        report = reconcile(rt)
    finally:
        rt.close()
    assert report.exit_code == 0
    assert {r.action for r in report.lenses} == {"promoted"}
    return path


@pytest.fixture
def promoted(_promoted_template: Path, tmp_path: Path) -> Path:
    """The example lenses, seeded and promoted (``dst seed && dst apply``)."""
    path = tmp_path / "repo"
    shutil.copytree(_promoted_template, path, symlinks=True)
    return path


def _save_atomically(repo: Path, rel: str, text: str) -> None:
    """Save the way editors do: write a temporary file, then rename it over the target."""
    target = repo / rel
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, target)


def _serving(repo: Path, lens: str) -> str | None:
    return refstore.ref_target(pygit2.Repository(str(repo)), refstore.serving_ref(lens))


def _meta(repo: Path, oid: str) -> dict[str, Any]:
    return dict(json.loads(git(repo, "show", f"{oid}:state/meta.json")))


def _double_units_sold(text: str) -> str:
    return text.replace("expression: SUM(quantity)", "expression: SUM(quantity) * 2")


_SETTINGS = ("interval_hours", "debounce_ms", "poll", "reconcile_mode", "branch")


class Loop:
    """``watch`` in a background thread, recording verdicts and progress lines."""

    def __init__(self, repo: Path, **options: Any) -> None:
        self.verdicts: list[Verdict] = []
        self.progress: list[str] = []
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.code: int | None = None
        options.setdefault("interval_hours", 0)
        options.setdefault("debounce_ms", DEBOUNCE_MS)
        rt = _runtime(repo, self._say)
        self.thread = threading.Thread(target=self._main, args=(rt, options), daemon=True)

    def _main(self, rt: Runtime, options: dict[str, Any]) -> None:
        try:
            named = {k: options.pop(k) for k in _SETTINGS if k in options}
            settings = WatchSettings(**named)
            self.code = watch(rt, settings, stop=self.stop, on_verdict=self._record, **options)
        except BaseException as exc:  # surfaced by wait() and close()
            self.error = exc
        finally:
            with self.cond:
                self.cond.notify_all()

    def _record(self, verdict: Verdict) -> None:
        with self.cond:
            self.verdicts.append(verdict)
            self.cond.notify_all()

    def _say(self, message: str) -> None:
        with self.cond:
            self.progress.append(message)
            self.cond.notify_all()

    def runs(self, trigger: str | None = None) -> list[Verdict]:
        with self.cond:
            return [v for v in self.verdicts if trigger is None or v.trigger == trigger]

    def wait(self, what: Callable[[], bool], timeout: float = 60.0) -> None:
        with self.cond:
            self.cond.wait_for(
                lambda: what() or self.error is not None or not self.thread.is_alive(), timeout
            )
        if self.error is not None:
            raise self.error
        assert what(), f"timed out; runs so far: {[v.trigger for v in self.runs()]}"

    def wait_runs(self, count: int, trigger: str | None = None) -> list[Verdict]:
        self.wait(lambda: len(self.runs(trigger)) >= count)
        return self.runs(trigger)

    def quiet(self) -> list[Verdict]:
        """Wait out the quiet window and return every run so far."""
        time.sleep(QUIET_S)
        return self.runs()


@contextmanager
def running(repo: Path, **options: Any) -> Iterator[Loop]:
    loop = Loop(repo, **options)
    loop.thread.start()
    try:
        loop.wait_runs(1, "start")
        yield loop
    finally:
        loop.stop.set()
        loop.thread.join(60)
    assert not loop.thread.is_alive(), "the loop did not stop"
    if loop.error is not None:
        raise loop.error
    assert loop.code == 0


# -- pure parts ---------------------------------------------------------------------

MOUNTS = r"""proc /proc proc rw,relatime 0 0
/dev/vda / ext4 rw,relatime 0 0
server:/export /mnt/share nfs4 rw,vers=4.2 0 0
/dev/vdb /mnt/share/local ext4 rw 0 0
//nas/team /mnt/team\040drive cifs rw 0 0
sshfs#me@host: /home/me/remote fuse.sshfs rw 0 0
C:\134 /mnt/c 9p rw,dirsync 0 0
server:/old /srv nfs rw 0 0
/dev/vdc /srv ext4 rw 0 0
"""


@pytest.mark.parametrize(
    ("root", "fstype"),
    [
        ("/home/me/repo", None),
        ("/mnt/share/repo", "nfs4"),
        ("/mnt/share", "nfs4"),
        ("/mnt/share/local/repo", None),  # the longest mount point wins
        ("/mnt/shared/repo", None),  # a prefix of the name is not a parent
        ("/mnt/team drive/repo", "cifs"),  # \040 in /proc/mounts is a space
        ("/home/me/remote/repo", "fuse.sshfs"),
        ("/mnt/c/Users/me/repo", "9p"),
        ("/srv/repo", None),  # the later line mounted over the earlier one
    ],
)
def test_polling_is_chosen_from_the_mount_holding_the_repository(
    root: str, fstype: str | None
) -> None:
    reason = polling_reason(Path(root), MOUNTS)
    if fstype is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith(f"{fstype} mount at ")
    polling, why = decide_polling(Path(root), None, MOUNTS)
    assert polling is (fstype is not None)
    assert decide_polling(Path(root), True, MOUNTS) == (True, "polling (--poll)")
    assert why


def test_the_filter_extends_the_default_one(tmp_path: Path) -> None:
    root = tmp_path
    filt = WatchFilter(root)
    assert isinstance(filt, DefaultFilter)
    assert set(DefaultFilter.ignore_dirs) <= set(filt.ignore_dirs)
    assert set(DefaultFilter.ignore_entity_patterns) <= set(filt.ignore_entity_patterns)

    def kept(rel: str) -> bool:
        return filt(Change.modified, str(root / rel))

    for ignored in (
        ".dst/warehouse.duckdb",
        ".dst/x",
        ".git/HEAD",
        ".git/refs/heads/main",
        ".venv/lib/site.py",
        "venv/bin/python",
        "env/lib/x.txt",
        ".ruff_cache/0.5/x",
        "lenses/sales/__pycache__/x.pyc",
        "lenses/sales/skills/time.md.tmp",
        "lenses/sales/skills/.time.md.swp",
        "lenses/sales/skills/time.md~",
        "lenses/sales/skills/#time.md#",
    ):
        assert not kept(ignored), ignored
    for rel in ("lenses/sales/skills/time.md", "lenses/env/lens.yaml", "README.md"):
        assert kept(rel), rel
    assert filt.is_lens_change(Change.modified, str(root / "lenses/env/lens.yaml"))
    assert filt.is_lens_change(Change.deleted, str(root / "lenses"))
    assert not filt.is_lens_change(Change.modified, str(root / "README.md"))
    assert not filt.is_lens_change(Change.modified, str(root / "lensesque/x.md"))
    assert not filt.is_lens_change(Change.added, str(root / "lenses/sales/x.md.tmp"))


def test_schedule_runs_once_per_interval_on_an_injected_clock() -> None:
    sched = Schedule.every(0.5, now=1000.0)  # 30 minutes
    assert not sched.due(1000.0)
    assert not sched.due(1000.0 + 1799)
    assert sched.due(1000.0 + 1800)
    sched.done(3000.0)
    assert not sched.due(3000.0 + 1799)
    assert sched.due(3000.0 + 1800)
    sched.done(5000.0)
    assert not sched.due(100.0)  # the clock went back: re-based, not due at once
    assert sched.next_at == 100.0 + 1800
    off = Schedule.every(0, now=0.0)
    assert not off.due(1e12)


def test_interval_comes_from_the_environment() -> None:
    assert interval_hours({}) == 24.0
    assert interval_hours({"DST_EVAL_INTERVAL_HOURS": "0"}) == 0.0
    assert interval_hours({"DST_EVAL_INTERVAL_HOURS": " 0.25 "}) == 0.25
    for bad in ("-1", "soon", "nan", "inf"):
        with pytest.raises(UsageError, match="DST_EVAL_INTERVAL_HOURS"):
            interval_hours({"DST_EVAL_INTERVAL_HOURS": bad})


def test_cli_default_debounce_matches_the_module() -> None:
    import inspect

    default = inspect.signature(watch_command).parameters["debounce_ms"].default
    assert default == DEFAULT_DEBOUNCE_MS


# -- the check of the working tree --------------------------------------------------


def test_check_worktree_plans_the_working_tree_and_promotes_nothing(promoted: Path) -> None:
    before = {n: _serving(promoted, n) for n in ("finance", "sales")}
    rt = _runtime(promoted)
    try:
        clean = check_worktree(rt)
        assert clean.exit_code == 0
        assert {r.plan.lens: r.action for r in clean.lenses} == {
            "finance": "unchanged",
            "sales": "unchanged",
        }
        metric = promoted / "lenses/sales/metrics/units_sold.yaml"
        metric.write_text(_double_units_sold(metric.read_text()))
        blocked = check_worktree(rt)
        sales = next(r for r in blocked.lenses if r.plan.lens == "sales")
        assert blocked.exit_code == 1 and blocked.dry_run
        assert sales.action == "blocked"
        assert sales.plan.candidate is None  # the working tree, not a commit
        failing = {r.answer for r in sales.results if r.outcome.value != "correct"}
        assert failing and failing == {s.answer for s in sales.plan.stale}
        lines = verdict_lines(Verdict("edit", blocked, ("lenses/sales/metrics/units_sold.yaml",)))
        assert "edit: lenses/sales/metrics/units_sold.yaml" in lines[0]
        line = next(x for x in lines if x.strip().startswith("sales:"))
        assert "sales: blocked" in line and "failing: " in line
        assert sorted(line.split("failing: ")[1].split(", ")) == sorted(failing)
        assert any("finance: unchanged" in x for x in lines)
        obj = json.loads(verdict_json(Verdict("edit", blocked)))
        assert obj["command"] == "watch" and obj["trigger"] == "edit"
        assert {x["lens"]: x["action"] for x in obj["lenses"]}["sales"] == "blocked"

        metric.write_text("name: units_sold\nname: twice\n")
        broken = check_worktree(rt, ["sales"])
        assert broken.exit_code == 2
        assert broken.lenses[0].action == "error"
        assert "lenses/sales/metrics/units_sold.yaml" in broken.lenses[0].messages[0]
        with pytest.raises(UsageError):
            check_worktree(rt, ["nope"])
    finally:
        rt.close()
    assert {n: _serving(promoted, n) for n in ("finance", "sales")} == before
    assert refstore.ref_target(pygit2.Repository(str(promoted)), "refs/dst/attempts/sales") is None


# -- the loop -------------------------------------------------------------------------


@pytest.mark.parametrize("poll", [None, True], ids=["notifications", "polling"])
def test_an_atomic_save_triggers_exactly_one_run(promoted: Path, poll: bool | None) -> None:
    text = (promoted / TIME_MD).read_text()
    with running(promoted, poll=poll) as loop:
        start = loop.runs("start")[0]
        assert {r.action for r in start.report.lenses} == {"unchanged"}
        _save_atomically(promoted, TIME_MD, text + "\n- Quarters start in January.\n")
        loop.wait_runs(1, "edit")
        runs = loop.quiet()
    edits = [v for v in runs if v.trigger != "start"]
    assert [v.trigger for v in edits] == ["edit"]
    assert edits[0].paths == (TIME_MD,)
    sales = next(r for r in edits[0].report.lenses if r.plan.lens == "sales")
    assert sales.action == "promoted" and edits[0].report.dry_run  # "would promote"
    assert len(sales.results) == len(sales.plan.stale) > 0
    assert _serving(promoted, "sales") == start.report.lenses[1].plan.serving


def test_a_burst_of_fifty_edits_triggers_a_bounded_number_of_runs(promoted: Path) -> None:
    text = (promoted / TIME_MD).read_text()
    with running(promoted) as loop:
        for i in range(50):
            _save_atomically(promoted, TIME_MD, text + f"\n- Edit number {i}.\n")
            time.sleep(0.005)
        loop.wait_runs(1, "edit")
        runs = loop.quiet()
    edits = [v for v in runs if v.trigger == "edit"]
    assert 1 <= len(edits) <= 3, len(edits)
    assert len(runs) == len(edits) + 1


def test_files_the_tool_writes_and_files_outside_lenses_trigger_nothing(promoted: Path) -> None:
    with running(promoted) as loop:
        (promoted / ".dst" / "x").write_text("scratch")
        (promoted / ".dst" / "sub").mkdir()
        (promoted / ".dst" / "sub" / "y").write_text("scratch")
        (promoted / "README.md").write_text("not a lens\n")
        # Re-seeding rewrites the embedded warehouse, which the loop must not hold open.
        seeded = invoke(promoted, "seed")
        assert seeded.code == 0, seeded.stderr
        runs = loop.quiet()
    assert [v.trigger for v in runs] == ["start"]


def test_a_commit_or_branch_switch_replans_once(promoted: Path) -> None:
    git(promoted, "checkout", "-q", "-b", "other")
    text = (promoted / TIME_MD).read_text()
    commit(promoted, {TIME_MD: text + "\n- Fiscal weeks end on Sunday.\n"}, "other: edit a skill")
    git(promoted, "checkout", "-q", "main")
    # A longer debounce than the other tests: git writes the files a moment
    # before it moves HEAD, and a loaded machine can stretch that moment.
    with running(promoted, debounce_ms=400) as loop:
        git(promoted, "checkout", "-q", "other")
        switched = loop.wait_runs(2)[1]
        assert switched.trigger == "head"
        assert switched.paths == (TIME_MD,)
        sales = next(r for r in switched.report.lenses if r.plan.lens == "sales")
        assert sales.action == "promoted" and sales.results  # "would promote", suite ran
        git(promoted, "commit", "-q", "--allow-empty", "-m", "an empty commit")
        committed = loop.wait_runs(3)[2]
        runs = loop.quiet()
    assert committed.trigger == "head" and committed.paths == ()
    assert committed.source == git(promoted, "rev-parse", "HEAD")
    assert len(runs) == 3


def test_index_lock_pauses_the_loop_until_git_is_done(promoted: Path) -> None:
    text = (promoted / TIME_MD).read_text()
    lock = promoted / ".git" / "index.lock"
    with running(promoted) as loop:
        lock.write_text("")
        _save_atomically(promoted, TIME_MD, text + "\n- Years are calendar years.\n")
        loop.wait(lambda: any("index.lock" in m for m in loop.progress))
        assert loop.quiet() == loop.runs("start")  # paused: nothing ran
        lock.unlink()
        loop.wait_runs(1, "edit")
        runs = loop.quiet()
    assert [v.trigger for v in runs] == ["start", "edit"]
    assert runs[1].paths == (TIME_MD,)


def test_reconcile_mode_applies_each_commit_once_and_never_retries_a_blocked_one(
    promoted: Path,
) -> None:
    text = (promoted / TIME_MD).read_text()
    metric = "lenses/sales/metrics/units_sold.yaml"
    with running(promoted, reconcile_mode=True) as loop:
        assert {r.action for r in loop.runs("start")[0].report.lenses} == {"unchanged"}
        good = commit(promoted, {TIME_MD: text + "\n- Weeks start on Monday.\n"}, "good")
        applied = loop.wait_runs(1, "reconcile")[0]
        assert applied.source == good
        assert {r.plan.lens: r.action for r in applied.report.lenses}["sales"] == "promoted"
        serving = _serving(promoted, "sales")
        assert serving is not None and _meta(promoted, serving)["source"] == good

        bad_text = _double_units_sold((promoted / metric).read_text())
        bad = commit(promoted, {metric: bad_text}, "bad: doubles a metric")
        blocked = loop.wait_runs(2, "reconcile")[1]
        assert blocked.source == bad and blocked.report.exit_code == 1
        assert {r.plan.lens: r.action for r in blocked.report.lenses}["sales"] == "blocked"
        # a working-tree edit is not this mode's business
        (promoted / TIME_MD).write_text(text + "\n- Uncommitted.\n")
        runs = loop.quiet()
    assert [v.trigger for v in runs] == ["start", "reconcile", "reconcile"]
    assert _serving(promoted, "sales") == serving
    attempt = refstore.ref_target(pygit2.Repository(str(promoted)), "refs/dst/attempts/sales")
    assert attempt is not None and _meta(promoted, attempt)["source"] == bad

    # A new loop (a restart) reads the attempt record and does not retry the commit.
    with running_without_start(promoted, reconcile_mode=True) as again:
        again.wait(lambda: any("already attempted" in m for m in again.progress))
        assert again.quiet() == []
    assert refstore.ref_target(pygit2.Repository(str(promoted)), "refs/dst/attempts/sales") == (
        attempt
    )


@contextmanager
def running_without_start(repo: Path, **options: Any) -> Iterator[Loop]:
    loop = Loop(repo, **options)
    loop.thread.start()
    try:
        yield loop
    finally:
        loop.stop.set()
        loop.thread.join(60)
    assert not loop.thread.is_alive()
    if loop.error is not None:
        raise loop.error


def test_the_schedule_re_verifies_every_serving_lens(promoted: Path) -> None:
    before = _serving(promoted, "finance")
    # 0.0003 h is about a second.
    with running(promoted, interval_hours=0.0003) as loop:
        scheduled = loop.wait_runs(1, "schedule")[0]
    assert scheduled.report.command == "test"
    assert {r.plan.lens: r.action for r in scheduled.report.lenses} == {
        "finance": "verified",
        "sales": "verified",
    }
    assert _serving(promoted, "finance") == before  # a verification never moves it
    log = invoke(promoted, "log", "finance", "--format", "json")
    assert log.code == 0, log.stderr
    newest = log.json()["history"][0]
    assert (newest["kind"], newest["action"], newest["verified"]) == (
        "verification",
        "verify",
        before,
    )
    assert log.json()["deployments"][0]["action"] == "promote"


def test_reconcile_mode_refuses_a_missing_branch(promoted: Path) -> None:
    with pytest.raises(UsageError, match="nope"):
        watch(
            _runtime(promoted),
            WatchSettings(interval_hours=0, reconcile_mode=True, branch="nope"),
            on_verdict=lambda _v: None,
        )


# -- the command line ---------------------------------------------------------------


def _app() -> typer.Typer:
    """``dst`` with ``watch`` registered, whether or not cli.py registers it yet."""
    app = reconciler.cli.app.app
    if "watch" in dict(reconciler.cli.app.COMMANDS) or any(
        c.name == "watch" or c.callback is watch_command for c in app.registered_commands
    ):
        return app
    local = typer.Typer()
    local.command("watch")(watch_command)
    local.callback()(lambda: None)  # keep "watch" a subcommand, as it is under dst
    return local


def test_once_prints_a_verdict_and_exits_0_or_1(
    promoted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DST_WAREHOUSE_URL", raising=False)
    runner = CliRunner()
    clean = runner.invoke(_app(), ["watch", "--once", "--repo", str(promoted)])
    assert clean.exit_code == 0, clean.output
    assert "sales: UNCHANGED" in clean.stdout
    metric = promoted / "lenses/sales/metrics/units_sold.yaml"
    metric.write_text(_double_units_sold(metric.read_text()))
    blocked = runner.invoke(
        _app(), ["watch", "--once", "--repo", str(promoted), "--format", "json"]
    )
    assert blocked.exit_code == 1, blocked.output
    obj = json.loads(blocked.stdout)
    assert obj["command"] == "watch" and obj["dry_run"] is True
    sales = next(x for x in obj["lenses"] if x["lens"] == "sales")
    assert sales["action"] == "blocked" and sales["candidate"] is None
    bad = runner.invoke(_app(), ["watch", "--once", "--reconcile", "--repo", str(promoted)])
    assert bad.exit_code == 2


def test_dst_watch_is_wired_into_the_console_script(promoted: Path) -> None:
    helped = invoke(promoted, "watch", "--help")
    if helped.code != 0:
        pytest.skip("cli.py does not register `dst watch` yet")
    done = invoke(promoted, "watch", "--once")
    assert done.code == 0, done.stdout + done.stderr
    assert "sales: UNCHANGED" in done.stdout


_INTERRUPTIBLE = """
import signal, sys
# A shell that starts a background job makes it ignore SIGINT; restore Ctrl-C.
signal.signal(signal.SIGINT, signal.default_int_handler)
import typer
import reconciler.cli.app
from reconciler.cli.watch import watch
app = reconciler.cli.app.app
lazy = dict(getattr(reconciler.cli.app, "COMMANDS", ()))
if "watch" not in lazy and not any(c.callback is watch for c in app.registered_commands):
    app = typer.Typer()
    app.command("watch")(watch)
    app.callback()(lambda: None)
app(args=["watch", *sys.argv[1:]], prog_name="dst")
"""


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)], ids=["SIGINT", "SIGTERM"]
)
def test_interrupt_exits_130_and_terminate_exits_0(promoted: Path, sig: int, code: int) -> None:
    env = {**os.environ, **GIT_ENV, "HOME": str(promoted), "DST_EVAL_INTERVAL_HOURS": "0"}
    env.pop("DST_WAREHOUSE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTIBLE, "--debounce-ms", "100"],
        cwd=promoted,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the start verdict: the loop is running
        assert "start" in first, first + (proc.stderr.read() if proc.stderr else "")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert (sig == signal.SIGINT) == ("interrupted" in err)
    assert git(promoted, "for-each-ref", "refs/dst/applying") == ""
