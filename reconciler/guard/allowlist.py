"""The functions a query may call, per dialect: an allow-list kept as data (pure).

Each list is a text file in this package, ``allowed/<dialect>.txt``, one lowercase
name a line (``#`` starts a comment), written by ``scripts/make_function_allowlists.py``
from the engine's own catalogue (DuckDB's ``duckdb_functions()``, PostgreSQL's
``pg_proc``, SQLite's ``PRAGMA function_list``) or, for MySQL / MariaDB, from the
manuals' function references — pure scalar, aggregate and window functions, and the
table functions that generate rows from their arguments. The script holds the rules
that leave a function out (files, URLs, settings, secrets, extensions, sequences,
sleeping, locking, replication, SQL text); the files are never edited by hand.

A dialect without a list (Snowflake, BigQuery …) is judged by the deny-list alone.
"""

from __future__ import annotations

import functools
from importlib import resources

# sqlglot dialect → the list it is judged by.
LISTS = {"duckdb": "duckdb", "postgres": "postgres", "sqlite": "sqlite", "mysql": "mysql"}


@functools.cache
def allowed_functions(dialect: str) -> frozenset[str] | None:
    """The lowercase function names ``dialect``'s warehouse may be asked to call.

    Args:
        dialect: a sqlglot dialect name.

    Returns:
        The names, or ``None`` when the dialect has no list.

    Raises:
        FileNotFoundError: the package was installed without its ``allowed/*.txt`` data.
    """
    stem = LISTS.get(dialect)
    if stem is None:
        return None
    text = resources.files(__package__).joinpath("allowed", f"{stem}.txt").read_text("utf-8")
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )
