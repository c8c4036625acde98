"""Every answered fast-tier golden case, run on PostgreSQL as dst runs it there.

The fast tier writes SQL in the lens's dialect (DuckDB); on a PostgreSQL warehouse
dst transpiles it with :func:`reconciler.guard.transpile` (DESIGN §2 "Dialect").
Each golden case with an oracle — ``fast_tier_cases.yaml`` (shop, crm, shop as of)
and every fixture file :func:`_collect` lists (``fast_tier_today.yaml`` dates its data
from ``CURRENT_DATE`` on both engines) — is generated as in the DuckDB tests,
transpiled, and executed on a scratch PostgreSQL database holding the same data (one
schema per lens, first on the search path); its rows must equal the hand-written
oracle's rows on DuckDB, with the same column count. Skipped, with the reason, when no
PostgreSQL server answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlalchemy as sa
import sqlglot
import yaml

from reconciler.guard import transpile
from reconciler.lens import Lens, load_lens
from tests import pg
from tests.helpers import FIXTURES
from tests.helpers.grammar import (
    CRM,
    CRM_SCHEMA,
    SCHEMA,
    SHOP,
    ask,
    dimension_values,
    grammar_cases,
    rounded,
    same_rows,
)
from tests.test_fast_tier_more import MORE


@dataclass(frozen=True)
class Golden:
    """One answered case: where its lens and data come from, and what it must return."""

    id: str
    lens: str  # also the PostgreSQL schema and the DuckDB file's stem
    question: str
    oracle: str
    ordered: bool = False


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text("utf-8"))
    return data


def _collect() -> tuple[dict[str, Lens], dict[str, str], list[Golden]]:
    """``(lenses by schema, schema SQL by schema, answered cases)`` of every fixture."""
    lenses: dict[str, Lens] = {
        "g_shop": load_lens("shop", SHOP),
        "g_crm": load_lens("crm", CRM),
        "g_shop_as_of": load_lens("shop", MORE),
    }
    schemas = {"g_shop": SCHEMA, "g_crm": CRM_SCHEMA, "g_shop_as_of": SCHEMA}
    cases = [
        Golden(f"{section}-{i}", f"g_{section}", q, oracle)
        for section in ("shop", "crm", "shop_as_of")
        for i, q, oracle in grammar_cases(section, "shapes")
    ]
    for fixture in (
        "fast_tier_reach.yaml",
        "fast_tier_soundness.yaml",
        "fast_tier_cortex2.yaml",
        "fast_tier_today.yaml",
        "fast_tier_backrefs.yaml",
    ):
        data, tag = _load(fixture), fixture.removeprefix("fast_tier_").removesuffix(".yaml")
        for name, spec in data["lenses"].items():
            files = {p: t.encode() for p, t in spec["files"].items()}
            lenses[f"g_{tag}_{name}"] = load_lens(name, files)
            schemas[f"g_{tag}_{name}"] = spec["schema"]
        cases += [
            Golden(
                f"{tag}-{c['id']}",
                f"g_{tag}_{c['lens']}",
                c["question"],
                c["oracle"],
                bool(c.get("ordered")),
            )
            for c in data["cases"]
            if "oracle" in c
        ]
    for fixture, name in (
        ("fast_tier_ratios.yaml", "ratio_shop"),
        ("fast_tier_facts.yaml", "fleet"),
        ("fast_tier_more2.yaml", "week_shop"),
        ("fast_tier_zero_rows.yaml", "zero_rows"),
        ("fast_tier_more3.yaml", "calendar_shop"),
        ("fast_tier_nulls.yaml", "lending"),
        ("fast_tier_dates2.yaml", "clinic_dates"),
    ):
        data, tag = _load(fixture), fixture.removeprefix("fast_tier_").removesuffix(".yaml")
        lenses[f"g_{tag}"] = load_lens(name, {p: t.encode() for p, t in data["lens"].items()})
        schemas[f"g_{tag}"] = data["schema"]
        cases += [
            Golden(
                f"{tag}-{c['id']}", f"g_{tag}", c["question"], c["oracle"], bool(c.get("ordered"))
            )
            for c in data["cases"]
            if "oracle" in c
        ]
    return lenses, schemas, cases


LENSES, SCHEMAS, CASES = _collect()


@dataclass
class Warehouses:
    duck: dict[str, duckdb.DuckDBPyConnection]
    postgres: sa.Engine


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouses]:
    with pg.scratch_database("dst_golden") as scratch:
        engine = pg.engine(scratch.owner_url)
        root: Path = tmp_path_factory.mktemp("golden")
        duck: dict[str, duckdb.DuckDBPyConnection] = {}
        try:
            with engine.begin() as conn:
                for schema, sql in SCHEMAS.items():
                    duck[schema] = duckdb.connect(str(root / f"{schema}.duckdb"))
                    duck[schema].execute(sql)
                    conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
                    conn.exec_driver_sql(f'SET search_path TO "{schema}"')
                    for statement in sqlglot.transpile(sql, read="duckdb", write="postgres"):
                        conn.exec_driver_sql(statement.replace("%", "%%"))
            yield Warehouses(duck, engine)
        finally:
            for con in duck.values():
                con.close()
            engine.dispose()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case_gives_the_oracle_rows_on_postgresql(
    warehouses: Warehouses, case: Golden
) -> None:
    lens, duck = LENSES[case.lens], warehouses.duck[case.lens]
    result = ask(lens, case.question, dimension_values(duck, lens))
    assert result.sql is not None, result.declined
    sql = transpile(result.sql, lens.config.dialect, "postgres")
    with warehouses.postgres.connect() as conn:
        conn.exec_driver_sql(f'SET search_path TO "{case.lens}"')
        cursor = conn.exec_driver_sql(sql.replace("%", "%%"))
        columns, rows = len(cursor.keys()), [tuple(r) for r in cursor.fetchall()]
    oracle = duck.execute(case.oracle)
    expected = oracle.fetchall()
    assert columns == len(oracle.description or ()), f"column count differs:\n{sql}"
    if case.ordered:
        assert rounded(rows) == rounded(expected), f"{sql}\n{rows} != {expected}"
    else:
        assert same_rows(rows, expected), f"{sql}\n{rows} != {expected}"
