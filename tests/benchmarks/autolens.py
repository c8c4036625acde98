"""A lens built from a defog database's DDL and glossary alone, never from its questions.

One model per table: text, boolean, id and year/month columns are dimensions, dates
and timestamps time dimensions, other numbers facts; primary keys and ``REFERENCES``
become ``primary_key`` and ``many_to_one`` joins, the glossary's column descriptions
are kept, and each table gets one count metric (``<table>_count``, "number of
<table>"). A column whose name is no lens identifier (``18_49_rating_share``) is
named ``col_<name>`` with its quoted name as ``expr``. The baseline the hand-written
lenses are measured against.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml
from sqlglot import exp

_TEXT = ("TEXT", "VARCHAR", "CHAR", "NCHAR", "NVARCHAR", "BPCHAR", "NAME", "UUID", "BOOLEAN")
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_TIME = ("DATE", "TIMESTAMP", "TIMESTAMPTZ", "DATETIME", "TIMESTAMP_S", "TIMESTAMP_MS")


def loadable(create: exp.Create) -> None:
    """SERIAL types → integers and foreign keys dropped, so DuckDB accepts the table."""
    serial = {exp.DataType.Type.SERIAL, exp.DataType.Type.SMALLSERIAL}
    for dt in create.find_all(exp.DataType):
        if dt.this in serial or dt.this == exp.DataType.Type.BIGSERIAL:
            dt.set("this", exp.DataType.Type.BIGINT)
    for node in list(create.find_all(exp.Reference, exp.ForeignKey)):
        parent = node.parent
        if isinstance(parent, exp.ColumnConstraint):
            parent.pop()
        else:
            node.pop()


def lens_files(
    db: str, creates: Iterable[exp.Create], glossary: dict[str, Any]
) -> dict[str, bytes]:
    """Lens files for one database: ``lens.yaml`` and one model per table."""
    described = glossary.get("table_metadata", {})
    files = {"lens.yaml": yaml.safe_dump({"name": db, "row_cap": 1000}).encode()}
    for create in creates:
        table = create.this.this if isinstance(create.this, exp.Schema) else create.this
        if not isinstance(table, exp.Table):
            continue
        schema = create.this
        name = table.name.lower()
        qualified = f"{table.db}.{name}" if table.db and table.db != "public" else name
        notes = {c["column_name"]: c.get("column_description", "") for c in described.get(name, [])}
        model: dict[str, Any] = {"name": name, "table": qualified}
        dims, times, facts, keys, joins = [], [], [], [], []
        for col in schema.expressions if isinstance(schema, exp.Schema) else []:
            if isinstance(col, exp.ColumnDef):
                cname = col.name.lower()
                kind = col.args.get("kind")
                type_name = kind.this.name if isinstance(kind, exp.DataType) else "TEXT"
                entry = _entry(cname, notes.get(cname, ""))
                if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in col.constraints):
                    keys.append(cname)
                for ref in col.find_all(exp.Reference):
                    joins.append(_join(cname, ref))
                if type_name in _TIME:
                    times.append({**entry, "data_type": "date"})
                elif type_name in _TEXT or cname in keys or cname.endswith(("id", "year", "month")):
                    dims.append(entry)
                else:
                    facts.append({**entry, "data_type": "number"})
            elif isinstance(col, exp.PrimaryKey):
                keys += [e.name.lower() for e in col.expressions]
            elif isinstance(col, exp.ForeignKey):
                ref = col.args.get("reference")
                if isinstance(ref, exp.Reference) and len(col.expressions) == 1:
                    joins.append(_join(col.expressions[0].name.lower(), ref))
        model.update(
            primary_key=keys,
            dimensions=dims,
            time_dimensions=times,
            facts=facts,
            joins=[j for j in joins if j],
        )
        files[f"models/{name}.yaml"] = yaml.safe_dump(model, sort_keys=False).encode()
        counted = f"COUNT(DISTINCT {keys[0]})" if len(keys) == 1 else "COUNT(*)"
        metric = {
            "name": f"{name}_count",
            "label": f"number of {name.replace('_', ' ')}",
            "description": f"How many {name} rows (one per {name}).",
            "model": name,
            "expression": counted,
        }
        files[f"metrics/{name}_count.yaml"] = yaml.safe_dump(metric, sort_keys=False).encode()
    return files


def _entry(column: str, description: str) -> dict[str, str]:
    """A lens column: named as the table's column when that is a lens identifier, else
    ``col_<name>`` reading the quoted column."""
    if _IDENTIFIER.fullmatch(column):
        return {"name": column, "description": description}
    name = "col_" + re.sub(r"\W", "_", column)
    return {"name": name, "expr": f'"{column}"', "description": description}


def _join(column: str, ref: exp.Reference) -> dict[str, Any] | None:
    target = ref.this
    table = target.this if isinstance(target, exp.Schema) else target
    cols = target.expressions if isinstance(target, exp.Schema) else []
    if not isinstance(table, exp.Table) or len(cols) != 1:
        return None
    return {
        "to": table.name.lower(),
        "relationship": "many_to_one",
        "on": {column: cols[0].name.lower()},
    }
