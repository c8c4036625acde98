"""Crash consistency: SIGKILL dst apply, rollback and test, then check what they left.

Every named step boundary (``reconciler/git/crash.py``, driven by
``DST_CRASH_AT``) is killed once, and then commands are killed after a random
delay drawn from their measured run time (half over the whole run, half over its
last quarter, where the writes happen), until ``DST_CRASH_KILLS`` processes have
died of SIGKILL: 24 by default (every named step and a few random points), 200 under
``DST_STRESS=full``, as CI runs it. After every kill:

- each serving ref holds exactly the old deployment or exactly the new one (a
  commit whose first parent is the old one, with the expected action and lens
  tree); a multi-lens apply is all-or-nothing unless its intent record is still
  there to roll it forward;
- the deployment each ref points at reads back, its lens loads, and its history
  reaches the lens's root; ``git fsck`` finds every object;
- every ``.lock`` file left is reported (``dst status`` and a refusing ``dst
  apply`` name it with its age) and is still there afterwards: dst never deletes
  one; the test removes it as the message tells a user to;
- the next ``dst apply`` succeeds, and what served before it stays in history.

The random delays come from a seeded RNG; the seed is in the summary line and in
every failure (``DST_CRASH_SEED`` replays it). Commands run as forks of one warm
process (``tests/warm_launcher.py``), two streams at a time, each in its own copy
of a seeded template repository whose ``refs/dst/`` is reset before every trial.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest

from reconciler.errors import StaleLock
from reconciler.git import refs as refstore, trees as gitstate
from reconciler.git.locks import LOCK_WAIT_ENV, ref_locks
from reconciler.ids import Oid
from tests.crashkit import LENSES, Finished, Launcher, commit_variant, new_repo, stress_size
from tests.figures import record
from tests.helpers import git

KILLS = stress_size("DST_CRASH_KILLS", small=24, full=200)
SEED = int(os.environ.get("DST_CRASH_SEED") or random.SystemRandom().randrange(1 << 31))
WORKERS = 2
COMMANDS = {"apply": ("apply",), "rollback": ("rollback", "shop"), "test": ("test", "shop")}
ACTION = {"apply": "promote", "rollback": "rollback", "test": "verify"}

# (command, steps): the command is killed at the first step; a second step kills the
# next `dst apply` too, while it recovers from the first crash.
NAMED: list[tuple[str, tuple[str, ...]]] = [
    ("apply", ("deployment-written@1",)),
    ("apply", ("deployment-written@2",)),
    ("apply", ("ref-locked@1",)),  # the intent record's ref
    ("apply", ("intent-written",)),
    ("apply", ("ref-locked@2",)),  # first lens ref, second not yet locked
    ("apply", ("ref-locked@3",)),  # both lens refs locked
    ("apply", ("refs-set",)),
    ("apply", ("ref-locked@4",)),  # removing the intent record
    ("apply", ("intent-cleared",)),
    ("apply", ("intent-written", "ref-locked@1")),  # killed again while rolling forward
    ("apply", ("intent-written", "recover-rolled")),
    ("rollback", ("deployment-written",)),
    ("rollback", ("ref-locked",)),
    ("rollback", ("refs-set",)),
    ("test", ("restamp-before",)),
    ("test", ("deployment-written",)),
    ("test", ("ref-locked",)),
    ("test", ("refs-set",)),
    ("test", ("restamp-after",)),
]


@dataclass(frozen=True)
class Template:
    """A seeded two-lens repository: v1 and v2 promoted, v3 committed, not applied."""

    path: Path
    old: dict[str, Oid]  # serving deployment per lens (v2)
    refs: dict[str, Oid]  # every ref under refs/dst/
    trees: dict[str, dict[str, Oid]]  # command -> lens -> lens tree its new deployment serves


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Template]:
    base = tmp_path_factory.mktemp("crash")
    launcher = Launcher(base / "launcher")
    try:
        path = new_repo(base / "template")
        commit_variant(path, 1)
        for step in (("seed",), ("apply",)):
            done = launcher.run(path, *step)
            assert done.status == 0, done.stderr
        commit_variant(path, 2)
        assert (done := launcher.run(path, "apply")).status == 0, done.stderr
        commit_variant(path, 3)
    finally:
        launcher.close()
    repo = pygit2.Repository(str(path))
    old = {n: Oid(str(repo.references[refstore.serving_ref(n)].target)) for n in LENSES}
    refs = {r: Oid(str(repo.references[r].target)) for r in repo.references if "/dst/" in r}

    def tree(rev: str, lens: str) -> Oid:
        return Oid(git(path, "rev-parse", f"{rev}:lenses/{lens}"))

    trees = {
        "apply": {n: tree("HEAD", n) for n in LENSES},
        "rollback": {"shop": tree("HEAD~2", "shop")},
        "test": {"shop": tree("HEAD~1", "shop")},
    }
    yield Template(path, old, refs, trees)


def _copy(template: Template, dest: Path) -> Path:
    shutil.copytree(template.path, dest, symlinks=True, ignore=shutil.ignore_patterns(".dst"))
    (dest / ".dst").symlink_to(template.path / ".dst")
    return dest


def _reset(template: Template, path: Path) -> Path:
    """Put ``refs/dst/`` back as in the template; objects earlier trials wrote stay, unnamed."""
    repo = pygit2.Repository(str(path))
    assert not _lock_files(repo)
    for name in [r for r in repo.references if "/dst/" in r and r not in template.refs]:
        repo.references.delete(name)
    for name, oid in template.refs.items():
        repo.references.create(name, pygit2.Oid(hex=oid), force=True)
    return path


def _lock_files(repo: pygit2.Repository) -> list[str]:
    return sorted(str(p) for p in Path(repo.path).rglob("*.lock"))


def _report_locks(launcher: Launcher, path: Path, where: str) -> int:
    """Every lock file left is reported, with its age, and not deleted; then remove them."""
    repo = pygit2.Repository(str(path))
    on_disk = _lock_files(repo)
    assert on_disk == sorted(lock.path for lock in ref_locks(repo)), where
    if not on_disk:
        return 0
    refused = launcher.run(path, "apply", env={LOCK_WAIT_ENV: "0.2"})
    assert refused.status == 2, f"{where}: {refused.stderr}"
    assert any(p in refused.stderr for p in on_disk), f"{where}: {refused.stderr}"
    assert " s old" in refused.stderr and "remove it" in refused.stderr, refused.stderr
    status = launcher.run(path, "status")
    assert status.status == 0 and all(p in status.stdout for p in on_disk), status.stdout
    assert _lock_files(repo) == on_disk, f"{where}: a lock file was deleted"
    for p in on_disk:  # what the message tells a user to do once nothing runs
        os.unlink(p)
    return len(on_disk)


def _check_refs(template: Template, path: Path, command: str, where: str) -> str:
    """Each serving ref is exactly old or exactly new, and what it names loads.

    Returns:
        What the kill left: ``old`` (nothing moved), ``new`` (moved, settled) or
        ``intent`` (an intent record is left for the next run to roll forward).
    """
    repo = pygit2.Repository(str(path))
    intent = refstore.ref_target(repo, refstore.APPLYING)
    planned: dict[str, str] = {}
    if intent is not None:
        assert command == "apply", f"{where}: intent record left by {command}"
        blob = repo[intent].peel(pygit2.Commit).tree["apply.json"]
        for u in json.loads(repo[blob.id].data)["updates"]:
            planned[u["ref"]] = u["new"]
            assert u["old"] == template.old[u["ref"].rsplit("/", 1)[1]], where
        assert sorted(planned) == sorted(refstore.serving_ref(n) for n in LENSES), where
    state = {}
    for lens in LENSES:
        ref = refstore.serving_ref(lens)
        cur = refstore.ref_target(repo, ref)
        assert cur is not None, f"{where}: {ref} vanished"
        if cur == template.old[lens]:
            state[lens] = "old"
        else:
            assert lens in template.trees[command], f"{where}: {ref} moved by {command}"
            dep = refstore.read_deployment(repo, cur)
            parent = str(repo[cur].peel(pygit2.Commit).parent_ids[0])
            assert parent == template.old[lens], f"{where}: {ref} skipped the old deployment"
            assert dep.meta["action"] == ACTION[command], where
            assert dep.lens_tree == template.trees[command][lens], where
            assert cur == planned.get(ref, cur), f"{where}: {ref} is not the intent's new"
            state[lens] = "new"
        dep = refstore.read_deployment(repo, cur)
        gitstate.load_lens_at(repo, gitstate.LensTree(lens, dep.lens_tree))
        chain = refstore.history(repo, cur)
        assert chain[-1].previous is None, where
    if command == "test":  # a verification moves refs/dst/verify/<lens> alone
        checked = refstore.ref_target(repo, refstore.verify_ref("shop"))
        if checked is not None:
            verified = refstore.read_deployment(repo, checked)
            assert verified.info.verified == template.old["shop"], where
            assert verified.previous is None and verified.meta["action"] == "verify", where
            state["shop"] = "new"
    if command == "apply" and intent is None:
        assert len(set(state.values())) == 1, f"{where}: half-applied without intent {state}"
    git(path, "fsck", "--no-progress", "--no-dangling")
    return "intent" if intent is not None else ("new" if "new" in state.values() else "old")


def _next_apply(template: Template, launcher: Launcher, path: Path, before: dict[str, Oid]) -> None:
    where = f"next apply in {path.name} (seed {SEED})"
    done = launcher.run(path, "apply")
    assert done.status == 0, f"{where}: {done.stdout}\n{done.stderr}"
    repo = pygit2.Repository(str(path))
    assert refstore.ref_target(repo, refstore.APPLYING) is None, where
    assert not _lock_files(repo), where
    for lens in LENSES:
        cur = refstore.ref_target(repo, refstore.serving_ref(lens))
        assert cur is not None
        dep = refstore.read_deployment(repo, cur)
        assert dep.lens_tree == template.trees["apply"][lens], where
        chain = [d.oid for d in refstore.history(repo, cur)]
        assert before[lens] in chain and template.old[lens] in chain, f"{where}: history lost"


@dataclass
class Tally:
    """What the harness saw, shared by the worker threads."""

    kills: Counter[str]
    left: Counter[str]  # what kills left: old / new / intent
    consistent: int = 0
    locks: int = 0
    trials: int = 0
    next_ok: int = 0
    finished_first: int = 0

    def __post_init__(self) -> None:
        self.lock = threading.Lock()


def _trial(
    template: Template,
    launcher: Launcher,
    tally: Tally,
    work: Path,
    command: str,
    steps: tuple[str, ...] = (),
    delay: float | None = None,
) -> None:
    where = f"{command} {'+'.join(steps) or f'after {delay:.3f} s'} (seed {SEED})"
    path = _reset(template, work)
    env = {"DST_CRASH_AT": steps[0]} if steps else None
    done = launcher.run(path, *COMMANDS[command], env=env, kill_after=delay)
    if steps:
        assert done.killed, f"{where}: step not reached ({done.status}): {done.stderr}"
    if not done.killed:
        assert done.status == 0, f"{where}: {done.stderr}"
    locks = _report_locks(launcher, path, where)
    left = [_check_refs(template, path, command, where)] if done.killed else []
    if len(steps) > 1:
        again: Finished = launcher.run(path, "apply", env={"DST_CRASH_AT": steps[1]})
        assert again.killed, f"{where}: second step not reached: {again.stderr}"
        locks += _report_locks(launcher, path, where)
        left.append(_check_refs(template, path, "apply", where))
    repo = pygit2.Repository(str(path))
    before = {n: Oid(str(repo.references[refstore.serving_ref(n)].target)) for n in LENSES}
    _next_apply(template, launcher, path, before)
    with tally.lock:
        tally.kills[command] += len(left)
        tally.left.update(left)
        tally.consistent += len(left)  # each _check_refs above passed
        tally.locks += locks
        tally.trials += 1
        tally.next_ok += 1
        tally.finished_first += int(not done.killed)


def _durations(template: Template, launcher: Launcher, work: Path) -> dict[str, float]:
    """Median unkilled run time of each command (each run checked too)."""
    out = {}
    for command in COMMANDS:
        times = []
        for _ in range(3):
            path = _reset(template, work)
            done = launcher.run(path, *COMMANDS[command])
            assert done.status == 0, done.stderr
            _check_refs(template, path, command, f"unkilled {command}")
            times.append(done.seconds)
        out[command] = sorted(times)[1]
    return out


def _delay(duration: float, draw: int) -> float:
    """Half the delays fall anywhere in the run, half in its last quarter, where it writes."""
    rng = random.Random(f"{SEED}:{draw}")
    low = 0.0 if rng.random() < 0.5 else 0.75 * duration
    return rng.uniform(low, 1.05 * duration)


@pytest.mark.slow
def test_sigkill_at_every_step_and_at_random_points(template: Template, tmp_path: Path) -> None:
    started = time.monotonic()
    tally = Tally(Counter(), Counter())
    launchers = [Launcher(tmp_path / f"launcher-{i}") for i in range(WORKERS)]
    free = [
        (launcher, _copy(template, tmp_path / f"work-{i}")) for i, launcher in enumerate(launchers)
    ]
    free_lock = threading.Lock()

    def run(command: str, steps: tuple[str, ...] = (), delay: float | None = None) -> None:
        with free_lock:
            launcher, work = free.pop()
        try:
            _trial(template, launcher, tally, work, command, steps, delay)
        finally:
            with free_lock:
                free.append((launcher, work))

    try:
        durations = _durations(template, *free[0])
        with ThreadPoolExecutor(WORKERS) as pool:
            for future in [pool.submit(run, c, s) for c, s in NAMED]:
                future.result()
        named = sum(tally.kills.values())
        assert named == sum(len(s) for _, s in NAMED)
        quota = {c: (KILLS - named) // len(COMMANDS) for c in COMMANDS}
        quota["apply"] += max(0, KILLS - named) - sum(quota.values())
        target = {c: tally.kills[c] + quota[c] for c in COMMANDS}
        draws = 0
        with ThreadPoolExecutor(WORKERS) as pool:
            pending: list = []
            while any(tally.kills[c] < target[c] for c in COMMANDS):
                assert draws < 4 * KILLS, f"too few random delays kill (seed {SEED})"
                short = [c for c in COMMANDS if tally.kills[c] < target[c]]
                for command in short:
                    pending.append(pool.submit(run, command, (), _delay(durations[command], draws)))
                    draws += 1
                while len(pending) >= WORKERS:
                    pending.pop(0).result()
            for future in pending:
                future.result()
    finally:
        for launcher in launchers:
            launcher.close()
    total = sum(tally.kills.values())
    record(
        f"crash harness: {total} kills (apply {tally.kills['apply']}, rollback "
        f"{tally.kills['rollback']}, test {tally.kills['test']}); refs consistent "
        f"{tally.consistent}/{total} (left old {tally.left['old']}, new {tally.left['new']}, "
        f"intent to roll forward {tally.left['intent']}); locks reported {tally.locks}; "
        f"next apply ok {tally.next_ok}/{tally.trials} trials ({tally.finished_first} "
        f"finished before their kill); seed {SEED}; {time.monotonic() - started:.0f} s"
    )
    assert total >= KILLS


def test_a_left_lock_file_is_reported_with_its_age_and_never_deleted(
    template: Template, tmp_path: Path
) -> None:
    path = _copy(template, tmp_path / "repo")
    repo = pygit2.Repository(str(path))
    lock = Path(repo.path) / "refs/dst/serving/shop.lock"
    lock.write_text("")
    hour_ago = time.time() - 3600
    os.utime(lock, (hour_ago, hour_ago))
    launcher = Launcher(tmp_path / "launcher")
    try:
        for argv in (("apply",), ("rollback", "shop"), ("test", "shop")):
            done = launcher.run(path, *argv, env={LOCK_WAIT_ENV: "0.2"})
            assert done.status == 2, done.stderr
            age = re.search(rf"{re.escape(str(lock))} is (\d+) s old", done.stderr)
            assert age and 3600 <= int(age.group(1)) < 3700, done.stderr
            assert "no dst or git process is running" in done.stderr and "rm " in done.stderr
            assert lock.exists()
        status = launcher.run(path, "status", "--format", "json")
        assert status.status == 0
        (listed,) = json.loads(status.stdout)["locks"]
        assert listed["path"] == str(lock) and 3590 < listed["age_s"] < 3700
        text = launcher.run(path, "status")
        assert re.search(rf"lock file {re.escape(str(lock))} is 36\d\d s old", text.stdout)
        assert refstore.ref_target(repo, refstore.serving_ref("shop")) == template.old["shop"]
        lock.unlink()
        assert launcher.run(path, "apply").status == 0
    finally:
        launcher.close()


def test_a_peers_brief_lock_is_waited_out_not_reported(
    template: Template, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(template, tmp_path / "repo")
    repo = pygit2.Repository(str(path))
    ref = refstore.serving_ref("shop")
    old = template.old["shop"]
    lock = Path(repo.path) / "refs/dst/serving/shop.lock"
    monkeypatch.setenv(LOCK_WAIT_ENV, "2")
    lock.write_text("")
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    try:
        refstore.update_refs(repo, [refstore.RefUpdate(ref, old, Oid(old))], reason="t")
    finally:
        release.join()
    # the same file kept through the whole wait is stale: named, left in place
    monkeypatch.setenv(LOCK_WAIT_ENV, "0.2")
    lock.write_text("")
    with pytest.raises(StaleLock) as info:
        refstore.update_refs(repo, [refstore.RefUpdate(ref, old, Oid(old))], reason="t")
    assert info.value.path == str(lock) and lock.exists()
