"""Every answered fast-tier golden case, run on PostgreSQL as dst runs it there.

The fast tier writes SQL in the lens's dialect (DuckDB); on a PostgreSQL warehouse
dst transpiles it with :func:`reconciler.guard.transpile` (DESIGN §2 "Dialect").
Each golden case with an oracle — ``fast_tier_cases.yaml`` (shop, crm, shop as of)
and every fixture file :func:`tests.helpers.golden.collect` lists
(``fast_tier_today.yaml`` dates its data from ``CURRENT_DATE`` on both engines) — is
generated as in the DuckDB tests, transpiled, and executed on a scratch PostgreSQL
database holding the same data (one schema per lens, first on the search path); its
rows must equal the hand-written oracle's rows on DuckDB, with the same column count.
Skipped, with the reason, when no PostgreSQL server answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa
import sqlglot

from reconciler.guard import transpile
from tests import pg
from tests.helpers.golden import Golden, collect
from tests.helpers.grammar import ask, dimension_values, rounded, same_rows

LENSES, SCHEMAS, CASES = collect()


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
