"""How the guard reads a called name: U& escapes, quoting, case folding, the refusal it gives."""

from __future__ import annotations

import pytest

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from reconciler.guard.denied import check_escapes
from reconciler.guard.names import decode_unicode_escapes, fold


@pytest.mark.parametrize(
    ("body", "escape", "decoded"),
    [
        ("pg_read_\\0066ile", "\\", "pg_read_file"),
        ("d\\0061t\\+000061", "\\", "data"),
        ("dbl!0069nk_exec", "!", "dblink_exec"),
        ("a!!b", "!", "a!b"),
        ("plain", "\\", "plain"),
    ],
)
def test_unicode_escapes_decode_as_postgresql_does(body: str, escape: str, decoded: str) -> None:
    assert decode_unicode_escapes(body, escape) == decoded


@pytest.mark.parametrize(("body", "escape"), [("x\\00zz", "\\"), ("x", "+"), ("x", "a")])
def test_bad_unicode_escapes_are_refused(body: str, escape: str) -> None:
    with pytest.raises(UnsafeSqlError):
        decode_unicode_escapes(body, escape)


def test_the_escape_refusal_names_the_decoded_function() -> None:
    with pytest.raises(UnsafeSqlError, match="pg_read_file"):
        guard.check_read_only("SELECT U&\"pg_read_\\0066ile\"('/etc/passwd')", "postgres")
    # sqlglot cannot parse UESCAPE after a name (the query is refused as unparsable);
    # the escape check alone still reads it
    uescape = "SELECT U&\"dbl!0069nk_exec\" UESCAPE '!' ('x', 'y')"
    with pytest.raises(UnsafeSqlError):
        guard.check_read_only(uescape, "postgres")
    with pytest.raises(UnsafeSqlError, match="dblink_exec"):
        check_escapes(uescape, "postgres")


@pytest.mark.parametrize(
    ("written", "dialect", "name"),
    [
        ("NOW", "postgres", "now"),
        ('"Lower"', "postgres", "Lower"),
        ('"a""b"', "postgres", 'a"b'),
        ('"LOWER"', "duckdb", "lower"),
        ("`Sleep`", "mysql", "sleep"),
    ],
)
def test_names_fold_as_the_warehouse_folds_them(written: str, dialect: str, name: str) -> None:
    assert fold(written, dialect) == name


def test_a_refusal_names_the_function_and_the_fix() -> None:
    with pytest.raises(UnsafeSqlError) as refused:
        guard.check_read_only("SELECT my_udf(id) FROM orders", "duckdb")
    assert "my_udf()" in refused.value.message and "duckdb allow-list" in refused.value.message
    assert refused.value.fix is not None and "allow_functions:" in refused.value.fix
    with pytest.raises(UnsafeSqlError, match=r'"Lower"\(\).*keeps its case'):
        guard.check_read_only('SELECT "Lower"(name) FROM t', "postgres")


def test_allow_functions_admits_a_function_off_the_list() -> None:
    sql = "SELECT my_udf(id) FROM orders"
    assert guard.check_read_only(sql, "postgres", allow_functions=["my_udf"])
    assert guard.parse_expression("my_udf(amount)", "duckdb", allow_functions=["my_udf"])
    with pytest.raises(UnsafeSqlError, match="my_udf"):
        guard.parse_expression("sum(my_udf(amount))", "duckdb")


def test_a_dialect_without_a_list_keeps_the_deny_list() -> None:
    assert guard.check_read_only("SELECT my_udf(id) FROM orders", "snowflake")
    with pytest.raises(UnsafeSqlError, match="read_csv"):
        guard.check_read_only("SELECT * FROM read_csv('x')", "snowflake")
