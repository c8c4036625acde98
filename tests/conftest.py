"""Shared fixtures: real temporary git repositories, the real CLI, the real DuckDB."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLE_LENSES = PROJECT / "lenses"
CORPORA = Path(os.environ.get("DST_CORPORA", PROJECT.parent / "shared" / "corpora"))

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "",
}


def git(repo: Path, *args: str) -> str:
    """Run the real git CLI in ``repo`` and return its stdout."""
    env = {**os.environ, **GIT_ENV, "HOME": str(repo)}
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, files: Mapping[str, str | bytes | None], message: str) -> str:
    """Write (or delete, with ``None``) files and commit them; returns the commit oid."""
    for rel, content in files.items():
        path = repo / rel
        if content is None:
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@dataclass
class Result:
    """A finished ``dst`` process."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as the command's JSON object."""
        return json.loads(self.stdout)

    def lens(self, name: str) -> dict[str, Any]:
        """The lens object named ``name`` from a JSON report."""
        return next(x for x in self.json()["lenses"] if x["lens"] == name)


def dst(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> Result:
    """Run the real ``dst`` command line (``python -m reconciler``) in ``repo``."""
    full_env = {**os.environ, **GIT_ENV, "HOME": str(repo), **(env or {})}
    full_env.pop(
        "DST_WAREHOUSE_URL", None
    ) if env is None or "DST_WAREHOUSE_URL" not in env else None
    done = subprocess.run(
        [sys.executable, "-m", "reconciler", *args],
        cwd=repo,
        env=full_env,
        stdin=subprocess.DEVNULL,  # never a terminal, even under an interactive pytest
        capture_output=True,
        text=True,
        timeout=600,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository with an initial commit."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, {".gitignore": ".dst/\n"}, "init")
    return path


@pytest.fixture(scope="session")
def _seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (EXAMPLE_LENSES / "sales" / "lens.yaml").is_file():
        pytest.skip("example lenses are not present")
    base = tmp_path_factory.mktemp("template") / "repo"
    base.mkdir()
    git(base, "init", "-q", "-b", "main")
    shutil.copytree(EXAMPLE_LENSES, base / "lenses")
    (base / ".gitignore").write_text(".dst/\n")
    git(base, "add", "-A")
    git(base, "commit", "-q", "-m", "example lenses")
    seeded = dst(base, "seed")
    assert seeded.code == 0, seeded.stderr
    return base


@pytest.fixture
def lens_repo(_seeded_template: Path, tmp_path: Path) -> Path:
    """A clone-like copy of a repository holding the example lenses, already seeded."""
    path = tmp_path / "lens_repo"
    shutil.copytree(_seeded_template, path, symlinks=True)
    return path


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures tests recorded with ``tests.figures.record``."""
    from tests.figures import recorded

    lines = recorded()
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)
