"""The ``push_pair`` fixture's parts: a real bare origin and a clone, driven by real ``git push``.

:func:`make_push_template` builds the pair once per session (seeded warehouse,
lenses promoted); :func:`copy_pair` gives each test its own copy, and
:func:`with_hook` installs dst's pre-push hook in the clone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from reconciler.git import hooks
from tests.helpers import GIT_ENV, commit, git, invoke

ZERO = "0" * 40
BIN = str(Path(sys.executable).parent)  # where this interpreter's `dst` script lives


def push_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment for git and ``dst`` under ``home``: no DST_/PRE_COMMIT_ leftovers."""
    env = {**os.environ, **GIT_ENV, "HOME": str(home)}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    for name in list(env):
        if name.startswith(("DST_", "PRE_COMMIT_")) or name in ("GIT_DIR", "GIT_WORK_TREE"):
            del env[name]
    env.update(extra or {})
    return env


@dataclass
class Done:
    """A finished process with text output."""

    code: int
    stdout: str
    stderr: str


def run(
    cwd: Path,
    *cmd: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = b"",
) -> Done:
    """Run ``cmd`` in ``cwd`` with :func:`push_env` and ``stdin``; never raises on failure."""
    done = subprocess.run(
        list(cmd),
        cwd=cwd,
        env=push_env(cwd, env),
        input=stdin,
        capture_output=True,
        timeout=300,
        check=False,
    )
    return Done(
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


@dataclass
class PushPair:
    """A bare origin and a clone of it holding the seeded, promoted example lenses."""

    origin: Path
    clone: Path

    def push(self, *args: str, env: Mapping[str, str] | None = None) -> Done:
        """``git push`` from the clone (the installed hook runs unless --no-verify)."""
        return run(self.clone, "git", "push", *args, env=env)

    def remote(self, ref: str) -> str | None:
        """The oid ``ref`` has on the origin, or ``None``."""
        done = run(self.origin, "git", "rev-parse", "--verify", "-q", ref)
        return done.stdout.strip() or None

    def hook(self, data: bytes, *args: str, env: Mapping[str, str] | None = None) -> Done:
        """``dst hook-impl pre-push`` in the clone with exactly ``data`` on stdin."""
        argv = args or ("origin", str(self.origin))
        cmd = (sys.executable, "-m", "reconciler", "hook-impl", "pre-push", *argv)
        return run(self.clone, *cmd, env=env, stdin=data)

    def rev(self, rev: str) -> str:
        """A revision of the clone as a full oid."""
        return git(self.clone, "rev-parse", rev)


def make_push_template(seeded: Path, base: Path) -> tuple[Path, Path]:
    """A bare origin holding ``seeded``'s main and a clone of it, seeded and applied."""
    origin, clone = base / "origin.git", base / "clone"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    git(seeded, "push", "-q", str(origin), "main")
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True, env=push_env(base))
    seeded_clone = invoke(clone, "seed")
    assert seeded_clone.code == 0, seeded_clone.stderr
    applied = invoke(clone, "apply")
    assert applied.code == 0, applied.stdout + applied.stderr
    return origin, clone


def copy_pair(template: tuple[Path, Path], where: Path) -> PushPair:
    """A private copy of a :func:`make_push_template` pair under ``where``, no hook installed."""
    origin, clone = where / "origin.git", where / "clone"
    shutil.copytree(template[0], origin, symlinks=True)
    shutil.copytree(template[1], clone, symlinks=True)
    git(clone, "remote", "set-url", "origin", str(origin))
    return PushPair(origin, clone)


def with_hook(pair: PushPair) -> PushPair:
    """``pair`` with dst's pre-push hook installed in the clone."""
    change = hooks.install(hooks.hooks_dir(pair.clone))
    assert change.action == "installed"
    return pair


def break_sales(repo: Path, message: str = "double units_sold") -> str:
    """Commit a lens change that makes certified answers wrong (units_sold doubled)."""
    path = repo / "lenses" / "sales" / "metrics" / "units_sold.yaml"
    text = path.read_text()
    expression = yaml.safe_load(text)["expression"]
    doubled = text.replace(f"expression: {expression}", f"expression: ({expression}) * 2")
    assert doubled != text
    return commit(repo, {"lenses/sales/metrics/units_sold.yaml": doubled}, message)


def touch_readme(repo: Path, text: str = "notes\n") -> str:
    """Commit a change outside ``lenses/`` (README.md); its oid."""
    return commit(repo, {"README.md": text}, "docs only")
