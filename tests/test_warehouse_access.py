"""The SQLAlchemy-free entry to the warehouse answers exactly as the SQLAlchemy one.

``reconciler.warehouse.access`` reads plain ``duckdb:///path`` URLs itself and hands
every other URL to ``reconciler.warehouse.connection``; both must agree on every URL.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from reconciler.errors import UsageError, WarehouseError
from reconciler.warehouse import access, connection
from reconciler.warehouse.duck import DuckWarehouse, plain_file

URLS = [
    "duckdb:////srv/repo/.dst/warehouse.duckdb",
    "duckdb:///.dst/warehouse.duckdb",
    "duckdb:////srv/my-repo_2/~x/other.v1.duckdb",
    "duckdb:///:memory:",
    "duckdb:////srv/a:b/w.duckdb",
    "duckdb:////srv/a b+c/w.duckdb",
    "duckdb:////srv/repo/.dst/warehouse.duckdb?threads=2",
    "duckdb:///my%20file.duckdb",
    "postgresql://analyst:s3cret@db:5432/sales",
    "postgresql://analyst@db/sales?sslpassword=x",
    "sqlite:////srv/repo/.dst/warehouse.duckdb",
]


@pytest.mark.parametrize("url", URLS)
def test_redact_and_is_embedded_agree_with_sqlalchemy(url: str) -> None:
    assert access.redact(url) == connection.redact(url)
    assert access.is_embedded(url) == connection.is_embedded(url)


def test_only_plain_duckdb_urls_skip_the_url_parser() -> None:
    plain = [u for u in URLS if plain_file(u) is not None]
    assert plain == URLS[:3]
    assert plain_file("duckdb:///") is None


@pytest.mark.parametrize(
    ("cli", "env", "lens", "repo"),
    [
        (None, {}, None, None),
        ("", {"DST_WAREHOUSE_URL": " "}, None, ""),
        ("duckdb:///cli.db", {}, None, None),
        (None, {"DST_WAREHOUSE_URL": "duckdb:///env.db"}, None, None),
        (None, {}, "duckdb:///data/l.duckdb", None),
        (None, {}, None, "duckdb:///r.db"),
    ],
)
def test_resolve_url_agrees_with_sqlalchemy(
    tmp_path: Path, cli: str | None, env: dict[str, str], lens: str | None, repo: str | None
) -> None:
    expected = connection.resolve_url(cli, env, lens, repo, tmp_path)
    assert access.resolve_url(cli, env, lens, repo, tmp_path) == expected


def test_resolve_url_passes_a_bad_url_to_sqlalchemy_for_its_message(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a SQLAlchemy URL"):
        access.resolve_url("not a url", {}, None, None, tmp_path)


def test_open_warehouse_reads_a_plain_duckdb_file_directly(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="does not exist") as info:
        access.open_warehouse(f"duckdb:///{(tmp_path / 'missing.duckdb').as_posix()}")
    assert "dst seed" in str(info.value.fix)
    path = tmp_path / "w.duckdb"
    DuckWarehouse(":memory:", "duckdb:///:memory:").close()  # an in-memory one opens too
    duckdb.connect(str(path)).close()
    with access.open_warehouse(f"duckdb:///{path.as_posix()}") as wh:
        assert isinstance(wh, DuckWarehouse)
        rows = wh.execute("SELECT 42 AS x", row_cap=5, timeout_s=10).rows
        assert rows == ((42,),)
        with pytest.raises(WarehouseError, match="read-only"):
            wh._execute_raw("CREATE TABLE t (a INTEGER)", row_cap=1, timeout_s=10)
    with access.open_warehouse("sqlite:///:memory:") as other:
        assert not isinstance(other, DuckWarehouse)
