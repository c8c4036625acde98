"""Progress on stderr: a rich bar on a terminal, plain lines otherwise, nothing with --quiet."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import GIT_ENV, invoke


@pytest.fixture(scope="module")
def promoted(_promoted_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("progress") / "repo"
    shutil.copytree(_promoted_template, repo, symlinks=True)
    return repo


def test_lines_without_a_terminal_and_none_with_quiet(promoted: Path) -> None:
    plain = invoke(promoted, "test", "finance", "--format", "json")
    assert plain.code == 0, plain.stderr
    total = plain.lens("finance")["score"]["total"]
    assert plain.stderr.count("finance: verifying ") == total
    quiet = invoke(promoted, "test", "finance", "--quiet", "--format", "json")
    assert quiet.code == 0, quiet.stderr
    assert quiet.stderr == ""
    assert quiet.lens("finance")["score"]["total"] == total


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals on this platform")
def test_a_terminal_gets_a_bar_and_stdout_stays_json(promoted: Path, tmp_path: Path) -> None:
    master, slave = os.openpty()
    stdout = tmp_path / "stdout.json"
    env = {**os.environ, **GIT_ENV, "HOME": str(promoted), "TERM": "xterm-256color"}
    env.pop("DST_WAREHOUSE_URL", None)
    with stdout.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reconciler", "test", "finance", "--format", "json"],
            cwd=promoted,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=slave,
        )
        os.close(slave)
        seen = bytearray()
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed its end
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        os.close(master)
        assert proc.wait(timeout=120) == 0
    total = json.loads(stdout.read_text())["lenses"][0]["score"]["total"]
    screen = seen.decode("utf-8", errors="replace")
    assert "━" in screen  # the bar
    assert f"{total}/{total}" in screen and "answers" in screen
    # redrawn in place: far fewer lines than the plain mode's one per answer
    assert "\r" in screen and screen.count("\n") < total
