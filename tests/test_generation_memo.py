"""The fast-tier memo (generators.reuse): the same request on the same lens and values only.

The fast tier is deterministic in (lens, request, values), so a suite run again in
one process reuses its generations. A changed lens tree, other warehouse values or
another question must generate afresh, and a request listing another tier is
never kept.
"""

from __future__ import annotations

import dataclasses

import duckdb
import pytest

from reconciler.assembly.grain import WarehouseFacts
from reconciler.assembly.request import assemble
from reconciler.generators import reuse
from reconciler.lens import Lens, load_lens
from tests.helpers.grammar import SCHEMA, SHOP, dimension_values


@pytest.fixture(scope="module")
def values() -> WarehouseFacts:
    con = duckdb.connect()
    con.execute(SCHEMA)
    facts = dimension_values(con, load_lens("shop", SHOP))
    con.close()
    assert isinstance(facts, WarehouseFacts)
    return facts


@pytest.fixture(autouse=True)
def _fresh_memo() -> None:
    reuse._KEPT.clear()


def _lens(files: dict[str, bytes] | None = None) -> Lens:
    return load_lens("shop", files or SHOP)


def _sql(lens: Lens, question: str, values: object) -> tuple[str | None, object]:
    request = assemble(lens, question)
    generation = reuse.generate_reusing(lens, request, values, None, None)  # type: ignore[arg-type]
    return generation.sql, generation


def test_the_same_request_lens_and_values_reuse_the_generation(values: WarehouseFacts) -> None:
    lens = _lens()
    sql, first = _sql(lens, "net revenue by region", values)
    assert sql is not None and "SUM" in sql.upper()
    _, again = _sql(lens, "net revenue by region", values)
    assert again is first
    assert len(reuse._KEPT) == 1


def test_a_changed_lens_tree_generates_afresh(values: WarehouseFacts) -> None:
    lens = _lens()
    before, _ = _sql(lens, "net revenue by region", values)
    edited = dict(SHOP)
    edited["metrics/net_revenue.yaml"] = SHOP["metrics/net_revenue.yaml"].replace(
        b"expression: SUM(amount)", b"expression: SUM(amount * 2)"
    )
    after, _ = _sql(_lens(edited), "net revenue by region", values)
    assert before is not None and after is not None
    assert "* 2" not in before and "* 2" in after


def test_other_values_or_another_question_generate_afresh(values: WarehouseFacts) -> None:
    lens = _lens()
    sql, first = _sql(lens, "net revenue in West", values)
    assert sql is not None and "'West'" in sql
    regions = (*values[("regions", "region")], "South")
    other = WarehouseFacts({**values, ("regions", "region"): regions}, values.key_facts)
    _, with_other_values = _sql(lens, "net revenue in West", other)
    assert with_other_values is not first
    south, _ = _sql(lens, "net revenue in South", other)
    assert south is not None and "'South'" in south
    east, _ = _sql(lens, "net revenue in East", values)
    assert east is not None and "'East'" in east and "'West'" not in east


def test_a_request_with_another_tier_is_never_kept(values: WarehouseFacts) -> None:
    lens = _lens()
    request = dataclasses.replace(assemble(lens, "net revenue by region"), tiers=("fast", "smart"))
    generation = reuse.generate_reusing(lens, request, values, None, None)
    assert generation.sql is not None
    assert reuse._KEPT == {}
