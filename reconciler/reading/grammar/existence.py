"""Listings kept by the existence of related rows: ``EXISTS`` / ``NOT EXISTS`` (pure).

:func:`existence_rows` reads a listing of one model's rows (*A*) restricted by
whether rows of a related model (*B*) exist, or by a value reached through a join:

    Return the customer ID and name of customers who have not made any transactions.
    How many customers have no transactions?
    Return the distinct list of ticker IDs that have daily price records since Apr 1, 2023.
    Which papers are associated with the keyphrase "Machine Learning"?
    What are the titles of the papers in the journal "Nature", ordered alphabetically?

A question of this shape is a *head*, a *relative clause* or a *tail*, optionally a
*method* phrase and ``ordered alphabetically``, and every word must fall in one of them:

* head: :mod:`reconciler.reading.grammar.heads` (the opener, ``distinct``, *A*'s columns
  and its noun, or ``which <A>`` for its label);
* clause: ``who`` / ``that`` / ``which`` — or ``with`` / ``without`` — then
  auxiliaries (``have``, ``do``, ``are``, ``been`` …), one negation (``not``,
  ``never``, or ``no`` before the related rows), at most one verb that only says
  "has related rows" (:data:`EXISTENCE_VERBS`; a lens's ``vocabulary`` may drop
  others), a quantifier (``a``, ``an``, ``any``, ``some``), then the related rows:
  *B*'s noun (the first model noun that is not a value's own phrase), ``records``,
  yes/no flags of *B* right before its noun, a date bound on *B*'s time dimension
  (``since …``, ``on or after …``, ``before …``, ``in 2023``; on rows dated by a
  year number alone, one whole year is that number:
  :func:`~reconciler.reading.phrases.years.year_of`), and values. A value
  is of the model a noun or dimension beside it names (``the keyphrase "Machine
  Learning"``, ``the Computer Science program``), else of *B* (``a 'buy'
  transaction``; ``from LAX to ORD`` picks the ``from_…`` / ``to_…`` column); a
  value of another model *C* is a nested ``EXISTS`` over the link from *B* to *C*;
* tail, when there is no clause: ``in`` / ``from`` / ``of`` / ``at`` after *A*'s
  noun, then values of a model *A* reaches by a many-to-one path (``the customers in
  the West region``) or a whole-number dimension of *A* and its number (``in the
  year 2020``); a tail of *A*'s own values alone is
  :func:`~reconciler.reading.grammar.listing.listed_rows`'s;
* method: "by doing a left join from the A to B table", "based on joining the A, M
  and B tables" — accounted for only when it names exactly the models the query
  reads (and, for "from … to", *A* first and *B* last).

The link between two models is :func:`reconciler.reading.phrases.related.link` (declared
many-to-one joins, join-grain gate), and the query

    SELECT [DISTINCT] <columns> FROM <A table> AS <A> WHERE [NOT] EXISTS (…)
        [ORDER BY <first column>]

keeps each row of *A* once however many related rows match. ``DISTINCT`` is there
only when asked. Anything outside the frame — a metric, an aggregation or ranking
word, a word no part accounts for — returns ``None`` (another shape, or a decline
of the main grammar). Inside the frame, a value or word right after an auxiliary
(``customers who have cancelled``: an action, not mere existence), a noun several
models share, two negations, a value of no model named, a tail value not one per
row of *A*, or a link that is not one declines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, retrieve, spoken
from reconciler.assembly.text import stems, tokenize, words
from reconciler.lens import Lens
from reconciler.reading.grammar.heads import Head, head_columns, noun_width, read_head
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import RELATIVE_WORDS
from reconciler.reading.phrases.joinmethods import check_method, split_method
from reconciler.reading.phrases.ordering import ALPHABETICAL
from reconciler.reading.phrases.periods import period_at, spell_to_date
from reconciler.reading.phrases.related import compared, conditions, exists_clause, link
from reconciler.reading.phrases.years import year_of
from reconciler.reading.today import Day

# Verbs that say no more than "has related rows" in this frame (stemmed phrases).
EXISTENCE_VERBS: frozenset[tuple[str, ...]] = frozenset(
    tokenize(v)
    for v in (
        "made",
        "make",
        "received",
        "prescribed",
        "issued",
        "placed",
        "used in",
        "associated with",
        "part of",
        "recorded",
        "offer",
        "taken by",
        "with",  # "associated with" once the lens's vocabulary drops "associated"
    )
)
_AUXILIARIES = stems("have has had do does did are is were was been be")
_HAVE = stems("have has had")
_NEGATIONS = frozenset({"not", "never"})
_QUANTIFIERS = frozenset({"a", "an", "any", "some"})
_ROWS_FILLER = frozenset({"the", "in", "on", "of", "with", "record"})
_PREPOSITIONS = frozenset({"from", "to"})
_DIRECTED = frozenset({("from",), ("to",)})  # the first word of a from_… / to_… column
_TAIL_OPENERS = frozenset({"in", "from", "of", "at"})
_WHOLE = re.compile(r"^(int|integer|bigint|smallint|number)$", re.IGNORECASE)
_ON_OR_AFTER = re.compile(r"\bon\s+or\s+after\b", re.IGNORECASE)


@dataclass
class _Rows:
    """The related rows the clause asks about."""

    model: str = ""
    noun: tuple[int, int] | None = None
    negated: bool = False
    values: list[Mention] = field(default_factory=list)
    flags: list[Mention] = field(default_factory=list)
    span: tuple[Day, Day] | None = None
    prepositions: dict[int, str] = field(default_factory=dict)  # value start → from / to
    numbers: list[tuple[str, str]] = field(default_factory=list)  # whole-number equalities
    years: list[tuple[str, str, str]] = field(default_factory=list)  # (year dimension, op, year)
    method: frozenset[str] = frozenset()  # the models a method phrase names


def existence_rows(lens: Lens, question: str, values: DimensionValues) -> str | None:
    """The SQL of a listing kept by related rows (module docstring), or ``None``
    when the question is not of that shape.

    Args:
        lens: the lens whose models, joins and phrases are used.
        question: the question as asked.
        values: the dimension values (and join-key facts) from the warehouse.

    Raises:
        Declined: the shape, but a reading that is not one (module docstring), or a
            link :func:`~reconciler.reading.phrases.related.link` declines.
    """
    text, named, ordered = split_method(lens, question)
    alphabetical = ALPHABETICAL.search(text)
    text = text[: alphabetical.start()] if alphabetical else text
    text = _ON_OR_AFTER.sub("since", spell_to_date(text))
    found = retrieve(lens, text, values)
    at = _clause_at(lens, found)
    if at is None:
        return None if named else _reached(lens, found, values, bool(alphabetical))
    head = read_head(lens, found, at)
    if head is None:
        return None
    dropped = not head.which and _dropped_after(lens, text, at)
    bare = found.tokens[at] not in RELATIVE_WORDS and found.tokens[at] not in ("with", "without")
    start = at if head.which or bare else at + 1
    rows = _read_clause(lens, found, start, head.which, named, dropped)
    if rows is None or (rows.model == head.model and found.tokens[at] == "with"):
        return None  # "episodes with the episode 'Pilot'": a value of their own (a listing)
    _check_parent_period(lens, head.model, rows)
    chosen = link(lens, head.model, rows.model, values)
    check_method(named, ordered, chosen)
    where = exists_clause(lens, chosen, _filters(lens, found, rows, values), rows.negated)
    return _render(lens, found, head, [where], bool(alphabetical))


def _check_parent_period(lens: Lens, base: str, rows: _Rows) -> None:
    """Decline a period on the related rows when they are each row's parent (a
    many-to-one join from ``base``) and ``base`` has a date of its own: in "How many
    trips were taken by riders on the Annual plan in 2023?" the year is the trips'
    as much as the riders' signing up."""
    model = lens.models[base]
    parent = any(j.to == rows.model and j.relationship != "one_to_many" for j in model.joins)
    if rows.span is not None and parent and model.time_dimensions:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"the period bounds {rows.model!r}, each {base} row's own {rows.model} row, but "
            f"{base!r} has a date of its own: which date is meant? Name it",
        )


def _reached(
    lens: Lens, found: Retrieval, values: DimensionValues, alphabetical: bool
) -> str | None:
    """A listing filtered through a declared many-to-one join ("the names of the
    customers in the West region") or on a number of its own ("the titles of the
    papers in the year 2020"): ``None`` unless it has one of those (a listing of its
    own values is :func:`~reconciler.reading.grammar.listing.listed_rows`'s)."""
    toks = found.tokens
    at = next(
        (
            i
            for i in range(1, len(toks))
            if toks[i] in _TAIL_OPENERS
            and i not in found.covered()
            and any(toks[i - w : i] in model_nouns(lens) for w in range(1, i + 1))
        ),
        None,
    )
    head = read_head(lens, found, at) if at is not None else None
    if at is None or head is None or head.which or head.count or head.noun is None:
        return None  # "how many customers in the West region" is the grammar's count
    rows = _Rows(model=head.model)
    pending: list[Mention] = []
    if not _read_tail(lens, found, at, rows, pending) or rows.span is not None or rows.flags:
        return None
    if not rows.numbers and all(any(t.model == head.model for t in v.targets) for v in rows.values):
        return None  # only the listed model's own values: a plain listing
    _check_rows(lens, found, rows, pending)
    return _render(
        lens, found, head, _filters(lens, found, rows, values, reached=True), alphabetical
    )


def _clause_at(lens: Lens, found: Retrieval) -> int | None:
    """Where the relative clause starts: its ``who`` / ``that`` / ``which`` / ``with``
    word, or (after an opening ``which <A>`` or ``how many <A>``) its first auxiliary."""
    toks, covered = found.tokens, found.covered()
    counted = toks[:2] == ("how", "many") and not any(
        t in RELATIVE_WORDS or t in ("with", "without") for t in toks[2:]
    )
    opener = 2 if counted else 1 if toks[:1] == ("which",) else 0
    if opener:
        width = noun_width(lens, toks, opener)
        after = opener + width
        verb = after < len(toks) and _verb_at(toks, after, found.covered())
        if width and after < len(toks) and (toks[after] in _AUXILIARIES or verb):
            return after
        return None
    return next(
        (
            i
            for i, t in enumerate(toks)
            if i > 0 and i not in covered and (t in RELATIVE_WORDS or t in ("with", "without"))
        ),
        None,
    )


def _dropped_after(lens: Lens, text: str, at: int) -> bool:
    """Whether the lens's vocabulary drops the word right after token ``at`` ("authors
    who wrote the paper" with ``wrote: ""``): a verb the lens says adds nothing."""
    said = words(text)
    for p in range(1, len(said)):
        if len(spoken(lens, said[:p])) == at + 1:
            return spoken(lens, said[p : p + 1]) == ()
    return False


def _read_clause(
    lens: Lens,
    found: Retrieval,
    k: int,
    which: bool,
    method: list[str] | None,
    dropped: bool,
) -> _Rows | None:
    """The related rows of the clause starting at ``k`` (after its relative word)."""
    toks = found.tokens
    covered = found.covered()
    rows = _Rows(method=frozenset(method or ()))
    with_word = not which and toks[k - 1] in ("with", "without")
    rows.negated = toks[k - 1] == "without"
    last_aux = None
    verb = False
    while k < len(toks) and k not in covered and not with_word:
        t = toks[k]
        if t in _AUXILIARIES:
            last_aux, k = t, k + 1
        elif t in _NEGATIONS:
            if rows.negated:
                raise Declined(
                    DeclineKind.AMBIGUOUS_READING,
                    "two negations: rows that have related rows, or not?",
                )
            rows.negated, k = True, k + 1
        elif not verb and (width := _verb_at(toks, k, covered)):
            verb, k = True, k + width
        else:
            break
    verb = verb or (dropped and last_aux is None)  # the lens's vocabulary dropped it
    if not with_word and not verb and last_aux not in _HAVE:
        return None
    if k < len(toks) and k in covered and not verb and not with_word:
        mention = next(m for m in found.mentions if m.start == k)
        if mention.kind in ("value", "flag"):
            said = " ".join(found.words[mention.start : mention.end])
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"{said!r} right after {last_aux!r} reads as something the rows did, not as "
                f"related rows that exist; say e.g. 'that have … with {said}'",
            )
        if noun_width(lens, toks, k) < mention.end - k:
            return None  # a metric or column right after "have": not related rows
    if k < len(toks) and toks[k] in _QUANTIFIERS:
        k += 1
    elif k < len(toks) and toks[k] == "no" and k not in covered:
        if rows.negated:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING, "two negations: rows that have related rows, or not?"
            )
        rows.negated, k = True, k + 1
    return _read_rows(lens, found, k, rows)


def _verb_at(toks: tuple[str, ...], k: int, covered: frozenset[int]) -> int:
    """Tokens in the existence verb phrase at ``k`` (0: none)."""
    for verb in sorted(EXISTENCE_VERBS, key=len, reverse=True):
        span = range(k, k + len(verb))
        if toks[k : k + len(verb)] == verb and not any(i in covered for i in span):
            return len(verb)
    return 0


def _read_rows(lens: Lens, found: Retrieval, k: int, rows: _Rows) -> _Rows | None:
    """The related rows ``tokens[k:]``: values, flags, noun, records, a date bound."""
    toks = found.tokens
    rows.noun = _rows_noun(lens, found, k)
    if rows.noun is None:
        shared = _shared_word(lens, found, k, rows.method)
        if shared is None:
            return None
        rows.noun, rows.model = (shared[0], shared[0] + 1), shared[1]
    else:
        rows.model = model_nouns(lens)[toks[slice(*rows.noun)]]
    pending: list[Mention] = []  # dimension mentions: B's noun, or a value's qualifier
    if not _read_tail(lens, found, k, rows, pending):
        return None
    _check_rows(lens, found, rows, pending)
    return rows


def _read_tail(lens: Lens, found: Retrieval, k: int, rows: _Rows, pending: list[Mention]) -> bool:
    """Read ``tokens[k:]`` into ``rows`` (values, flags, numbers, a period) and
    ``pending`` (dimension phrases); ``False`` at a word none of them accounts for."""
    toks, covered = found.tokens, found.covered()
    starts = {m.start: m for m in found.mentions}
    while k < len(toks):
        mention = starts.get(k)
        if rows.noun is not None and k == rows.noun[0]:
            if mention is not None and mention.kind == "dimension":
                pending.append(mention)
            k = max(rows.noun[1], mention.end if mention else k)
            continue
        value_at = k + 2 if toks[k + 1 : k + 2] == ("the",) else k + 1
        if toks[k] in _PREPOSITIONS and value_at in {v.start for v in found.mentions}:
            rows.prepositions[value_at] = toks[k]  # "from LAX": a from_… column
            k += 1
            continue
        number = _number_after(lens, found, rows.model, mention)
        if number is not None:  # "in the year 2020": year = 2020
            rows.numbers.append(number)
            k = mention.end + 1 if mention else k
            continue
        if mention is not None:
            if mention.kind == "value":
                rows.values.append(mention)
            elif mention.kind == "flag":
                rows.flags.append(mention)
            elif mention.kind == "dimension":
                pending.append(mention)
            else:
                return False
            k = mention.end
            continue
        period = period_at(toks, k, set(range(len(toks))) - covered, lens.config.as_of)
        if period is not None:
            if rows.span is not None:
                raise Declined(
                    DeclineKind.UNSUPPORTED_CONSTRUCT, "the related rows are bounded by two periods"
                )
            k, rows.span = period[0], period[1].span
            continue
        width = noun_width(lens, toks, k)
        values = [m for m in found.mentions if m.kind == "value"]
        if width and any(v.start == k + width or v.end == k for v in values):
            k += width  # "the domain 'Databases'", "the Databases domain": its model
            continue
        if toks[k] not in _ROWS_FILLER:
            return False
        k += 1
    return True


def _number_after(
    lens: Lens, found: Retrieval, model: str, mention: Mention | None
) -> tuple[str, str] | None:
    """``(dimension, number)`` of a whole-number dimension of ``model`` followed by a
    number ("the year 2020"), else ``None``."""
    if mention is None or mention.kind != "dimension" or mention.end >= len(found.tokens):
        return None
    number = found.tokens[mention.end]
    if not number.isdigit() or mention.end in found.covered():
        return None
    names = {t.name for t in mention.targets if t.model == model}
    columns = [c for c in lens.models[model].dimensions if c.name in names]
    if len(columns) != 1 or not _WHOLE.match(columns[0].data_type):
        return None
    return columns[0].name, number


def _rows_noun(lens: Lens, found: Retrieval, k: int) -> tuple[int, int] | None:
    """The span of the related rows' noun: the first model noun from ``k`` on that no
    longer lens phrase covers and that is not a value's own phrase (``transaction
    notifications``: a value named like a model), else the last such value."""
    toks = found.tokens
    nouns: list[tuple[int, int]] = []
    for i in range(k, len(toks)):
        width = noun_width(lens, toks, i)
        if not width:
            continue
        inside = [m for m in found.mentions if m.start < i + width and i < m.end]
        if all(m.start >= i and m.end <= i + width for m in inside):
            nouns.append((i, i + width))
    values = {(m.start, m.end) for m in found.mentions if m.kind == "value"}
    return next((n for n in nouns if n not in values), nouns[-1] if nouns else None)


def _shared_word(
    lens: Lens, found: Retrieval, start: int, method: frozenset[str]
) -> tuple[int, str] | None:
    """``(index, model)`` of a word several models' nouns share ("a cash payment":
    payments made, or payments received?) when the method phrase names just one of
    them; ``None`` when no such word names the rows.

    Raises:
        Declined: such a word, and no method phrase picks one of its models.
    """
    owners: dict[str, set[str]] = {}
    for noun, model in model_nouns(lens).items():
        for word in noun:
            owners.setdefault(word, set()).add(model)
    for i in range(start, len(found.tokens)):
        models = owners.get(found.tokens[i], set())
        if i in found.covered() or len(models) < 2:
            continue
        picked = models & method
        if len(picked) == 1:
            return i, picked.pop()
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{found.words[i]!r} could be rows of {', '.join(sorted(models))}: say which",
        )
    return None


def _check_rows(lens: Lens, found: Retrieval, rows: _Rows, pending: list[Mention]) -> None:
    """Every value and flag of the clause must be of *B*, and every other dimension
    phrase either *B*'s noun or a value's qualifier."""
    noun = rows.noun or (-1, -1)  # a listing's own rows have no noun here
    for d in pending:
        if (d.start, d.end) == noun or d.start < noun[1] <= d.end:
            continue
        if not any(d.end == v.start or d.start == v.end for v in rows.values):
            phrase = " ".join(found.words[d.start : d.end])
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{phrase!r} in the related rows: a column to list, or a filter?",
            )
    for f in rows.flags:
        if f.end != noun[0] or not any(t.model == rows.model for t in f.targets):
            phrase = " ".join(found.words[f.start : f.end])
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"{phrase!r} is a yes/no column; say which rows it describes",
            )
    if rows.span is not None:
        model = lens.models[rows.model]
        if len(model.time_dimensions) > 1 and model.default_time_dimension is None:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"which date of {rows.model!r} does the period bound?",
            )
        year = year_of(model, rows.span) if model.time_dimension() is None else None
        if year is not None:  # "a concert in 2014" of rows dated by a year number
            rows.years = [(year[0], op, number) for op, number in year[1]]
            rows.span = None
        elif model.time_dimension() is None:
            raise Declined(
                DeclineKind.MISSING_IN_LENS, f"{rows.model!r} has no date for the period to bound"
            )


def _render(
    lens: Lens, found: Retrieval, head: Head, where: list[exp.Expr], alphabetical: bool
) -> str:
    """``SELECT [DISTINCT] <columns> FROM <A table> AS <A> WHERE … [ORDER BY <first>]``."""
    dialect = lens.config.dialect
    model = lens.models[head.model]
    table = exp.alias_(exp.to_table(model.table, dialect=dialect), model.name)
    if head.count:  # "how many <A> …": each row of A once, so a plain count
        count = exp.alias_(exp.Count(this=exp.Star()), f"{model.name}_count")
        query = exp.select(count).from_(table)
        return (query.where(exp.and_(*where)) if where else query).sql(dialect=dialect, pretty=True)
    columns = head_columns(model, found, head)
    query = exp.select(
        *(exp.alias_(sqlglot.parse_one(sql, read=dialect), alias) for alias, sql in columns)
    ).from_(table)
    if head.distinct:
        query = query.distinct()
    if where:
        query = query.where(exp.and_(*where))
    if alphabetical:
        first = sqlglot.parse_one(columns[0][1], read=dialect)
        query = query.order_by(exp.Ordered(this=first, desc=False, nulls_first=False))
    return query.sql(dialect=dialect, pretty=True)


def _filters(
    lens: Lens, found: Retrieval, rows: _Rows, values: DimensionValues, *, reached: bool = False
) -> list[exp.Expr]:
    """The conditions on the rows of ``rows.model``: its values, whole numbers, flags
    and period, and — for a value of another model *C* ("publications in the domain
    'Databases'") — ``EXISTS`` over the link to *C*, which for a listing's own rows
    (``reached``) must be a many-to-one path from them."""
    own: list[tuple[str, str]] = list(rows.numbers)
    others: dict[str, list[tuple[str, str]]] = {}
    for v in rows.values:
        model, name, value = _value_place(lens, found, rows, v)
        place = own if model == rows.model else others.setdefault(model, [])
        if any(n == name for n, _ in place):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"several values of {model}.{name} are named: all, or any?",
            )
        place.append((name, value))
    flags = [next(t.name for t in f.targets if t.model == rows.model) for f in rows.flags]
    out = conditions(lens, rows.model, own, tuple(flags), rows.span)
    out.extend(compared(lens, rows.model, name, op, year) for name, op, year in rows.years)
    for model, equalities in others.items():
        chosen = link(lens, rows.model, model, values)
        if reached and chosen.outer[0] != rows.model:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                f"a value of {model!r}, which is not one row per {rows.model!r} row: "
                f"{rows.model} with any such {model}, or only such?",
            )
        out.append(exists_clause(lens, chosen, conditions(lens, model, equalities), False))
    return out


def _value_place(lens: Lens, found: Retrieval, rows: _Rows, v: Mention) -> tuple[str, str, str]:
    """``(model, dimension, value)`` a value mention filters on: a column of the model
    a noun or dimension phrase beside it names ("the Computer Science program"), else
    of the rows' own model; ``from`` / ``to`` before it picks the ``from_…`` /
    ``to_…`` column when the value is in such columns, and is a plain word otherwise."""
    phrase = " ".join(found.words[v.start : v.end])
    named = _named_beside(lens, found, v)
    places = {(t.model, t.name, t.value) for t in v.targets if t.model in named}
    if not places:
        places = {(t.model, t.name, t.value) for t in v.targets if t.model == rows.model}
    word = rows.prepositions.get(v.start)
    if word is not None and any(tokenize(p[1])[:1] in _DIRECTED for p in places):
        places = {p for p in places if tokenize(p[1])[:1] == (word,)}  # from_… / to_…
        phrase = f"{word} {phrase}"
    if len(places) != 1:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"{phrase!r} is not one value of a column of model {rows.model!r} "
            "(nor of the one model named beside it)",
        )
    ((model, name, value),) = places
    assert value is not None
    return model, name, value


def _named_beside(lens: Lens, found: Retrieval, at: Mention) -> set[str]:
    """The models a noun or dimension phrase right before or after the value ``at``
    names ("the domain 'Databases'", "the Databases domain")."""
    named = {
        t.model
        for m in found.mentions
        if (m.end == at.start or m.start == at.end) and m.kind == "dimension"
        for t in m.targets
    }
    nouns, toks = model_nouns(lens), found.tokens
    for width in range(1, len(toks) + 1):
        for span in (toks[at.start - width : at.start], toks[at.end : at.end + width]):
            if len(span) == width and span in nouns:
                named.add(nouns[span])
    return named
