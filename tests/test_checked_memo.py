"""The load memo: a lens tree that loaded once skips the guard's SQL checks on its next load.

``.dst/checked/`` holds one empty marker per lens tree that loaded, named by the
tree id, the lens name and a fingerprint of the rules (tool and sqlglot versions,
the guard's and the loader's source). A marked tree loads into the same lens
without parsing its SQL; another tree, other rules, no directory or an unwritable
one, and the check runs as before — a refusal is never remembered.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest

from reconciler import guard
from reconciler.errors import LensLoadError
from reconciler.git import checked, trees
from reconciler.git.trees import LensTree, load_lens_at
from reconciler.ids import Oid
from reconciler.lens import load_lens
from tests.helpers import commit, invoke
from tests.helpers.certified import ANSWER, files


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    # nothing loaded in this process before: each load below reads its tree
    monkeypatch.setattr(trees, "_LOADED", {})
    guard.query_problem.cache_clear()
    guard.expression_problem.cache_clear()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL string the loader hands the guard, in order."""
    seen: list[str] = []

    def spying(real: Callable[..., Any]) -> Callable[..., Any]:
        def spy(sql: str, *args: Any) -> Any:
            seen.append(sql)
            return real(sql, *args)

        return spy

    monkeypatch.setattr(guard, "query_problem", spying(guard.query_problem))
    monkeypatch.setattr(guard, "expression_problem", spying(guard.expression_problem))
    return seen


def _tree(repo: Path, lens_files: dict[str, bytes]) -> tuple[pygit2.Repository, LensTree]:
    oid = commit(repo, {f"lenses/shop/{k}": v for k, v in lens_files.items()}, "shop")
    git = pygit2.Repository(str(repo))
    return git, trees.lens_trees(git, Oid(oid))["shop"]


def test_a_tree_that_loaded_once_loads_again_without_its_sql_checks(
    repo: Path, checks: list[str]
) -> None:
    git, tree = _tree(repo, files())
    marks = trees.checked_dir(git)
    assert marks == repo.resolve() / ".dst" / "checked"
    first = load_lens_at(git, tree, checked=marks)
    assert "SELECT SUM(amount) FROM orders" in checks  # the first load checked the SQL
    assert len(list(marks.iterdir())) == 1
    checks.clear()
    trees._LOADED.clear()
    again = load_lens_at(git, tree, checked=marks)
    assert checks == []
    assert again is not first
    assert again.answers == first.answers
    assert again.metrics == first.metrics
    assert again.models == first.models
    assert again.config == first.config


def test_another_tree_of_the_same_lens_is_checked_and_a_refusal_is_not_remembered(
    repo: Path, checks: list[str]
) -> None:
    git, good = _tree(repo, files())
    marks = trees.checked_dir(git)
    load_lens_at(git, good, checked=marks)
    bad = files()
    bad["answers/rev.yaml"] = ANSWER.format(
        id="rev", q="What was total revenue?", sql="DELETE FROM orders"
    ).encode()
    _, tree = _tree(repo, bad)
    assert tree.tree != good.tree
    for _ in range(2):
        trees._LOADED.clear()
        with pytest.raises(LensLoadError, match="sql"):
            load_lens_at(git, tree, checked=marks)
    assert len(list(marks.iterdir())) == 1  # only the good tree's marker


def test_other_rules_miss(repo: Path, checks: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    git, tree = _tree(repo, files())
    marks = trees.checked_dir(git)
    load_lens_at(git, tree, checked=marks)
    checks.clear()
    trees._LOADED.clear()
    # another dst, sqlglot or guard source: another fingerprint, so another marker name
    monkeypatch.setattr(checked, "rules_fingerprint", lambda: "0" * 64)
    load_lens_at(git, tree, checked=marks)
    assert "SELECT SUM(amount) FROM orders" in checks
    assert len(list(marks.iterdir())) == 2


def test_the_fingerprint_covers_the_guards_source() -> None:
    here = Path(guard.__file__).parent.parent  # the package root the rules are named from
    assert {"guard/__init__.py", "guard/denied.py", "lens.py"} <= set(checked._RULES)
    assert {"guard/calls.py", "guard/names.py", "guard/allowed/duckdb.txt"} <= set(checked._RULES)
    assert all((here / name).is_file() for name in checked._RULES)
    assert len(checked.rules_fingerprint()) == 64


def test_without_a_directory_or_with_an_unwritable_one_every_load_checks(
    repo: Path, checks: list[str]
) -> None:
    git, tree = _tree(repo, files())
    load_lens_at(git, tree)
    assert checks
    checks.clear()
    trees._LOADED.clear()
    blocked = repo / ".dst" / "checked"
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("a file where the directory would be\n")
    for _ in range(2):
        trees._LOADED.clear()
        load_lens_at(git, tree, checked=blocked)
        assert "SELECT SUM(amount) FROM orders" in checks
        checks.clear()


def test_sql_checked_skips_only_the_sql_checks() -> None:
    broken = files()
    broken["answers/rev.yaml"] = b"id: rev\nquestion: [not, a, string]\n"
    with pytest.raises(LensLoadError):
        load_lens("shop", broken, sql_checked=True)  # YAML and types are still checked


def test_the_markers_are_pruned_to_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checked, "CHECKED_KEPT", 3)
    for i in range(5):
        mark = checked.marker(tmp_path, "shop", f"{i:040x}")
        checked.remember(mark)
        assert mark is not None
        os.utime(mark, ns=(i * 10**9, i * 10**9))
    # each write prunes the least recently used beyond 3: the 4th write drops 0, the 5th drops 1
    kept = sorted(p.name for p in tmp_path.iterdir())
    names = [checked.marker(tmp_path, "shop", f"{i:040x}") for i in range(5)]
    assert kept == sorted(p.name for p in names[2:] if p is not None)
    assert not checked.seen(names[0])
    assert checked.seen(names[4])


def test_a_replan_gives_the_same_report_and_leaves_the_markers(repo: Path) -> None:
    commit(repo, {f"lenses/shop/{k}": v for k, v in files().items()}, "shop")
    first = invoke(repo, "plan", "--format", "json")
    assert first.code == 0, first.stderr
    assert list((repo / ".dst" / "checked").iterdir())
    trees._LOADED.clear()
    again = invoke(repo, "plan", "--format", "json")
    assert again.stdout == first.stdout


def test_the_runtime_reads_dst_yaml_again_when_its_bytes_change(repo: Path) -> None:
    from reconciler.context import Runtime

    rt = Runtime(pygit2.Repository(str(repo)), env={})
    assert rt.root == repo.resolve()
    assert rt.root is rt.root  # resolved once per repository object
    (repo / "dst.yaml").write_text("warehouse: duckdb:///one.duckdb\n")
    assert rt.repo_config().warehouse == "duckdb:///one.duckdb"
    assert rt.repo_config() is rt.repo_config()  # the same bytes: the same checked config
    (repo / "dst.yaml").write_text("warehouse: duckdb:///two.duckdb\n")
    assert rt.repo_config().warehouse == "duckdb:///two.duckdb"
    (repo / "dst.yaml").write_text("warehouse: duckdb:///two.duckdb\nunknown_key: 1\n")
    with pytest.raises(LensLoadError, match="unknown_key"):
        rt.repo_config()  # a broken file is an error every time, never the last good one
    with pytest.raises(LensLoadError):
        rt.repo_config()
    rt.repo = pygit2.Repository(str(repo))
    assert rt.root == repo.resolve()
