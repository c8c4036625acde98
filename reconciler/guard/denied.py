"""What the read-only guard denies by name: functions, and names it cannot read (pure).

The function lists are a deny-list of calls that read files, URLs or other databases,
run SQL text, or change state even inside a read-only transaction;
:func:`check_escapes` refuses PostgreSQL's Unicode-escaped names, which sqlglot would
otherwise read as ``U & "…"`` so that the name the warehouse calls is never checked.
"""

from __future__ import annotations

import sqlglot

from reconciler.errors import UnsafeSqlError
from reconciler.guard.names import decode_unicode_escapes

# Functions that read files, URLs or other databases, or change state even inside
# a read-only transaction. Sources: DuckDB "Data Sources" / "Table Functions"
# (read_*, *_scan, glob, query, query_table, sniff_csv, parquet_* metadata),
# PostgreSQL "System Administration Functions" (file access, signalling,
# set_config, sequences, large objects, advisory locks), the dblink module, and
# SQLite's fileio / load_extension.
FORBIDDEN_PREFIXES = ("read_", "dblink")
FORBIDDEN_SUFFIXES = ("_scan",)
FORBIDDEN_FUNCTIONS = frozenset({
    # DuckDB
    "glob", "query", "query_table", "sniff_csv", "parquet_metadata", "parquet_schema",
    "parquet_file_metadata", "parquet_kv_metadata", "parquet_bloom_probe", "iceberg_metadata",
    "iceberg_snapshots", "getenv", "duckdb_secrets", "which_secret", "load_aws_credentials",
    "postgres_query", "postgres_execute", "postgres_attach", "sqlite_attach", "sqlite_query",
    "mysql_query", "mysql_execute", "json_execute_serialized_sql", "json_serialize_sql",
    "json_deserialize_sql", "checkpoint", "force_checkpoint", "enable_logging",
    "disable_logging", "truncate_duckdb_logs", "enable_profiling", "disable_profiling",
    # PostgreSQL
    "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir",
    "pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir", "lo_import", "lo_export",
    "lo_unlink", "lo_create", "lo_put", "lo_from_bytea", "dblink", "dblink_exec",
    "dblink_connect", "dblink_open", "dblink_send_query", "set_config", "nextval", "setval",
    "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
    "pg_notify", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_try_advisory_lock",
    "pg_try_advisory_xact_lock", "pg_advisory_lock_shared", "pg_switch_wal",
    "pg_create_restore_point", "pg_promote", "txid_current", "pg_current_xact_id",
    "pg_sleep", "pg_sleep_for", "pg_sleep_until",
    "pg_try_advisory_lock_shared", "pg_advisory_xact_lock_shared",
    "pg_try_advisory_xact_lock_shared", "pg_advisory_unlock", "pg_advisory_unlock_shared",
    "pg_advisory_unlock_all", "lo_get", "lo_open", "lo_close", "loread", "lowrite",
    "lo_truncate", "lo_lseek", "lo_tell", "lo_import_with_oid", "pg_file_write",
    "pg_file_rename", "pg_file_unlink", "pg_file_sync", "pg_logdir_ls",
    "pg_logical_emit_message", "pg_create_logical_replication_slot",
    "pg_create_physical_replication_slot", "pg_drop_replication_slot",
    "pg_replication_origin_create", "pg_stat_reset", "pg_stat_reset_shared",
    "pg_stat_reset_single_table_counters", "pg_import_system_collations",
    "pg_log_backend_memory_contexts", "pg_backup_start", "pg_backup_stop",
    "pg_wal_replay_pause", "pg_wal_replay_resume", "lo_creat",
    "pg_logical_slot_get_changes", "pg_logical_slot_peek_changes",
    "pg_logical_slot_get_binary_changes", "pg_logical_slot_peek_binary_changes",
    "pg_replication_slot_advance", "pg_copy_logical_replication_slot",
    "pg_copy_physical_replication_slot", "pg_replication_origin_drop",
    "pg_replication_origin_session_setup", "pg_replication_origin_advance",
    # PostgreSQL functions that run SQL text or read a table named in a string
    "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml",
    "cursor_to_xmlschema", "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema",
    "schema_to_xml", "schema_to_xmlschema", "schema_to_xml_and_xmlschema", "database_to_xml",
    "database_to_xmlschema", "database_to_xml_and_xmlschema",
    # SQLite
    "readfile", "writefile", "edit", "fts3_tokenizer", "load_extension",
})  # fmt: skip

_ESCAPE_FIX = "write the name (or string) plainly, without U& Unicode escapes"


def check_escapes(sql: str, dialect: str) -> None:
    """Refuse PostgreSQL's Unicode-escaped names and strings (``U&"pg_read_\\0066ile"``).

    sqlglot reads ``U&"…"`` as ``U & "…"``, so the name the warehouse would call is
    never seen by the checks below: the escape is refused wherever it stands (outside
    string literals and comments, which the tokenizer skips), in every dialect.
    """
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (sqlglot.errors.TokenError, ValueError):
        return  # the parse that follows reports text it cannot read
    for i, (before, amp, after) in enumerate(zip(tokens, tokens[1:], tokens[2:], strict=False)):
        if (
            amp.token_type == sqlglot.TokenType.AMP
            and before.text.upper() == "U"
            and before.end + 1 == amp.start
            and after.start == amp.end + 1
            and after.token_type in (sqlglot.TokenType.IDENTIFIER, sqlglot.TokenType.STRING)
        ):
            raise UnsafeSqlError(
                f"SQL uses a Unicode-escaped name or string (U&{after.text[:40]!r}, which "
                f"{dialect} would read as {_decoded(after.text, tokens[i + 3 : i + 5])!r}); "
                "the guard does not read escaped names",
                fix=_ESCAPE_FIX,
            )


def _decoded(body: str, following: list[sqlglot.Token]) -> str:
    """``body`` decoded as PostgreSQL would, with a ``UESCAPE 'c'`` that follows it."""
    escape = "\\"
    if len(following) == 2 and following[0].text.upper() == "UESCAPE":
        escape = following[1].text
    try:
        return decode_unicode_escapes(body, escape)[:40]
    except UnsafeSqlError:
        return "(an invalid escape)"
