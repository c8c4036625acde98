"""History a person can read: ``dst log`` and ``dst status`` with times, authors and
subjects, attempts interleaved, a serving rollback named, rolling forward, ``dst gc``."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pygit2

from reconciler.git import refs as refstore
from reconciler.git.attempts import chain_length
from reconciler.history import ATTEMPTS_WARN, ago, iso_time
from tests.helpers import command_env, git, invoke
from tests.helpers.examples import double_metric, serving

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def test_relative_and_iso_times() -> None:
    assert iso_time(0) == "1970-01-01T00:00:00Z"
    assert ago(1000, now=1030) == "just now"
    assert ago(1000, now=1000 + 5 * 60 + 7) == "5 min ago"
    assert ago(1000, now=1000 + 3 * 3600) == "3 h ago"
    assert ago(1000, now=1000 + 86400) == "1 day ago"
    assert ago(1000, now=1000 + 9 * 86400) == "9 days ago"
    assert ago(5000, now=1000) == "in the future"


def test_log_interleaves_blocked_attempts_with_deployments(promoted_repo: Path) -> None:
    promoted = serving(promoted_repo, "sales")
    blocked_at = double_metric(promoted_repo, "units_sold")
    assert invoke(promoted_repo, "apply").code == 1
    attempt = git(promoted_repo, "rev-parse", "refs/dst/attempts/sales")

    text = invoke(promoted_repo, "log", "sales")
    assert text.code == 0, text.stderr
    lines = text.stdout.splitlines()
    first, second = (i for i, line in enumerate(lines) if line.startswith(("✗", "●")))
    assert lines[first].startswith(f"✗ {attempt[:12]}  BLOCKED (attempt)")
    assert re.search(rf"{ISO} \(just now\)  score \d+/\d+, accuracy \d+%, wrong \d+%", lines[first])
    assert lines[first + 1] == f"    source {blocked_at[:12]} “double units_sold” by Test Author"
    assert lines[first + 2].startswith("    reason: gate BLOCKED")
    assert lines[second].startswith(f"● {str(promoted)[:12]}  promote")
    assert "reach " in lines[second]
    # the trend still covers deployments only
    assert "trend over 1 deployment(s)" in text.stdout

    as_json = invoke(promoted_repo, "log", "sales", "--format", "json").json()
    assert [(h["kind"], h["deployment"]) for h in as_json["history"]] == [
        ("attempt", attempt),
        ("deployment", promoted),
    ]
    assert [d["deployment"] for d in as_json["deployments"]] == [promoted]
    newest = as_json["history"][0]
    assert newest["action"] == "blocked" and newest["wrong_rate"] > 0
    assert re.fullmatch(ISO, newest["recorded_at_iso"])
    assert newest["source_commit"]["commit"] == blocked_at
    assert newest["source_commit"]["subject"] == "double units_sold"
    assert newest["source_commit"]["author"] == "Test Author"


def test_status_shows_when_and_from_what_commit(promoted_repo: Path) -> None:
    double_metric(promoted_repo, "units_sold")
    assert invoke(promoted_repo, "apply").code == 1
    out = invoke(promoted_repo, "status").stdout
    sales = out[out.index("sales: serving") :]
    assert re.search(
        rf"\n  recorded {ISO} \((just now|\d+ (min|h) ago)\) from [0-9a-f]{{12}} “example lenses”",
        sales,
    )
    assert re.search(rf"\n    attempted {ISO} .* “double units_sold” by Test Author", sales)
    row = next(x for x in invoke(promoted_repo, "status", "--format", "json").json()["lenses"])
    assert row["serving_commit"]["subject"] == "example lenses"
    assert row["serving_rollback"] is None


def test_status_names_a_serving_rollback_until_apply_rolls_forward(promoted_repo: Path) -> None:
    first = serving(promoted_repo, "sales")
    double_metric(promoted_repo, "units_sold", gate="warn")
    assert invoke(promoted_repo, "apply").code == 0
    assert invoke(promoted_repo, "rollback", "sales").code == 0
    rolled = serving(promoted_repo, "sales")
    status = invoke(promoted_repo, "status")
    assert f"serving a rollback to {str(first)[:12]} since {str(rolled)[:12]}" in status.stdout
    row = next(
        x
        for x in invoke(promoted_repo, "status", "--format", "json").json()["lenses"]
        if x["lens"] == "sales"
    )
    assert row["serving_rollback"]["rollback_to"] == first
    # a verification (refs/dst/verify/) leaves the rollback serving
    assert invoke(promoted_repo, "test", "sales").code == 0
    assert "serving a rollback to" in invoke(promoted_repo, "status").stdout

    # not a terminal, no --yes: the notice, then the apply proceeds (what CI and watch do)
    forward = invoke(promoted_repo, "apply")
    assert forward.code == 0, forward.stdout + forward.stderr
    assert f"lens sales serves a rollback to {str(first)[:12]}" in forward.stderr
    assert "this apply rolls it forward to HEAD" in forward.stderr
    assert serving(promoted_repo, "sales") != rolled
    assert "serving a rollback" not in invoke(promoted_repo, "status").stdout
    again = invoke(promoted_repo, "apply")
    assert "rolls it forward" not in again.stderr


def test_apply_on_a_terminal_asks_before_rolling_forward(promoted_repo: Path) -> None:
    double_metric(promoted_repo, "units_sold", gate="warn")
    assert invoke(promoted_repo, "apply").code == 0
    assert invoke(promoted_repo, "rollback", "sales").code == 0
    rolled = serving(promoted_repo, "sales")
    # a real terminal on stdin needs a process of its own
    leader, follower = pty.openpty()
    os.write(leader, b"n\n")  # the answer waits in the terminal's input until read
    try:
        done = subprocess.run(
            [sys.executable, "-m", "reconciler", "apply"],
            cwd=promoted_repo,
            env=command_env(promoted_repo),
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "roll forward?" in done.stderr
    assert "not rolled forward: sales keep serving the rollback" in done.stderr
    assert "--yes" in done.stderr
    assert serving(promoted_repo, "sales") == rolled
    assert invoke(promoted_repo, "apply", "--yes").code == 0
    assert serving(promoted_repo, "sales") != rolled


def _more_attempts(repo_path: Path, lens: str, n: int) -> None:
    """Append ``n`` attempts shaped like the newest one (each a real commit, by CAS)."""
    repo = pygit2.Repository(str(repo_path))
    ref = refstore.attempts_ref(lens)
    for i in range(n):
        last = refstore.ref_target(repo, ref)
        assert last is not None
        dep = refstore.read_deployment(repo, last)
        run = refstore.read_run(repo, last)
        meta = {**dep.meta, "previous": last, "recorded_at": dep.info.recorded_at + 1}
        meta["reason"] = f"attempt {i}"
        refstore.advance(
            repo,
            ref,
            last,
            refstore.NewDeployment(
                lens=lens,
                source=dep.source,
                lens_tree=dep.lens_tree,
                bindings=dep.bindings,
                run=run,
                meta=meta,
                message=f"blocked {lens} attempt {i}",
            ),
            reason="test",
        )


def test_gc_keeps_the_newest_attempts_and_never_touches_serving(promoted_repo: Path) -> None:
    source = double_metric(promoted_repo, "units_sold")
    assert invoke(promoted_repo, "apply").code == 1
    _more_attempts(promoted_repo, "sales", ATTEMPTS_WARN)
    repo = pygit2.Repository(str(promoted_repo))
    head = refstore.ref_target(repo, refstore.attempts_ref("sales"))
    assert head is not None and chain_length(repo, head) == ATTEMPTS_WARN + 1
    warned = invoke(promoted_repo, "status")
    assert f"more than {ATTEMPTS_WARN} attempts recorded" in warned.stdout
    assert "dst gc --keep 10" in warned.stdout
    refs_before = {
        n: git(promoted_repo, "rev-parse", n)
        for n in ("refs/dst/serving/sales", "refs/dst/serving/finance")
    }
    newest = refstore.read_deployment(repo, head)

    assert invoke(promoted_repo, "gc", "--keep", "0").code == 2
    assert invoke(promoted_repo, "gc", "finance").code == 2  # no attempts there
    done = invoke(promoted_repo, "gc", "--keep", "3", "--format", "json")
    assert done.code == 0, done.stderr
    (pruned,) = done.json()["lenses"]
    assert (pruned["before"], pruned["kept"], pruned["dropped"]) == (ATTEMPTS_WARN + 1, 3, 48)
    assert pruned["old"] == head
    repo = pygit2.Repository(str(promoted_repo))
    new_head = refstore.ref_target(repo, refstore.attempts_ref("sales"))
    assert new_head == pruned["new"] != head
    assert new_head is not None and chain_length(repo, new_head) == 3
    kept = refstore.history(repo, new_head)
    assert len(kept) == 3 and kept[-1].previous is None
    assert kept[0].meta == {**newest.meta, "previous": kept[1].oid}
    assert kept[0].lens_tree == newest.lens_tree
    assert repo[new_head].peel(pygit2.Commit).message == repo[head].peel(pygit2.Commit).message
    assert {n: git(promoted_repo, "rev-parse", n) for n in refs_before} == refs_before
    assert refstore.attempt_of(repo, source) == "sales"  # watch still sees it was tried
    assert "more than" not in invoke(promoted_repo, "status").stdout
    log = invoke(promoted_repo, "log", "sales", "--format", "json").json()
    assert [h["kind"] for h in log["history"]] == ["attempt"] * 3 + ["deployment"]
    text = invoke(promoted_repo, "gc", "--keep", "3")
    assert text.code == 0 and "sales: 3 attempt(s), nothing to prune" in text.stdout
