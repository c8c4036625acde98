"""`dst import cortex`: Cortex Analyst semantic models become lenses whose oracles run.

The corpus tests read the real Snowflake samples from ``../shared/corpora`` (or
``$DST_CORPORA``) and skip when they are absent; the rest build small inputs here.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
import yaml

from reconciler import guard
from reconciler.errors import InputError, UsageError
from reconciler.interop.importers import write_lens
from reconciler.interop.importers.cortex import import_cortex
from reconciler.interop.importers.logical import LogicalSqlError, LogicalTable, compile_logical
from reconciler.lens import MAX_ROW_CAP, RELATIVE_DATE_RE, Lens, load_lens
from tests.helpers.interop import SMALL_MODEL, duckdb_runner, read_lens_dir, seeded

REPO = Path(__file__).resolve().parents[1]

# (folder, model file, data folder)
CORPUS_MODELS = [
    ("revenue_timeseries", "revenue_timeseries.yaml", "data"),
    ("sfdc_sales", "sfdc_sales.yaml", "sample_data"),
]


def corpus_dir() -> Path:
    root = Path(os.environ.get("DST_CORPORA") or REPO.parent / "shared" / "corpora")
    path = root / "cortex-analyst"
    if not path.is_dir():
        pytest.skip(
            "Cortex corpus not found at ../shared/corpora/cortex-analyst "
            "(set DST_CORPORA to the corpora directory to run these tests)"
        )
    return path


def seeds_of(lens: Lens, root: Path) -> dict[str, bytes]:
    return {table: (root / rel).read_bytes() for table, rel in lens.seeds.items()}


@pytest.mark.parametrize(("folder", "model_file", "data"), CORPUS_MODELS)
def test_corpus_model_imports_and_every_active_oracle_runs(
    tmp_path: Path, folder: str, model_file: str, data: str
) -> None:
    source_dir = corpus_dir() / folder
    model_bytes = (source_dir / model_file).read_bytes()
    ddl = [p.read_bytes() for p in sorted(source_dir.glob("*.sql"))]
    name = folder.replace("_", "-")
    files, report = import_cortex(
        model_bytes,
        model_path=f"{folder}/{model_file}",
        lens=name,
        data_dir=source_dir / data,
        ddl=ddl,
        run_oracles=duckdb_runner(tmp_path / "import-check"),
    )
    write_lens(tmp_path, name, files)
    lens_root = tmp_path / "lenses" / name
    assert report.written == tuple(sorted(f"lenses/{name}/{rel}" for rel in files))
    lens = load_lens(name, read_lens_dir(lens_root))

    source = yaml.safe_load(model_bytes)
    tables = source["tables"]
    queries = source["verified_queries"]
    facts = sum(len(t.get("measures", [])) + len(t.get("facts", [])) for t in tables)
    assert (report.models, len(lens.models)) == (len(tables), len(tables))
    assert (report.metrics, len(lens.metrics)) == (facts, facts)
    assert (report.answers, len(lens.answers)) == (len(queries), len(queries))
    for table in tables:
        model = lens.models[table["name"].lower()]
        assert model.table == table["base_table"]["table"].lower()
    drafts = [a for a in lens.answers.values() if a.status == "draft"]
    assert report.drafts == len(drafts)
    assert len(lens.active_answers()) + len(drafts) == len(queries)
    for answer in drafts:  # a draft is never silent
        assert any(f"answers/{answer.id}.yaml" in line for line in report.unmapped)
    assert set(report.seeds) == set(lens.seeds)
    assert all(rows > 0 for rows in report.seeds.values())
    assert {a.provenance.source for a in lens.answers.values()} == {f"cortex:{model_file}"}

    # as_of: with data, the latest day the seeds hold in a time dimension
    relative = [
        q
        for q in queries
        if "CURRENT_" in q["sql"].upper() or RELATIVE_DATE_RE.search(q["question"])
    ]
    con = seeded(seeds_of(lens, lens_root), tmp_path / "check")
    days = [
        con.execute(f"SELECT MAX(CAST({c.sql} AS DATE)) FROM {m.table}").fetchone()
        for m in lens.models.values()
        for c in m.time_dimensions
    ]
    latest = max((d[0] for d in days if d and d[0] is not None), default=None)
    expected = latest.isoformat() if relative and latest is not None else None
    assert lens.config.as_of == report.as_of == expected
    assert lens.active_answers(), "the corpus verified queries should import as active answers"
    for answer in lens.active_answers():
        sql = answer.sql
        if lens.config.as_of is not None:
            sql = guard.pin_current_date(sql, lens.config.as_of, lens.config.dialect)
        rows = con.execute(sql).fetchmany(MAX_ROW_CAP + 1)
        assert len(rows) <= MAX_ROW_CAP, answer.id


def test_revenue_timeseries_specifics(tmp_path: Path) -> None:
    source_dir = corpus_dir() / "revenue_timeseries"
    files, report = import_cortex(
        (source_dir / "revenue_timeseries.yaml").read_bytes(),
        model_path="revenue_timeseries.yaml",
        lens="revenue",
        data_dir=source_dir / "data",
        ddl=[p.read_bytes() for p in sorted(source_dir.glob("*.sql"))],
    )
    lens = load_lens("revenue", files)
    # two logical tables over one physical table are two models
    assert lens.models["product"].table == lens.models["product_dimension"].table == "product_dim"
    assert lens.config.as_of is None  # nothing reads the clock
    assert lens.config.eval_gate == "block"
    assert lens.metrics["daily_forecast_abs_error"].expression == (
        "AVG(ABS(forecasted_revenue - revenue))"
    )
    assert lens.metrics["daily_profit"].expression == "SUM(revenue - cogs)"
    assert lens.models["daily_revenue"].joins[0].on == {"product_id": "product_id"}
    # region.csv's header says Region; the DDL (COPY INTO is positional) says sales_region
    assert files["seeds/region_dim.csv"].startswith(b"region_id,sales_region,state\n")
    # a DATE column keeps the day of the CSV's timestamps
    assert files["seeds/daily_revenue.csv"].split(b"\n")[1].startswith(b"2022-11-09,")
    assert any("cortex_search_service_name" in line for line in report.unmapped)
    assert any("oracles compiled but not executed" in note for note in report.notes)


def test_sfdc_sales_specifics() -> None:
    source_dir = corpus_dir() / "sfdc_sales"
    files, report = import_cortex(
        (source_dir / "sfdc_sales.yaml").read_bytes(),
        model_path="sfdc_sales.yaml",
        lens="sfdc",
        data_dir=source_dir / "sample_data",
        ddl=[p.read_bytes() for p in sorted(source_dir.glob("*.sql"))],
    )
    lens = load_lens("sfdc", files)
    # the latest CLOSEDATE in Opportunity.csv (later than every other time column)
    closes = (source_dir / "sample_data" / "Opportunity.csv").read_text().splitlines()[1:]
    assert lens.config.as_of == max(line.split(",")[7] for line in closes)
    opportunity = lens.models["opportunity"]
    cycle = next(c for c in opportunity.facts if c.name == "salescycleduration")
    assert cycle.expr == "DATE_DIFF('DAY', createddate, closedate)"
    assert all(s.strip() for c in opportunity.columns() for s in c.synonyms + c.sample_values)
    assert {j.to for j in opportunity.joins} == {"accounts", "user"}
    for answer in lens.answers.values():  # logical __opportunity etc. are only aliases now
        assert guard.tables_read(answer.sql, "duckdb") <= {"account", "opportunity", "user"}
    assert report.seeds == {"account": 20, "opportunity": 30, "user": 8}


# --- small, self-contained cases -------------------------------------------------------

ORDERS = LogicalTable(
    "orders",
    "raw_orders",
    {"order_id": "id", "order_total": "amt * qty", "status": "st"},
)


def orders_db() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE raw_orders (id INT, amt DOUBLE, qty INT, st VARCHAR)")
    con.execute(
        "INSERT INTO raw_orders VALUES (1, 2.0, 10, 'paid'), (2, 3.0, 5, 'paid'), "
        "(3, 100.0, 1, 'refunded')"
    )
    return con


def test_logical_query_compiles_to_physical_sql_with_the_hand_computed_result() -> None:
    sql = compile_logical(
        "SELECT SUM(o.order_total) AS revenue FROM __orders AS o WHERE o.STATUS = 'paid'",
        [ORDERS],
    )
    assert guard.tables_read(sql, "duckdb") == {"raw_orders"}
    # paid orders: 2.0 * 10 + 3.0 * 5
    assert orders_db().execute(sql).fetchall() == [(35.0,)]


def test_cte_names_are_kept_and_unaliased_tables_keep_their_name() -> None:
    sql = compile_logical(
        "WITH paid AS (SELECT order_total FROM orders WHERE orders.status = 'paid') "
        "SELECT SUM(order_total) FROM paid",
        [ORDERS],
    )
    assert "paid AS (" in sql.replace("\n", " ")
    assert orders_db().execute(sql).fetchall() == [(35.0,)]


def test_a_query_over_an_unknown_table_does_not_compile() -> None:
    with pytest.raises(LogicalSqlError, match="neither a CTE nor a logical table"):
        compile_logical("SELECT * FROM __customers", [ORDERS])


SMALL_DDL = b"USE ROLE x; CREATE TABLE RAW_ORDERS (ID INT, DAY DATE, AMT FLOAT, QTY INT, ST TEXT);"


def small_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "raw_orders.csv").write_text(
        "Id,Day,Amount,Quantity,Status,Comment\n"
        "1,2024-05-08 10:00:00.000,2.0,10,paid,x\n"
        "2,2024-05-07 11:00:00.000,3.0,5,paid,y\n"
        "3,2024-05-08 12:00:00.000,100.0,1,refunded,z\n"
    )
    return data


def test_small_model_maps_everything_and_drafts_what_does_not_run(tmp_path: Path) -> None:
    files, report = import_cortex(
        SMALL_MODEL.encode(),
        model_path="models/shop.yaml",
        lens="shop",
        data_dir=small_data(tmp_path),
        ddl=[SMALL_DDL],
        run_oracles=duckdb_runner(tmp_path / "run"),
    )
    lens = load_lens("shop", files)
    assert lens.config.as_of == "2024-05-08"  # the day "Orders today" was verified
    assert files["seeds/raw_orders.csv"].decode().splitlines()[:2] == [
        "id,day,amt,qty,st",
        "1,2024-05-08,2.0,10,paid",
    ]
    assert lens.metrics["order_total"].expression == "SUM(amt * qty)"
    assert lens.metrics["orders_count"].expression == "COUNT(DISTINCT id)"
    assert lens.models["orders"].dimensions[0].synonyms == ("state",)
    answers = {a.id: a for a in lens.answers.values()}
    status = {a.id: a.status for a in answers.values()}
    assert status == {
        "paid_revenue": "active",
        "customers": "draft",
        "bad_column": "draft",
        "orders_today": "active",
    }
    assert "neither a CTE nor a logical table" in answers["customers"].description
    assert "fails on the seeded data" in answers["bad_column"].description
    assert answers["paid_revenue"].provenance.certified_at == "2024-05-03"
    joined = "\n".join(report.unmapped)
    assert "answers/customers.yaml" in joined and "answers/bad_column.yaml" in joined
    assert "Comment dropped" in joined
    assert "cortex_search_service_name" in joined
    assert report.drafts == 2

    write_lens(tmp_path, "shop", files)
    con = seeded(seeds_of(lens, tmp_path / "lenses" / "shop"), tmp_path / "check")
    today = guard.pin_current_date(answers["orders_today"].sql, "2024-05-08", "duckdb")
    assert con.execute(today).fetchall() == [(2,)]
    assert con.execute(answers["paid_revenue"].sql).fetchall() == [(35.0,)]


def test_without_ddl_the_csv_header_names_the_columns_and_gaps_are_reported(
    tmp_path: Path,
) -> None:
    files, report = import_cortex(
        SMALL_MODEL.encode(), model_path="shop.yaml", lens="shop", data_dir=small_data(tmp_path)
    )
    assert files["seeds/raw_orders.csv"].startswith(b"id,day,amount,quantity,status,comment\n")
    assert any(
        line.startswith("seeds/raw_orders.csv: has no column amt, qty, st")
        for line in report.unmapped
    )


def test_a_csv_narrower_than_its_table_is_an_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "raw_orders.csv").write_text("id,day\n1,2024-05-08\n")
    with pytest.raises(InputError, match="has 2 columns, but table raw_orders declares 5"):
        import_cortex(
            SMALL_MODEL.encode(),
            model_path="shop.yaml",
            lens="shop",
            data_dir=data,
            ddl=[SMALL_DDL],
        )


def test_write_lens_refuses_an_existing_lens_unless_told_to_overwrite(tmp_path: Path) -> None:
    write_lens(tmp_path, "shop", {"lens.yaml": b"name: shop\n", "models/a.yaml": b"x: 1\n"})
    with pytest.raises(UsageError, match="already exists"):
        write_lens(tmp_path, "shop", {"lens.yaml": b"name: shop\n"})
    write_lens(tmp_path, "shop", {"lens.yaml": b"name: shop\n"}, overwrite=True)
    assert sorted(read_lens_dir(tmp_path / "lenses" / "shop")) == ["lens.yaml"]
    assert [p.name for p in (tmp_path / "lenses").iterdir()] == ["shop"]  # no leftovers
    with pytest.raises(UsageError, match="not a plain lens-relative path"):
        write_lens(tmp_path, "other", {"../escape.yaml": b""})
