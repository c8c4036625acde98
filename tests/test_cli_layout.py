"""The command-line package's shape: no import cycle through the app, no engine in ``cli/``.

Read from the source (``ast``), so a function-level import counts as much as a
top-level one. Also: the one changed-lenses function is what both the pre-push
hook and ``dst ci check`` call.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest

import reconciler.cli.ci
import reconciler.git.push
from reconciler.git.push import scope_range
from tests.conftest import PROJECT, commit

CLI = PROJECT / "reconciler" / "cli"
ENGINES = ("pygit2", "sqlalchemy", "duckdb")


def _imports(path: Path) -> Iterator[tuple[ast.stmt, str]]:
    """Every import statement of a module, with the module it imports."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node, node.module


def _cli_modules() -> list[Path]:
    return sorted(CLI.glob("*.py"))


def test_command_modules_never_import_the_app() -> None:
    offenders = [
        f"{path.name}:{node.lineno}"
        for path in _cli_modules()
        if path.name not in ("app.py", "entry.py")
        for node, name in _imports(path)
        if name == "reconciler.cli.app" or (name == "reconciler.cli" and _names(node) & {"app"})
    ]
    assert offenders == []


def _names(node: ast.stmt) -> set[str]:
    return {a.name for a in node.names} if isinstance(node, ast.ImportFrom | ast.Import) else set()


def test_no_engine_is_imported_in_cli() -> None:
    offenders = [
        f"{path.name}:{node.lineno} imports {name}"
        for path in _cli_modules()
        for node, name in _imports(path)
        if name.split(".")[0] in ENGINES
    ]
    assert offenders == []


def test_function_level_imports_say_why() -> None:
    """Anywhere in the package, not only in cli/: a lazy import is there for start-up cost."""
    missing = []
    for path in sorted((PROJECT / "reconciler").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            body = [n for n in ast.walk(func) if isinstance(n, ast.Import | ast.ImportFrom)]
            firsts = [n for n in body if not _follows_import(lines, n.lineno)]
            missing += [
                f"{path.relative_to(PROJECT).as_posix()}:{n.lineno}"
                for n in firsts
                if not _says_why(lines, n.lineno)
            ]
    assert missing == []


def _says_why(lines: list[str], lineno: int) -> bool:
    """A comment on the line above (alone, or after a ``try:``) or at the end of the import."""
    above = lines[lineno - 2].strip()
    return above.startswith(("#", "try:  #")) or "  # " in lines[lineno - 1]


def _follows_import(lines: list[str], lineno: int) -> bool:
    previous = lines[lineno - 2].strip()
    return previous.startswith(("from ", "import ")) or previous.endswith(",") or previous == ")"


def test_module_sizes() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in _cli_modules()}
    assert sizes["app.py"] <= 400
    assert all(n <= 600 for n in sizes.values()), sizes


@pytest.fixture
def two_lens_repo(repo: Path) -> tuple[Path, str, str]:
    """``repo`` with lenses sales and finance, then a commit changing sales alone."""
    base = commit(
        repo,
        {"lenses/sales/lens.yaml": "name: sales\n", "lenses/finance/lens.yaml": "name: finance\n"},
        "two lenses",
    )
    head = commit(repo, {"lenses/sales/lens.yaml": "name: sales\ndescription: d\n"}, "edit")
    return repo, base, head


def test_hook_and_ci_share_one_changed_lenses_function(
    two_lens_repo: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, base, head = two_lens_repo
    calls: list[tuple[str, str]] = []
    real = reconciler.git.push.changed_lenses

    def spy(repo: Any, old: str, new: str) -> set[str]:
        calls.append((old, new))
        return real(repo, old, new)

    monkeypatch.setattr(reconciler.git.push, "changed_lenses", spy)
    git_repo = pygit2.Repository(str(path))
    hook = scope_range(git_repo, base, head)
    ci, notes = reconciler.cli.ci._changed_lenses(git_repo, base, head)
    assert hook.lenses == ("sales",) and ci == ["sales"] and notes == []
    assert calls == [(base, head), (base, head)]
    assert reconciler.cli.ci._changed_lenses(git_repo, head, head) == (
        [],
        [f"no lens changed between {head[:12]} and {head[:12]}: nothing to check"],
    )
