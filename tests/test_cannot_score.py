"""A gate that cannot score stands down, on a lens's first promotion too (DESIGN §5).

A first apply has only self-test answers (nothing served yet). When the warehouse is
not there or no generator resolves, none of them can run: the lens must not start
serving untested. A budget variable that bounds nothing (``nan``) is bad input.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import UsageError
from reconciler.generators.cache import Budget
from tests.helpers import invoke
from tests.helpers.examples import serving


def test_a_first_apply_without_its_warehouse_stands_down(lens_repo: Path, tmp_path: Path) -> None:
    missing = f"duckdb:///{tmp_path / 'nope.duckdb'}"
    done = invoke(lens_repo, "apply", "--warehouse", missing, "--format", "json")
    assert done.code == 1, done.stdout + done.stderr
    for lens in ("sales", "finance"):
        obj = done.lens(lens)
        assert obj["action"] == "stood_down"
        assert any(m.startswith("gate STOOD DOWN:") for m in obj["messages"]), obj["messages"]
        assert serving(lens_repo, lens) is None
    again = invoke(lens_repo, "apply", "--format", "json")
    assert again.code == 0, again.stdout + again.stderr
    assert {x["action"] for x in again.json()["lenses"]} == {"promoted"}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-5", "lots"])
def test_a_cost_budget_that_bounds_nothing_is_bad_input(value: str) -> None:
    with pytest.raises(UsageError, match="is not a budget"):
        Budget.from_env({"DST_MAX_COST_USD": value})
