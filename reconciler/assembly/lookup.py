"""Names a question spells that the value index could not hold: looked up in the warehouse.

The value index (:class:`reconciler.suite.ValueCache`) keeps every distinct value of a
string dimension with at most a few hundred of them; a dimension with more — city
names, customer names, product titles — is not indexed, so "the district of Kabul"
finds no value and declines. :func:`looked_up` closes that gap for one question:

* **Candidates.** Text in quotes ('…', "…", “…”) and every run of capitalised words
  ("Kabul", "United Airlines", "Bank of America": ``of``/``de``/``the``/``and``/``&``
  may join them; a possessive ``'s`` is dropped), with each shorter run inside it, at most
  :data:`MAX_WORDS` words long. A single capitalised word that is a grammar word
  (``Which``, ``List``, ``Show`` …) is no candidate. A question written all in lower
  case has none: nothing is guessed from plain words.
* **Lookup.** One bounded query per dimension the index left empty (at most
  :data:`MAX_COLUMNS`): ``SELECT DISTINCT expr FROM table WHERE LOWER(TRIM(expr)) IN
  (…) LIMIT n``, read-only through the guarded executor. A dimension whose query
  fails keeps no value.
* **Result.** The stored spellings found become that dimension's values for this
  question only, so the retrieval matches them as it matches indexed values (and a
  name found in two columns is ambiguous there, as any value is). Nothing found:
  the very same ``values`` object comes back.

Pure apart from the executor's queries; no lens or ref is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import sqlglot
from sqlglot import exp

from reconciler import guard
from reconciler.assembly.grain import WarehouseFacts
from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.text import STOPWORDS, tokenize
from reconciler.errors import DstError
from reconciler.lens import Lens
from reconciler.resultset import Executor

MAX_WORDS = 5
"""The longest run of capitalised words looked up as one name."""
MAX_COLUMNS = 24
"""The most unindexed dimensions one question looks in (one query each)."""
MAX_CANDIDATES = 40
"""The most candidate names one question looks up."""
MAX_FOUND = 20
"""The most stored spellings kept per dimension."""
LOOKUP_TIMEOUT_S = 5.0
"""Wall-clock limit of one lookup query, in seconds."""

_QUOTED = re.compile(r"(?<!\w)'([^']{1,200})'(?!\w)|\"([^\"]{1,200})\"|“([^”]{1,200})”")
_WORD = re.compile(r"[\w][\w.&'’-]*")
_JOINERS = frozenset({"of", "de", "del", "la", "le", "the", "and", "&", "von", "van"})
_STRING_TYPES = ("string", "text", "varchar")


def candidates(question: str) -> tuple[str, ...]:
    """The names ``question`` may spell (module docstring), in order, each once."""
    found: dict[str, None] = {}
    for m in _QUOTED.finditer(question):
        text = next(g for g in m.groups() if g is not None).strip()
        if text:
            found[text] = None
    for run in _capitalised_runs(question):
        for name in _sub_runs(run):
            found[name] = None
    return tuple(found)[:MAX_CANDIDATES]


def _capitalised_runs(question: str) -> Iterator[list[str]]:
    run: list[str] = []
    for m in _WORD.finditer(question):
        word = re.sub(r"['’]s$", "", m.group()).rstrip(".'’-")
        joins = bool(run) and (word[:1].isdigit() or word.lower() in _JOINERS)
        if word[:1].isupper() or joins:
            run.append(word)
        else:
            yield from _trimmed(run)
            run = []
    yield from _trimmed(run)


def _trimmed(run: list[str]) -> Iterator[list[str]]:
    while run and run[-1].lower() in _JOINERS:
        run = run[:-1]
    if run:
        yield run


def _sub_runs(run: list[str]) -> Iterator[str]:
    for start in range(len(run)):
        if run[start].lower() in _JOINERS:
            continue
        for end in range(min(len(run), start + MAX_WORDS), start, -1):
            if run[end - 1].lower() in _JOINERS:
                continue
            words = run[start:end]
            if len(words) == 1 and set(tokenize(words[0])) <= STOPWORDS:
                continue
            yield " ".join(words)


def unindexed(lens: Lens, values: DimensionValues) -> tuple[tuple[str, str], ...]:
    """``(model, dimension)`` of every string dimension the index holds no value of."""
    return tuple(
        (model.name, col.name)
        for model in lens.models.values()
        for col in model.dimensions
        if col.data_type.lower() in _STRING_TYPES and not values.get((model.name, col.name))
    )[:MAX_COLUMNS]


def lookup_sql(table: str, column_sql: str, names: Sequence[str], dialect: str) -> str:
    """``SELECT DISTINCT expr AS value FROM table WHERE LOWER(TRIM(expr)) IN (…) LIMIT n``.

    Raises:
        UnsafeSqlError: ``column_sql`` does not parse or is unsafe.
        sqlglot.errors.ParseError: ``table`` is not a table name.
    """
    column = guard.parse_expression(column_sql, dialect)
    wanted = [exp.Literal.string(n.strip().lower()) for n in names]
    key = exp.Lower(this=exp.Trim(this=column.copy()))
    query = (
        exp.select(exp.alias_(column, "value"))
        .distinct()
        .from_(exp.to_table(table, dialect=dialect))
        .where(exp.In(this=key, expressions=wanted))
        .limit(MAX_FOUND)
    )
    return query.sql(dialect=dialect)


def looked_up(
    lens: Lens, question: str, executor: Executor, values: DimensionValues
) -> DimensionValues:
    """``values`` with the stored spellings of the names ``question`` spells, found in
    the dimensions the index left empty (module docstring).

    Returns:
        ``values`` itself when there is nothing to look up or nothing was found; else
        a copy (a :class:`~reconciler.assembly.grain.WarehouseFacts` keeps its
        join-key facts) with the found values added. Never raises: a failed query
        finds nothing.
    """
    names = candidates(question)
    if not names:
        return values
    dialect = lens.config.dialect
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for model_name, dim in unindexed(lens, values):
        model = lens.models[model_name]
        col = next(c for c in model.dimensions if c.name == dim)
        try:
            sql = lookup_sql(model.table, col.sql, names, dialect)
            result = executor.execute(sql, row_cap=MAX_FOUND, timeout_s=LOOKUP_TIMEOUT_S)
        except (DstError, sqlglot.errors.SqlglotError):
            continue
        hits = tuple(str(row[0]) for row in result.rows if row[0] is not None)
        if hits:
            found[(model_name, dim)] = hits
    if not found:
        return values
    merged = {**dict(values), **found}
    if isinstance(values, WarehouseFacts):
        return WarehouseFacts(merged, values.key_facts)
    return merged
