"""Shared fixtures: real temporary git repositories, the real CLI, the real DuckDB.

Helpers (``git``, ``commit``, ``dst``, ``run`` …) live in ``tests/helpers``; the
names below are re-exported for test files that still import them from here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import (
    CORPORA as CORPORA,
    EXAMPLE_LENSES as EXAMPLE_LENSES,
    GIT_ENV as GIT_ENV,
    PROJECT as PROJECT,
    Result as Result,
    commit as commit,
    dst as dst,
    git as git,
    invoke,
)
from tests.helpers.examples import promote_all
from tests.helpers.push import make_push_template


@pytest.fixture(scope="module")
def warehouse(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DuckDB warehouse of the requesting module's one-lens golden fixture file
    (its module-level ``GOLDEN``, a :class:`tests.helpers.grammar.GoldenFile`), built once
    per module; a module defining its own ``warehouse`` fixture overrides this one."""
    golden = request.module.GOLDEN
    root = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    return next(iter(golden.warehouses(root).values()))


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
    seeded = invoke(base, "seed")
    assert seeded.code == 0, seeded.stderr
    return base


@pytest.fixture
def lens_repo(_seeded_template: Path, tmp_path: Path) -> Path:
    """A clone-like copy of a repository holding the example lenses, already seeded."""
    path = tmp_path / "lens_repo"
    shutil.copytree(_seeded_template, path, symlinks=True)
    return path


@pytest.fixture(scope="session")
def _promoted_template(_seeded_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("promoted") / "repo"
    shutil.copytree(_seeded_template, path, symlinks=True)
    promote_all(path)
    return path


@pytest.fixture(scope="session")
def _push_template(
    _seeded_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """An origin and a clone of the seeded examples, lenses promoted (the push tests copy it)."""
    return make_push_template(_seeded_template, tmp_path_factory.mktemp("push"))


@pytest.fixture
def promoted_repo(_promoted_template: Path, tmp_path: Path) -> Path:
    """``lens_repo`` after ``dst apply`` promoted every example lens (built once, copied)."""
    path = tmp_path / "lens_repo"
    shutil.copytree(_promoted_template, path, symlinks=True)
    return path


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker, hand the figures it recorded to the controller."""
    from tests.figures import recorded

    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["dst_figures"] = recorded()


def pytest_testnodedown(node: object, error: object) -> None:
    """On the pytest-xdist controller, keep the figures of a worker that finished."""
    from tests.figures import record

    for line in getattr(node, "workeroutput", {}).get("dst_figures", []):
        record(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures tests recorded with ``tests.figures.record`` (every worker's)."""
    from tests.figures import recorded

    lines = recorded()
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)
