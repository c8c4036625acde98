"""The one error boundary: exit code per error class, crash log once, the hook failing closed.

In-process through :func:`reconciler.cli.entry.main` (the console script), with
the command's work replaced by a function that raises; the repository-ownership
case uses a real repository chowned to another user, so it runs as root only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

import reconciler.cli.boundary
import reconciler.cli.hook
import reconciler.cli.oneshot
from reconciler import errors
from reconciler.cli import entry
from reconciler.cli.boundary import Invocation, guard
from reconciler.cli.hook import BYPASS_HINT
from tests.conftest import GIT_ENV, git

# Every class of reconciler.errors and the exit code it must carry (STYLE §4).
EXPECTED_CODES: dict[type[errors.DstError], int] = {
    errors.DstError: 2,
    errors.InputError: 2,
    errors.LensLoadError: 2,
    errors.LensLoadErrors: 2,
    errors.UnsafeSqlError: 2,
    errors.UsageError: 2,
    errors.StateError: 2,
    errors.RefConflict: 1,
    errors.StaleLock: 2,
    errors.WarehouseError: 2,
    errors.PrivilegedWarehouse: 2,
}


def _instance(cls: type[errors.DstError]) -> errors.DstError:
    if cls is errors.LensLoadError:
        return errors.LensLoadError("lenses/x/metrics/m.yaml", "bad key", line=3, fix="drop it")
    if cls is errors.LensLoadErrors:
        one = errors.LensLoadError("lenses/x/lens.yaml", "bad key", line=3, fix="drop it")
        two = errors.LensLoadError("lenses/y/lens.yaml", "bad key", line=4, fix="drop it")
        return errors.LensLoadErrors((one, two))
    if cls is errors.RefConflict:
        return errors.RefConflict("refs/dst/serving/x", "a" * 40, None)
    if cls is errors.StaleLock:
        return errors.StaleLock(".git/packed-refs.lock", 42.0)
    return cls("it went wrong", fix="do the next thing")


@pytest.fixture
def crash_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory crash logs go to, empty and private to the test."""
    path = tmp_path / "tmp"
    path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    return path


def _raising(exc: BaseException) -> Callable[..., Any]:
    def raise_it(*_args: object, **_kwargs: object) -> Any:
        raise exc

    return raise_it


def _main(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        entry.main(argv)
    code = exited.value.code
    assert isinstance(code, int)
    return code


def test_every_error_class_carries_its_exit_code() -> None:
    found = {
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.DstError)
    }
    assert found == set(EXPECTED_CODES)
    for cls, code in EXPECTED_CODES.items():
        assert cls.exit_code == code, cls.__name__
        # the class tree in the module docstring names each class with its code
        line = next(li for li in (errors.__doc__ or "").splitlines() if f" {cls.__name__} " in li)
        assert re.search(rf"{cls.__name__}\s+{code}\s", line), line


@pytest.mark.parametrize("cls", list(EXPECTED_CODES), ids=lambda c: c.__name__)
def test_each_error_class_maps_to_its_exit_code_through_the_app(
    cls: type[errors.DstError],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    exc = _instance(cls)
    monkeypatch.setattr(reconciler.cli.oneshot, "runtime", _raising(exc))
    code = _main(["status", "--repo", str(tmp_path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == EXPECTED_CODES[cls]
    obj = json.loads(out)
    assert obj == {
        "schema_version": 1,
        "command": "status",
        "exit_code": code,
        "error": {"type": cls.__name__, "message": exc.message, "fix": exc.fix},
    }
    assert err == f"dst status: error: {exc.render()}\n"


def test_text_format_prints_the_error_on_stderr_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(reconciler.cli.oneshot, "runtime", _raising(_instance(errors.UsageError)))
    assert _main(["status", "--repo", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "dst status: error: it went wrong\n  fix: do the next thing\n"


def test_a_sub_command_is_named_in_full(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = _main(["hooks", "install", "--repo", str(tmp_path / "nowhere"), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 2
    assert json.loads(out)["command"] == "hooks install"
    assert err.startswith("dst hooks install: error: ")


def test_github_format_annotates_the_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    code = _main(["ci", "apply", "--repo", str(tmp_path), "--format", "github"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out.startswith("::error title=dst ci apply::refusing to apply on a pull_request event")
    assert err.startswith("dst ci apply: error: refusing to apply")


def test_an_unexpected_error_writes_one_crash_log_and_exits_3(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    crash_dir: Path,
) -> None:
    monkeypatch.setattr(reconciler.cli.oneshot, "runtime", _raising(RuntimeError("boom")))
    assert _main(["status", "--repo", str(tmp_path)]) == 3
    out, err = capsys.readouterr()
    logs = sorted(crash_dir.glob("dst-crash-*.log"))
    assert len(logs) == 1, logs
    assert list(crash_dir.iterdir()) == logs
    assert "Traceback" in logs[0].read_text() and "RuntimeError: boom" in logs[0].read_text()
    assert out == ""
    assert err == f"dst status: unexpected error; traceback written to {logs[0]}\n"
    assert "boom" not in err  # the message may hold a credential; only the log has it


def test_interrupt_exits_130(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    crash_dir: Path,
) -> None:
    monkeypatch.setattr(reconciler.cli.oneshot, "runtime", _raising(KeyboardInterrupt()))
    assert _main(["status", "--repo", str(tmp_path)]) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert list(crash_dir.iterdir()) == []


def test_ctrl_c_at_a_prompt_is_an_interrupt_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def prompt(*_args: object, **_kwargs: object) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise typer.Abort() from None  # what typer.confirm does with Ctrl-C

    monkeypatch.setattr(reconciler.cli.oneshot, "runtime", prompt)
    assert _main(["status", "--repo", str(tmp_path)]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_a_broken_pipe_ends_quietly_with_0() -> None:
    # The stdout reader going away is the end of the output, not a failure (`dst status | head`).
    # In-process the boundary would point this process's stdout at /dev/null: use a child.
    program = (
        "import reconciler.cli.oneshot as s\n"
        "from reconciler.cli import entry\n"
        "def broken(*a, **k):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "s.runtime = broken\n"
        "entry.main(['status'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


def test_usage_errors_stay_the_frameworks(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["status", "--no-such-flag"]) == 2
    assert "No such option" in capsys.readouterr().err
    assert _main(["--version"]) == 0


# --- the pre-push hook: the same boundary, failing closed ------------------------------------

HOOK_ARGV = ["hook-impl", "pre-push", "origin", "url"]


@pytest.mark.parametrize(
    "exc", [errors.UsageError("bad line"), errors.RefConflict("refs/dst/serving/x", None, None)]
)
def test_the_hook_blocks_on_any_expected_error(
    exc: errors.DstError,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    crash_dir: Path,
) -> None:
    monkeypatch.setattr(reconciler.cli.hook, "pre_push", _raising(exc))
    assert _main(HOOK_ARGV) == 1
    assert capsys.readouterr().err == f"dst pre-push: error: {exc.render()}\n  {BYPASS_HINT}\n"
    assert list(crash_dir.iterdir()) == []


def test_the_hook_fails_closed_on_an_unexpected_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], crash_dir: Path
) -> None:
    monkeypatch.setattr(reconciler.cli.hook, "pre_push", _raising(RuntimeError("boom")))
    assert _main(HOOK_ARGV) == 1
    err = capsys.readouterr().err
    logs = sorted(crash_dir.glob("dst-hook-crash-*.log"))
    assert len(logs) == 1 and list(crash_dir.iterdir()) == logs
    assert "RuntimeError: boom" in logs[0].read_text()
    assert err == (
        f"dst pre-push: unexpected error (RuntimeError: boom); traceback written to {logs[0]}\n"
        f"  {BYPASS_HINT}\n"
    )


@pytest.mark.parametrize(("exc", "code"), [(KeyboardInterrupt(), 130), (BrokenPipeError(), 1)])
def test_the_hook_exits_130_on_interrupt_and_blocks_on_a_broken_pipe(
    exc: BaseException, code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reconciler.cli.hook, "pre_push", _raising(exc))
    silenced: list[bool] = []
    monkeypatch.setattr(reconciler.cli.boundary, "silence_stdout", lambda: silenced.append(True))
    assert _main(HOOK_ARGV) == code
    assert silenced == ([True] if isinstance(exc, BrokenPipeError) else [])


def test_fail_closed_never_returns_0_for_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # The broken pipe points stdout's descriptor at the null device; under pytest's
    # capture that descriptor is the capture file, so the test records the call instead.
    silenced: list[bool] = []
    monkeypatch.setattr(reconciler.cli.boundary, "silence_stdout", lambda: silenced.append(True))
    hook = Invocation("pre-push", fail_closed=True)
    cli = Invocation("status")
    for exc in (errors.UsageError("x"), ValueError("x"), BrokenPipeError()):
        assert guard(_raising(exc), lambda: hook) == 1
    assert guard(lambda: 0, lambda: hook) == 0
    assert guard(_raising(ValueError("x")), lambda: cli) == 3
    assert silenced == [True]


def test_hook_usage_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["hook-impl", "post-commit"]) == 2
    assert "usage: dst hook-impl pre-push" in capsys.readouterr().err


# --- a repository owned by another user -----------------------------------------------------


@pytest.fixture
def foreign_repo(repo: Path) -> Path:
    """``repo``, owned by another user (nobody): git and dst refuse to read it."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to hand a repository to another user")
    for path in (repo, *repo.rglob("*")):
        os.chown(path, 65534, 65534, follow_symlinks=False)
    return repo


def test_the_hook_gives_the_ownership_message_every_command_gives(
    foreign_repo: Path, tmp_path: Path
) -> None:
    head = git(foreign_repo, "-c", "safe.directory=*", "rev-parse", "HEAD")
    env = {**os.environ, **GIT_ENV, "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    env.pop("GIT_DIR", None)

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reconciler", *args],
            cwd=foreign_repo,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )

    status = run("status")
    hook = run(*HOOK_ARGV, stdin=f"refs/heads/main {head} refs/heads/main {head}\n")
    assert status.returncode == 2 and hook.returncode == 1
    message = status.stderr.removeprefix("dst status: ")
    assert "detected dubious ownership" in message and "safe.directory" in message
    assert hook.stderr == f"dst pre-push: {message}  {BYPASS_HINT}\n"
    assert "Traceback" not in hook.stderr
    assert list(tmp_path.glob("dst-hook-crash-*")) == []
