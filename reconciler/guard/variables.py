"""Server settings and session variables are not data (pure).

MySQL and MariaDB read server settings as ``@@name`` (``@@datadir``,
``@@secure_file_priv``) and keep session variables as ``@name``, assigned inside a
query with ``@name := …``. A certified or generated query reads the warehouse's
tables, so any of them is refused: a setting says where files live, an assignment
changes the session for the statements after it, and a variable carries a value no
one certified.
"""

from __future__ import annotations

from sqlglot import exp

from reconciler.errors import UnsafeSqlError

VARIABLE_NODES: tuple[type[exp.Expr], ...] = (exp.SessionParameter, exp.Parameter)
_FIX = "query the warehouse's tables; write values as literals"


def refuse_variable(node: exp.Expr, *, what: str, dialect: str) -> UnsafeSqlError:
    """The error for a ``@@setting`` or ``@variable`` found in a query.

    Args:
        node: a :data:`VARIABLE_NODES` node.
        what: how the refusal names the SQL (``query``, ``expression '…'``).
        dialect: the dialect the SQL is written in (to show the node as written).
    """
    shown = node.sql(dialect=dialect)[:40]
    if isinstance(node, exp.SessionParameter):
        return UnsafeSqlError(f"{what} reads the server setting {shown}", fix=_FIX)
    if isinstance(node.parent, exp.PropertyEQ) and node.parent.this is node:
        return UnsafeSqlError(f"{what} assigns the session variable {shown}", fix=_FIX)
    return UnsafeSqlError(f"{what} reads the session variable {shown}", fix=_FIX)
