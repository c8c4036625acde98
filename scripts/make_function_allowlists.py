"""Write the read-only guard's function allow-lists, one file per dialect.

Each list names the functions a certified or generated query may call on that
warehouse: pure scalar, aggregate and window functions, and the few table
functions that read only the warehouse's own tables. The lists are data
(``reconciler/guard/allowed/<dialect>.txt``); this script is where they are
reviewed: every exclusion is a rule below, never a hand edit of the output.

Sources:

* DuckDB: ``duckdb_functions()`` of an in-memory database of the installed
  ``duckdb`` package (with its autoloaded ``icu`` and ``json`` extensions);
* PostgreSQL: ``pg_proc`` in schema ``pg_catalog`` on the server named by
  ``--postgres-url`` (default: a local server as user ``postgres``), immutable and
  stable functions;
* SQLite: ``PRAGMA function_list`` of the Python ``sqlite3`` module's library;
* MySQL / MariaDB: :data:`MYSQL_FUNCTIONS`, the names in the MySQL 8 and MariaDB
  10.11 manuals' function references, less the rules below.

Every list also names the SQL syntax forms that are written like calls but are
parsed by the engine, not looked up in its catalogue (``CAST(…)``, ``COALESCE(…)``
…), from :data:`SYNTAX`.

Usage::

    python scripts/make_function_allowlists.py [--postgres-url URL] [--only DIALECT …]

Exit status: 0 when every requested list was written; 1 when a source was not
reachable (the other lists are still written).
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from collections.abc import Iterable
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "reconciler" / "guard" / "allowed"
NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

# --- rules shared by every dialect ---------------------------------------------------------
# Substrings of a name that say it reads files, URLs, settings, secrets or extensions, runs
# SQL text, sleeps, locks, or changes state.
EXCLUDED_PARTS = (
    "file", "glob", "read_", "write", "csv", "parquet", "setting", "secret", "extension",
    "sleep", "_lock", "serialize", "execute", "checkpoint", "logging", "profiling", "getenv",
    "variable", "nextval", "currval", "setval", "lastval", "privilege", "replication",
    "_slot", "dblink", "query", "cursor", "xmlschema", "backup", "wal_", "_wal", "promote",
    "terminate", "cancel", "signal", "reload", "rotate", "notify", "load_",
    "password", "encrypt", "decrypt", "sys_exec", "sys_eval", "benchmark", "master_",
    "source_pos", "gtid", "wait", "stats", "log_", "_log", "validat", "fmgr_", "txid_",
)  # fmt: skip

# --- SQL forms written like calls that the parser itself handles ---------------------------
_STANDARD_SYNTAX = (
    "cast", "try_cast", "case", "coalesce", "nullif", "greatest", "least", "extract",
    "position", "substring", "overlay", "trim", "exists", "array", "row", "interval",
    "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp",
    "current_user", "session_user", "current_role", "user", "current_catalog",
    "current_schema", "grouping", "filter", "collate",
)  # fmt: skip
SYNTAX: dict[str, tuple[str, ...]] = {
    "duckdb": (*_STANDARD_SYNTAX, "struct", "list", "map", "columns", "if", "ifnull", "lambda"),
    "postgres": (
        *_STANDARD_SYNTAX, "xmlelement", "xmlforest", "xmlconcat", "xmlparse", "xmlpi",
        "xmlroot", "xmlserialize", "xmlexists", "xmlattributes", "json_object", "json_array",
        "json_objectagg", "json_arrayagg", "json", "json_scalar", "json_serialize", "is_json",
        "normalize", "date", "time", "timestamp", "any", "some", "all",
    ),
    "sqlite": (*_STANDARD_SYNTAX, "raise", "iif"),
    "mysql": (*_STANDARD_SYNTAX, "if", "char", "convert", "values", "match", "weight_string"),
}  # fmt: skip

# --- DuckDB --------------------------------------------------------------------------------
# Volatile functions that only draw random numbers are fine; every other side effect is not.
DUCKDB_RANDOM = frozenset({"random", "uuid", "uuidv4", "uuidv7", "gen_random_uuid"})
# Table functions that generate rows from their arguments; every other table function reads
# files, catalogues, settings, logs, or a table named in a string.
DUCKDB_TABLE_FUNCTIONS = frozenset(
    {"range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree"}
)
# Scalar helpers that read the session, the catalogue or the host rather than the data.
DUCKDB_EXCLUDED = frozenset({
    "current_query", "current_query_id", "current_connection_id", "current_transaction_id",
    "error", "stats", "vector_type", "setseed", "write_log", "assert_true", "get_block_size",
    "pg_conf_load_time", "pg_postmaster_start_time", "inet_client_addr", "inet_client_port",
    "inet_server_addr", "inet_server_port", "in_search_path", "current_schemas",
    "current_setting", "getvariable", "pg_sleep", "sleep_ms", "histogram",
    "histogram_values", "summary", "icu_calendar_names", "pg_timezone_names",
})  # fmt: skip


def duckdb_functions() -> list[str]:
    """DuckDB's allow-list: its catalogue, less the rules above."""
    import duckdb

    con = duckdb.connect()
    rows = con.execute(
        "SELECT function_name, coalesce(alias_of, function_name), function_type,"
        " coalesce(has_side_effects, false), coalesce(stability, '')"
        " FROM duckdb_functions() WHERE database_name = 'system'"
    ).fetchall()
    con.close()
    kept: set[str] = set()
    for name, base, kind, side_effects, stability in rows:
        names = (name.lower(), base.lower())
        if kind in ("table", "table_macro"):
            if not all(n in DUCKDB_TABLE_FUNCTIONS for n in names):
                continue
        elif kind not in ("scalar", "aggregate", "window", "macro"):
            continue  # pragma functions
        if (side_effects or stability == "VOLATILE") and not all(n in DUCKDB_RANDOM for n in names):
            continue
        # an alias of an operator (abs of @, add of +) is judged by its own name
        judged = names if NAME.match(names[1]) else names[:1]
        if any(_excluded(n) or n in DUCKDB_EXCLUDED for n in judged):
            continue
        if any(n.startswith(("duckdb_", "pg_")) and n not in POSTGRES_PG_PURE for n in judged):
            continue  # catalogue and PostgreSQL-compatibility helpers
        kept.add(names[0])
    return sorted(kept)


# --- PostgreSQL ----------------------------------------------------------------------------
# Volatile functions that only draw random numbers or read the clock (the guard pins clock
# reads to a lens's as_of).
POSTGRES_VOLATILE_OK = frozenset(
    {"random", "random_normal", "gen_random_uuid", "clock_timestamp", "timeofday"}
)
# Set-returning functions that generate rows from their arguments.
POSTGRES_SET_RETURNING = frozenset({
    "generate_series", "generate_subscripts", "unnest", "regexp_matches",
    "regexp_split_to_table", "string_to_table", "json_each", "json_each_text",
    "jsonb_each", "jsonb_each_text", "json_array_elements", "json_array_elements_text",
    "jsonb_array_elements", "jsonb_array_elements_text", "json_object_keys",
    "jsonb_object_keys", "json_populate_recordset", "jsonb_populate_recordset",
    "json_to_recordset", "jsonb_to_recordset",
})  # fmt: skip
# The few pg_* functions that are pure helpers over a value.
POSTGRES_PG_PURE = frozenset({"pg_typeof", "pg_column_size", "pg_size_pretty", "pg_size_bytes"})
POSTGRES_EXCLUDED_PREFIXES = ("pg_", "lo_", "binary_upgrade_", "txid_", "brin_", "gin_")
# Functions that run SQL text or read a relation named in a string, read the session, or
# touch large objects.
POSTGRES_EXCLUDED = frozenset({
    "set_config", "current_setting", "ts_stat", "ts_rewrite", "loread", "lowrite",
    "query_to_xml", "table_to_xml", "schema_to_xml", "database_to_xml", "cursor_to_xml",
    "inet_client_addr", "inet_client_port", "inet_server_addr", "inet_server_port",
    "current_query", "version", "now_setting", "satisfies_hash_partition",
    "has_any_column_privilege", "row_security_active", "to_regclass", "to_regproc",
    "to_regprocedure", "to_regoper", "to_regoperator", "to_regtype", "to_regrole",
    "to_regnamespace", "to_regcollation", "to_regtypemod", "obj_description",
    "col_description", "shobj_description", "format_type", "acldefault", "aclexplode",
    "makeaclitem", "aclitemin", "aclitemout", "age_xid", "mxid_age", "xid_current",
    "gen_random_bytes", "current_schemas", "inet_client", "unique_key_recheck",
})  # fmt: skip
# Types that mark internal support functions (type I/O, planner support, handlers, triggers).
_PG_INTERNAL_TYPES = (
    "'internal'::regtype, 'cstring'::regtype, 'trigger'::regtype, 'event_trigger'::regtype,"
    " 'language_handler'::regtype, 'fdw_handler'::regtype, 'index_am_handler'::regtype,"
    " 'table_am_handler'::regtype, 'tsm_handler'::regtype"
)
_PG_QUERY = f"""
SELECT DISTINCT p.proname, p.provolatile, p.proretset
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'pg_catalog' AND p.prokind IN ('f', 'a', 'w')
  AND p.prorettype NOT IN ({_PG_INTERNAL_TYPES})
  AND NOT (p.proargtypes::oid[] && ARRAY[{_PG_INTERNAL_TYPES}]::oid[])
"""


def postgres_functions(url: str) -> list[str]:
    """PostgreSQL's allow-list: ``pg_catalog``'s functions, less the rules above."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(_PG_QUERY).fetchall()
    engine.dispose()
    kept: set[str] = set()
    unsafe: set[str] = set()
    for name, volatility, returns_set in rows:
        ok = (
            (volatility in ("i", "s") or name in POSTGRES_VOLATILE_OK)
            and (not returns_set or name in POSTGRES_SET_RETURNING)
            and (name in POSTGRES_PG_PURE or not name.startswith(POSTGRES_EXCLUDED_PREFIXES))
            and name not in POSTGRES_EXCLUDED
            and not _excluded(name)
        )
        (kept if ok else unsafe).add(name)
    # One name, several signatures: a name is kept only when every overload is.
    return sorted(kept - unsafe)


# --- SQLite --------------------------------------------------------------------------------
SQLITE_EXCLUDED = frozenset({
    "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_offset",
    "sqlite_compileoption_get", "sqlite_compileoption_used", "sqlite_source_id",
    "changes", "total_changes", "last_insert_rowid", "unlikely", "likely", "likelihood",
})  # fmt: skip


# Table-valued functions over the database's own tables: JSON and the reporting PRAGMAs
# that describe tables and indexes (the connection allows the same PRAGMAs).
SQLITE_TABLE_FUNCTIONS = frozenset({
    "json_each", "json_tree", "pragma_table_info", "pragma_table_xinfo", "pragma_table_list",
    "pragma_index_list", "pragma_index_info", "pragma_index_xinfo", "pragma_foreign_key_list",
})  # fmt: skip


def sqlite_functions() -> list[str]:
    """SQLite's allow-list: ``PRAGMA function_list``'s built-in functions, less the rules."""
    con = sqlite3.connect(":memory:")
    rows = con.execute("SELECT name, builtin, type FROM pragma_function_list").fetchall()
    con.close()
    return sorted(
        SQLITE_TABLE_FUNCTIONS
        | {
            name.lower()
            for name, builtin, kind in rows
            if builtin
            and kind in ("s", "a", "w")
            and name.lower() not in SQLITE_EXCLUDED
            and not name.lower().startswith(("sqlite_", "fts"))
            and not _excluded(name.lower())
        }
    )


# --- MySQL / MariaDB -----------------------------------------------------------------------
# The manuals' function references (MySQL 8.0 "Built-In Function and Operator Reference",
# MariaDB "Built-in Functions"), by chapter. The rules then drop what is not pure.
MYSQL_FUNCTIONS = """
abs acos asin atan atan2 ceil ceiling conv cos cot crc32 degrees div exp floor ln log log10 log2
mod oct pi pow power radians rand round sign sin sqrt tan truncate
ascii bin bit_length char_length character_length concat concat_ws elt export_set field
find_in_set format from_base64 hex insert instr lcase left length locate lower lpad ltrim
make_set mid octet_length ord quote repeat replace reverse right rpad rtrim soundex space strcmp
substr substring_index to_base64 ucase unhex upper regexp_instr regexp_like regexp_replace
regexp_substr sformat natural_sort_key chr
adddate addtime convert_tz curdate curtime date_add date_format date_sub datediff day dayname
dayofmonth dayofweek dayofyear from_days from_unixtime get_format hour last_day makedate
maketime microsecond minute month monthname now period_add period_diff quarter sec_to_time
second str_to_date subdate subtime sysdate time_format time_to_sec timediff timestamp
timestampadd timestampdiff to_days to_seconds unix_timestamp utc_date utc_time utc_timestamp
week weekday weekofyear year yearweek add_months
avg bit_and bit_or bit_xor count group_concat json_arrayagg json_objectagg max min std stddev
stddev_pop stddev_samp sum var_pop var_samp variance median percentile_cont percentile_disc
cume_dist dense_rank first_value lag last_value lead nth_value ntile percent_rank rank
row_number
bit_count aes_encrypt aes_decrypt compress uncompress uncompressed_length md5 sha sha1 sha2
random_bytes
json_array json_array_append json_array_insert json_contains json_contains_path json_depth
json_extract json_insert json_keys json_length json_merge json_merge_patch json_merge_preserve
json_object json_overlaps json_pretty json_quote json_remove json_replace json_schema_valid
json_search json_set json_storage_size json_type json_unquote json_valid json_value
json_table json_compact json_detailed json_loose json_exists json_query json_normalize
json_equals json_key_value json_array_intersect
ifnull nullif isnull interval
bin_to_uuid uuid_to_bin is_uuid uuid uuid_short inet_aton inet_ntoa inet6_aton inet6_ntoa
is_ipv4 is_ipv6 is_ipv4_compat is_ipv4_mapped any_value default grouping
charset coercibility collation database schema found_rows row_count connection_id
current_user session_user system_user user version last_insert_id benchmark sleep
get_lock release_lock release_all_locks is_free_lock is_used_lock master_pos_wait
source_pos_wait load_file name_const des_encrypt des_decrypt encrypt password old_password
sys_exec sys_eval wait_for_executed_gtid_set extractvalue updatexml
st_area st_astext st_aswkt st_asbinary st_aswkb st_buffer st_centroid st_contains st_crosses
st_difference st_dimension st_disjoint st_distance st_endpoint st_envelope st_equals
st_exteriorring st_geometryn st_geometrytype st_geomfromtext st_geomfromwkb
st_interiorringn st_intersection st_intersects st_isclosed st_isempty st_issimple
st_length st_numgeometries st_numinteriorrings st_numpoints st_overlaps st_pointn
st_srid st_startpoint st_symdifference st_touches st_union st_within st_x st_y
st_pointfromtext st_linefromtext st_polyfromtext point linestring polygon
column_create column_get column_exists column_list column_json column_check column_add
column_delete
"""
# Functions in the manuals that are not pure: they read files, sleep, lock, wait on
# replication, reveal or change session state, encrypt with server-side key files, or are
# the well-known command-execution UDFs.
MYSQL_EXCLUDED = frozenset({
    "load_file", "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks",
    "is_free_lock", "is_used_lock", "master_pos_wait", "source_pos_wait", "sys_exec",
    "sys_eval", "wait_for_executed_gtid_set", "last_insert_id", "found_rows", "row_count",
    "connection_id", "des_encrypt", "des_decrypt", "encrypt", "password", "old_password",
    "name_const", "default", "uuid_short", "random_bytes",
})  # fmt: skip


def mysql_functions() -> list[str]:
    """MySQL / MariaDB's allow-list: :data:`MYSQL_FUNCTIONS` less :data:`MYSQL_EXCLUDED`."""
    names = set(MYSQL_FUNCTIONS.split())
    return sorted(n for n in names if n not in MYSQL_EXCLUDED and not _excluded(n))


def _excluded(name: str) -> bool:
    return (
        not NAME.match(name)
        or name.startswith("__")
        or any(part in name for part in EXCLUDED_PARTS)
    )


def write(dialect: str, names: Iterable[str], source: str) -> int:
    """Write ``allowed/<dialect>.txt``: a header, then one lowercase name a line."""
    kept = sorted(set(names) | set(SYNTAX[dialect]))
    header = (
        f"# Functions the read-only guard accepts on {dialect} (one lowercase name a line).\n"
        f"# Generated by scripts/make_function_allowlists.py from {source}; do not edit:\n"
        "# change the rules in the script and run it again.\n"
    )
    (OUT / f"{dialect}.txt").write_text(header + "".join(f"{n}\n" for n in kept), "utf-8")
    return len(kept)


def main(argv: list[str] | None = None) -> int:
    """Write the requested lists; print each dialect's size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postgres-url", default="postgresql+psycopg2://postgres@127.0.0.1:5432/test"
    )
    parser.add_argument("--only", nargs="*", choices=sorted(SYNTAX), default=sorted(SYNTAX))
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    status = 0
    for dialect in args.only:
        try:
            if dialect == "duckdb":
                import duckdb

                names, source = (
                    duckdb_functions(),
                    f"duckdb_functions() of DuckDB {duckdb.__version__}",
                )
            elif dialect == "postgres":
                names, source = postgres_functions(args.postgres_url), "pg_proc (pg_catalog)"
            elif dialect == "sqlite":
                names, source = (
                    sqlite_functions(),
                    f"PRAGMA function_list of SQLite {sqlite3.sqlite_version}",
                )
            else:
                names, source = mysql_functions(), "the MySQL 8.0 and MariaDB 10.11 manuals"
        except Exception as exc:  # a source that is not reachable: say so, write the others
            print(f"{dialect}: not written ({type(exc).__name__}: {exc})", file=sys.stderr)
            status = 1
            continue
        print(f"{dialect}: {write(dialect, names, source)} names")
    return status


if __name__ == "__main__":
    sys.exit(main())
