"""Rows of one model, not aggregates: listings (pure).

:func:`listed_rows` reads listing questions ("the names and prices of the products
in Toys", "the title of the publication with the highest citations"); the plain
``top [n] <model noun> by <fact>`` shape is :mod:`reconciler.reading.grammar.factrankings`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from reconciler.assembly.joins import Path
from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, counted_model, retrieve
from reconciler.assembly.text import STOPWORDS, tokenize
from reconciler.lens import Column, Lens, Model
from reconciler.reading import lex
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import ASCENDING, DESCENDING, KEY_WORDS, LABEL_WORDS, NUMBER_WORDS
from reconciler.reading.phrases.bounds import split_bounds
from reconciler.reading.phrases.contains import contains_conditions, split_contains
from reconciler.reading.phrases.distinct import distinct_values, values_asked, values_first
from reconciler.reading.phrases.labels import row_label
from reconciler.reading.phrases.negation import Negations, check_placed, differs, gap, negations
from reconciler.reading.phrases.nouns import EVERY, named_rows
from reconciler.reading.phrases.ordering import Ordering, split_orders
from reconciler.reading.phrases.rankings import check_value_ranked
from reconciler.reading.phrases.relatedclauses import check_clause
from reconciler.reading.phrases.restated import restate, split_restated
from reconciler.reading.phrases.rowdates import own_period
from reconciler.reading.phrases.rowfacts import check_ranked_values, row_bounds, tied_rows
from reconciler.reading.phrases.rowjoins import (
    listed_column,
    reaching,
    rows_model,
    showing_model,
    with_joins,
)
from reconciler.reading.phrases.rowvalues import any_of, value_filters
from reconciler.reading.phrases.verbs import is_date_verb
from reconciler.reading.phrases.words import (
    Reading,
    check_row_count,
    phrase_of,
    plural,
    read_grammar,
)

# Listing questions: "what are the names and prices of the products in Toys?"
_OPENERS = frozenset({"return", "provide", "find", "display", "get", "name"})
# A listing opens like one ("what are …", "list …", "return …") and never breaks down.
_STARTS = _OPENERS | {"what", "which", "list", "show", "give", "tell"}
_BREAKDOWN_WORDS = frozenset(
    {"by", "per", "each", "every", "across", "group", "grouped", "split", "broken", "break"}
)
_IN_DATABASE = re.compile(r"\s+in\s+the\s+(?:database|system)\b", re.IGNORECASE)
_QUALIFY_GAP = ((), ("of",))
# "whose city is Oslo", "where the city is Oslo": the column only names its value's place
_BE = (("is",), ("are",), ("was",), ("were",))
_DETERMINERS = frozenset({"the", "all", "our", "their", "your", "my", "its"})
_WHERE_THE = (("where", "the"), ("whose", "the"))
_PLURAL_VERBS = (("have",), ("are",), ("were",))


@dataclass
class _Listing:
    """What a listing question asks for, while it is read."""

    model: Model | None = None
    noun: tuple[int, int] | None = None
    columns: list[tuple[str, str]] = field(default_factory=list)  # (alias, SQL)
    filters: list[tuple[Column, str]] = field(default_factory=list)
    excluded: list[tuple[Column, str]] = field(default_factory=list)  # "not <value>"
    negated: Negations = field(default_factory=Negations)
    distinct: bool = False
    plural: bool = False
    rank_at: int | None = None  # the ranking word ("top", "highest"), if any
    rank_key: Mention | None = None  # the column it ranks by
    rank_column: tuple[str, str] | None = None  # (alias, SQL) of that column
    phrases: dict[tuple[str, ...], tuple[str, str]] = field(default_factory=dict)  # asked
    joins: list[Path] = field(default_factory=list)  # to models the rows reach one to one
    values_first: bool = False  # "What districts are the huts in?": each value once
    values_of: str | None = None  # "What regions are the customers in?": the regions


def listed_rows(lens: Lens, question: str, values: DimensionValues) -> str | None:
    """The SQL of a listing question, or ``None`` when the question is not one.

    A listing names columns of one model — dimensions, facts, ``name``/``title``
    (the model's label, as a ranking of rows by a fact names them) or ``id`` (its one-column
    primary key) — optionally ``of [all] the <model noun>``, with equality filters on
    that model's own dimension values or negated ones ("whose city is not Oslo",
    :mod:`~reconciler.reading.phrases.negation`), comparisons on its own facts ("with
    a price of over 100": :func:`reconciler.reading.phrases.rowfacts.row_bounds`),
    ``distinct``/``unique``, a closing "Show both A and B." naming the columns to
    show (:mod:`reconciler.reading.phrases.restated`), and a closing
    ordering phrase or ``alphabetically`` (the first column, ascending, or reversed):

        SELECT [DISTINCT] <columns> FROM <table> [WHERE …] [ORDER BY …]

    A ranking word with a column after the noun ("… with the highest price", "top 3
    … in terms of price") orders by that column and keeps ``n`` rows (1 for a
    singular noun); asked for no columns, it lists the label and that column. "Which
    <nouns> have the highest <column>", plural with no count, keeps every row tied at
    the extreme (``WHERE <column> = (SELECT MAX(<column>) …)``). Every other word must
    be a stopword, or an opener (``return``, ``provide`` …) at the start; a metric, an
    aggregation word, a period or a word left over means another shape (``None``).

    Raises:
        Declined: the shape, but a singular noun ("the name of the product": one
            product, or all? — unless a filter names the row by its label or
            one-column key: "the state code of Orlando International Airport"
            lists the rows so named, or a closing ordering phrase with no ranking
            word and no count sorts every row), a column of another model, a filter value of
            several columns, an ordering key that is not one column, a plural
            ranking with no count, an ordering phrase against the ranking (or on
            rows tied at the extreme), a comparison on a fact of another model, a
            ranking of a column's values (it needs an aggregate), a closing "Show …"
            item that names no column, or a "not" that negates no value.
    """
    rest, restated = split_restated(_IN_DATABASE.sub("", question))
    rest, ordering, alphabetical = split_orders(rest)
    rest, bounds = split_bounds(lens, rest, values)
    rest, contained = split_contains(lens, rest, values)
    found = retrieve(lens, rest, values)
    reading = read_grammar(lens, found)
    listing = _read_listing(lens, found, reading)
    if listing is None or listing.model is None:
        return None
    check_clause(retrieve(lens, question, values) if rest != question else found)
    if restated:
        label = functools.partial(_word_column, listing.model, found, listing, -1)
        shown = (listing.columns, listing.phrases)
        listing.columns = restate(lens, listing.model, shown, restated, label, values)
    ties = _keeps_ties(found, listing, reading)
    conditioned = bool(
        bounds or contained or listing.filters or listing.excluded or reading.periods
    )
    limit = None if ties else _limit(listing, reading, found, ordering, alphabetical, conditioned)
    model = listing.model
    dialect = lens.config.dialect
    query = exp.select(
        *(exp.alias_(sqlglot.parse_one(sql, read=dialect), alias) for alias, sql in listing.columns)
    ).from_(exp.to_table(model.table, dialect=dialect))
    bare = (listing.plural or bool(listing.filters)) and not (
        listing.noun or listing.rank_column or _names_its_row(listing)
    )  # "What country is Oslo in?": the value, once, however many rows hold Oslo
    reached = listing.values_of is not None and bool(listing.joins) and len(listing.columns) == 1
    if (
        listing.distinct
        or reached
        or values_asked(model, listing.columns, question, bare or listing.values_first)
    ):
        query = distinct_values(query, listing.columns, dialect)
    for col, said in any_of(listing.filters).items():
        column = sqlglot.parse_one(col.sql, read=dialect)
        literals = [exp.Literal.string(v) for v in said]
        query = query.where(
            exp.EQ(this=column, expression=literals[0])
            if len(literals) == 1
            else exp.In(this=column, expressions=literals)
        )
    for col, value in listing.excluded:
        query = query.where(differs(col.sql, col.name, value, dialect))
    for condition in (
        *row_bounds(lens, model, bounds),
        *own_period(lens, model, reading.periods),
        *contains_conditions(model, contained, dialect),
    ):
        query = query.where(condition)
    if ties:
        assert listing.rank_column is not None
        if ordering is not None or alphabetical is not None:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                "the rows tied at the extreme share one value: sorted by what? Ask for "
                "'the top n …' or for all of them 'sorted by …'",
            )
        extreme = (listing.rank_column[1], next(iter(reading.directions)))
        query = query.where(tied_rows(lens, model, extreme, query))
        return with_joins(lens, query, model.name, listing.joins).sql(dialect=dialect, pretty=True)
    key = _order_key(lens, model, listing, ordering, alphabetical, values)
    if listing.rank_column is not None:
        ranked = listing.rank_column[1], next(iter(reading.directions))
        if (
            key is not None
            and ordering is not None
            and (key[0] != ranked[0] or (ordering.descending not in (None, ranked[1])))
        ):
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                "a ranking with an ordering phrase that sorts otherwise",
            )
        key = ranked
    if key is not None:
        sql, descending = key
        query = query.order_by(
            exp.Ordered(
                this=sqlglot.parse_one(sql, read=dialect), desc=descending, nulls_first=False
            )
        )
    if limit is not None:
        query = query.limit(limit)
    return with_joins(lens, query, model.name, listing.joins).sql(dialect=dialect, pretty=True)


def _keeps_ties(found: Retrieval, listing: _Listing, reading: Reading) -> bool:
    """Whether a ranked listing asks for every row at the extreme: "which <nouns> have
    the highest <fact>", plural with no count
    (:func:`reconciler.reading.phrases.rowfacts.tied_rows`)."""
    return (
        listing.rank_column is not None
        and listing.noun is not None  # the noun's own rows, not a column's values
        and listing.plural
        and not listing.distinct
        and not reading.numbers
        and found.tokens[:1] == ("which",)
    )


def _limit(
    listing: _Listing,
    reading: Reading,
    found: Retrieval,
    ordering: Ordering | None,
    alphabetical: bool | None,
    conditioned: bool,
) -> int | None:
    """The LIMIT of a ranked listing (``None``: every row).

    A listing with no ranking word and no count that closes with an ordering phrase
    ("… ordered by age", "… in reversed alphabetical order") lists every row in that
    order, whatever the number of its noun: the order is of rows, so there are several.
    So does a singular noun with a condition (``conditioned``: a value, a bound, a
    period: "the model of the car whose weight is below 3000"): the condition is what
    picks the row out, and every row that meets it is shown, never one of them.
    """
    if listing.rank_column is None:
        ordered = (ordering is not None or alphabetical is not None) and not reading.numbers
        if not (listing.plural or ordered or conditioned or _names_its_row(listing)):
            raise Declined(
                DeclineKind.AMBIGUOUS_READING,
                "a listing of one row or of all of them? Say 'the names of the …s'",
            )
        return None
    if alphabetical is not None:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            "a ranking ordered alphabetically: the ranking fixes its own order",
        )
    if reading.numbers:
        check_row_count(reading, found)
        if reading.numbers[0] < 1:
            raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "a ranking of zero rows")
        return reading.numbers[0]
    if listing.plural:
        raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "a top/bottom ranking without a count")
    return 1


def _names_its_row(listing: _Listing) -> bool:
    """Whether a filter names the row by its label or its one-column key ("the state
    code of Orlando International Airport"): the rows so named, however many."""
    model = listing.model
    assert model is not None
    try:
        label = row_label(model, tokenize(model.name), model.name).name
    except Declined:
        label = None
    keys = {label, *(model.primary_key if len(model.primary_key) == 1 else ())}
    return any(col.name in keys or col.sql in keys for col, _ in listing.filters)


def _may_list(lens: Lens, found: Retrieval, reading: Reading) -> bool:
    """Whether the question may be a listing: it opens like one, and the grammar read
    no period, aggregation, share, change, metric, flag or count in it."""
    extras = (
        reading.periods[1:],  # one period bounds the rows' own date (rowdates)
        reading.all_time,
        reading.comparison,
        reading.share,
        reading.change_grains,
        reading.change,
        reading.ties,
        reading.grains,
        [i for i in reading.aggregates if not _fact_head(found, i)],
        reading.who,
    )
    if any(extras) or len(reading.noun_at) > 1 or found.tokens[:1] not in {(w,) for w in _STARTS}:
        return False
    if len(reading.directions) > 1 or len(reading.numbers) > 1:
        return False
    if any(m.kind in ("metric", "flag") for m in found.mentions):
        return False
    counted = counted_model(lens, found)  # "the most customers" is a count
    return counted is None or _fact_head(found, counted[0])  # not "the staff number of …"


def _fact_head(found: Retrieval, i: int) -> bool:
    """Whether the word at ``i`` is the head noun of the fact phrase before it."""
    return found.tokens[i] in lex.FACT_HEADS and any(
        m.kind == "fact" and m.end == i for m in found.mentions
    )


def _read_listing(lens: Lens, found: Retrieval, reading: Reading) -> _Listing | None:
    """The parts of a listing question (see :func:`listed_rows`), or ``None``."""
    if not _may_list(lens, found, reading):
        return None
    listing = _Listing(negated=negations(found))
    _find_noun(lens, found, reading, listing)
    toks = found.tokens
    starts = {  # a verb naming a date ("What show sold the most seats?") shows no column
        m.start: m
        for m in found.mentions
        if m.start != (listing.noun or (-1,))[0] and not is_date_verb(found, m)
    }
    values = [m for m in found.mentions if m.kind == "value"]
    qualifiers = {
        id(d) for v in values for d in found.mentions if _qualifies(found, d, v, listing.negated)
    }
    if _breaks_down(found, reading, qualifiers, listing.noun):
        return None
    asked: list[Mention | int] = []  # column mentions, or the index of a name/id word
    i = 0
    while i < len(toks):
        mention = starts.get(i)
        if mention is not None:
            if mention.kind != "value" and id(mention) not in qualifiers:
                if (
                    listing.rank_at is not None
                    and listing.rank_key is None
                    and i > max(listing.rank_at, listing.noun[0] if listing.noun else -1)
                ):
                    listing.rank_key = mention  # "… with the highest <fact>"
                elif listing.noun is not None and i > listing.noun[0]:
                    return None  # a column after the noun: not a plain listing
                else:
                    asked.append(mention)
            i = mention.end
            continue
        if listing.noun is not None and listing.noun[0] <= i < listing.noun[1]:
            i = listing.noun[1]
            continue
        if (period := next((p for p in reading.period_spans if p[0] == i), None)) is not None:
            i = period[1]  # the period's words (phrases.rowdates.own_period)
            continue
        if not _free_word(listing, found, reading, i, asked):
            return None
        i += 1
    if reading.directions and listing.rank_key is None:
        return None
    check_value_ranked(found, listing.rank_at, listing.rank_key, asked, listing.noun)
    if not asked and listing.rank_key is None and listing.noun is not None and listing.plural:
        asked.append(-1)  # "List all cartoons directed by Ben Jones": the rows' label
    if not asked and (listing.rank_key is None or listing.noun is None):
        return None
    check_placed(found, listing.negated)
    return _resolve_listing(lens, found, listing, asked, values)


def _find_noun(lens: Lens, found: Retrieval, reading: Reading, listing: _Listing) -> None:
    """Set the listed rows' model and noun span when the question names them, and
    whether it asks for a column's values first ("What districts are the huts in?")."""
    toks = found.tokens
    if reading.noun_at:
        ((at, name),) = reading.noun_at.items()
        width = max(
            len(k)
            for k, v in model_nouns(lens).items()
            if v == name and toks[at : at + len(k)] == k
        )
        listing.model, listing.noun = lens.models[name], (at, at + width)
        listing.plural = (
            plural(found, at + width - 1)
            or toks[at - 1 : at] in {("all",), *((w,) for w in EVERY)}
            or found.words[at + width : at + width + 1] in _PLURAL_VERBS  # "aircraft have"
        )
    elif (rows := named_rows(lens, found)) is not None:  # "the cities of the stations"
        listing.model, listing.noun = lens.models[rows[2]], rows[:2]
        listing.plural = plural(found, rows[1] - 1) or toks[rows[0] - 1] in EVERY | {"all"}
    first = values_first(lens, found)
    if first is not None:
        if listing.noun is None:
            _rows_after_verb(lens, found, listing, first[1])
        listing.values_first = first[2] is None
        if listing.model is not None and first[2] not in (None, listing.model.name):
            listing.values_of = first[2]


def _rows_after_verb(lens: Lens, found: Retrieval, listing: _Listing, at: int) -> None:
    """Read the phrase at ``at`` (past ``the``/``all`` and a value) as the listed rows when
    it spells a model's noun, though a column's synonym covers it ("What citizenships are
    the singers from?": the singers, not their names; "the North Campus labs")."""
    toks = found.tokens
    while at < len(toks) and toks[at] in _DETERMINERS:
        at += 1  # "What countries do our ports belong to?"
    mention = next((m for m in found.mentions if m.start == at), None)
    if mention is not None and mention.kind == "value":
        mention = next((m for m in found.mentions if m.start == mention.end), None)
    if mention is None:
        return
    name = model_nouns(lens).get(toks[mention.start : mention.end])
    if name is not None:
        listing.model, listing.noun, listing.plural = lens.models[name], (at, mention.end), True


def _free_word(
    listing: _Listing, found: Retrieval, reading: Reading, i: int, asked: list[Mention | int]
) -> bool:
    """Read the token at ``i`` outside lens phrases into ``listing`` (``False``: a word
    no listing holds)."""
    toks, t = found.tokens, found.tokens[i]
    if i in listing.negated.words or i in listing.negated.unplaced:
        pass  # read with its value, or declined (:func:`check_placed`)
    elif t in lex.DISTINCT_WORDS:
        listing.distinct = True
    elif t in DESCENDING | ASCENDING:
        if listing.rank_key is not None:  # "the top 3 <column> with the highest <fact>"
            asked.append(listing.rank_key)
            listing.rank_key = None
        listing.rank_at = i  # the last ranking word: its column follows it
    elif (t.isdigit() or t in NUMBER_WORDS) and reading.directions:
        pass  # the ranking's count
    elif t == "term" and toks[i - 1 : i] == ("in",) and toks[i + 1 : i + 2] == ("of",):
        pass  # "in terms of <column>"
    elif t == "amount" and listing.rank_at == i - 1 and toks[i + 1 : i + 2] == ("of",):
        pass  # "the smallest amount of <column>"
    elif _fact_head(found, i):
        pass  # "the staff number": the fact's own head noun
    elif t in lex.BELONGING_WORDS:
        pass  # "Which country does JetBlue belong to?": the row's own attribute
    elif t in LABEL_WORDS | KEY_WORDS and (listing.noun is None or i < listing.noun[0]):
        asked.append(i)
    else:
        return t in STOPWORDS or (t in _OPENERS and all(k in STOPWORDS for k in toks[:i]))
    return True


def _breaks_down(
    found: Retrieval, reading: Reading, qualifiers: set[int], noun: tuple[int, int] | None
) -> bool:
    """Whether a breakdown word ("by", "each" …) introduces a column or a model noun
    ("probability by stage"), not a value ("offered by the department of Physics") nor
    the listed rows themselves (``noun``: "the ages of every singer")."""
    starts = {m.start: m for m in found.mentions}
    toks = found.tokens
    for i, t in enumerate(toks):
        if t not in _BREAKDOWN_WORDS or (t in EVERY and noun is not None and noun[0] == i + 1):
            continue
        k = i + 1
        while k < len(toks) and toks[k] == "the":
            k += 1
        after = starts.get(k)
        if k in reading.noun_at or (
            after is not None and id(after) not in qualifiers and after.kind != "value"
        ):
            return True
    return False


def _qualifies(found: Retrieval, dimension: Mention, value: Mention, negated: Negations) -> bool:
    """Whether ``dimension`` only names the column of ``value`` ("the city of Paris")."""
    if dimension.kind not in ("dimension", "time_dimension"):
        return False
    named = {(t.model, t.name) for t in dimension.targets}
    if not any((t.model, t.name) in named for t in value.targets):
        return False
    between = gap(found, negated, dimension.end, value.start)
    if between in _QUALIFY_GAP or dimension.start == value.end:
        return True
    before = found.tokens[max(0, dimension.start - 2) : dimension.start]
    return between in _BE and (before[-1:] in (("whose",), ("where",)) or before in _WHERE_THE)


def _resolve_listing(
    lens: Lens,
    found: Retrieval,
    listing: _Listing,
    asked: list[Mention | int],
    values: list[Mention],
) -> _Listing | None:
    """``listing`` with its model, columns and filters resolved."""
    mentions = [a for a in asked if not isinstance(a, int)]
    if listing.model is None:
        if len(mentions) != len(asked):
            return None  # "the names" of what?
        shared = set.intersection(*({t.model for t in m.targets} for m in mentions))
        key = listing.rank_key  # "the car model with the highest mpg": the cars ranked
        if len(shared) != 1 and key is not None:
            shared = {
                m for m in [rows_model(lens, key.targets, [m.targets for m in mentions])] if m
            }
        valued = shared & {t.model for v in values for t in v.targets}
        if len(shared) > 1 and len(valued) == 1:
            shared = valued  # "the country of JetBlue Airways": the model the value names
        if not shared and (rows := showing_model(lens, [m.targets for m in mentions])):
            shared = {rows}  # "the song titles and singer names": each song, its singer
        if len(shared) != 1:
            return None
        listing.model = lens.models[shared.pop()]
        listing.plural = plural(found, mentions[0].end - 1)
    model, joins = listing.model, listing.joins
    listing.plural = listing.plural or listing.distinct
    for item in asked:
        if isinstance(item, int):
            listing.columns.append(_word_column(model, found, listing, item))
            continue
        # "What regions are the customers in?": the regions the rows reach
        paths = joins if listing.values_of else reaching(found, listing.noun, joins)
        column = _mention_column(lens, model, found, item, paths)
        listing.phrases[found.tokens[item.start : item.end]] = column
        if column not in listing.columns:
            listing.columns.append(column)
    if listing.rank_key is not None:
        reached = reaching(found, listing.noun, joins)  # a fact of a row reached
        listing.rank_column = _mention_column(lens, model, found, listing.rank_key, reached)
        if not listing.columns:  # "the top 3 products with the highest price"
            label = _word_column(model, found, listing, -1)
            listing.columns = [label, listing.rank_column]
        if listing.noun is None and listing.plural:  # one row: the top row's value
            check_ranked_values(lens, model, listing.columns, listing.rank_column)
    filters, excluded = value_filters(found, model, values, listing.negated)
    listing.filters += filters
    listing.excluded += excluded
    return listing


def _mention_column(
    lens: Lens, model: Model, found: Retrieval, mention: Mention, paths: list[Path] | None
) -> tuple[str, str]:
    """``(alias, SQL)`` of the column ``mention`` names: of ``model``, or (``paths`` not
    ``None``) of a model its rows reach one to one
    (:func:`reconciler.reading.phrases.rowjoins.listed_column`)."""
    return listed_column(lens, model, mention.targets, phrase_of(found, mention), paths)


def _word_column(model: Model, found: Retrieval, listing: _Listing, at: int) -> tuple[str, str]:
    """The column a bare ``name``/``title`` (the label; also ``at`` -1) or ``id`` (the
    key) word asks for."""
    if at >= 0 and found.tokens[at] in KEY_WORDS:
        if len(model.primary_key) != 1:
            raise Declined(
                DeclineKind.AMBIGUOUS_READING, f"which column is the id of model {model.name!r}?"
            )
        return model.primary_key[0], model.primary_key[0]
    noun = tuple(found.tokens[listing.noun[0] : listing.noun[1]]) if listing.noun else ()
    label = row_label(
        model, noun, " ".join(found.words[slice(*listing.noun)]) if listing.noun else model.name
    )
    return label.name, label.sql


def _order_key(
    lens: Lens,
    model: Model,
    listing: _Listing,
    ordering: Ordering | None,
    alphabetical: bool | None,
    values: DimensionValues,
) -> tuple[str, bool] | None:
    """``(SQL, descending)`` of the listing's ORDER BY, or ``None``."""
    if alphabetical is not None:
        if ordering is not None:
            raise Declined(DeclineKind.UNSUPPORTED_CONSTRUCT, "the question asks for two orders")
        return listing.columns[0][1], alphabetical
    if ordering is None:
        return None
    if ordering.key is None and len(listing.columns) == 1 and ordering.descending is not None:
        return listing.columns[0][1], ordering.descending  # "the earnings … in descending order"
    if ordering.key is None:  # several columns shown: which one?
        raise Declined(DeclineKind.AMBIGUOUS_READING, "in which order? Name the column to sort by")
    found = retrieve(lens, ordering.key, values)
    loose = [t for i, t in enumerate(found.tokens) if i not in found.covered() and t != "the"]
    places = {(t.model, t.name) for m in found.mentions for t in m.targets}
    named = [c for c in model.columns() if (model.name, c.name) in places]
    if loose or len(found.mentions) != 1 or len(named) != 1:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"ordered by {ordering.key!r}: that is not one column of {model.name!r}",
        )
    col = named[0]
    if listing.distinct and (col.name, col.sql) not in listing.columns:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a distinct list ordered by {col.name!r}, a column it does not show",
        )
    if ordering.descending is None and col in model.facts:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"ordered by {ordering.key!r}: highest first or lowest first? "
            "Say 'descending' or 'ascending'",
        )
    return col.sql, bool(ordering.descending)
