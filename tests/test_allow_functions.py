"""A lens may allow-list functions the read-only guard otherwise denies (``allow_functions``)."""

from __future__ import annotations

from pathlib import Path

from reconciler.assets import asset_hashes
from reconciler.ids import AssetId
from reconciler.lens import load_lens
from tests.helpers import commit, invoke
from tests.shop import CUSTOMERS, LENS, ORDERS

# DuckDB's query_table() reads a table named by a string: read-only, but the guard denies
# it by default (it turns text into a table reference).
ANSWER = b"""\
id: order_rows
question: How many orders are there?
sql: SELECT COUNT(*) AS n FROM query_table('orders')
status: active
provenance: {certified_by: Test Author, certified_at: "2024-12-31"}
"""
SEEDS = {
    "lenses/shop/seeds/orders.csv": "order_id,customer_id,order_date,amount\n1,1,2024-01-02,10\n"
    "2,2,2024-02-03,20\n3,1,2024-03-04,30\n",
    "lenses/shop/seeds/customers.csv": "customer_id,segment\n1,SMB\n2,Enterprise\n",
}


def shop(repo: Path, lens_yaml: bytes) -> None:
    commit(
        repo,
        {
            "lenses/shop/lens.yaml": lens_yaml,
            "lenses/shop/models/orders.yaml": ORDERS,
            "lenses/shop/models/customers.yaml": CUSTOMERS,
            "lenses/shop/answers/order_rows.yaml": ANSWER,
            **SEEDS,
        },
        "shop lens",
    )


def test_a_denied_function_is_refused_at_load_naming_the_file_and_line(repo: Path) -> None:
    shop(repo, LENS)
    done = invoke(repo, "validate")
    assert done.code == 2
    assert "lenses/shop/answers/order_rows.yaml:3" in done.stderr
    assert "query_table()" in done.stderr


def test_an_allow_listed_function_loads_and_its_oracle_runs(repo: Path) -> None:
    shop(repo, LENS + b"allow_functions: [query_table]\n")
    assert invoke(repo, "validate").code == 0
    assert invoke(repo, "seed").code == 0
    applied = invoke(repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    (result,) = applied.lens("shop")["self_test"]
    assert result["answer"] == "order_rows"
    assert result["oracle_result"]["rows"] == [[3]]


def test_the_allow_list_allows_only_what_it_names(repo: Path) -> None:
    bad = ANSWER.replace(b"query_table('orders')", b"glob('*')")
    commit(
        repo,
        {
            "lenses/shop/lens.yaml": LENS + b"allow_functions: [query_table]\n",
            "lenses/shop/models/orders.yaml": ORDERS,
            "lenses/shop/models/customers.yaml": CUSTOMERS,
            "lenses/shop/answers/order_rows.yaml": bad,
        },
        "glob is still denied",
    )
    done = invoke(repo, "validate")
    assert done.code == 2 and "glob()" in done.stderr


def test_an_empty_allow_list_changes_no_hash() -> None:
    files = {"lens.yaml": LENS, "models/orders.yaml": ORDERS, "models/customers.yaml": CUSTOMERS}
    plain = asset_hashes(load_lens("shop", files))
    empty = asset_hashes(load_lens("shop", {**files, "lens.yaml": LENS + b"allow_functions: []\n"}))
    allowed = asset_hashes(
        load_lens("shop", {**files, "lens.yaml": LENS + b"allow_functions: [query_table]\n"})
    )
    lens_id = AssetId("lens/shop")
    assert plain == empty
    assert allowed[lens_id] != plain[lens_id]
    assert {k for k in plain if plain[k] != allowed[k]} == {lens_id}


def test_a_function_off_the_allow_list_is_refused_at_load_with_the_fix(repo: Path) -> None:
    # current_setting() is on no deny-list: only the allow-list refuses it
    off_list = ANSWER.replace(
        b"SELECT COUNT(*) AS n FROM query_table('orders')",
        b"SELECT COUNT(*) AS n FROM orders WHERE current_setting('threads') <> ''",
    )
    files = {
        "lenses/shop/models/orders.yaml": ORDERS,
        "lenses/shop/models/customers.yaml": CUSTOMERS,
        "lenses/shop/answers/order_rows.yaml": off_list,
        **SEEDS,
    }
    commit(repo, {"lenses/shop/lens.yaml": LENS, **files}, "a settings read")
    done = invoke(repo, "validate")
    assert done.code == 2
    assert "lenses/shop/answers/order_rows.yaml:3" in done.stderr
    assert "current_setting()" in done.stderr and "duckdb allow-list" in done.stderr
    assert "allow_functions:" in done.stderr
    allowed = LENS + b"allow_functions: [current_setting]\n"
    commit(repo, {"lenses/shop/lens.yaml": allowed}, "named in allow_functions")
    assert invoke(repo, "validate").code == 0
