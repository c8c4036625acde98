"""Retrieval: the lens phrases a question names, matched on whole words (pure).

:func:`retrieve` matches the lens lexicon (:mod:`reconciler.assembly.lexicon`)
against a question's normalized tokens (:mod:`reconciler.assembly.text`). Phrases
are matched longest first (``net revenue`` beats ``revenue``); at equal length a
metric beats a dimension, a value, a model fact and a boolean flag, in that order.
A count metric's synonym that is its model's noun ("drivers" for ``driver_count``
of model ``drivers``) names the entities, not the metric, right after a word that
picks rows: "which driver", "for each depot", "list the drivers", and "by" before the
singular ("by depot"; "by rentals" ranks by the count, and "per order" is a ratio,
weighed by the grammar). These name the entities: the model's dimension of that
phrase if it has one, else no lens phrase (the model's noun, read by the grammar) —
:func:`_entity_nouns`.
What retrieval selects is the question's part of an answer's dependency set
(DESIGN §1), so it is *precise*: an asset is selected only when the question names
it. The fast generator tier reuses :func:`retrieve` so that what it compiles and
what assembly recorded can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.assembly import memo as lensmemo
from reconciler.assembly.joins import join_index
from reconciler.assembly.lexicon import (
    PRIORITY,
    DimensionValues,
    Kind,
    Target,
    indexed_lexicon,
    model_named,
    model_nouns,
    stopword_values,
)
from reconciler.assembly.text import stem, tokenize, words, written
from reconciler.lens import Lens


@dataclass(frozen=True)
class Mention:
    """A matched phrase: tokens ``[start, end)`` and every target it could mean.

    ``facts`` holds the model facts the same phrase also names, when it was matched
    as something else (an imported measure is both a metric and a fact).
    """

    start: int
    end: int
    targets: tuple[Target, ...]
    facts: tuple[Target, ...] = ()

    @property
    def kind(self) -> Kind:
        """The kind of the mention's targets (ties across kinds keep the best priority)."""
        return self.targets[0].kind


@dataclass(frozen=True)
class Retrieval:
    """The lexical analysis of one question against one lens.

    Attributes:
        words: the question's lowercase words (unstemmed; same indices as ``tokens``).
        tokens: the normalized tokens.
        mentions: matched phrases, non-overlapping, in question order.
    """

    words: tuple[str, ...]
    tokens: tuple[str, ...]
    mentions: tuple[Mention, ...]

    def covered(self) -> frozenset[int]:
        """Token positions inside a mention."""
        return frozenset(i for m in self.mentions for i in range(m.start, m.end))

    def leftover(self) -> tuple[str, ...]:
        """Tokens outside every mention, in order."""
        covered = self.covered()
        return tuple(t for i, t in enumerate(self.tokens) if i not in covered)

    def metrics(self) -> tuple[str, ...]:
        """Names of every metric a mention may mean, sorted."""
        return tuple(
            sorted({t.name for m in self.mentions if m.kind == "metric" for t in m.targets})
        )


def asks_who(found: Retrieval) -> bool:
    """Whether the question opens with the interrogative "who" (a relative "who" does not)."""
    return found.words[:1] == ("who",) and 0 not in found.covered()


def retrieve(lens: Lens, question: str, values: DimensionValues | None = None) -> Retrieval:
    """Match the lens's phrases in ``question``: longest match first, whole words.

    Overlaps resolve by length, then kind (metric over dimension over value over
    fact over flag), then position. A phrase that means several targets of the best kind keeps all
    of them (an ambiguity the caller decides on).
    """
    ws, origin = _spoken(lens, words(question))
    toks = tuple(stem(w) for w in ws)
    lex, longest = indexed_lexicon(lens, values)
    candidates: list[tuple[int, int, int, tuple[Target, ...]]] = []
    for start in range(len(toks)):
        for end in range(start + 1, min(len(toks), start + longest) + 1):
            targets = lex.get(toks[start:end])
            if targets:
                best = min(PRIORITY[t.kind] for t in targets)
                kept = tuple(t for t in targets if PRIORITY[t.kind] == best)
                candidates.append((start, end, best, kept))
    candidates.sort(key=lambda c: (c[0] - c[1], c[2], c[0]))
    nouns = _noun_spans(lens, toks)
    candidates = [
        c
        for c in candidates
        if not any(a <= c[0] and c[1] <= b and b - a > c[1] - c[0] for a, b in nouns)
    ]
    taken: set[int] = set()
    mentions: list[Mention] = []
    for start, end, _, targets in candidates:
        span = set(range(start, end))
        if span & taken:
            continue
        taken |= span
        # The facts a metric (or dimension …) phrase also names, for "average <phrase>".
        shadowed = targets[0].kind != "fact"
        facts = tuple(t for t in lex[toks[start:end]] if shadowed and t.kind == "fact")
        if not shadowed:
            metrics = _governing_metrics(lex, toks[start + 1 : end], targets)
            if metrics:
                targets, facts = metrics, targets
        mentions.append(Mention(start, end, targets, facts))
    mentions.sort(key=lambda m: m.start)
    said = written(question)
    as_said = tuple(None if said is None or o is None else said[o] for o in origin)
    picked = _entity_nouns(lens, lex, ws, toks, mentions)
    return Retrieval(ws, toks, _short_values(lens, values or {}, as_said, toks, picked))


def _noun_spans(lens: Lens, toks: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans of model nouns of several words ("tv channel" of table ``TV_Channel``),
    longest first and not overlapping: a shorter lens phrase inside one ("channel", a
    column's synonym) does not split the noun the question names its rows by."""
    several = {k for k in model_nouns(lens) if len(k) > 1}
    if not several:
        return []
    longest = max(len(k) for k in several)
    spans = sorted(
        (
            (start, start + n)
            for start in range(len(toks))
            for n in range(2, longest + 1)
            if toks[start : start + n] in several
        ),
        key=lambda s: (s[0] - s[1], s[0]),
    )
    kept: list[tuple[int, int]] = []
    for a, b in spans:
        if all(b <= c or d <= a for c, d in kept):
            kept.append((a, b))
    return kept


def _short_values(
    lens: Lens,
    values: DimensionValues,
    said: tuple[tuple[str, bool] | None, ...],
    toks: tuple[str, ...],
    mentions: tuple[Mention, ...],
) -> tuple[Mention, ...]:
    """``mentions`` with the values spelled only with stopwords (``A``, ``I``: the
    lexicon leaves them out, they would match ordinary words) read where one stands
    right after a dimension phrase of its own column and is written as stored (a
    capital ``A``, ``grade A``) or quoted (``grade 'a'``); anywhere else the word stays
    a stopword. ``said`` is each token as written and whether it is quoted (``None``:
    not known, a word a vocabulary entry put in)."""
    taken = {i for m in mentions for i in range(m.start, m.end)}
    out = list(mentions)
    for d in mentions:
        if d.kind != "dimension":
            continue
        named: dict[int, list[Target]] = {}
        for t in d.targets:
            for value in stopword_values(lens, values, t.model, t.name):
                key = tokenize(value)
                span = range(d.end, d.end + len(key))
                if (
                    toks[span.start : span.stop] == key
                    and not taken & set(span)
                    and _as_stored(value, [said[i] for i in span])
                ):
                    named.setdefault(span.stop, []).append(Target("value", t.model, t.name, value))
        if named:
            end = max(named)
            out.append(Mention(d.end, end, tuple(named[end])))
            taken |= set(range(d.end, end))
    return tuple(sorted(out, key=lambda m: m.start))


def _as_stored(value: str, said: list[tuple[str, bool] | None]) -> bool:
    """Whether the words ``said`` are ``value`` written as stored (a value holding a
    capital letter, spelled with the same case), or one quoted word."""
    known = [w for w in said if w is not None]
    if len(known) != len(said):
        return False
    if len(known) == 1 and known[0][1]:
        return True
    stored = written(value)
    return (
        value != value.lower()
        and stored is not None
        and tuple(w for w, _ in stored) == tuple(w for w, _ in known)
    )


# Words right before a model's noun that pick its rows rather than count them; "by"
# only before the singular ("by depot"; "by rentals" ranks by the count), and never
# right after "per" (a ratio or a breakdown: the grammar weighs it).
_PICKING = frozenset({"which", "what", "each", "every", "list", "show", "display", "name", "names"})
_PICKING_ONE = frozenset({"by"})
_SKIPPED_BEFORE = frozenset({"the", "all", "of"})
_COUNTING_BEFORE_OF = frozenset({"number", "count", "total", "amount"})


def _entity_nouns(
    lens: Lens,
    lex: Mapping[tuple[str, ...], tuple[Target, ...]],
    ws: tuple[str, ...],
    toks: tuple[str, ...],
    mentions: list[Mention],
) -> tuple[Mention, ...]:
    """``mentions`` with a count metric named by its model's noun read as the entities
    where the question picks rows (module docstring)."""
    nouns = model_nouns(lens)
    kept: list[Mention] = []
    for m in mentions:
        model = _counted_by_noun(lens, nouns, toks[m.start : m.end], m)
        if model is None or not _picks_rows(ws, m.start, m.end):
            kept.append(m)
            continue
        own = tuple(
            t
            for t in lex.get(toks[m.start : m.end], ())
            if t.kind == "dimension" and t.model == model
        )
        if own:
            kept.append(Mention(m.start, m.end, own))
    return tuple(kept)


def _counted_by_noun(
    lens: Lens, nouns: Mapping[tuple[str, ...], str], phrase: tuple[str, ...], m: Mention
) -> str | None:
    """The model whose plain row count every target of ``m`` is, when ``phrase`` is
    that model's noun; else ``None``."""
    if m.kind != "metric" or nouns.get(phrase) is None:
        return None
    model = nouns[phrase]
    for t in m.targets:
        metric = lens.metrics[t.name]
        if metric.model != model or metric.filters or not _plain_count(lens, metric.expression):
            return None
    return model


def _plain_count(lens: Lens, expression: str) -> bool:
    try:
        tree = sqlglot.parse_one(expression, read=lens.config.dialect)
    except SqlglotError:
        return False
    return isinstance(tree, exp.Count) and tree.find(exp.Case, exp.Filter) is None


def _picks_rows(ws: tuple[str, ...], start: int, end: int) -> bool:
    """Whether the noun at ``[start, end)`` comes right after a word that picks rows
    (skipping "the", "all", "of": "list all the drivers", "which driver", "for each
    depot", "by depot"; "number of drivers" counts). Right after "per" it stays the
    count: "net revenue per order" is a ratio (:mod:`reconciler.reading.grammar.ratios`
    weighs it)."""
    if start > 0 and ws[start - 1] == "per":
        return False
    singular = stem(ws[end - 1]) == ws[end - 1]
    k = start - 1
    while k >= 0 and ws[k] in _SKIPPED_BEFORE:
        if ws[k] == "of" and k > 0 and ws[k - 1] in _COUNTING_BEFORE_OF:
            return False
        k -= 1
    return k >= 0 and (ws[k] in _PICKING or (singular and ws[k] in _PICKING_ONE))


def spoken(lens: Lens, said: tuple[str, ...]) -> tuple[str, ...]:
    """The question's words ``said`` with the lens's ``vocabulary`` applied.

    Each vocabulary word or phrase (compared stemmed, longest first) is replaced by
    the words of the lens term it means, or dropped when that term is ``""``; every
    later step sees the replaced words, so "papers published in 2020" reads as the
    lens's "papers papers in 2020" and "sold" reads as "sales".
    """
    return _spoken(lens, said)[0]


def _spoken(lens: Lens, said: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """:func:`spoken`, and for each word out the index of the word said it is (``None``
    for a word a vocabulary entry put in)."""
    vocabulary = lensmemo.memoized(lens, "vocabulary", lambda: MappingProxyType(_vocabulary(lens)))
    if not vocabulary:
        return said, tuple(range(len(said)))
    longest = max(len(k) for k in vocabulary)
    stems_said = tuple(stem(w) for w in said)
    out: list[str] = []
    origin: list[int | None] = []
    i = 0
    while i < len(said):
        width = next((n for n in range(longest, 0, -1) if stems_said[i : i + n] in vocabulary), 0)
        if width:
            put = _in_number(vocabulary[stems_said[i : i + width]], said[i : i + width][-1])
            out.extend(put)
            origin.extend([None] * len(put))
            i += width
        else:
            out.append(said[i])
            origin.append(i)
            i += 1
    return tuple(out), tuple(origin)


def _in_number(term: tuple[str, ...], last_said: str) -> tuple[str, ...]:
    """The lens term's words in the number of the word said last: "the high schooler"
    with ``high schooler: students`` reads "the student", "high schoolers" "students",
    so a singular question stays about one row."""
    if not term:
        return term
    *head, last = term
    said_plural = stem(last_said) != last_said.lower()
    if stem(last) != last and not said_plural:
        return (*head, stem(last))
    if stem(last) == last and said_plural and stem(last + "s") == last:
        return (*head, last + "s")
    return term


def _vocabulary(lens: Lens) -> dict[tuple[str, ...], tuple[str, ...]]:
    return {
        tuple(stem(w) for w in words(word)): words(term)
        for word, term in lens.config.vocabulary.items()
    }


def _governing_metrics(
    lex: Mapping[tuple[str, ...], tuple[Target, ...]],
    rest: tuple[str, ...],
    facts: tuple[Target, ...],
) -> tuple[Target, ...]:
    """The metrics a model-prefixed fact phrase ("ad stats clicks") also names.

    Governed definitions first: when the phrase after the model's name names both
    these facts and metrics on their model ("clicks": metric ``clicks`` and fact
    ``clicks``), the phrase means the metrics, exactly as the bare phrase does, so
    their filters apply and a changed metric is seen by the gate. ``()`` otherwise.
    """
    models = {t.model for t in facts}
    for k in range(len(rest)):
        named = lex.get(rest[k:], ())
        metrics = tuple(t for t in named if t.kind == "metric" and t.model in models)
        if metrics and all(f in named for f in facts):
            return metrics
    return ()


def time_models(lens: Lens, source: str) -> list[str]:
    """The nearest models (by declared joins from ``source``) that have a time dimension."""
    found = lensmemo.memoized(lens, ("time_models", source), lambda: _time_models(lens, source))
    return list(found)


def _time_models(lens: Lens, source: str) -> tuple[str, ...]:
    joins = join_index(lens)
    ranked: dict[int, list[str]] = {}
    for name in sorted(lens.models):
        model = lens.models[name]
        paths = joins.paths(source, name)
        if paths and model.time_dimension() is not None:
            ranked.setdefault(len(paths[0]), []).append(name)
    return tuple(ranked[min(ranked)]) if ranked else ()


# "how many customers", "number of customers", "share of customers", "the most customers".
COUNT_OPENERS = frozenset(
    (
        *((w, "of") for w in ("number", "count", "share", "percentage", "percent")),
        ("how", "many"),
        ("most",),
        ("fewest",),
    )
)


def counted_model(lens: Lens, found: Retrieval) -> tuple[int, int, int, str] | None:
    """The first "how many <model noun>" of the question, else ``None``.

    Openers: "how many", "number of", "count of", "share of" (and the other share
    words), "most", "fewest"; boolean flags and dimension values may stand between
    ("how many active customers", "the number of JetBlue flights": the value is a
    filter the caller reads), then the word "new" (left for the fast tier to read or
    decline), then "the" ("the number of the cars with …"). The
    noun is a model or table name outside lens phrases, or a dimension phrase of
    that same model spelled like it (a ``customer`` dimension of model ``customers``).

    Returns:
        ``(opener start, noun start, noun end, model)``; the fast tier counts that
        model's entities when the question names no metric.
    """
    nouns = model_nouns(lens)
    longest = max((len(k) for k in nouns), default=0)
    covered = found.covered()
    own = {
        (m.start, m.end)
        for m in found.mentions
        if m.kind == "dimension"
        and nouns.get(found.tokens[m.start : m.end]) in {t.model for t in m.targets}
    }
    flag_starts = {m.end: m.start for m in found.mentions if m.kind in ("flag", "value")}
    toks = found.tokens
    for i in range(len(toks)):
        n = next(
            (
                n
                for n in range(longest, 0, -1)
                if toks[i : i + n] in nouns
                and ((i, i + n) in own or not covered & set(range(i, i + n)))
            ),
            0,
        )
        if not n:
            continue
        k = i
        while k in flag_starts:
            k = flag_starts[k]
        if k > 0 and toks[k - 1] == "new" and k - 1 not in covered:
            k -= 1  # "how many new accounts …": the counted rows; "new" is read by the caller
        if k > 0 and toks[k - 1] == "the" and k - 1 not in covered:
            k -= 1  # "the number of the cars …"
        for width in (2, 1):
            at = k - width
            if at >= 0 and toks[at:k] in COUNT_OPENERS and not covered & set(range(at, k)):
                return at, i, i + n, nouns[toks[i : i + n]]
    return None


def metric_models(lens: Lens, metric: str) -> tuple[str, ...]:
    """The metric's model and any model its expression or filters name as a qualifier."""
    return lensmemo.memoized(lens, ("metric_models", metric), lambda: _metric_models(lens, metric))


def _metric_models(lens: Lens, metric: str) -> tuple[str, ...]:
    m = lens.metrics[metric]
    names = {m.model}
    for sql in (m.expression, *m.filters):
        try:
            tree = sqlglot.parse_one(sql, read=lens.config.dialect)
        except SqlglotError:
            continue
        names.update(
            named
            for col in tree.find_all(exp.Column)
            if col.table and (named := model_named(lens, col.table)) is not None
        )
    return tuple(sorted(names))
