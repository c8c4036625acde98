"""The ``dst-validate`` pre-commit hook: the manifest entry, run by the real pre-commit
framework on a real ``git commit``.

pre-commit installs a ``language: python`` hook by building a virtualenv from the
hook's repository, which needs the package index and minutes; the test instead
runs the manifest's own ``entry``, ``files`` and ``stages`` as a ``repo: local``
hook of ``language: system`` (the ``dst`` of this environment), so what is checked
is the manifest's pattern and command through the framework's file selection.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import GIT_ENV, PROJECT, commit, git

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install pre-commit)")

GOOD = """\
name: shop
description: orders
"""


def _manifest_hook(hook_id: str) -> dict[str, Any]:
    manifest = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in manifest if h["id"] == hook_id]
    return dict(hook)


def test_the_files_pattern_selects_lens_files_and_dst_yaml_only() -> None:
    pattern = re.compile(_manifest_hook("dst-validate")["files"])
    selected = [
        "lenses/shop/lens.yaml",
        "lenses/shop/models/orders.yaml",
        "lenses/shop/metrics/revenue.yml",
        "lenses/shop/exemplars/top.yaml",
        "lenses/shop/answers/total.yaml",
        "lenses/shop/skills/fiscal.md",
        "lenses/shop/skills/deep/dates.md",
        "lenses/shop/evals/cases.yaml",
        "analytics/lenses/shop/lens.yaml",
        "dst.yaml",
    ]
    ignored = [
        "README.md",
        "docs/dst.yaml",
        "lenses/shop/seeds/orders.csv",
        "lenses/shop/notes.txt",
        "lenses/shop/models/orders.sql",
        "lenses/lens.yaml",
        "src/models/orders.yaml",
    ]
    assert [p for p in selected if not pattern.search(p)] == []
    assert [p for p in ignored if pattern.search(p)] == []


@pytest.fixture
def hooked(repo: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """``repo`` with the dst-validate hook installed by pre-commit for the commit stage."""
    hook = _manifest_hook("dst-validate")
    local = {k: hook[k] for k in ("id", "name", "entry", "files", "stages")}
    config = {"repos": [{"repo": "local", "hooks": [{**local, "language": "system"}]}]}
    commit(repo, {".pre-commit-config.yaml": yaml.safe_dump(config, sort_keys=False)}, "hooks")
    env = {
        **os.environ,
        **GIT_ENV,
        "HOME": str(repo),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        # `dst` (the entry) and pre-commit from this environment
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install", "--hook-type", "pre-commit"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return repo, env


def _commit(repo: Path, env: dict[str, str], files: dict[str, str]) -> subprocess.CompletedProcess:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    return subprocess.run(
        ["git", "commit", "-m", "change"], cwd=repo, env=env, capture_output=True, text=True
    )


def test_a_commit_of_valid_lens_files_passes(hooked: tuple[Path, dict[str, str]]) -> None:
    repo, env = hooked
    done = _commit(repo, env, {"lenses/shop/lens.yaml": GOOD})
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"dst validate\.+Passed", done.stdout + done.stderr)


def test_a_commit_touching_no_lens_file_skips_the_hook(hooked: tuple[Path, dict[str, str]]) -> None:
    repo, env = hooked
    done = _commit(repo, env, {"README.md": "hello\n", "lenses/shop/seeds/x.csv": "a\n1\n"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"dst validate\.+\(no files to check\)Skipped", done.stdout + done.stderr)


def test_a_commit_of_a_broken_lens_file_is_refused_naming_file_and_line(
    hooked: tuple[Path, dict[str, str]],
) -> None:
    repo, env = hooked
    head = git(repo, "rev-parse", "HEAD")
    done = _commit(repo, env, {"lenses/shop/lens.yaml": GOOD + "eval_gates: block\n"})
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert re.search(r"dst validate\.+Failed", out)
    assert "lenses/shop/lens.yaml:3" in out and "eval_gates" in out
    assert git(repo, "rev-parse", "HEAD") == head
