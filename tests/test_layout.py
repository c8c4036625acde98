"""The package layout holds: engines stay in their edges, the core stays flat and small.

The import contracts live in ``pyproject.toml`` (``[tool.importlinter]``); these
tests prove they can fail (a planted ``import pygit2`` in a core module breaks
them, on a scratch copy of the package) and check what import-linter cannot see:
``git`` run as a subprocess outside the git edge, and the size of the core.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT / "reconciler"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _scratch(tmp_path: Path) -> Path:
    """A copy of the package and its contracts, importable from ``tmp_path``."""
    shutil.copytree(PACKAGE, tmp_path / "reconciler", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    if not LINT_IMPORTS.exists():
        pytest.skip(f"lint-imports is not installed beside {sys.executable} (the dev extra)")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_contracts_hold_on_the_package_as_it_is(tmp_path: Path) -> None:
    done = _lint(_scratch(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("plan.py", "import pygit2", "pygit2 only in the git edge"),
        ("suite.py", "import sqlalchemy", "only in the warehouse edge"),
        ("render/text.py", "import rich", "typer and rich only in the CLI"),
        # the SDK is the top-level `mcp`, not the package `reconciler.mcp` it sits in
        ("mcp/tools.py", "import mcp", "the MCP SDK only in the MCP server"),
        ("lens.py", "from reconciler import plan", "layers"),
    ],
)
def test_a_planted_import_breaks_the_contracts(
    tmp_path: Path, module: str, planted: str, contract: str
) -> None:
    root = _scratch(tmp_path)
    target = root / "reconciler" / module
    source = target.read_text(encoding="utf-8")
    # After the docstring and the __future__ import, so the module still parses as it did.
    head, sep, rest = source.partition("from __future__ import annotations\n")
    assert sep, f"{module} has no __future__ import to anchor the planted line"
    target.write_text(f"{head}{sep}{planted}  # noqa\n{rest}", encoding="utf-8")
    done = _lint(root)
    assert done.returncode != 0, f"a planted {planted!r} in {module} passed every contract"
    broken = done.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, done.stdout


def _runs_git(tree: ast.AST) -> list[int]:
    """Lines that call a subprocess function with ``"git"`` as the program."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in {"run", "Popen", "check_output", "check_call", "call"}:
            continue
        program = node.args[0]
        if isinstance(program, (ast.List, ast.Tuple)) and program.elts:
            first = program.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                lines.append(node.lineno)
    return lines


def test_only_the_git_edge_runs_git() -> None:
    outside = {
        f"{p.relative_to(PACKAGE).as_posix()}:{line}"
        for p in PACKAGE.rglob("*.py")
        if p.relative_to(PACKAGE).parts[0] != "git"
        for line in _runs_git(ast.parse(p.read_text(encoding="utf-8")))
    }
    assert not outside, f"git run as a subprocess outside reconciler/git/: {sorted(outside)}"


def test_the_scanner_sees_a_git_subprocess() -> None:
    tree = ast.parse('import subprocess\nsubprocess.run(["git", "status"], check=True)\n')
    assert _runs_git(tree) == [2]


def test_the_core_stays_flat_and_small() -> None:
    core = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(core) <= 32, f"{len(core)} top-level modules: {core}"
    too_long = {
        p.relative_to(PACKAGE).as_posix(): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not too_long, f"modules over 600 lines: {too_long}"


def test_the_layout_figures_are_measured_from_the_tree() -> None:
    from tests.benchmarks import layout

    chain = layout.longest_chain()
    assert chain and all(m.startswith(layout.FAST) for m in chain)
    assert len(set(chain)) == len(chain)  # a chain, not a cycle
    files = layout.files_per_package()
    assert files["reconciler/reading"] >= files["reconciler/reading/grammar"] > 0
    run = layout.modules_run(layout.QUESTION)
    assert "reconciler.generators.fast" in run and "reconciler.reading.parse" in run
