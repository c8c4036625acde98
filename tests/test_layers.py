"""The import-linter layers contract names every top-level module and package exactly once.

A module in no layer is checked by no layer rule (it may import anything and be
imported by anything); a module in two would make the contract contradict itself.
"""

from __future__ import annotations

import re
import sys

import pytest

from tests.helpers import PROJECT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml needs tomli on 3.10")


def _layers() -> list[str]:
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layered = next(c for c in contracts if c["type"] == "layers")
    return [name for layer in layered["layers"] for name in re.split(r"\s*[:|]\s*", layer)]


def test_every_top_level_module_is_in_exactly_one_layer() -> None:
    package = PROJECT / "reconciler"
    modules = {
        p.stem
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
        or (p.is_dir() and (p / "__init__.py").exists())
    }
    named = _layers()
    twice = sorted({n for n in named if named.count(n) > 1})
    assert not twice, f"in two layers: {twice}"
    missing = sorted(modules - set(named))
    assert not missing, f"in no layer of pyproject.toml's layers contract: {missing}"
    stale = sorted(set(named) - modules)
    assert not stale, f"layers name modules that do not exist: {stale}"
