"""`dst import dbt`: MetricFlow manifests and legacy dbt metrics become lenses.

The corpus tests read ``metricflow/`` and ``jaffle-shop-metrics/`` from the shared
corpora (``$DST_CORPORA``) and skip when they are absent; the mapped counts are
checked against counts taken here, independently, from the source YAML.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from reconciler.errors import LensLoadError
from reconciler.interop.importers import ProblemKind
from reconciler.interop.importers.dbt import import_dbt
from reconciler.interop.importers.dbt_source import collect
from reconciler.lens import load_lens
from reconciler.reading.compile import render
from reconciler.reading.ir import Measure, Plan
from reconciler.schemas import kind_of, schema_comment
from reconciler.warehouse.seed import run_on_seeds
from tests.helpers import CORPORA, invoke
from tests.helpers.interop import read_lens_dir, seeded

MANIFESTS = CORPORA / "metricflow" / "semantic_manifest_yamls"
SNAPSHOTS = CORPORA / "metricflow" / "source_table_snapshots"
JAFFLE = CORPORA / "jaffle-shop-metrics"
# manifest folder -> the source-table snapshot folder MetricFlow's tests load for it
MANIFEST_DATA = {
    "simple_manifest": "simple_model",
    "multi_hop_join_manifest": "multi_hop_join_model",
    "scd_manifest": "simple_model",
    "sg_00_minimal_manifest": None,
    "sg_02_single_join": None,
    "sg_05_derived_metric": None,
}


def need(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(f"corpus folder {path.name} not found under {CORPORA} (set DST_CORPORA)")
    return path


def documents(folder: Path) -> list[dict[str, Any]]:
    """Every YAML document below ``folder``, read with plain PyYAML."""
    docs: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return docs


def not_imported(unmapped: tuple[str, ...], kind: str) -> Counter[str]:
    """How many times each ``kind[name]`` is reported as not imported / no exemplar written."""
    found: Counter[str] = Counter()
    for line in unmapped:
        match = re.match(rf"{kind}\[(\w+)\]: .*(not imported|no exemplar written)$", line)
        if match:
            found[match.group(1)] += 1
    return found


def seeded_warehouse(repo: Path, lens: str) -> duckdb.DuckDBPyConnection:
    """The seeded embedded warehouse, searching ``lens``'s schema first as dst does."""
    done = invoke(repo, "seed", "--format", "json")
    assert done.code == 0, done.stderr
    con = duckdb.connect(done.json()["warehouse"], read_only=True)
    con.execute(f"SET search_path = '\"{lens}\",main'")
    return con


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in con.execute(sql).fetchall())


@pytest.mark.parametrize("manifest", sorted(MANIFEST_DATA))
def test_metricflow_manifest_counts_match_the_source(tmp_path: Path, manifest: str) -> None:
    source = need(MANIFESTS) / manifest
    data = MANIFEST_DATA[manifest]
    sources, data_files, name = collect(source, SNAPSHOTS / data if data else None)
    files, report = import_dbt(sources, source_name=name, lens="mf", data=data_files)
    lens = load_lens("mf", files)

    docs = documents(source)
    models = [d["semantic_model"] for d in docs if "semantic_model" in d]
    metrics = {d["metric"]["name"]: d["metric"] for d in docs if "metric" in d}
    saved = [d["saved_query"]["name"] for d in docs if "saved_query" in d]
    measures = {m["name"]: m for sm in models for m in sm.get("measures") or ()}
    created = {n for n, m in measures.items() if m.get("create_metric") and n not in metrics}

    assert report.models == len(lens.models) == len(models)
    assert {m.table for m in lens.models.values()} == {
        sm["node_relation"]["alias"] for sm in models
    }
    lost = not_imported(report.unmapped, "metrics")
    assert all(count == 1 for count in lost.values())
    # every source metric is in the lens or reported once, never both, never neither
    assert set(lens.metrics) | set(lost) == set(metrics) | created
    assert not set(lens.metrics) & set(lost)
    assert report.metrics == len(lens.metrics) == len(metrics) + len(created) - len(lost)
    types = {n: str(m["type"]).lower() for n, m in metrics.items()}
    assert {n for n, t in types.items() if t in ("cumulative", "conversion")} <= set(lost)
    plain = {
        n
        for n, m in metrics.items()
        if types[n] == "simple"
        and "filter" not in m
        and not measures[_measure_name(m)].get("non_additive_dimension")
    }
    assert plain <= set(lens.metrics)
    lost_queries = not_imported(report.unmapped, "saved_queries")
    assert report.exemplars == len(lens.exemplars) == len(saved) - len(lost_queries)
    assert set(lens.exemplars) | set(lost_queries) == set(saved)
    assert report.answers == 0 and not lens.answers  # dbt certifies nothing
    if data:
        tables = {m.table for m in lens.models.values()}
        snapshot_tables = {p.stem for p in (SNAPSHOTS / data).glob("*.yaml")}
        assert set(report.seeds) == tables & snapshot_tables
        for table, count in report.seeds.items():
            snap = yaml.safe_load((SNAPSHOTS / data / f"{table}.yaml").read_text())
            assert count == len(snap["table_snapshot"]["rows"])


def _measure_name(metric: dict[str, Any]) -> str:
    ref = metric["type_params"]["measure"]
    return str(ref["name"] if isinstance(ref, dict) else ref)


def test_simple_manifest_lens_validates_seeds_and_every_metric_runs(repo: Path) -> None:
    source = need(MANIFESTS) / "simple_manifest"
    done = invoke(
        repo,
        "import", "dbt", str(source), "--lens", "mf",
        "--data", str(SNAPSHOTS / "simple_model"), "--format", "json",
    )  # fmt: skip
    assert done.code == 0, done.stderr
    report = done.json()
    assert report["command"] == "import dbt" and report["models"] == 12
    lens_dir = repo / "lenses" / "mf"
    for path in lens_dir.rglob("*.yaml"):
        rel = path.relative_to(lens_dir).as_posix()
        kind = kind_of(rel)
        assert kind is not None
        assert path.read_text().startswith(schema_comment(kind, rel)), rel
    valid = invoke(repo, "validate", "lenses/mf")
    assert valid.code == 0, valid.stderr
    lens = load_lens("mf", read_lens_dir(lens_dir))
    con = seeded_warehouse(repo, "mf")
    for name in lens.metrics:  # the fast tier's own SQL for each metric runs on the data
        sql = render(lens, Plan(Measure.of_metric(lens, name)))
        assert len(con.execute(sql).fetchall()) == 1, name

    # the lux filter reaches through the listing entity into listings_latest
    lux = lens.metrics["lux_listings"]
    assert lux.model == "listings_latest" and lux.filters == ("is_lux",)
    ratio = lens.metrics["bookings_per_booker"]
    assert ratio.expression == (
        "CAST((SUM(1)) AS DOUBLE) / CAST(NULLIF(COUNT(DISTINCT guest_id), 0) AS DOUBLE)"
    )
    got = con.execute(render(lens, Plan(Measure.of_metric(lens, "bookings_per_booker")))).fetchone()
    expected = con.execute("SELECT COUNT(*) / COUNT(DISTINCT guest_id) FROM fct_bookings")
    assert got == pytest.approx(expected.fetchone())

    # saved query p0_booking → exemplar; its SQL equals a hand-written query on the tables
    exemplar = lens.exemplars["p0_booking"]
    hand = """
        SELECT DATE_TRUNC('day', b.ds), l.capacity, COUNT(*), SUM(CAST(b.is_instant AS INT))
        FROM fct_bookings b JOIN dim_listings_latest l ON b.listing_id = l.listing_id
        WHERE l.capacity > 3 GROUP BY 1, 2
    """
    assert rows(con, exemplar.sql) == rows(con, hand)


def test_legacy_jaffle_metrics_map_onto_the_documented_model(repo: Path) -> None:
    project = need(JAFFLE)
    done = invoke(repo, "import", "dbt", str(project), "--lens", "jaffle", "--format", "json")
    assert done.code == 0, done.stderr
    report = done.json()
    lens = load_lens("jaffle", read_lens_dir(repo / "lenses" / "jaffle"))

    metrics: list[dict[str, Any]] = []
    models: list[str] = []
    for path in sorted((project / "models").rglob("*.yml")):
        doc = yaml.safe_load(path.read_text())
        metrics += doc.get("metrics") or []
        models += [m["name"] for m in doc.get("models") or []]
    read = {m["model"].split("'")[1] for m in metrics if "model" in m}
    assert report["metrics"] == len(lens.metrics) == len(metrics)
    assert report["models"] == len(lens.models) == len(read)
    unread = set(models) - read
    assert {u for u in unread if any(f"models[{u}]: " in line for line in report["unmapped"])} == (
        unread
    )
    profit = lens.metrics["profit"]
    assert profit.expression == "(SUM(amount)) - (SUM(amount / 4))"
    assert profit.filters == ("status = 'completed'",)
    orders = lens.models["orders"]
    assert orders.default_time_dimension == "order_date"
    status = next(c for c in orders.dimensions if c.name == "status")
    assert status.sample_values == ("placed", "shipped", "completed", "return_pending", "returned")
    assert any("customer_id]: the column is documented twice" in x for x in report["unmapped"])
    # dbt seeds are the raw tables dbt transforms; no lens model reads them
    assert report["seeds"] == {}
    not_held = [p for p in report["problems"] if p["kind"] == "table_not_held"]
    assert [(p["model"], p["table"]) for p in not_held] == [
        (name, lens.models[name].table) for name in sorted(lens.models)
    ]
    assert invoke(repo, "validate", "lenses/jaffle").code == 0


FOLDED = """\
semantic_model:
  name: sales
  node_relation: {alias: raw_sales}
  defaults: {agg_time_dimension: day}
  primary_entity: sale
  dimensions:
    - {name: day, type: time, type_params: {time_granularity: day}}
    - {name: channel, type: categorical}
  measures:
    - {name: revenue, agg: sum, expr: amount}
---
metric:
  name: web_share
  type: ratio
  type_params:
    numerator: {name: revenue, filter: "{{ Dimension('sale__channel') }} = 'web'"}
    denominator: revenue
---
metric:
  name: revenue
  type: simple
  type_params: {measure: revenue}
"""


def test_ratio_inputs_with_different_filters_fold_into_their_aggregates() -> None:
    files, _ = import_dbt({"m.yaml": FOLDED.encode()}, source_name="m.yaml", lens="s")
    lens = load_lens("s", files)
    share = lens.metrics["web_share"]
    assert share.filters == ()
    con = duckdb.connect()
    con.execute("CREATE TABLE raw_sales (day DATE, channel VARCHAR, amount DOUBLE)")
    con.execute(
        "INSERT INTO raw_sales VALUES ('2024-01-01','web',30), ('2024-01-01','shop',50),"
        " ('2024-01-02','web',20)"
    )
    got = con.execute(render(lens, Plan(Measure.of_metric(lens, "web_share")))).fetchone()
    assert got == pytest.approx((50 / 100,))


def test_bad_input_is_exit_2_with_file_and_line(repo: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("metric:\n  name: ok\n  type: simple\n---\nsemantic_model:\n  description: x\n")
    with pytest.raises(LensLoadError, match=r"bad.yaml:6"):
        import_dbt({"bad.yaml": bad.read_bytes()}, source_name="bad.yaml", lens="x")
    done = invoke(repo, "import", "dbt", str(bad), "--lens", "x")
    assert done.code == 2 and "bad.yaml:6" in done.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("semantic_models:\n  - name: a\n    measures: [\n")
    done = invoke(repo, "import", "dbt", str(broken), "--lens", "x", "--format", "json")
    assert done.code == 2 and "broken.yaml:" in done.json()["error"]["message"]
    assert not (repo / "lenses" / "x").exists()


def test_an_existing_lens_is_kept_unless_overwrite(repo: Path, tmp_path: Path) -> None:
    source = tmp_path / "m.yaml"
    source.write_text(FOLDED)
    assert invoke(repo, "import", "dbt", str(source), "--lens", "s").code == 0
    again = invoke(repo, "import", "dbt", str(source), "--lens", "s")
    assert again.code == 2 and "already exists" in again.stderr
    replaced = invoke(repo, "import", "dbt", str(source), "--lens", "s", "--format", "json")
    assert replaced.code == 2
    ok = invoke(
        repo, "import", "dbt", str(source), "--lens", "s", "--overwrite", "--format", "json"
    )
    assert ok.code == 0 and json.loads(ok.stdout)["metrics"] == 2


# --- checks against the data -------------------------------------------------------


@pytest.mark.parametrize("manifest", sorted(m for m, d in MANIFEST_DATA.items() if d))
def test_metricflow_primary_keys_are_checked_against_the_snapshots(
    tmp_path: Path, manifest: str
) -> None:
    data = MANIFEST_DATA[manifest]
    assert data is not None
    sources, data_files, name = collect(need(MANIFESTS) / manifest, SNAPSHOTS / data)
    files, report = import_dbt(
        sources, source_name=name, lens="mf", data=data_files, run_oracles=run_on_seeds
    )
    lens = load_lens("mf", files)
    declared = import_dbt(sources, source_name=name, lens="mf", data=data_files)[0]
    before = load_lens("mf", declared)  # no runner: every key as the manifest declares it
    con = seeded({t: files[f"seeds/{t}.csv"] for t in report.seeds}, tmp_path / "db")
    bad = set()
    for model in before.models.values():
        if model.primary_key and model.table in report.seeds:
            (key,) = model.primary_key
            counts = con.execute(
                f"SELECT COUNT(*), COUNT(DISTINCT {key}) FROM {model.table}"
            ).fetchone()
            assert counts is not None
            if counts[1] < counts[0]:
                bad.add(model.name)
    assert {p.model for p in report.problems_of(ProblemKind.NON_UNIQUE_KEY)} == bad
    for model in lens.models.values():
        declared_key = before.models[model.name].primary_key
        assert model.primary_key == (() if model.name in bad else declared_key)
        assert all(j.to not in bad for j in model.joins if j.relationship == "many_to_one")
    held = {p.model for p in report.problems_of(ProblemKind.TABLE_NOT_HELD)}
    assert held == {m.name for m in lens.models.values() if m.table not in report.seeds}


SHOP = """\
semantic_models:
  - name: orders
    node_relation: {alias: raw_orders}
    entities:
      - {name: order, type: primary, expr: order_id}
      - {name: customer, type: foreign, expr: customer_id}
    measures:
      - {name: amount, agg: sum}
  - name: customers
    node_relation: {alias: raw_customers}
    entities:
      - {name: customer, type: primary, expr: customer_id}
    dimensions:
      - {name: region, type: categorical}
  - name: refunds
    node_relation: {alias: raw_refunds}
    entities:
      - {name: refund, type: primary, expr: refund_id}
    measures:
      - {name: refunded, agg: sum}
"""


def test_dbt_seeds_show_a_non_unique_entity_and_a_table_no_seed_fills() -> None:
    data = {
        "raw_orders.csv": b"order_id,customer_id,amount\n1,7,10\n2,7,20\n3,8,5\n",
        # customer 7 is there twice: every order of 7 would count twice through the join
        "raw_customers.csv": b"customer_id,region\n7,north\n7,south\n8,east\n",
    }
    files, report = import_dbt(
        {"m.yaml": SHOP.encode()},
        source_name="m.yaml",
        lens="shop",
        data=data,
        run_oracles=run_on_seeds,
    )
    lens = load_lens("shop", files)
    con = duckdb.connect()
    con.execute("CREATE TABLE c (id INT, region TEXT)")
    con.execute("INSERT INTO c VALUES (7, 'north'), (7, 'south'), (8, 'east')")
    counts = con.execute("SELECT COUNT(DISTINCT id), COUNT(*) FROM c").fetchone()
    assert counts is not None
    (bad,) = report.problems_of(ProblemKind.NON_UNIQUE_KEY)
    assert bad.model == "customers"
    assert f"{counts[0]} distinct values over {counts[1]} rows" in bad.message
    assert lens.models["customers"].primary_key == ()
    assert lens.models["orders"].primary_key == ("order_id",)
    assert lens.models["orders"].joins == ()
    (dropped,) = report.problems_of(ProblemKind.JOIN_DROPPED)
    assert dropped.model == "orders"
    (missing,) = report.problems_of(ProblemKind.TABLE_NOT_HELD)
    assert (missing.model, missing.table) == ("refunds", "raw_refunds")
