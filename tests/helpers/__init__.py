"""Test helpers: real git repositories and the real ``dst`` command line.

Two ways to run ``dst``:

* :func:`dst` spawns ``python -m reconciler`` — for the flows that need a
  process of their own (the quick start, a real ``git push`` through the hook,
  closed pipes, signals, imports at start-up).
* :func:`invoke` calls :func:`reconciler.cli.entry.main` in this process with the
  same working directory, environment and (empty) stdin a spawn would get, and
  returns the same :class:`Result`. Use it where a test only checks output and
  exit code: it saves the interpreter start and imports of every command.

Test files import shared code from here (or from ``tests/shop.py``,
``tests/crashkit.py`` …), never from one another.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent.parent
EXAMPLE_LENSES = PROJECT / "lenses"
FIXTURES = PROJECT / "tests" / "fixtures"
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
    """A finished ``dst`` command."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as the command's JSON object."""
        return json.loads(self.stdout)

    def lens(self, name: str) -> dict[str, Any]:
        """The lens object named ``name`` from a JSON report."""
        return next(x for x in self.json()["lenses"] if x["lens"] == name)


def command_env(repo: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a ``dst`` command in ``repo`` gets: ours, hermetic git, ``env``.

    An inherited ``DST_WAREHOUSE_URL`` is dropped unless ``env`` sets one.
    """
    full = {**os.environ, **GIT_ENV, "HOME": str(repo), **(env or {})}
    if env is None or "DST_WAREHOUSE_URL" not in env:
        full.pop("DST_WAREHOUSE_URL", None)
    return full


def dst(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> Result:
    """Spawn the real ``dst`` command line (``python -m reconciler``) in ``repo``."""
    done = subprocess.run(
        [sys.executable, "-m", "reconciler", *args],
        cwd=repo,
        env=command_env(repo, env),
        stdin=subprocess.DEVNULL,  # never a terminal, even under an interactive pytest
        capture_output=True,
        text=True,
        timeout=600,
    )
    return Result(done.returncode, done.stdout, done.stderr)


class _Stream(io.TextIOWrapper):
    """A text stream over bytes, like a pipe: ``.buffer`` exists, it is not a terminal."""

    def __init__(self, data: bytes = b"") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8", errors="replace", write_through=True)

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="replace")


@contextlib.contextmanager
def _process_state(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    """Set the working directory and environment; restore both afterwards.

    ``tempfile`` caches its directory on first use; it is reset so that a
    ``TMPDIR`` in ``env`` counts, as it would in a new process.
    """
    saved_env, saved_cwd, saved_tmp = dict(os.environ), os.getcwd(), tempfile.tempdir
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    tempfile.tempdir = None
    try:
        yield
    finally:
        tempfile.tempdir = saved_tmp
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def invoke(
    repo: Path, *args: str, env: Mapping[str, str] | None = None, stdin: bytes = b""
) -> Result:
    """Run the real ``dst`` command line in this process, as :func:`dst` would spawn it.

    Calls :func:`reconciler.cli.entry.main` with ``args`` in ``repo``, the
    environment of :func:`command_env` and ``stdin`` on a non-terminal stdin,
    capturing stdout and stderr. The exit code is the ``SystemExit`` code
    (0 when ``main`` returns); any other exception escaping ``main`` propagates to
    the test (a spawned process would exit 1 printing it). Working directory,
    environment and the standard streams are restored afterwards.
    """
    from reconciler.cli.entry import main

    out, err, inp = _Stream(), _Stream(), _Stream(stdin)
    saved = sys.stdin, sys.stdout, sys.stderr
    code = 0
    with _process_state(repo, command_env(repo, env)):
        sys.stdin, sys.stdout, sys.stderr = inp, out, err
        try:
            main(list(args))
        except SystemExit as exc:
            if isinstance(exc.code, int):
                code = exc.code
            elif exc.code is None:
                code = 0
            else:  # sys.exit("message"): Python prints it and exits 1
                print(exc.code, file=err)
                code = 1
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
    return Result(code, out.text(), err.text())
