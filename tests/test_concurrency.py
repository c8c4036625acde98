"""Eight processes race promote, rollback and test-verify on one lens: no update is lost.

Eight command streams (``tests/warm_launcher.py`` forks, eight warm processes)
run ``DST_RACE_ROUNDS`` rounds each against one repository (5 by default; 50 under
``DST_STRESS=full``, as CI runs it). Each round picks, from a seeded
RNG, ``dst apply --lens shop --to C --allow-rewind`` for one of several
candidate commits, ``dst rollback shop`` or ``dst test shop``, with ``--format
json``. A round that moved the serving ref records ``serving_before →
serving_after`` (the value it planned against and the deployment it wrote); a
``dst test`` round never moves it and records a verification under
``refs/dst/verify/shop`` instead. Then:

- every winner's deployment has the value it planned against as first parent;
- the first-parent history of ``refs/dst/serving/shop`` is exactly the winners'
  deployments, one after another, down to the one serving before the race: no
  update lost, none unaccounted for, no fork;
- the verify chain holds one verification per ``dst test`` round, each of a
  deployment that served (a winner's, or the one serving before the race);
- every loser exited 1 with "re-plan" in stderr (a lock held by a peer is
  waited out with a bounded backoff first); nothing else failed.

``DST_RACE_SEED`` replays a run; the seed is in the summary line.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pygit2
import pytest

from reconciler.git import refs as refstore, verifications
from reconciler.ids import Oid
from tests.crashkit import Launcher, commit_variant, new_repo, stress_size
from tests.figures import record

PROCESSES = 8
ROUNDS = stress_size("DST_RACE_ROUNDS", small=5, full=50)
SEED = int(os.environ.get("DST_RACE_SEED") or random.SystemRandom().randrange(1 << 31))
CANDIDATES = 6
REF = refstore.serving_ref("shop")


Outcome = tuple[str, Oid | None, Oid | None, str]


def _round(launcher: Launcher, path: Path, rng: random.Random, candidates: list[str]) -> Outcome:
    """One racing command; returns ``(kind, before, after, detail)``."""
    op = rng.choice(("apply", "rollback", "test"))
    if op == "apply":
        to = rng.choice(candidates)
        argv = ("apply", "--lens", "shop", "--to", to, "--allow-rewind", "--format", "json")
    else:
        argv = (op, "shop", "--format", "json")
    done = launcher.run(path, *argv)
    detail = f"{' '.join(argv)} → {done.status}: {done.stderr.strip()[-400:]}"
    if done.status == 1:
        assert "re-plan" in done.stderr, f"a loser that does not say re-plan: {detail}"
        return "lost", None, None, detail
    if done.status == 2 and op == "rollback" and "no earlier deployment" in done.stderr:
        return "noop", None, None, detail
    assert done.status == 0, f"(seed {SEED}) {detail}"
    lens = next(x for x in json.loads(done.stdout)["lenses"] if x["lens"] == "shop")
    before, after = lens["serving_before"], lens["serving_after"]
    if op == "test":  # a verification never moves the serving ref
        assert before == after and lens["action"] == "verified", detail
        return "test", None, None, detail
    if before == after:
        assert op == "apply" and lens["action"] == "unchanged", detail
        return "noop", None, None, detail
    return op, Oid(before), Oid(after), detail


@pytest.mark.slow
def test_eight_processes_racing_lose_no_update(tmp_path: Path) -> None:
    path = new_repo(tmp_path / "repo")
    launchers = [Launcher(tmp_path / f"launcher-{i}") for i in range(PROCESSES)]
    try:
        commit_variant(path, 1, ["shop"])
        for step in (("seed",), ("apply",)):
            done = launchers[0].run(path, *step)
            assert done.status == 0, done.stderr
        candidates = [commit_variant(path, 2 + i, ["shop"]) for i in range(CANDIDATES)]
        base = refstore.ref_target(pygit2.Repository(str(path)), REF)
        assert base is not None
        outcomes: list[Outcome] = []
        lock = threading.Lock()

        def stream(i: int) -> None:
            rng = random.Random(f"{SEED}:{i}")
            for _ in range(ROUNDS):
                result = _round(launchers[i], path, rng, candidates)
                with lock:
                    outcomes.append(result)

        started = time.monotonic()
        with ThreadPoolExecutor(PROCESSES) as pool:
            for future in [pool.submit(stream, i) for i in range(PROCESSES)]:
                future.result()
        seconds = time.monotonic() - started
    finally:
        for launcher in launchers:
            launcher.close()

    repo = pygit2.Repository(str(path))
    won = {after: (before, detail) for kind, before, after, detail in outcomes if after}
    kinds = Counter(kind for kind, *_ in outcomes)
    assert len(won) == sum(1 for o in outcomes if o[2]), "two winners wrote one deployment"
    for new, (old, detail) in won.items():
        parent = str(repo[new].peel(pygit2.Commit).parent_ids[0])
        assert parent == old, f"(seed {SEED}) {new[:12]} was planned against {old[:12]}: {detail}"
    head = refstore.ref_target(repo, REF)
    assert head is not None
    chain = []
    for dep in refstore.history(repo, head):
        if dep.oid == base:
            break
        assert str(repo[dep.oid].peel(pygit2.Commit).parent_ids[0]) == dep.previous
        chain.append(dep.oid)
    else:
        raise AssertionError(f"(seed {SEED}) the serving history no longer reaches {base[:12]}")
    lost_updates = set(won) - set(chain)
    assert not lost_updates, f"(seed {SEED}) lost updates: {sorted(lost_updates)}"
    assert set(chain) == set(won) and len(chain) == len(won), "unaccounted deployments"
    checked = refstore.ref_target(repo, refstore.verify_ref("shop"))
    verified = verifications.chain(repo, checked) if checked else []
    assert len(verified) == kinds["test"], f"(seed {SEED}) a verification was lost"
    assert {v.info.verified for v in verified} <= set(won) | {base}
    assert refstore.ref_target(repo, refstore.APPLYING) is None
    assert not list(Path(repo.path).rglob("*.lock"))
    rounds = len(outcomes)
    assert rounds == PROCESSES * ROUNDS
    record(
        f"races: {rounds} rounds, {len(won)} won (apply {kinds['apply']}, rollback "
        f"{kinds['rollback']}, test {kinds['test']}), {kinds['lost']} lost (re-plan), "
        f"{kinds['noop']} no-op, {len(lost_updates)} lost updates; history linear over "
        f"{len(chain)} deployments; {PROCESSES} processes, seed {SEED}, {seconds:.0f} s"
    )
