"""Formatting-only edits of a lens's files (pure): the false-stale probe of ``dst mutate``.

Each edit rewrites one file so that its meaning stays the same while its bytes
change the way editors and people change them. Asset hashes are taken over the
canonical form (DESIGN §2 "Hashing"), so none of these may make an answer stale;
``dst mutate`` reports the share that did.

==========================  ===================================================
``reindent``                the YAML re-dumped with four-space indentation
``reorder_keys``            every mapping's keys in reverse order
``sql_recase``              SQL keywords and known function names flipped
                            between upper and lower case (identifiers untouched)
``sql_rewrap``              SQL line breaks moved: a one-line expression broken
                            at clauses, commas and parentheses; a multi-line
                            query joined onto one line
``sql_comments``            a ``--`` line or ``/* */`` comment added to each SQL
``yaml_comments``           ``#`` comment lines added at the top and between keys
``trailing_whitespace``     two spaces after every non-empty line (YAML and Markdown)
==========================  ===================================================

Only whitespace between tokens and the case of keyword tokens change in SQL:
sqlglot's tokenizer gives each token's offsets, so string literals and
identifiers are carried over byte for byte.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from reconciler.lens import Lens
from reconciler.mutation.operators import Edit, dump_yaml, parse_file, round_robin

FORMATTING_KINDS = (
    "reindent",
    "reorder_keys",
    "sql_recase",
    "sql_rewrap",
    "sql_comments",
    "yaml_comments",
    "trailing_whitespace",
)

# Structural keywords whose case never matters. Type names (DATE, …) are left out:
# the tokenizer gives a column called ``date`` the same token type.
_KEYWORDS = frozenset(
    {
        TokenType.SELECT, TokenType.FROM, TokenType.WHERE, TokenType.AND, TokenType.OR,
        TokenType.NOT, TokenType.IN, TokenType.IS, TokenType.NULL, TokenType.ALIAS,
        TokenType.GROUP_BY, TokenType.ORDER_BY, TokenType.LIMIT, TokenType.JOIN,
        TokenType.INNER, TokenType.LEFT, TokenType.RIGHT, TokenType.OUTER, TokenType.FULL,
        TokenType.CROSS, TokenType.ON, TokenType.USING, TokenType.CASE, TokenType.WHEN,
        TokenType.THEN, TokenType.ELSE, TokenType.END, TokenType.DISTINCT, TokenType.BETWEEN,
        TokenType.DESC, TokenType.ASC, TokenType.WITH, TokenType.HAVING, TokenType.FILTER,
        TokenType.TRUE, TokenType.FALSE, TokenType.UNION, TokenType.ALL, TokenType.LIKE,
        TokenType.ILIKE, TokenType.EXISTS, TokenType.OVER, TokenType.PARTITION_BY,
    }
)  # fmt: skip
# Tokens a re-wrapped one-liner breaks before.
_BREAK_BEFORE = frozenset(
    {
        TokenType.FROM, TokenType.WHERE, TokenType.AND, TokenType.OR, TokenType.GROUP_BY,
        TokenType.ORDER_BY, TokenType.LIMIT, TokenType.JOIN, TokenType.INNER, TokenType.LEFT,
        TokenType.HAVING, TokenType.WHEN, TokenType.ELSE, TokenType.END, TokenType.PLUS,
        TokenType.DASH, TokenType.STAR, TokenType.SLASH,
    }
)  # fmt: skip
_WORD = re.compile(r"^[A-Za-z_][A-Za-z_\s]*$")
_TOP_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\s*:")


def _tokens(sql: str, dialect: str) -> list[Token]:
    try:
        return list(Dialect.get_or_raise(dialect).tokenize(sql))
    except SqlglotError:
        return []


def recase_sql(sql: str, dialect: str) -> str:
    """``sql`` with keyword tokens and known function names case-flipped; all else byte-exact.

    A token in upper case goes lower, anything else goes upper. Identifiers,
    literals, whitespace and comments are untouched.
    """
    tokens = _tokens(sql, dialect)
    parser = Dialect.get_or_raise(dialect).parser_class
    functions = set(parser.FUNCTIONS) | set(parser.FUNCTION_PARSERS)
    out = list(sql)
    for i, tok in enumerate(tokens):
        text = sql[tok.start : tok.end + 1]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        is_function = (
            tok.token_type is TokenType.VAR
            and nxt is not None
            and nxt.token_type is TokenType.L_PAREN
            and nxt.start == tok.end + 1
            and text.upper() in functions
        )
        if (tok.token_type in _KEYWORDS or is_function) and _WORD.match(text):
            flipped = text.lower() if text == text.upper() else text.upper()
            out[tok.start : tok.end + 1] = list(flipped)
    return "".join(out)


def rewrap_sql(sql: str, dialect: str) -> str:
    """``sql`` with its line breaks moved; only whitespace between tokens changes.

    A multi-line text is joined onto one line (every whitespace gap becomes one
    space); a one-line text is broken before clauses and operators, after
    commas, and inside parentheses. Gaps holding a comment are kept as they are.
    """
    tokens = _tokens(sql, dialect)
    if not tokens:
        return sql
    multi_line = "\n" in sql.strip()
    pieces = [sql[: tokens[0].start]]
    for prev, tok in itertools.pairwise(tokens):
        gap = sql[prev.end + 1 : tok.start]
        if gap.strip():
            new_gap = gap
        elif multi_line:
            new_gap = " " if gap else ""
        elif gap and (tok.token_type in _BREAK_BEFORE or prev.token_type is TokenType.COMMA):
            new_gap = "\n  "
        elif prev.token_type is TokenType.L_PAREN or tok.token_type is TokenType.R_PAREN:
            new_gap = "\n    " if prev.token_type is TokenType.L_PAREN else "\n  "
        else:
            new_gap = gap
        pieces += [sql[prev.start : prev.end + 1], new_gap]
    pieces.append(sql[tokens[-1].start :])
    return "".join(pieces)


def sql_fields(rel: str, data: Any) -> list[tuple[str | int, ...]]:
    """Paths of the SQL strings in a lens file's data, by the file's folder."""
    if not isinstance(data, dict):
        return []
    paths: list[tuple[str | int, ...]] = []
    if rel.startswith(("exemplars/", "answers/")) and isinstance(data.get("sql"), str):
        paths.append(("sql",))
    if rel.startswith("metrics/"):
        if isinstance(data.get("expression"), str):
            paths.append(("expression",))
        for i, flt in enumerate(data.get("filters") or []):
            if isinstance(flt, str):
                paths.append(("filters", i))
    if rel.startswith("models/"):
        for group in ("dimensions", "time_dimensions", "facts"):
            for i, col in enumerate(data.get(group) or []):
                if isinstance(col, dict) and isinstance(col.get("expr"), str):
                    paths.append((group, i, "expr"))
    return paths


def _get(data: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def _map_sql(rel: str, data: Any, fn: Callable[[str], str]) -> Any | None:
    """``data`` with ``fn`` applied to every SQL string, or ``None`` if nothing changed."""
    out = copy.deepcopy(data)
    changed = False
    for path in sql_fields(rel, data):
        before = _get(data, path)
        after = fn(before)
        if after != before:
            changed = True
            parent = _get(out, path[:-1])
            parent[path[-1]] = after
    return out if changed else None


def _reversed_keys(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _reversed_keys(data[k]) for k in reversed(list(data))}
    if isinstance(data, list):
        return [_reversed_keys(v) for v in data]
    return data


def _comment_sql(sql: str) -> str:
    if "\n" in sql.strip():
        return "-- formatting-only comment\n" + sql
    return sql + " /* formatting-only comment */"


def _yaml_comments(text: str) -> str:
    lines = text.splitlines(keepends=True)
    keys = [i for i, line in enumerate(lines) if _TOP_KEY.match(line)]
    if len(keys) > 1:
        lines.insert(keys[1], "# a comment between two keys\n")
    return "# formatting-only edit: a comment\n" + "".join(lines)


def _trailing_whitespace(text: str) -> str:
    return "".join(
        (line.rstrip("\n") + "  " + ("\n" if line.endswith("\n") else "")) if line.strip() else line
        for line in text.splitlines(keepends=True)
    )


def _yaml_edits(lens: Lens, rel: str, content: bytes) -> list[tuple[str, str, bytes]]:
    dialect = lens.config.dialect
    data = parse_file(lens, rel, content)
    text = content.decode("utf-8-sig")
    edits = [
        ("reindent", "re-dumped with 4-space indentation", dump_yaml(data, indent=4)),
        ("reorder_keys", "mapping keys in reverse order", dump_yaml(_reversed_keys(data))),
    ]
    for kind, what, fn in (
        ("sql_recase", "SQL keywords case-flipped", lambda s: recase_sql(s, dialect)),
        ("sql_rewrap", "SQL line breaks moved", lambda s: rewrap_sql(s, dialect)),
        ("sql_comments", "SQL comments added", _comment_sql),
    ):
        mapped = _map_sql(rel, data, fn)
        if mapped is not None:
            edits.append((kind, what, dump_yaml(mapped)))
    edits.append(("yaml_comments", "# comments added", _yaml_comments(text).encode("utf-8")))
    edits.append(
        ("trailing_whitespace", "trailing spaces added", _trailing_whitespace(text).encode())
    )
    return edits


def _asset_of(lens: Lens) -> Mapping[str, str]:
    """``{lens-relative path: asset id (or answers/<id>)}``."""
    return {rel: asset for asset, rel in lens.sources.items()}


def formatting_edits(
    lens: Lens, files: Mapping[str, bytes], *, limit: int | None = None
) -> list[Edit]:
    """Formatting-only edits of every asset and answer file of ``lens``.

    Args:
        lens: the validated lens.
        files: its files (``{lens-relative path: bytes}``).
        limit: at most this many edits per kind (``None``: all), taken
            round-robin over files.

    Returns:
        Edits ordered by kind (:data:`FORMATTING_KINDS`), then round-robin over
        files sorted by path; an edit that leaves the bytes unchanged is dropped.
    """
    owners = _asset_of(lens)
    per_kind: dict[str, dict[str, list[Edit]]] = {k: {} for k in FORMATTING_KINDS}
    for rel in sorted(owners):
        content = files.get(rel)
        if content is None:
            continue
        asset = owners[rel]
        if rel.endswith(".md"):
            text = content.decode("utf-8-sig")
            edits = [
                (
                    "trailing_whitespace",
                    "trailing spaces added",
                    _trailing_whitespace(text).encode(),
                )
            ]
        else:
            edits = _yaml_edits(lens, rel, content)
        for kind, what, new in edits:
            if new != content:
                per_kind[kind].setdefault(rel, []).append(Edit(kind, asset, rel, what, new))
    out: list[Edit] = []
    for kind in FORMATTING_KINDS:
        out += round_robin(per_kind[kind], limit)
    return out
