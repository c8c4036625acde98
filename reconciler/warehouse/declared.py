"""The lens's declarations held against the warehouse's data: tables and declared keys.

``dst validate --warehouse`` and ``dst apply`` run the same checks
(:func:`verify_keys`), so a lens whose declared primary key is not unique, or whose
table is missing, is rejected by the one and cannot be promoted silently by the
other. Each check is one bounded query per model. A table that cannot be read is an
:class:`UnreadableTable` (the answers reading it fail on their own); a declared key that
is not unique is a plain :class:`~reconciler.errors.LensLoadError`.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.errors import LensLoadError, UnsafeSqlError, WarehouseError
from reconciler.interop.keys import key_count_sql, table_probe_sql
from reconciler.lens import Lens
from reconciler.loader import load_yaml
from reconciler.resultset import Executor


class UnreadableTable(LensLoadError):
    """A model's table is missing from the warehouse, or cannot be read there."""


def verify_keys(
    lens: Lens, files: Mapping[str, bytes], executor: Executor, *, dialect: str
) -> list[LensLoadError]:
    """Check every model's table and declared primary key against a warehouse.

    One query per model: with a ``primary_key``, it counts the table's rows and
    distinct key values in one pass (:func:`reconciler.interop.keys.key_count_sql`);
    without one, it reads no rows but fails when the table is not there. Each is
    bounded by the lens's ``statement_timeout_s``.

    Args:
        lens: the loaded lens.
        files: ``{lens-relative path: bytes}`` it was loaded from, for line numbers.
        executor: the warehouse, read-only.
        dialect: the warehouse's sqlglot dialect.

    Returns:
        One error per model whose key is not unique (at its ``primary_key`` line)
        or whose table cannot be read (at its ``table`` line); empty when all hold.
    """
    errors: list[LensLoadError] = []
    for name, model in sorted(lens.models.items()):
        rel = lens.sources.get(f"models/{name}", f"models/{name}.yaml")
        path = f"{lens.root}/{rel}"
        doc = load_yaml(path, files[rel]) if rel in files else None
        key = ", ".join(model.primary_key)
        columns = {c.name: c.sql for c in model.columns()}
        read = lens.config.dialect
        try:
            sql = (
                key_count_sql(
                    model.table,
                    [columns.get(c, c) for c in model.primary_key],
                    read=read,
                    write=dialect,
                )
                if model.primary_key
                else table_probe_sql(model.table, read=read, write=dialect)
            )
            rows = executor.execute(sql, row_cap=1, timeout_s=lens.config.statement_timeout_s).rows
        except (UnsafeSqlError, WarehouseError) as exc:
            errors.append(
                UnreadableTable(
                    path,
                    f"table {model.table} of model {name} cannot be read: {exc.message}",
                    line=doc.line_of(("table",)) if doc else None,
                    fix="seed the table, or correct the model's table and columns",
                )
            )
            continue
        total, distinct = (int(v or 0) for v in rows[0]) if model.primary_key and rows else (0, 0)
        if distinct < total:
            errors.append(
                LensLoadError(
                    path,
                    f"primary key {key} of model {name} has {distinct} distinct values over "
                    f"{total} rows of table {model.table}; a many-to-one join through it fans "
                    "every row out",
                    line=doc.line_of(("primary_key",)) if doc else None,
                    fix="declare the columns that identify one row, or remove primary_key "
                    "and the joins that use it as their one side",
                )
            )
    return errors
