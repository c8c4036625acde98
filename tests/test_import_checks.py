"""What an import checks against the data it is given, and `dst validate --warehouse`.

Tables no seed creates, non-unique primary keys (dropped with the joins through
them), oracles that return no rows or depend on the current date. Every expected
figure is computed here from the CSVs with DuckDB, never written down.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
import yaml

from reconciler import guard
from reconciler.interop.importers import ImportReport, ProblemKind, write_lens
from reconciler.interop.importers.cortex import import_cortex
from reconciler.lens import RELATIVE_DATE_RE, Lens, load_lens
from reconciler.warehouse.seed import run_on_seeds
from tests import pg
from tests.helpers import CORPORA, invoke
from tests.helpers.interop import read_lens_dir, seeded

CORTEX = CORPORA / "cortex-analyst"
# (folder, model file, data folder)
CORPUS = [
    ("revenue_timeseries", "revenue_timeseries.yaml", "data"),
    ("revenue_timeseries", "variant_sf-samples_native_app_revenue_timeseries.yaml", "data"),
    ("sfdc_sales", "sfdc_sales.yaml", "sample_data"),
]
_COPY = re.compile(r"COPY\s+INTO\s+([\w.]+)", re.IGNORECASE)
_CLOCK = ("CURRENT_DATE", "CURRENT_TIMESTAMP", "GETDATE(", "NOW(", "SYSDATE")


def corpus(folder: str) -> Path:
    path = CORTEX / folder
    if not path.is_dir():
        pytest.skip(f"Cortex corpus not found at {CORTEX} (set DST_CORPORA to run these tests)")
    return path


def answers_of(report: ImportReport, kind: ProblemKind) -> set[str]:
    return {a for p in report.problems_of(kind) for a in p.answers}


def loaded_tables(source: Path, data: Path) -> set[str]:
    """Tables the folder's load scripts fill from a CSV that exists, and the CSVs' own names."""
    filled = {p.stem.lower() for p in data.glob("*.csv")}
    for script in source.glob("*.sql"):
        for statement in script.read_text().split(";"):
            match = _COPY.search(statement)
            if match and any(p.name in statement for p in data.glob("*.csv")):
                filled.add(match.group(1).split(".")[-1].lower())
    return filled


def key_counts(con: duckdb.DuckDBPyConnection, table: str, columns: list[str]) -> tuple[int, int]:
    """(distinct non-NULL key values, rows) of ``table``."""
    where = " AND ".join(f"{c} IS NOT NULL" for c in columns)
    distinct = con.execute(
        f"SELECT COUNT(*) FROM (SELECT DISTINCT {', '.join(columns)} FROM {table} WHERE {where})"
    ).fetchone()
    rows = con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    assert distinct is not None and rows is not None
    return int(distinct[0]), int(rows[0])


@pytest.mark.parametrize(("folder", "model_file", "data"), CORPUS)
def test_corpus_import_reports_what_the_data_shows(
    tmp_path: Path, folder: str, model_file: str, data: str
) -> None:
    source = corpus(folder)
    model_bytes = (source / model_file).read_bytes()
    files, report = import_cortex(
        model_bytes,
        model_path=model_file,
        lens="imported",
        data_dir=source / data,
        ddl=[p.read_bytes() for p in sorted(source.glob("*.sql"))],
        run_oracles=run_on_seeds,
    )
    write_lens(tmp_path, "imported", files)
    root = tmp_path / "lenses" / "imported"
    lens = load_lens("imported", read_lens_dir(root))
    con = seeded({t: (root / rel).read_bytes() for t, rel in lens.seeds.items()}, tmp_path / "db")
    raw = yaml.safe_load(model_bytes)

    # tables: every model's table a seed creates, or reported by model and table
    filled = loaded_tables(source, source / data)
    expected_missing = {
        (t["name"].lower(), t["base_table"]["table"].lower())
        for t in raw["tables"]
        if t["base_table"]["table"].lower() not in filled
    }
    missing = report.problems_of(ProblemKind.TABLE_NOT_HELD)
    assert {(p.model, p.table) for p in missing} == expected_missing
    assert all(m.table in lens.seeds for m in lens.models.values() if m.name not in
               {p.model for p in missing})  # fmt: skip

    # keys: a declared key with duplicates is reported with its counts and not written
    expected_bad: dict[str, tuple[int, int]] = {}
    for table in raw["tables"]:
        model, physical = table["name"].lower(), table["base_table"]["table"].lower()
        columns = [c.lower() for c in (table.get("primary_key") or {}).get("columns", [])]
        if columns and physical in lens.seeds:
            distinct, rows = key_counts(con, physical, columns)
            if distinct < rows:
                expected_bad[model] = (distinct, rows)
    bad = report.problems_of(ProblemKind.NON_UNIQUE_KEY)
    assert {p.model for p in bad} == set(expected_bad)
    for problem in bad:
        distinct, rows = expected_bad[problem.model or ""]
        assert f"{distinct} distinct values over {rows} rows" in problem.message
        assert lens.models[problem.model or ""].primary_key == ()
    for model in lens.models.values():  # no join through a bad key as its one side
        assert all(j.to not in expected_bad for j in model.joins), model.name
    assert {p.model for p in report.problems_of(ProblemKind.JOIN_DROPPED)} == {
        r["left_table"].lower()
        for r in raw.get("relationships") or []
        if r["right_table"].lower() in expected_bad
    }

    # oracles: empty ones (at the pinned as_of) and relative-dated ones, by id
    empty = set()
    for answer in lens.active_answers():
        sql = answer.sql
        if lens.config.as_of:
            sql = guard.pin_current_date(sql, lens.config.as_of, "duckdb")
        if not con.execute(sql).fetchall():
            empty.add(answer.id)
    assert answers_of(report, ProblemKind.EMPTY_ORACLE) == empty
    by_name = {a.description.split("'")[1]: a.id for a in lens.answers.values()}
    relative = {
        by_name[q["name"]]
        for q in raw.get("verified_queries") or []
        if any(c in q["sql"].upper() for c in _CLOCK) or RELATIVE_DATE_RE.search(q["question"])
    }
    assert answers_of(report, ProblemKind.RELATIVE_DATE) == relative
    assert (lens.config.as_of is not None) == bool(relative)
    drafts = {a.id for a in lens.answers.values() if a.status == "draft"}
    assert report.drafts == len(drafts)
    assert answers_of(report, ProblemKind.ORACLE_THROUGH_NON_UNIQUE_KEY) <= drafts


# --- a hand-written model -----------------------------------------------------------

CLICKS_MODEL = """\
name: ads
tables:
  - name: events
    base_table: {database: ads, schema: web, table: WEB_EVENTS}
    primary_key: {columns: [event_id]}
    dimensions:
      - {name: event_id, expr: event_id, data_type: NUMBER}
      - {name: campaign_id, expr: campaign_id, data_type: NUMBER}
      - {name: channel, expr: channel, data_type: TEXT}
    time_dimensions:
      - {name: day, expr: day, data_type: DATE}
    measures:
      - name: clicks
        expr: clicks
        synonyms: [click count, taps]
        default_aggregation: sum
        data_type: NUMBER
  - name: campaigns
    base_table: {database: ads, schema: web, table: CAMPAIGNS}
    primary_key: {columns: [campaign_id]}
    dimensions:
      - {name: campaign_id, expr: campaign_id, data_type: NUMBER}
      - {name: campaign_name, expr: campaign_name, data_type: TEXT}
  - name: budgets
    base_table: {database: ads, schema: web, table: BUDGETS}
    dimensions:
      - {name: campaign_id, expr: campaign_id, data_type: NUMBER}
relationships:
  - name: events_to_campaigns
    left_table: events
    right_table: campaigns
    relationship_columns: [{left_column: campaign_id, right_column: campaign_id}]
    relationship_type: many_to_one
verified_queries:
  - name: total clicks
    question: What are the total clicks?
    sql: SELECT SUM(clicks) AS clicks FROM __events
    verified_at: 1714752498
    verified_by: ana
  - name: fax clicks
    question: How many clicks came by fax?
    sql: SELECT SUM(clicks) AS clicks FROM __events WHERE channel = 'fax' GROUP BY channel
    verified_at: 1714752498
    verified_by: ana
  - name: recent clicks
    question: How many clicks in the past week?
    sql: SELECT SUM(clicks) AS clicks FROM __events WHERE day >= DATEADD(day, -7, CURRENT_DATE)
    verified_at: 1714752498
    verified_by: ana
  - name: clicks by campaign
    question: What are the clicks by campaign name?
    sql: >-
      SELECT c.campaign_name, SUM(e.clicks) AS clicks FROM __events AS e
      JOIN __campaigns AS c ON e.campaign_id = c.campaign_id GROUP BY c.campaign_name
    verified_at: 1714752498
    verified_by: ana
"""

EVENTS = [  # event_id, campaign_id, channel, day, clicks
    (1, 10, "web", "2024-05-01", 3),
    (2, 10, "mail", "2024-05-03", 5),
    (3, 20, "web", "2024-05-06", 7),
    (4, 20, "web", "2024-05-09", 11),
]
CAMPAIGNS = [(10, "spring"), (10, "spring-relaunch"), (20, "summer")]  # 10 is there twice


def clicks_data(folder: Path) -> Path:
    folder.mkdir()
    # named after what it is, not after the WEB_EVENTS table; its header holds every column
    (folder / "clicks_log.csv").write_text(
        "event_id,campaign_id,channel,day,clicks\n"
        + "".join(",".join(map(str, row)) + "\n" for row in EVENTS)
    )
    (folder / "campaigns.csv").write_text(
        "campaign_id,campaign_name\n" + "".join(f"{a},{b}\n" for a, b in CAMPAIGNS)
    )
    return folder


def import_clicks(tmp_path: Path) -> tuple[Lens, ImportReport, Path]:
    files, report = import_cortex(
        CLICKS_MODEL.encode(),
        model_path="ads.yaml",
        lens="ads",
        data_dir=clicks_data(tmp_path / "data"),
        run_oracles=run_on_seeds,
    )
    write_lens(tmp_path, "ads", files)
    return load_lens("ads", files), report, tmp_path / "lenses" / "ads"


def test_small_model_reports_each_problem_and_writes_no_join_through_the_bad_key(
    tmp_path: Path,
) -> None:
    lens, report, root = import_clicks(tmp_path)
    con = seeded({t: (root / rel).read_bytes() for t, rel in lens.seeds.items()}, tmp_path / "db")

    # clicks_log.csv fills WEB_EVENTS (matched by its columns); no CSV fills BUDGETS
    assert lens.seeds.keys() == {"web_events", "campaigns"}
    missing = report.problems_of(ProblemKind.TABLE_NOT_HELD)
    assert [(p.model, p.table) for p in missing] == [("budgets", "budgets")]
    assert "models/budgets.yaml reads table budgets" in missing[0].message

    distinct, rows = key_counts(con, "campaigns", ["campaign_id"])
    assert distinct < rows
    (bad,) = report.problems_of(ProblemKind.NON_UNIQUE_KEY)
    assert (bad.model, bad.table) == ("campaigns", "campaigns")
    assert (
        f"primary key campaign_id of model campaigns has {distinct} distinct values over "
        f"{rows} rows" in bad.message
    )
    assert lens.models["campaigns"].primary_key == ()
    assert lens.models["events"].primary_key == ("event_id",)  # unique: kept
    assert lens.models["events"].joins == ()
    (dropped,) = report.problems_of(ProblemKind.JOIN_DROPPED)
    assert dropped.model == "events" and "campaigns" in dropped.message

    # the oracle joining through the bad key fans out, so it is a draft, reported by id
    fanned = con.execute(lens.answers["clicks_by_campaign"].sql).fetchall()
    assert sum(r[1] for r in fanned) > sum(e[4] for e in EVENTS)
    assert answers_of(report, ProblemKind.ORACLE_THROUGH_NON_UNIQUE_KEY) == {"clicks_by_campaign"}
    assert lens.answers["clicks_by_campaign"].status == "draft"

    assert not [e for e in EVENTS if e[2] == "fax"]
    assert answers_of(report, ProblemKind.EMPTY_ORACLE) == {"fax_clicks"}
    assert answers_of(report, ProblemKind.RELATIVE_DATE) == {"recent_clicks"}
    assert lens.config.as_of == report.as_of == max(e[3] for e in EVENTS)
    (relative,) = report.problems_of(ProblemKind.RELATIVE_DATE)
    assert f"as_of {lens.config.as_of}, the latest day in the data (web_events.day)" in (
        relative.message
    )
    assert lens.answers["recent_clicks"].status == "active"

    # "total clicks" finds a metric named after the measure, with Cortex's synonyms
    clicks = lens.metrics["clicks"]
    assert (clicks.label, clicks.synonyms, clicks.expression) == (
        "clicks",
        ("click count", "taps"),
        "SUM(clicks)",
    )


def test_without_a_runner_keys_are_kept_and_the_check_is_noted(tmp_path: Path) -> None:
    files, report = import_cortex(
        CLICKS_MODEL.encode(),
        model_path="ads.yaml",
        lens="ads",
        data_dir=clicks_data(tmp_path / "data"),
    )
    lens = load_lens("ads", files)
    assert lens.models["campaigns"].primary_key == ("campaign_id",)
    assert any("declared keys not checked" in note for note in report.notes)
    assert not report.problems_of(ProblemKind.NON_UNIQUE_KEY)


def test_cli_import_prints_and_records_the_problems(repo: Path, tmp_path: Path) -> None:
    model = tmp_path / "ads.yaml"
    model.write_text(CLICKS_MODEL)
    data = str(clicks_data(tmp_path / "data"))
    text = invoke(repo, "import", "cortex", str(model), "--lens", "ads", "--data", data)
    assert text.code == 0, text.stderr
    assert "problem (non_unique_key): primary key campaign_id of model campaigns" in text.stdout
    assert "problem (table_not_held): models/budgets.yaml reads table budgets" in text.stdout
    args = ("import", "cortex", str(model), "--lens", "ads", "--data", data, "--overwrite")
    done = invoke(repo, *args, "--format", "json")
    assert done.code == 0, done.stderr
    kinds = {p["kind"]: p for p in done.json()["problems"]}
    assert kinds["table_not_held"]["model"] == "budgets"
    assert kinds["empty_oracle"]["answers"] == ["fax_clicks"]
    assert kinds["relative_date"]["answers"] == ["recent_clicks"]


def test_validate_with_a_warehouse_flags_a_non_unique_key_at_its_line(
    repo: Path, tmp_path: Path
) -> None:
    files, _ = import_cortex(
        CLICKS_MODEL.encode(), model_path="ads.yaml", lens="ads", data_dir=None
    )
    write_lens(repo, "ads", files)  # no data: the declared keys are written as declared
    db = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE web_events (event_id INT, campaign_id INT, channel TEXT, day DATE)")
    con.execute("CREATE TABLE campaigns (campaign_id INT, campaign_name TEXT)")
    con.executemany("INSERT INTO campaigns VALUES (?, ?)", CAMPAIGNS)
    con.close()
    url = f"duckdb:///{db}"

    done = invoke(repo, "validate", "--warehouse", url, "lenses/ads", "--format", "json")
    assert done.code == 2
    (check,) = done.json()["lenses"]
    assert check["valid"] is False and check["error"] is None
    lines = (repo / "lenses/ads/models/campaigns.yaml").read_text().splitlines()
    key_line = lines.index("primary_key:") + 2  # 1-based line of its first column
    distinct = len({c[0] for c in CAMPAIGNS})
    by_path = {e["path"]: e for e in check["data_errors"]}
    error = by_path["lenses/ads/models/campaigns.yaml"]
    assert error["line"] == key_line
    assert f"has {distinct} distinct values over {len(CAMPAIGNS)} rows" in error["message"]
    assert f"lenses/ads/models/campaigns.yaml:{key_line}: primary key campaign_id" in done.stderr
    # web_events is empty, so its key holds; no budgets table: an error at its table line
    assert sorted(by_path) == ["lenses/ads/models/budgets.yaml", "lenses/ads/models/campaigns.yaml"]
    budgets = by_path["lenses/ads/models/budgets.yaml"]
    lines = (repo / "lenses/ads/models/budgets.yaml").read_text().splitlines()
    assert budgets["line"] == lines.index("table: budgets") + 1
    assert "table budgets of model budgets cannot be read" in budgets["message"]

    plain = invoke(repo, "validate", "lenses/ads")
    assert plain.code == 0, plain.stderr  # without a warehouse, nothing reads the data


def test_validate_checks_keys_on_postgresql_too(repo: Path) -> None:
    files, _ = import_cortex(
        CLICKS_MODEL.encode(), model_path="ads.yaml", lens="ads", data_dir=None
    )
    write_lens(repo, "ads", files)
    with pg.scratch_database("importers_keys") as scratch:
        setup = pg.engine(scratch.owner_url)
        with setup.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE web_events (event_id INT, campaign_id INT)")
            conn.exec_driver_sql("INSERT INTO web_events VALUES (1, 10), (2, 20)")
            conn.exec_driver_sql("CREATE TABLE campaigns (campaign_id INT, campaign_name TEXT)")
            for campaign_id, name in CAMPAIGNS:
                conn.exec_driver_sql(f"INSERT INTO campaigns VALUES ({campaign_id}, '{name}')")
            pg.grant_reader(conn, scratch.reader)
        setup.dispose()
        done = invoke(repo, "validate", "--warehouse", scratch.reader_url, "--format", "json")
    assert done.code == 2, done.stderr
    (check,) = done.json()["lenses"]
    errors = {e["path"]: e["message"] for e in check["data_errors"]}
    assert sorted(errors) == ["lenses/ads/models/budgets.yaml", "lenses/ads/models/campaigns.yaml"]
    distinct = len({c[0] for c in CAMPAIGNS})
    assert (
        f"{distinct} distinct values over {len(CAMPAIGNS)} rows"
        in errors["lenses/ads/models/campaigns.yaml"]
    )
    assert scratch.reader_url.split("@")[0] not in done.stdout + done.stderr  # no credentials


SHOP_MODEL = """\
name: shop
tables:
  - name: orders
    base_table: {database: db, schema: s, table: RAW_ORDERS}
    primary_key: {columns: [order_id]}
    dimensions:
      - {name: order_id, expr: id, data_type: NUMBER}
      - {name: status, expr: st, data_type: TEXT}
    measures:
      - {name: amount, expr: amt, data_type: NUMBER, default_aggregation: sum}
"""
SHOP_DDL = b"CREATE TABLE RAW_ORDERS (ID INT, AMT FLOAT, ST TEXT);"
SHOP_LOAD = b"""-- the export lands in RAW_ORDERS
COPY INTO db.s.RAW_ORDERS FROM @stage FILES = ('export_2024.csv') FILE_FORMAT = (SKIP_HEADER=1);
"""


def test_a_load_script_names_the_table_a_differently_named_csv_fills(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # a header that names nothing the DDL declares: only the COPY INTO says where it goes
    (data / "export_2024.csv").write_text("A,B,C\n1,2.5,paid\n2,4.0,open\n")
    files, report = import_cortex(
        SHOP_MODEL.encode(),
        model_path="shop.yaml",
        lens="shop",
        data_dir=data,
        ddl=[SHOP_DDL, SHOP_LOAD],
        run_oracles=run_on_seeds,
    )
    assert report.seeds == {"raw_orders": 2}
    assert files["seeds/raw_orders.csv"].decode().splitlines()[0] == "id,amt,st"
    assert not report.problems
    assert any("export_2024.csv fills table raw_orders" in note for note in report.notes)
