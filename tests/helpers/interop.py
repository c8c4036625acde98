"""Importers and exporters: a lens directory as bytes, seeded DuckDB oracles, a Cortex model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import duckdb

from reconciler.interop.importers import OracleRun, OracleRunner
from reconciler.lens import MAX_ROW_CAP


def seeded(seeds: Mapping[str, bytes], folder: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one table per seed CSV, loaded by read_csv(header=true)."""
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    for table, data in seeds.items():
        path = folder / f"{table}.csv"
        path.write_bytes(data)
        con.execute(f"CREATE TABLE \"{table}\" AS SELECT * FROM read_csv('{path}', header=true)")
    return con


def duckdb_runner(folder: Path) -> OracleRunner:
    """An OracleRunner over a fresh in-memory DuckDB seeded in ``folder``."""

    def run(seeds: Mapping[str, bytes], queries: Sequence[str]) -> list[OracleRun]:
        con = seeded(seeds, folder)
        outcomes = []
        for sql in queries:
            try:
                outcomes.append(OracleRun(rows=len(con.execute(sql).fetchmany(MAX_ROW_CAP + 1))))
            except duckdb.Error as exc:
                outcomes.append(OracleRun(error=str(exc)))
        return outcomes

    return run


def read_lens_dir(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


SMALL_MODEL = """\
name: shop
description: A tiny shop.
tables:
  - name: orders
    base_table: {database: db, schema: s, table: RAW_ORDERS}
    dimensions:
      - name: status
        expr: st
        data_type: TEXT
        synonyms: ['  ', state]
        cortex_search_service_name: status_search
    time_dimensions:
      - name: ordered_on
        expr: day
        data_type: DATE
    measures:
      - name: order_total
        expr: amt * qty
        data_type: NUMBER
      - name: orders_count
        expr: id
        default_aggregation: count_distinct
        data_type: NUMBER
verified_queries:
  - name: Paid revenue
    question: What is the paid revenue?
    sql: SELECT SUM(order_total) AS revenue FROM __orders WHERE status = 'paid'
    verified_at: 1714752498
    verified_by: ana
  - name: Customers
    question: How many customers are there?
    sql: SELECT COUNT(*) FROM __customers
    verified_at: 1714752498
    verified_by: ana
  - name: Bad column
    question: What is the discount?
    sql: SELECT SUM(discount) FROM __orders
    verified_at: 1714752498
    verified_by: ana
  - name: Orders today
    question: How many orders today?
    sql: SELECT COUNT(*) AS n FROM __orders WHERE ordered_on = CURRENT_DATE
    verified_at: 1715187400
    verified_by: ana
"""
