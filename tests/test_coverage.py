"""``dst coverage``: unbound assets and metrics no case names, from bytes and on a real repo."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from reconciler.assembly.retrieval import retrieve
from reconciler.assets import dependency_set, lens_assets
from reconciler.coverage import coverage, percent
from reconciler.git import trees as gitstate
from reconciler.ids import AssetId
from reconciler.lens import Lens, load_lens
from tests.helpers import PROJECT, commit, invoke
from tests.shop import CUSTOMERS, LENS, ORDER_COUNT, ORDERS, REVENUE

STOCK = b"""\
name: stock
table: stock
facts:
  - name: qty
    data_type: number
"""
STOCK_UNITS = b"""\
name: stock_units
model: stock
expression: SUM(qty)
"""
EXEMPLAR = b"""\
name: stock_by_warehouse
question: Units in stock per warehouse
sql: SELECT SUM(qty) FROM stock
"""
CASES = b"""\
cases:
  - question: How many orders came from each segment?
    expect: answer
  - question: Is revenue doing well?
    expect: clarify
    term: well
  - question: What is the average employee salary?
    expect: refuse
"""
ANSWER = """\
id: {id}
question: {q}
sql: {sql}
status: {status}
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""


def answer(aid: str, question: str, sql: str, status: str = "active") -> bytes:
    return ANSWER.format(id=aid, q=question, sql=sql, status=status).encode()


def shop_files() -> dict[str, bytes]:
    """A lens with one active answer on revenue, a retired one on stock, three cases."""
    return {
        "lens.yaml": LENS,
        "models/orders.yaml": ORDERS,
        "models/customers.yaml": CUSTOMERS,
        "models/stock.yaml": STOCK,
        "metrics/revenue.yaml": REVENUE,
        "metrics/order_count.yaml": ORDER_COUNT,
        "metrics/stock_units.yaml": STOCK_UNITS,
        "exemplars/stock_by_warehouse.yaml": EXEMPLAR,
        "skills/house.md": b"Amounts are in euros.\n",
        "evals/cases.yaml": CASES,
        "answers/rev.yaml": answer(
            "rev", "What was total revenue?", "SELECT SUM(amount) FROM orders"
        ),
        "answers/old_stock.yaml": answer(
            "old_stock", "What are total stock units?", "SELECT SUM(qty) FROM stock", "retired"
        ),
    }


def test_unbound_assets_are_listed_and_bound_ones_are_not() -> None:
    cov = coverage(load_lens("shop", shop_files()))
    # revenue → orders → customers (join closure); the retired answer binds nothing.
    assert sorted(cov.bound_by) == ["metrics/revenue", "models/customers", "models/orders"]
    assert cov.bound_by[AssetId("metrics/revenue")] == ("rev",)
    assert cov.unbound == (
        "exemplars/stock_by_warehouse",
        "metrics/order_count",
        "metrics/stock_units",
        "models/stock",
    )
    assert cov.answers == 1
    assert cov.record()["unbound_assets"][0] == {
        "asset": "exemplars/stock_by_warehouse",
        "path": "exemplars/stock_by_warehouse.yaml",
    }


def test_lens_config_and_skills_are_not_measured() -> None:
    cov = coverage(load_lens("shop", shop_files()))
    assert "lens/shop" not in cov.assets
    assert "skills/house.md" not in cov.assets
    assert len(cov.assets) == 7


def test_an_answer_reading_a_table_binds_its_model() -> None:
    files = shop_files()
    files["answers/rows.yaml"] = answer(
        "rows", "How many rows are on hand?", "SELECT COUNT(*) FROM stock"
    )
    cov = coverage(load_lens("shop", files))
    assert cov.bound_by[AssetId("models/stock")] == ("rows",)
    assert "models/stock" not in cov.unbound
    assert "metrics/stock_units" in cov.unbound  # the question does not name it


def test_metrics_no_case_names_are_listed() -> None:
    cov = coverage(load_lens("shop", shop_files()))
    assert cov.mentioned_by == {"order_count": (0,), "revenue": (1,)}
    assert cov.unmentioned == ("stock_units",)
    assert cov.cases == 3


def test_percentages_are_exact() -> None:
    cov = coverage(load_lens("shop", shop_files()))
    assert cov.asset_coverage == 100.0 * 3 / 7
    assert cov.case_coverage == 100.0 * 2 / 3
    rec = cov.record()
    assert rec["asset_coverage"] == {"covered": 3, "total": 7, "percent": 42.86}
    assert rec["case_coverage"] == {"covered": 2, "total": 3, "percent": 66.67}
    assert rec["unmentioned_metrics"] == ["stock_units"]


def test_an_empty_lens_is_fully_covered() -> None:
    cov = coverage(load_lens("empty", {"lens.yaml": b"name: empty\n"}))
    assert (cov.assets, cov.metrics, cov.unbound, cov.unmentioned) == ((), (), (), ())
    assert cov.asset_coverage == cov.case_coverage == 100.0
    assert percent(0, 0) == 100.0
    assert percent(1, 4) == 25.0


@pytest.mark.parametrize("name", ["sales", "finance"])
def test_example_lenses_are_consistent(name: str) -> None:
    if not (PROJECT / "lenses" / name / "lens.yaml").is_file():
        pytest.skip("the example lenses are not in this checkout")
    lens: Lens = load_lens(name, gitstate.worktree_files(PROJECT, name))
    cov = coverage(lens)
    kinds = ("models", "metrics", "exemplars")
    expected_assets = sorted(a for a, x in lens_assets(lens).items() if x.kind in kinds)
    assert list(cov.assets) == expected_assets
    bound = {a for ans in lens.active_answers() for a in dependency_set(lens, ans)}
    assert set(cov.unbound) == set(expected_assets) - bound
    named = {m for case in lens.cases for m in retrieve(lens, case.question).metrics()}
    assert set(cov.unmentioned) == set(lens.metrics) - named
    assert cov.asset_coverage == percent(len(cov.assets) - len(cov.unbound), len(cov.assets))
    assert cov.case_coverage == percent(len(cov.metrics) - len(cov.unmentioned), len(cov.metrics))
    assert cov.answers == len(lens.active_answers()) > 0
    assert 0.0 <= cov.asset_coverage <= 100.0 and 0.0 <= cov.case_coverage <= 100.0


@functools.cache
def _coverage_wired() -> bool:
    return invoke(PROJECT, "coverage", "--help").code == 0


needs_cli = pytest.mark.skipif(
    not _coverage_wired(), reason="`dst coverage` is not registered in reconciler/cli/app.py yet"
)


def _lens_paths(files: dict[str, bytes]) -> dict[str, str | bytes | None]:
    return {f"lenses/shop/{rel}": data for rel, data in files.items()}


@needs_cli
def test_cli_reports_at_a_revision_and_rejects_bad_input(repo: Path) -> None:
    files = shop_files()
    first = commit(repo, _lens_paths(files), "shop lens")
    files["answers/rows.yaml"] = answer(
        "rows", "How many rows are on hand?", "SELECT COUNT(*) FROM stock"
    )
    commit(repo, _lens_paths(files), "bind the stock model")

    now = invoke(repo, "coverage", "--format", "json")
    assert now.code == 0, now.stderr
    assert (now.json()["schema_version"], now.json()["command"]) == (1, "coverage")
    assert now.lens("shop")["asset_coverage"] == {"covered": 4, "total": 7, "percent": 57.14}

    before = invoke(repo, "coverage", "shop", "--to", first, "--format", "json")
    assert before.code == 0, before.stderr
    shop = before.lens("shop")
    assert shop["asset_coverage"]["covered"] == 3
    assert shop["unmentioned_metrics"] == ["stock_units"]

    text = invoke(repo, "coverage", "shop", "--to", first)
    assert text.code == 0, text.stderr
    assert "shop: assets 42.9% (3/7" in text.stdout
    assert "cases 66.7% (2/3" in text.stdout
    assert "unbound: models/stock (lenses/shop/models/stock.yaml)" in text.stdout
    assert "no case names: metrics/stock_units" in text.stdout

    unknown = invoke(repo, "coverage", "nope")
    assert unknown.code == 2
    assert "shop" in unknown.stderr
    bad_rev = invoke(repo, "coverage", "--to", "no-such-branch", "--format", "json")
    assert bad_rev.code == 2
    assert bad_rev.json()["error"]["type"] == "UsageError"
