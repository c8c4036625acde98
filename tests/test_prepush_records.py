"""The pre-push hook checks what is pushed under ``refs/dst/``, and reads stdin within a bound.

A forged serving ref (a blocked attempt, a branch commit) is refused before it reaches
the remote; what dst recorded goes through. Real bare origin, real clone, real ``git
push`` through the installed hook; the stdin bound is shown on a pipe a caller keeps
open, for ``dst hook-impl pre-push`` and for the installed script alike.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reconciler.git import hooks
from tests.helpers.push import (
    PushPair,
    break_sales as _break_sales,
    copy_pair,
    push_env,
    with_hook,
)


@pytest.fixture
def pair(_push_template: tuple[Path, Path], tmp_path: Path) -> PushPair:
    return with_hook(copy_pair(_push_template, tmp_path))


def _attempt(pair: PushPair) -> str:
    _break_sales(pair.clone)
    blocked = subprocess.run(
        [sys.executable, "-m", "reconciler", "apply"],
        cwd=pair.clone,
        env=push_env(pair.clone),
        capture_output=True,
        text=True,
        check=False,
    )
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    return pair.rev("refs/dst/attempts/sales")


def test_a_blocked_attempt_pushed_to_a_serving_ref_is_refused(pair: PushPair) -> None:
    before = pair.remote("refs/dst/serving/sales")
    attempt = _attempt(pair)
    done = pair.push("origin", f"{attempt}:refs/dst/serving/sales")
    assert done.code != 0, done.stderr
    assert (
        f"refs/dst/serving/sales would point at {attempt[:12]}, a blocked attempt" in done.stderr
    ), done.stderr
    assert "push rejected: 1 ref(s) under refs/dst/ are not dst records" in done.stderr
    assert "dst pre-push: gating" not in done.stderr
    assert pair.remote("refs/dst/serving/sales") == before

    # the attempt itself may travel where attempts go
    sent = pair.push("origin", "refs/dst/attempts/sales:refs/dst/attempts/sales")
    assert sent.code == 0, sent.stderr
    assert pair.remote("refs/dst/attempts/sales") == attempt


def test_a_branch_commit_pushed_to_a_serving_ref_is_refused(pair: PushPair) -> None:
    head = pair.rev("HEAD")
    done = pair.push("origin", f"{head}:refs/dst/serving/newlens")
    assert done.code != 0
    assert (
        f"refs/dst/serving/newlens would point at {head[:12]}, which is not a dst deployment "
        "record" in done.stderr
    ), done.stderr
    assert pair.remote("refs/dst/serving/newlens") is None


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("refs/dst/applying", "is not a ref dst shares"),
        ("refs/dst/env/prod/serving/sales", "a record of lens 'finance', not of 'sales'"),
        ("refs/dst/attempts/sales", "not a attempts record of lens 'sales'"),
        ("refs/dst/retired/sales", "not a retired record of lens 'sales'"),
    ],
)
def test_other_records_under_refs_dst_are_checked_for_their_kind(
    pair: PushPair, target: str, words: str
) -> None:
    finance = pair.rev("refs/dst/serving/finance")
    done = pair.push("origin", f"{finance}:{target}")
    assert done.code != 0
    assert words in done.stderr, done.stderr
    assert pair.remote(target) is None


def test_what_dst_recorded_is_pushed_in_every_environment_namespace(pair: PushPair) -> None:
    serving = pair.rev("refs/dst/serving/sales")
    done = pair.push("origin", f"{serving}:refs/dst/env/prod/serving/sales")
    assert done.code == 0, done.stderr
    assert "serving state: a dst record of its kind" in done.stderr


def _held_open(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, float]:
    """Run ``cmd`` with a stdin pipe this side never closes; ``(code, stderr, seconds)``."""
    started = time.monotonic()
    with subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"refs/heads/main " + b"1" * 40 + b" refs/heads/main " + b"2" * 40)
        proc.stdin.flush()
        try:
            code = proc.wait(timeout=30)  # stdin is still open here
        finally:
            if proc.poll() is None:
                proc.kill()
        err = proc.stderr.read()
    return code, err.decode(errors="replace"), time.monotonic() - started


def test_the_hook_reads_stdin_within_a_bound(pair: PushPair) -> None:
    env = push_env(pair.clone, {"DST_HOOK_STDIN_S": "1"})
    cmd = [sys.executable, "-m", "reconciler", "hook-impl", "pre-push", "origin", "url"]
    code, err, took = _held_open(cmd, pair.clone, env)
    assert code == 1, err
    assert "stdin did not end within 1 s" in err and "--no-verify" in err
    assert took < 10


def test_the_installed_script_reads_stdin_within_a_bound(tmp_path: Path) -> None:
    hooks_dir, fake_bin = tmp_path / "hooks", tmp_path / "bin"
    hooks.install(hooks_dir)
    fake_bin.mkdir()
    (fake_bin / "dst").write_text(f'#!/bin/sh\ntouch "{tmp_path}/dst-ran"\n')
    (fake_bin / "dst").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake_bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "TMPDIR": str(tmp_path),
        "DST_HOOK_STDIN_S": "1",
    }
    code, err, took = _held_open([str(hooks_dir / "pre-push"), "origin", "u"], tmp_path, env)
    assert code == 1
    assert "stdin did not end within 1 s" in err
    assert took < 10
    assert not (tmp_path / "dst-ran").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("dst-pre-push.")] == []
