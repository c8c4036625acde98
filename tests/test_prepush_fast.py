"""The pre-push script's fast path: which stdin shapes it answers without starting dst.

The installed script (:data:`reconciler.git.hooks.PRE_PUSH_SCRIPT`) runs in a real
git repository with a ``dst`` first on ``PATH`` that only records that it ran, its
arguments and the bytes it got. A shape the fast path lets through must leave no
record, and dst's own push scope (:func:`reconciler.git.push.scope_ref`) must agree
that none of its lines asks for a lens. Every other shape must reach ``dst`` with
git's bytes unchanged.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest

from reconciler.git import hooks
from reconciler.git.push import parse_push_lines, scope_ref
from tests.helpers import GIT_ENV, PROJECT, commit, git, invoke

ZERO = "0" * 40
LENS = "name: sales\n"


@dataclass(frozen=True)
class History:
    """A linear history with and without ``lenses/``, plus a side branch and a tag."""

    repo: Path
    plain0: str  # no lenses/
    plain1: str  # README only, still no lenses/
    lens0: str  # adds lenses/
    docs1: str  # README only
    lens2: str  # edits a lens
    docs3: str  # README only
    gone4: str  # removes lenses/
    side: str  # off lens0, README only: not a descendant of docs1
    tag: str  # an annotated tag object on docs1

    def tree(self, rev: str) -> str:
        return git(self.repo, "rev-parse", f"{rev}^{{tree}}")


@pytest.fixture
def history(repo: Path) -> History:
    plain0 = git(repo, "rev-parse", "HEAD")
    plain1 = commit(repo, {"README.md": "one\n"}, "docs")
    lens0 = commit(repo, {"lenses/sales/lens.yaml": LENS}, "add a lens")
    docs1 = commit(repo, {"README.md": "two\n"}, "docs")
    lens2 = commit(repo, {"lenses/sales/lens.yaml": LENS + "description: edited\n"}, "lens")
    docs3 = commit(repo, {"README.md": "three\n"}, "docs")
    gone4 = commit(repo, {"lenses": None}, "remove the lenses")
    git(repo, "checkout", "-q", "-b", "side", lens0)
    side = commit(repo, {"README.md": "elsewhere\n"}, "docs elsewhere")
    git(repo, "checkout", "-q", "main")
    git(repo, "tag", "-a", "-m", "v1", "v1", docs1)
    tag = git(repo, "rev-parse", "v1")
    hooks.install(hooks.hooks_dir(repo))
    return History(repo, plain0, plain1, lens0, docs1, lens2, docs3, gone4, side, tag)


@dataclass(frozen=True)
class Ran:
    code: int
    stderr: str
    handed: bytes | None  # what the recording ``dst`` got on stdin; None if it never ran
    args: str | None


def _recording_dst(where: Path) -> Path:
    bin_dir = where / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "dst"
    script.write_text(
        f'#!/bin/sh\necho "$@" > "{where}/dst.args"\ncat > "{where}/dst.in"\nexit 0\n'
    )
    script.chmod(0o755)
    return bin_dir


def _run_hook(h: History, data: bytes, env: Mapping[str, str] | None = None) -> Ran:
    where = h.repo.parent
    for stale in ("dst.in", "dst.args"):
        (where / stale).unlink(missing_ok=True)
    bin_dir = _recording_dst(where)
    full = {**os.environ, **GIT_ENV, "HOME": str(where), "TMPDIR": str(where)}
    full = {k: v for k, v in full.items() if not k.startswith(("DST_", "GIT_DIR"))}
    full["PATH"] = f"{bin_dir}{os.pathsep}{full.get('PATH', '')}"
    full.update(env or {})
    done = subprocess.run(
        [str(hooks.hooks_dir(h.repo) / "pre-push"), "origin", "ssh://example/r.git"],
        cwd=h.repo,
        env=full,
        input=data,
        capture_output=True,
        timeout=60,
        check=False,
    )
    handed = where / "dst.in"
    args = where / "dst.args"
    return Ran(
        done.returncode,
        done.stderr.decode(errors="replace"),
        handed.read_bytes() if handed.exists() else None,
        args.read_text() if args.exists() else None,
    )


def _line(local_ref: str, local: str, remote_ref: str, remote: str) -> bytes:
    return f"{local_ref} {local} {remote_ref} {remote}\n".encode()


def _main(local: str, remote: str) -> bytes:
    return _line("refs/heads/main", local, "refs/heads/main", remote)


Shape = Callable[[History], bytes]

SKIPPED: dict[str, Shape] = {
    "fast-forward, docs only": lambda h: _main(h.docs1, h.lens0),
    "two branches, neither touches a lens": lambda h: (
        _main(h.docs1, h.lens0) + _line("refs/heads/docs", h.docs3, "refs/heads/docs", h.lens2)
    ),
    "no lenses/ on either side": lambda h: _main(h.plain1, h.plain0),
    "HEAD as the local ref": lambda h: _line("HEAD", h.docs1, "refs/heads/main", h.lens0),
    "a bare oid as the local ref": lambda h: _line(h.docs1, h.docs1, "refs/heads/main", h.lens0),
    "the remote already has it": lambda h: _main(h.docs1, h.docs1),
}

HANDED: dict[str, Shape] = {
    "fast-forward editing a lens": lambda h: _main(h.lens2, h.docs1),
    "fast-forward editing a lens among docs commits": lambda h: _main(h.docs3, h.lens0),
    "one branch of two edits a lens": lambda h: (
        _main(h.docs1, h.lens0) + _line("refs/heads/docs", h.lens2, "refs/heads/docs", h.docs1)
    ),
    "lenses/ added": lambda h: _main(h.lens0, h.plain1),
    "lenses/ removed": lambda h: _main(h.gone4, h.docs3),
    "new branch": lambda h: _line("refs/heads/docs", h.docs1, "refs/heads/docs", ZERO),
    "new branch, no lens in it": lambda h: _line("refs/heads/p", h.plain1, "refs/heads/p", ZERO),
    "deletion": lambda h: _line("(delete)", ZERO, "refs/heads/old", h.docs1),
    "new annotated tag": lambda h: _line("refs/tags/v1", h.tag, "refs/tags/v1", ZERO),
    "tag moved, lenses equal": lambda h: _line("refs/tags/t", h.docs1, "refs/tags/t", h.lens0),
    "annotated tag pushed to a branch": lambda h: _main(h.tag, h.lens0),
    "force push, lenses equal": lambda h: _main(h.side, h.docs1),
    "remote oid this clone never saw": lambda h: _main(h.docs1, "ab" * 20),
    "serving ref on the remote side": lambda h: _line(
        "refs/dst/serving/sales", h.docs1, "refs/dst/serving/sales", h.lens0
    ),
    "serving ref on the local side": lambda h: _line(
        "refs/dst/serving/sales", h.docs1, "refs/heads/main", h.lens0
    ),
    "attempts ref": lambda h: _line("refs/heads/main", h.docs1, "refs/dst/attempts/sales", h.lens0),
    "remote ref outside refs/heads": lambda h: _line(
        "refs/heads/main", h.docs1, "refs/for/main", h.lens0
    ),
    "local oid is a tree": lambda h: _main(h.tree("HEAD"), h.lens0),
    "space in the local ref as typed": lambda h: _line(
        "HEAD@{1 day ago}", h.docs1, "refs/heads/main", h.lens0
    ),
    "CRLF line end": lambda h: _main(h.docs1, h.lens0).replace(b"\n", b"\r\n"),
    "no final newline": lambda h: _main(h.docs1, h.lens0).rstrip(b"\n"),
    "tab between fields": lambda h: _main(h.docs1, h.lens0).replace(b" ", b"\t", 1),
    "a fifth field": lambda h: _main(h.docs1, h.lens0).replace(b"\n", b" extra\n"),
    "blank line": lambda h: b"\n" + _main(h.docs1, h.lens0),
    "empty stdin": lambda h: b"",
    "upper-case oid": lambda h: _main(h.docs1.upper(), h.lens0),
    "short oid": lambda h: _main(h.docs1[:12], h.lens0),
    "a good line then a handed one": lambda h: (
        _main(h.docs1, h.lens0) + _line("refs/heads/docs", h.docs1, "refs/heads/docs", ZERO)
    ),
}


def _scope_lenses(h: History, data: bytes) -> list[tuple[str, ...]]:
    repo = pygit2.Repository(str(h.repo))
    return [scope_ref(repo, p, "origin").lenses for p in parse_push_lines(data)]


@pytest.mark.parametrize("shape", sorted(SKIPPED))
def test_equal_lenses_trees_are_let_through_without_starting_dst(
    history: History, shape: str
) -> None:
    data = SKIPPED[shape](history)
    ran = _run_hook(history, data)
    assert ran.code == 0, ran.stderr
    assert ran.handed is None, f"dst ran for {shape!r}"
    lines = data.decode().splitlines()
    notes = [x for x in ran.stderr.splitlines() if "no lens changed" in x]
    assert len(notes) == len(lines), ran.stderr
    for line, note in zip(lines, notes, strict=True):
        local_ref, _, remote_ref, remote = line.split(" ")
        assert note.startswith(f"dst pre-push: {local_ref} → {remote_ref}: no lens changed")
        assert f"(since {remote[:12]})" in note
    # dst's own scope agrees: no line of this push asks for a lens
    assert all(lenses == () for lenses in _scope_lenses(history, data))


@pytest.mark.parametrize("shape", sorted(HANDED))
def test_every_other_shape_reaches_dst_with_the_same_bytes(history: History, shape: str) -> None:
    data = HANDED[shape](history)
    ran = _run_hook(history, data)
    assert ran.code == 0, ran.stderr
    assert ran.handed == data, f"{shape!r} did not reach dst unchanged"
    assert ran.args == "hook-impl pre-push origin ssh://example/r.git\n"
    assert "dst not started" not in ran.stderr
    assert [p.name for p in history.repo.parent.iterdir() if p.name.startswith("dst-pre")] == []


def test_pushes_touching_a_lens_are_among_the_handed_shapes(history: History) -> None:
    touching = [
        "fast-forward editing a lens",
        "fast-forward editing a lens among docs commits",
        "one branch of two edits a lens",
        "lenses/ added",
    ]  # "lenses/ removed" is handed too; dst gates a removed lens only where it serves
    for shape in touching:
        data = HANDED[shape](history)
        assert any(_scope_lenses(history, data)), shape


def test_dst_skip_always_reaches_dst(history: History) -> None:
    data = SKIPPED["fast-forward, docs only"](history)
    ran = _run_hook(history, data, env={"DST_SKIP": "1"})
    assert ran.handed == data


def test_a_real_git_push_skips_dst_only_when_no_lens_changed(history: History) -> None:
    origin = history.repo.parent / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git(history.repo, "remote", "add", "origin", str(origin))
    git(history.repo, "push", "-q", "--no-verify", "origin", f"{history.lens0}:refs/heads/main")
    where = history.repo.parent
    bin_dir = _recording_dst(where)
    env = {**os.environ, **GIT_ENV, "HOME": str(where), "TMPDIR": str(where)}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env = {k: v for k, v in env.items() if not k.startswith("DST_")}

    def push(rev: str) -> subprocess.CompletedProcess[bytes]:
        (where / "dst.in").unlink(missing_ok=True)
        return subprocess.run(
            ["git", "push", "origin", f"{rev}:refs/heads/main"],
            cwd=history.repo,
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )

    done = push(history.docs1)
    assert done.returncode == 0, done.stderr
    assert not (where / "dst.in").exists()
    assert b"no lens changed" in done.stderr
    done = push(history.lens2)
    assert done.returncode == 0, done.stderr
    # git gives the local ref as typed: here the oid itself
    expected = _line(history.lens2, history.lens2, "refs/heads/main", history.docs1)
    assert (where / "dst.in").read_bytes() == expected


def test_dst_hooks_install_writes_the_project_script(repo: Path) -> None:
    installed = invoke(repo, "hooks", "install")
    assert installed.code == 0, installed.stderr
    text = (hooks.hooks_dir(repo) / "pre-push").read_text()
    assert text == (PROJECT / "hooks" / "pre-push").read_text() == hooks.PRE_PUSH_SCRIPT
    assert "lenses_unchanged <" in text


def test_a_lenses_file_is_not_a_lenses_tree(history: History) -> None:
    # the one-git route compares `lenses/` trees only: a file named lenses, equal on
    # both sides, goes the slow way and reaches dst as before
    repo = history.repo
    git(repo, "checkout", "-q", "-b", "filed", history.plain1)
    file0 = commit(repo, {"lenses": "not a folder\n"}, "a file named lenses")
    file1 = commit(repo, {"README.md": "four\n"}, "docs")
    ran = _run_hook(history, _line("refs/heads/filed", file1, "refs/heads/filed", file0))
    assert ran.handed is not None, ran.stderr


def test_a_fast_forward_that_changes_no_lens_asks_git_once(history: History) -> None:
    # the common push pays one git process per pushed ref, not one per fact
    where = history.repo.parent
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
    log = where / "git.log"
    bin_dir = where / "gitbin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$1" >> "{log}"\nexec {real.stdout.strip()} "$@"\n')
    wrapper.chmod(0o755)
    path = os.pathsep.join([str(bin_dir), str(where / "bin"), os.environ.get("PATH", "")])
    data = _main(history.docs1, history.lens0) + _main(history.docs3, history.lens2)
    ran = _run_hook(history, data, env={"PATH": path})
    assert ran.code == 0 and ran.handed is None, ran.stderr
    assert log.read_text().split() == ["rev-parse", "rev-parse"]
