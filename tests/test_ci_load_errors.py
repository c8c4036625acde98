"""``dst ci --format github`` points every lens's load error at its file and line."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import commit, git, invoke


def _no_github() -> dict[str, str]:
    return {"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": "", "GITHUB_STEP_SUMMARY": ""}


def _break_lens_file(repo: Path, lens: str) -> str:
    """Append an unknown key to ``lenses/<lens>/lens.yaml``; its repository-relative path."""
    path = f"lenses/{lens}/lens.yaml"
    text = (repo / path).read_text()
    commit(repo, {path: text.rstrip("\n") + "\nno_such_key: 1\n"}, f"break {lens}")
    return path


def test_two_broken_lenses_give_two_located_errors(lens_repo: Path) -> None:
    done = invoke(lens_repo, "apply", "--format", "json", env=_no_github())
    assert done.code == 0, done.stdout + done.stderr
    git(lens_repo, "checkout", "-q", "-b", "feature")
    broken = {lens: _break_lens_file(lens_repo, lens) for lens in ("finance", "sales")}
    done = invoke(
        lens_repo, "ci", "check", "--base", "main", "--format", "github", env=_no_github()
    )
    assert done.code == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    errors = re.findall(r"^::error file=([^,]+),line=(\d+),title=[^:]*::(.*)$", done.stdout, re.M)
    assert sorted(path for path, _, _ in errors) == sorted(broken.values())
    for path, line, _ in errors:
        lines = (lens_repo / path).read_text().splitlines()
        assert lines[int(line) - 1].startswith("no_such_key"), (path, line)
    assert "2 lens files do not load" in done.stderr


def test_one_broken_lens_is_located_too(lens_repo: Path) -> None:
    git(lens_repo, "checkout", "-q", "-b", "feature")
    path = _break_lens_file(lens_repo, "sales")
    done = invoke(lens_repo, "ci", "apply", "--format", "github", env=_no_github())
    assert done.code == 2, done.stdout + done.stderr
    assert done.stdout.startswith(f"::error file={path},line=")
