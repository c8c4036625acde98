"""Seeds are per lens (DESIGN §2): a schema per lens, ``seeds_from``, explicit seeding.

Real temporary git repositories holding the example lenses, the real embedded DuckDB,
and a real PostgreSQL where one answers (skipped, with the reason, where none does).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import duckdb
import pygit2
import pytest

from reconciler.context import Runtime
from reconciler.warehouse.connection import Warehouse, embedded_path
from reconciler.warehouse.seed import SeedFile, seed
from tests import pg
from tests.helpers import CORPORA, commit, invoke

CATALOG = {
    "lenses/shop-catalog/lens.yaml": 'name: shop-catalog\nas_of: "2024-12-31"\n',
    "lenses/shop-catalog/models/products.yaml": (
        "name: products\ntable: products\nprimary_key: [sku]\n"
        "dimensions:\n  - name: shelf\nfacts:\n  - name: weight\n    data_type: number\n"
    ),
    "lenses/shop-catalog/metrics/item_count.yaml": (
        "name: item_count\nsynonyms: [items]\nmodel: products\nexpression: COUNT(*)\n"
    ),
    "lenses/shop-catalog/seeds/products.csv": "sku,shelf,weight\nA1,top,2.5\nA2,top,1\nB1,low,7\n",
    "lenses/shop-catalog/answers/item_count.yaml": (
        "id: item_count\nquestion: How many items are there?\n"
        "sql: SELECT COUNT(*) AS item_count FROM products\nstatus: active\n"
        'provenance:\n  certified_by: Ana Lima\n  certified_at: "2025-01-15"\n'
    ),
}
EXAMPLE_SCORES = {"sales": (21, 21), "finance": (19, 19)}


def _scores(report: dict[str, object]) -> dict[str, tuple[int, int]]:
    lenses = report["lenses"]
    assert isinstance(lenses, list)
    return {x["lens"]: (x["score"]["correct"], x["score"]["total"]) for x in lenses}


def _rows(path: Path) -> int:
    return len(list(csv.DictReader(io.StringIO(path.read_text()))))


def _line_of(path: Path, pattern: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if re.search(pattern, line))


def _without_seeds_from(repo: Path, lens: str, replacement: str = "") -> str:
    path = repo / "lenses" / lens / "lens.yaml"
    text = re.sub(r"(?m)^seeds_from:.*\n", replacement, path.read_text())
    return commit(repo, {f"lenses/{lens}/lens.yaml": text}, f"{lens}: seeds_from changed")


# ---------------------------------------------------------------- a schema per lens


def test_two_lenses_with_a_products_table_each_seed_apply_and_read_their_own(
    lens_repo: Path,
) -> None:
    commit(lens_repo, CATALOG, "a catalog lens with its own products table")
    seeded = invoke(lens_repo, "seed", "--format", "json")
    assert seeded.code == 0, seeded.stdout + seeded.stderr
    tables = seeded.json()["tables"]
    sales_products = _rows(lens_repo / "lenses/sales/seeds/products.csv")
    assert tables["shop-catalog.products"] == 3 and tables["sales.products"] == sales_products
    assert seeded.json()["schemas"] == ["finance", "sales", "shop-catalog"]

    applied = invoke(lens_repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    assert {x["lens"]: x["action"] for x in applied.json()["lenses"]} == dict.fromkeys(
        ("finance", "sales", "shop-catalog"), "promoted"
    )
    # sales's answers read products.category, which only sales's own table has; the
    # catalog lens's name is no plain identifier, so every use of it is quoted
    assert {
        k: v for k, v in _scores(applied.json()).items() if k != "shop-catalog"
    } == EXAMPLE_SCORES
    catalog = applied.lens("shop-catalog")
    assert [r["outcome"] for r in catalog["self_test"]] == ["correct"], catalog["self_test"]

    asked = invoke(lens_repo, "ask", "How many items are there?", "--lens", "shop-catalog",
                   "--format", "json")  # fmt: skip
    assert asked.code == 0, asked.stdout + asked.stderr
    assert asked.json()["rows"] == [[3]], "catalog's products, not sales's"
    with duckdb.connect(str(embedded_path(lens_repo)), read_only=True) as con:
        main = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchone()
    assert main == (0,), "lens seeds land in their lens's schema only"


def test_finance_reads_sales_tables_only_through_seeds_from(lens_repo: Path) -> None:
    finance_yaml = lens_repo / "lenses/finance/lens.yaml"
    assert re.search(r"(?m)^seeds_from: \[sales\]$", finance_yaml.read_text())
    _without_seeds_from(lens_repo, "finance")
    applied = invoke(lens_repo, "apply", "--lens", "finance", "--dry-run", "--format", "json")
    assert applied.code == 1, applied.stdout + applied.stderr
    finance = applied.lens("finance")
    assert finance["action"] == "blocked"
    errors = [r for r in [*finance["results"], *finance["self_test"]] if r["outcome"] == "error"]
    reads_sales = [r for r in errors if re.search(r"(orders|regions|products|customers)\b.*"
                                                  r"does not exist", r["detail"])]  # fmt: skip
    assert reads_sales, errors
    # budgets is finance's own seed: answers reading only it still run
    assert finance["score"]["correct"] >= 1


def test_an_unknown_lens_in_seeds_from_is_bad_input_at_its_line(lens_repo: Path) -> None:
    _without_seeds_from(lens_repo, "finance", "seeds_from: [sales, salse]\n")
    path = lens_repo / "lenses/finance/lens.yaml"
    line = _line_of(path, r"^seeds_from:")
    for args in (("plan",), ("apply", "--dry-run"), ("validate",)):
        done = invoke(lens_repo, *args)
        assert done.code == 2, (args, done.stdout + done.stderr)
        said = done.stdout + done.stderr
        assert f"lenses/finance/lens.yaml:{line}" in said, (args, said)
        assert "'salse'" in said and "not a lens of this repository" in said, said
        assert "sales" in said.split("lenses here:")[1], said


def test_seeds_from_naming_the_lens_itself_is_bad_input(lens_repo: Path) -> None:
    _without_seeds_from(lens_repo, "finance", "seeds_from: [finance]\n")
    done = invoke(lens_repo, "plan")
    assert done.code == 2, done.stdout + done.stderr
    assert "lenses/finance/lens.yaml" in done.stderr and "itself" in done.stderr, done.stderr


def test_a_flat_embedded_warehouse_asks_for_dst_seed(promoted_repo: Path) -> None:
    # The layout dst seed built before seeds were per lens: every table in main.
    flat = [
        SeedFile(None, p.stem, p.relative_to(promoted_repo).as_posix(), p.read_bytes())
        for p in sorted((promoted_repo / "lenses").glob("*/seeds/*.csv"))
    ]
    seed(promoted_repo, flat)
    for args in (("test", "sales"), ("ask", "What was net revenue in 2024?", "--lens", "finance")):
        done = invoke(promoted_repo, *args)
        assert done.code == 2, (args, done.stdout + done.stderr)
        assert "the embedded warehouse has no schema" in done.stderr, done.stderr
        assert "run `dst seed`" in done.stderr, done.stderr
    assert invoke(promoted_repo, "seed").code == 0
    again = invoke(promoted_repo, "test", "--all", "--format", "json")
    assert again.code == 0, again.stdout + again.stderr
    assert _scores(again.json()) == EXAMPLE_SCORES


def test_imported_cortex_model_seeds_beside_the_examples(lens_repo: Path) -> None:
    base = CORPORA / "cortex-analyst" / "revenue_timeseries"
    if not base.is_dir():
        pytest.skip(f"Cortex corpus not found at {base} (set DST_CORPORA to the corpora folder)")
    done = invoke(lens_repo, "import", "cortex", str(base / "revenue_timeseries.yaml"),
                  "--lens", "revenue", "--data", str(base / "data"))  # fmt: skip
    assert done.code == 0, done.stdout + done.stderr
    # The imported product table under the name the sales lens uses for its own.
    seeds = lens_repo / "lenses/revenue/seeds"
    product = next(p for p in sorted(seeds.glob("*.csv")) if p.stem.startswith("product"))
    (seeds / "products.csv").write_bytes(product.read_bytes())
    commit(lens_repo, {}, "import the revenue Cortex model")
    seeded = invoke(lens_repo, "seed", "--format", "json")
    assert seeded.code == 0, seeded.stdout + seeded.stderr
    tables = seeded.json()["tables"]
    assert tables["revenue.products"] == _rows(product)
    assert tables["sales.products"] == _rows(lens_repo / "lenses/sales/seeds/products.csv")
    applied = invoke(lens_repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    assert {x["action"] for x in applied.json()["lenses"]} == {"promoted"}
    assert {k: v for k, v in _scores(applied.json()).items() if k != "revenue"} == EXAMPLE_SCORES
    revenue = applied.lens("revenue")
    assert {r["outcome"] for r in revenue["self_test"]} <= {"correct", "wrong", "declined"}


def test_value_profiles_of_two_lenses_tables_of_one_name_are_kept_apart(lens_repo: Path) -> None:
    rt = Runtime(pygit2.Repository(str(lens_repo)), env={})
    url = f"duckdb:///{embedded_path(lens_repo).as_posix()}"
    sales, catalog, flat = (rt.profile_store(url, path) for path in (("sales",), ("c",), ()))
    assert sales is not None and catalog is not None and flat is not None
    keys = {store.key("products", "category", 200) for store in (sales, catalog, flat)}
    assert len(keys) == 3


# ---------------------------------------------------------------- explicit seeding


def test_init_with_a_warehouse_names_the_explicit_seed_step(repo: Path) -> None:
    url = "postgresql://analyst:${PGPASSWORD}@db.example.com:5432/analytics"
    done = invoke(repo, "init", "--lens", "shop", "--warehouse", url, "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    assert done.json()["next"][0] == f'dst seed --warehouse "{url}"'
    text = invoke(repo, "init", str(repo.parent / "other"), "--git", "--warehouse", url)
    assert text.code == 0, text.stdout + text.stderr
    assert f'dst seed --warehouse "{url}"' in text.stdout
    assert "already holds the tables" in text.stdout


def test_bare_seed_never_writes_a_configured_warehouse(repo: Path) -> None:
    url = "postgresql://analyst@db.example.com:5432/analytics"
    assert invoke(repo, "init", "--lens", "shop", "--warehouse", url).code == 0
    commit(repo, {}, "init")
    done = invoke(repo, "seed")
    assert done.code == 2, done.stdout + done.stderr
    assert url in done.stderr and "dst.yaml warehouse:" in done.stderr, done.stderr
    assert "dst seed --warehouse URL" in done.stderr and "Nothing was seeded" in done.stderr
    assert not embedded_path(repo).exists()
    # the same through DST_WAREHOUSE_URL, whatever dst.yaml says
    env = {"DST_WAREHOUSE_URL": "postgresql://other@db.example.com/x"}
    by_env = invoke(repo, "seed", env=env)
    assert by_env.code == 2 and "DST_WAREHOUSE_URL" in by_env.stderr, by_env.stderr
    assert not embedded_path(repo).exists()


def test_bare_seed_builds_the_embedded_warehouse_and_names_the_other(lens_repo: Path) -> None:
    elsewhere = "postgresql://analyst@db.example.com:5432/finance"
    path = lens_repo / "lenses/finance/lens.yaml"
    text = path.read_text().replace("row_cap: 1000\n", f"row_cap: 1000\nwarehouse: {elsewhere}\n")
    commit(lens_repo, {"lenses/finance/lens.yaml": text}, "finance reads its own warehouse")
    done = invoke(lens_repo, "seed", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    assert done.json()["not_seeded"] == [
        {"warehouse": elsewhere, "source": "lens warehouse:", "lenses": ["finance"]}
    ]
    assert "lens finance read" in done.stderr and "not seeded" in done.stderr, done.stderr
    assert "sales.orders" in done.json()["tables"]


# ---------------------------------------------------------------- PostgreSQL


def test_postgres_lens_schemas_and_the_superuser_refusal(lens_repo: Path) -> None:
    commit(lens_repo, CATALOG, "a catalog lens with its own products table")
    with pg.scratch_database("seeds_pg") as scratch:
        seeded = invoke(lens_repo, "seed", "--warehouse", scratch.owner_url, "--format", "json")
        assert seeded.code == 0, seeded.stdout + seeded.stderr
        assert seeded.json()["schemas"] == ["finance", "sales", "shop-catalog"]
        owner = pg.engine(scratch.owner_url)
        with owner.begin() as conn:
            pg.grant_reader(conn, scratch.reader)
        owner.dispose()
        applied = invoke(
            lens_repo, "apply", "--lens", "shop-catalog", "--warehouse", scratch.reader_url
        )
        assert applied.code == 0, applied.stdout + applied.stderr
        question = (
            "ask",
            "How many items are there?",
            "--lens",
            "shop-catalog",
            "--format",
            "json",
        )
        as_reader = invoke(lens_repo, *question, "--warehouse", scratch.reader_url)
        as_owner = invoke(lens_repo, *question, "--warehouse", scratch.owner_url)
        with Warehouse.open(scratch.reader_url) as wh:
            assert {"shop-catalog", "finance", "sales", "public"} <= wh.schemas()
            assert wh.warnings == () and wh.write_access == ()
            # the lens path goes before the session's own, for this transaction only
            # (current_setting reads a setting: off the allow-list unless named)
            setting = ("current_setting",)
            shown = wh.execute("SELECT current_setting('search_path')", row_cap=1, timeout_s=10,
                               search_path=["shop-catalog"], allow_functions=setting)  # fmt: skip
            plain = wh.execute("SELECT current_setting('search_path')", row_cap=1, timeout_s=10,
                               allow_functions=setting)  # fmt: skip
    assert as_reader.code == 0, as_reader.stdout + as_reader.stderr
    assert as_reader.json()["rows"] == [[3]]
    assert "superuser" not in as_reader.stderr + applied.stderr
    # A superuser login is refused for answer SQL (tests/test_privilege.py has the rest).
    assert as_owner.code == 2, as_owner.stdout + as_owner.stderr
    assert "superuser (rolsuper)" in as_owner.stderr and "read-only role" in as_owner.stderr
    assert shown.rows[0][0].startswith('"shop-catalog", ') and "public" in shown.rows[0][0]
    assert not plain.rows[0][0].startswith('"shop-catalog"')
