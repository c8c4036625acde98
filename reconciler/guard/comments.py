"""Comments the warehouse executes or does not read as comments (pure).

sqlglot drops comments, so the guard must refuse any comment the warehouse would run:

* MySQL and MariaDB execute the body of ``/*! … */`` (and ``/*!50000 … */``, run from
  that server version on) and MariaDB also ``/*M! … */``: refused in every dialect, so a
  lens written for one warehouse cannot carry one to a MySQL warehouse;
* MySQL reads ``--`` as a comment only when white space follows it: ``1--1`` is
  ``1 - -1``, so on MySQL ``--`` before anything else is refused (sqlglot would drop
  the rest of the line that MySQL runs).

Source: MySQL 8.0 manual "Comments"; MariaDB "Comment Syntax".
"""

from __future__ import annotations

import sqlglot

from reconciler.errors import UnsafeSqlError

_MYSQL_FAMILY = frozenset({"mysql", "singlestore", "doris", "starrocks"})
_FIX = "remove the comment (plain /* … */ and '-- ' comments are fine)"


def check_comments(sql: str, dialect: str) -> None:
    """Refuse executable comments (``/*! … */``, ``/*M! … */``) and MySQL's ``--x``.

    Only the text between tokens is read, so a comment marker inside a string or a
    quoted name is never seen.

    Raises:
        UnsafeSqlError: such a comment, with its first characters.
    """
    if "/*" not in sql and "--" not in sql:
        return
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (sqlglot.errors.TokenError, ValueError):
        return  # the parse that follows reports text it cannot read
    starts = [0] + [t.end + 1 for t in tokens]
    ends = [t.start for t in tokens] + [len(sql)]
    for start, end in zip(starts, ends, strict=True):
        if end > start:
            _check_gap(sql[start:end], dialect)


def _check_gap(gap: str, dialect: str) -> None:
    i = 0
    while i < len(gap):
        if gap.startswith("/*", i):
            if gap[i + 2 : i + 3] == "!" or gap[i + 2 : i + 4].upper() == "M!":
                raise UnsafeSqlError(
                    f"SQL holds an executable comment ({gap[i : i + 30]!r}), which MySQL "
                    "and MariaDB run as SQL",
                    fix=_FIX,
                )
            close = gap.find("*/", i + 2)
            i = len(gap) if close < 0 else close + 2
        elif gap.startswith("--", i):
            after = gap[i + 2 : i + 3]
            if dialect in _MYSQL_FAMILY and after and not after.isspace():
                raise UnsafeSqlError(
                    f"SQL holds {gap[i : i + 20]!r}: MySQL reads '--' as a comment only "
                    "before a space, so it would run what follows",
                    fix="write a space after '--', or write the operators apart (1 - -1)",
                )
            newline = gap.find("\n", i)
            i = len(gap) if newline < 0 else newline + 1
        elif gap[i] == "#":
            newline = gap.find("\n", i)
            i = len(gap) if newline < 0 else newline + 1
        else:
            i += 1
