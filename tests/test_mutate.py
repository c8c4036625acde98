"""dst mutate: semantic mutants are real changes, formatting-only edits change no hash,
the gate's verdicts come from a scratch clone, and the user's refs stay as they were."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest
import sqlglot
from sqlglot import exp

from reconciler.assets import lens_assets, normalize_sql, oracle_hash
from reconciler.lens import Lens, load_lens
from reconciler.mutation.formatting import (
    FORMATTING_KINDS,
    formatting_edits,
    recase_sql,
    rewrap_sql,
)
from reconciler.mutation.operators import OPERATORS, Edit, semantic_mutants
from tests.helpers import EXAMPLE_LENSES, commit, git, invoke
from tests.shop import CUSTOMERS, LENS, ORDERS

PROVENANCE = 'provenance:\n  certified_by: Test Author\n  certified_at: "2025-01-01"\n'
SHOP: dict[str, bytes] = {
    "lens.yaml": LENS,
    "models/orders.yaml": ORDERS + b"primary_key: [order_id]\n",
    "models/customers.yaml": CUSTOMERS + b"primary_key: [customer_id]\n",
    "metrics/revenue.yaml": b"""\
name: revenue
description: >-
  Paid order amounts, in USD;
  refunds are left out.
synonyms: ["sales"]
model: orders
expression: SUM(amount)
filters:
  - status = 'paid'
""",
    "exemplars/revenue_by_month.yaml": b"""\
name: revenue_by_month
question: Revenue by month in 2023
sql: |
  SELECT CAST(DATE_TRUNC('month', o.order_date) AS DATE) AS month, SUM(o.amount) AS revenue
  FROM orders AS o
  JOIN customers AS c ON o.customer_id = c.customer_id
  WHERE o.status = 'paid'
    AND o.order_date >= DATE '2023-01-01'
    AND o.order_date < DATE '2024-01-01'
  GROUP BY 1
  ORDER BY 1
""",
    "answers/revenue_2024.yaml": b"""\
id: revenue_2024
question: What was total revenue in 2024?
sql: |
  SELECT SUM(amount) AS revenue
  FROM orders
  WHERE status = 'paid'
    AND order_date >= DATE '2024-01-01'
    AND order_date < DATE '2025-01-01'
"""
    + PROVENANCE.encode(),
    "answers/revenue_by_segment.yaml": b"""\
id: revenue_by_segment
question: Revenue by segment
sql: |
  SELECT c.segment, SUM(o.amount) AS revenue
  FROM orders AS o
  JOIN customers AS c ON c.customer_id = o.customer_id
  WHERE o.status = 'paid'
  GROUP BY c.segment
"""
    + PROVENANCE.encode(),
}


def _seeds() -> dict[str, bytes]:
    rows = ["order_id,customer_id,order_date,amount,status"]
    for i in range(1, 25):
        day = datetime.date(2023 + i % 2, 1 + i % 12, 1 + (i * 7) % 28)
        status = "paid" if i % 5 else "refunded"
        rows.append(f"{i},{1 + i % 3},{day},{10 * i + i % 4},{status}")
    return {
        "seeds/orders.csv": ("\n".join(rows) + "\n").encode(),
        "seeds/customers.csv": b"customer_id,segment\n1,Consumer\n2,SMB\n3,Enterprise\n",
    }


def _shop() -> tuple[Lens, dict[str, bytes]]:
    return load_lens("shop", SHOP), dict(SHOP)


def _apply(files: dict[str, bytes], edit: Edit) -> Lens:
    return load_lens("shop", {**files, edit.path: edit.content})


def _sql_of(lens: Lens, edit: Edit) -> str:
    kind, name = edit.asset.split("/", 1)
    if kind == "metrics":
        metric = lens.metrics[name]
        where = " AND ".join(f"({f})" for f in metric.filters)
        return f"SELECT {metric.expression} FROM t" + (f" WHERE {where}" if where else "")
    if kind == "exemplars":
        return lens.exemplars[name].sql
    model = lens.models[name]
    return " ; ".join(f"{c.name}={c.sql}" for c in model.columns()) + f" joins={model.joins}"


def _count(node_type: type[exp.Expression]) -> Callable[[str], int]:
    return lambda sql: len(list(sqlglot.parse_one(sql, read="duckdb").find_all(node_type)))


def _conditions(sql: str) -> int:
    where = sqlglot.parse_one(sql, read="duckdb").args.get("where")
    return 0 if where is None else len(list(where.this.flatten()))


def _grain(sql: str) -> str:
    return sqlglot.parse_one(sql, read="duckdb").find(exp.TimestampTrunc).args["unit"].name


# operator: (an asset it must reach, a measure of that asset's SQL every mutant changes)
OPERATOR_CHECKS: dict[str, tuple[str, Callable[[str], object]]] = {
    "aggregation": ("metrics/revenue", _count(exp.Sum)),
    "drop_filter": ("exemplars/revenue_by_month", _conditions),
    "negate_filter": ("exemplars/revenue_by_month", _count(exp.Not)),
    "swap_join_key": ("models/orders", lambda text: text),
    "time_grain": ("exemplars/revenue_by_month", _grain),
    "scale": ("metrics/revenue", _count(exp.Mul)),
    "swap_column": ("models/customers", lambda text: text),
}


def test_every_operator_is_checked() -> None:
    assert set(OPERATOR_CHECKS) == set(OPERATORS)


@pytest.mark.parametrize("operator", OPERATORS)
def test_each_operator_changes_exactly_one_asset_by_its_canonical_form(operator: str) -> None:
    files = dict(SHOP)
    # A second dimension gives the customers model a sibling to swap to.
    files["models/customers.yaml"] = SHOP["models/customers.yaml"].replace(
        b"  - name: segment\n", b"  - name: segment\n  - name: country\n"
    )
    lens = load_lens("shop", files)
    before = lens_assets(lens)
    dialect = lens.config.dialect
    mutants = [m for m in semantic_mutants(lens, files) if m.operator == operator]
    target, measure = OPERATOR_CHECKS[operator]
    assert any(m.asset == target for m in mutants), [m.change for m in mutants]
    for m in mutants:
        mutated = _apply(files, m)
        after = lens_assets(mutated)
        assert {a for a in before if before[a].hash != after[a].hash} == {m.asset}, m.change
        old_sql, new_sql = _sql_of(lens, m), _sql_of(mutated, m)
        if not m.asset.startswith("models/"):
            assert normalize_sql(old_sql, dialect) != normalize_sql(new_sql, dialect), m.change
        if m.asset == target:
            assert measure(old_sql) != measure(new_sql), m.change


def test_aggregation_covers_count_distinct_and_the_round_robin_limit() -> None:
    files = dict(SHOP)
    files["metrics/orders.yaml"] = (
        b"name: order_count\nmodel: orders\nexpression: COUNT(DISTINCT x)\n"
    )
    lens = load_lens("shop", files)
    changes = [m.change for m in semantic_mutants(lens, files) if m.operator == "aggregation"]
    assert "expression: COUNT(DISTINCT x) → COUNT(x)" in changes
    assert "expression: SUM(amount) → AVG(amount)" in changes
    capped = [m for m in semantic_mutants(lens, files, limit=2) if m.operator == "aggregation"]
    # the cap spreads over assets: one mutant of each metric before a second of either
    assert [m.asset for m in capped] == ["metrics/order_count", "metrics/revenue"]
    assert semantic_mutants(lens, files) == semantic_mutants(lens, files)


def test_drop_filter_removes_a_metric_filter() -> None:
    lens, files = _shop()
    dropped = [
        m
        for m in semantic_mutants(lens, files)
        if m.operator == "drop_filter" and m.asset == "metrics/revenue"
    ]
    assert [_apply(files, m).metrics["revenue"].filters for m in dropped] == [()]


def _all_lenses() -> list[tuple[str, dict[str, bytes]]]:
    out = [("shop", dict(SHOP))]
    for name in ("sales", "finance"):
        root = EXAMPLE_LENSES / name
        if root.is_dir():
            files = {
                p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*"))
                if p.is_file()
            }
            out.append((name, files))
    return out


@pytest.mark.parametrize(
    ("name", "files"), _all_lenses(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_formatting_only_edits_change_no_asset_hash_and_no_oracle(
    name: str, files: dict[str, bytes]
) -> None:
    lens = load_lens(name, files)
    assets = lens_assets(lens)
    dialect = lens.config.dialect
    oracles = {a: oracle_hash(ans, dialect) for a, ans in lens.answers.items()}
    # Every edit of the small lens; a few per kind of the example lenses (dst mutate
    # itself covers all of theirs, in test_mutate_example_lenses…).
    edits = formatting_edits(lens, files, limit=None if name == "shop" else 3)
    assert {e.operator for e in edits} == set(FORMATTING_KINDS)
    for e in edits:
        assert e.content != files[e.path]
        edited = load_lens(name, {**files, e.path: e.content})
        assert lens_assets(edited) == assets, (e.operator, e.path)
        assert {a: oracle_hash(x, dialect) for a, x in edited.answers.items()} == oracles
        assert edited.answers == lens.answers or e.path.startswith("answers/")


def test_recase_and_rewrap_touch_only_keywords_and_whitespace() -> None:
    sql = "select date, \"Mixed\" from t where note = 'a  AND  b' group by 1"
    recased = recase_sql(sql, "duckdb")
    assert recased == "SELECT date, \"Mixed\" FROM t WHERE note = 'a  AND  b' GROUP BY 1"
    wrapped = rewrap_sql(sql, "duckdb")
    assert "\n" in wrapped and "'a  AND  b'" in wrapped
    assert normalize_sql(wrapped, "duckdb") == normalize_sql(sql, "duckdb")
    assert rewrap_sql(wrapped, "duckdb") == " ".join(wrapped.split()).replace(
        "'a AND b'", "'a  AND  b'"
    )


# --- end to end: the real CLI on a seeded repository -------------------------------


@pytest.fixture
def shop_repo(repo: Path) -> Path:
    files = {f"lenses/shop/{k}": v for k, v in {**SHOP, **_seeds()}.items()}
    commit(repo, files, "shop lens")
    return repo


def _refs(path: Path) -> dict[str, str]:
    r = pygit2.Repository(str(path))
    return {name: str(r.references[name].target) for name in r.references}


def test_mutate_reports_score_blocks_metric_mutants_and_leaves_refs_alone(
    shop_repo: Path, tmp_path: Path
) -> None:
    assert invoke(shop_repo, "seed").code == 0
    applied = invoke(shop_repo, "apply")
    assert applied.code == 0, applied.stdout + applied.stderr
    refs_before, head_before = _refs(shop_repo), git(shop_repo, "rev-parse", "HEAD")
    assert "refs/dst/serving/shop" in refs_before
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = invoke(shop_repo, "mutate", "shop", "--format", "json", env={"TMPDIR": str(scratch)})
    assert done.code == 0, done.stdout + done.stderr
    report = done.json()
    assert report["schema_version"] == 1 and report["command"] == "mutate"
    (lens,) = report["lenses"]
    score, fmt = lens["mutation_score"], lens["formatting_false_stale"]
    assert fmt["total"] > 0 and fmt["false_stale"] == 0 and fmt["share"] == 0.0
    blocked = [m for m in lens["mutants"] if m["outcome"] == "blocked"]
    survived = [m for m in lens["mutants"] if m["outcome"] == "survived"]
    assert score["blocked"] == len(blocked) and score["total"] == len(blocked) + len(survived)
    assert score["share"] == round(len(blocked) / score["total"], 4)
    assert lens["survivors"] == survived
    # a metric that sums instead of averaging is caught by both answers that use it
    avg = next(m for m in lens["mutants"] if m["change"] == "expression: SUM(amount) → AVG(amount)")
    assert avg["outcome"] == "blocked"
    assert avg["failing"] == ["revenue_2024", "revenue_by_segment"]
    # the exemplar feeds no certified answer: its mutants survive, and say why
    ex = [m for m in survived if m["asset"] == "exemplars/revenue_by_month"]
    assert ex and all(m["detail"] == "no certified answer goes stale" for m in ex)
    assert {"aggregation", "scale"} <= set(lens["operators"])
    kinds = lens["asset_kinds"]
    assert sum(k["total"] for k in kinds.values()) == score["total"]
    assert kinds["exemplars"]["blocked"] == 0 and kinds["metrics"]["blocked"] >= 1
    assert lens["timing"]["per_mutant_mean_s"] > 0
    # nothing of the scratch clone is left, and the user's refs and HEAD are as they were
    assert _refs(shop_repo) == refs_before
    assert git(shop_repo, "rev-parse", "HEAD") == head_before
    assert git(shop_repo, "status", "--porcelain") == ""
    assert list(scratch.iterdir()) == []


def test_mutate_needs_a_seeded_warehouse(shop_repo: Path) -> None:
    done = invoke(shop_repo, "mutate", "shop")
    assert done.code == 2, done.stdout + done.stderr
    assert "dst seed" in done.stderr
    unknown = invoke(shop_repo, "mutate", "nope", "--format", "json")
    assert unknown.code == 2
    assert unknown.json()["error"]["type"] == "UsageError"


def test_mutate_example_lenses_prints_score_and_no_formatting_false_stale(
    lens_repo: Path,
) -> None:
    refs_before = _refs(lens_repo)
    text = invoke(lens_repo, "mutate", "sales", "--limit", "1")
    assert text.code == 0, text.stdout + text.stderr
    assert "mutation score: " in text.stdout
    assert "formatting false-stale: 0.0% (0/" in text.stdout
    done = invoke(lens_repo, "mutate", "finance", "--limit", "1", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    (lens,) = done.json()["lenses"]
    assert lens["formatting_false_stale"]["false_stale"] == 0
    assert lens["formatting_false_stale"]["total"] == len(FORMATTING_KINDS)
    assert lens["mutation_score"]["total"] > 0
    assert _refs(lens_repo) == refs_before


REVENUE_2023 = b"""\
name: revenue_2023
question: What was total revenue in 2023?
sql: |
  SELECT SUM(amount) AS revenue
  FROM orders
  WHERE status = 'paid'
    AND order_date >= DATE '2023-01-01'
    AND order_date < DATE '2024-01-01'
"""


def test_an_adapted_exemplar_is_guarded_and_survivors_are_classed(repo: Path) -> None:
    """An exemplar one year away from a certified question is adapted for it, so its
    meaning changes reach the gate; every survivor says which kind it is."""
    files = {f"lenses/shop/{k}": v for k, v in {**SHOP, **_seeds()}.items()}
    files["lenses/shop/exemplars/revenue_2023.yaml"] = REVENUE_2023
    commit(repo, files, "shop lens with an exemplar one year away from an answer")
    assert invoke(repo, "seed").code == 0
    done = invoke(repo, "mutate", "shop", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    (lens,) = done.json()["lenses"]
    mine = [m for m in lens["mutants"] if m["asset"] == "exemplars/revenue_2023"]
    # a change the adapted SQL carries fails the answer; one that hides the slot (a
    # period bound dropped) makes the fast tier decline an answer it reproduced before
    assert len(mine) == 10 and all(m["outcome"] == "blocked" for m in mine), mine
    assert all(m["failing"] == ["revenue_2024"] for m in mine)
    score = lens["mutation_score"]
    survivors = lens["survivors"]
    assert all(m["survivor"] in ("untested", "unread", "equivalent") for m in survivors)
    assert sum(score[k] for k in ("untested", "unread", "equivalent")) == len(survivors)
    assert all(m["stale"] == [] for m in survivors if m["survivor"] == "untested")
    assert score["stale_score"]["total"] == score["blocked"] + score["unread"]
