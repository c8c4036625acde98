"""The head of a listing question: whose rows, which columns (pure).

:mod:`reconciler.reading.grammar.existence` reads listings such as "Return the customer ID
and name of customers who …"; this module reads their head — everything before the
clause that restricts the rows — and resolves its columns:

* an opener (``return``, ``list``, ``show``, ``give``, ``find``, ``display``, ``get``,
  ``provide``, ``what are``), then ``distinct`` / ``unique`` and fillers (``the``,
  ``all``, ``me``, ``list of``);
* the columns and the model noun: ``<columns> of|for [all] [the] <model>``,
  ``<model> <columns>`` ("Return users (user ID and username)", a plural noun first),
  or ``<columns>`` alone, when exactly one model holds them all; ``which <model>``
  asks for the model's label, ``how many <model>`` for the number of its rows kept;
* a column is a dimension, time dimension or fact of the model, ``name`` / ``title``
  (its label, :func:`~reconciler.reading.phrases.labels.row_label`) or ``id`` (its
  one-column primary key, named by the dimension over it when there is one), or the
  name the table stores one column under (``year`` for a ``model_year`` over ``year``);
  a bare ``name`` whose label is ``<noun> name`` declines when the model has another
  ``…_name`` dimension (``maker_name`` beside ``full_name``: which name?).

Any other word means another shape (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.assembly.text import stems, tokenize
from reconciler.lens import Lens, Model
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import KEY_WORDS, LABEL_WORDS
from reconciler.reading.phrases.labels import row_label, word_column
from reconciler.reading.phrases.words import plural

_OPENERS = stems("return list show give find display get provide")
_DISTINCT = frozenset({"distinct", "unique"})
_HEAD_FILLER = frozenset({"the", "all", "me", "list", "of", "for", "and"})


@dataclass
class Head:
    """What the head of the question asks for."""

    model: str
    noun: tuple[int, int] | None
    items: list[Mention | int]  # column mentions, or the index of a name/id word
    distinct: bool
    which: bool = False
    count: bool = False  # "how many <A> …": the number of A rows kept


def noun_width(lens: Lens, toks: tuple[str, ...], i: int) -> int:
    """Tokens in the longest model noun at ``i``, covered by a lens phrase or not."""
    nouns = model_nouns(lens)
    longest = max((len(k) for k in nouns), default=0)
    fits = range(min(longest, len(toks) - i), 0, -1)
    return next((n for n in fits if toks[i : i + n] in nouns), 0)


def read_head(lens: Lens, found: Retrieval, at: int) -> Head | None:
    """The model, columns and ``distinct`` of the head ``tokens[:at]``, or ``None``."""
    toks, nouns = found.tokens, model_nouns(lens)
    if toks[:1] == ("which",):
        named = nouns.get(toks[1:at])
        return Head(named, (1, at), [], False, which=True) if named else None
    if toks[:2] == ("how", "many"):
        named = nouns.get(toks[2:at])
        return Head(named, (2, at), [], False, count=True) if named else None
    if toks[:2] in (("what", "are"), ("what", "is"), ("what", "were"), ("what", "was")):
        i = 2
    elif toks[:1] and toks[0] in _OPENERS:
        i = 1
    else:
        return None
    distinct = False
    while i < at and (toks[i] in _HEAD_FILLER or toks[i] in _DISTINCT):
        distinct = distinct or toks[i] in _DISTINCT
        i += 1
    noun = _trailing_noun(lens, found, i, at)
    end = noun[0] if noun else at
    if noun is None:
        leading = noun_width(lens, toks, i)
        mention = next((m for m in found.mentions if m.start == i), None)
        named = nouns.get(toks[i : i + leading]) if leading else None
        # "merchants merchant ID": a phrase of the noun's own model may start at it
        own = mention is not None and all(t.model == named for t in mention.targets)
        fits = mention is None or mention.end <= i + leading or own
        if named and plural(found, i + leading - 1) and fits:
            noun = (i, i + leading)
            i = i if own and mention is not None and mention.end > i + leading else i + leading
    items = _head_items(found, i, end)
    if items is None or not items:
        return None
    if noun is not None:
        model = nouns[toks[noun[0] : noun[1]]]
    else:
        shared = [{t.model for t in item.targets} for item in items if not isinstance(item, int)]
        if len(shared) != len(items):
            return None  # "the names" of what?
        common = set.intersection(*shared)
        if len(common) != 1:
            return None
        model = common.pop()
    return Head(model, noun, items, distinct)


def _trailing_noun(lens: Lens, found: Retrieval, i: int, at: int) -> tuple[int, int] | None:
    """The span of ``of|for [all] [the] <model noun>`` ending the head, if any."""
    toks = found.tokens
    for k in range(at - 1, i, -1):
        if toks[k] not in ("of", "for") or k in found.covered():
            continue
        start = k + 1
        while start < at and toks[start] in ("all", "the"):
            start += 1
        if start < at and toks[start:at] in model_nouns(lens):
            return start, at
        return None
    return None


def _head_items(found: Retrieval, i: int, end: int) -> list[Mention | int] | None:
    """The column items of ``tokens[i:end]``: mentions and name/id words."""
    starts = {m.start: m for m in found.mentions}
    items: list[Mention | int] = []
    while i < end:
        mention = starts.get(i)
        if mention is not None:
            if mention.kind not in ("dimension", "time_dimension", "fact") or mention.end > end:
                return None
            items.append(mention)
            i = mention.end
            continue
        t = found.tokens[i]
        if t in LABEL_WORDS | KEY_WORDS or (t.isalpha() and t not in _HEAD_FILLER | _DISTINCT):
            items.append(i)  # name / id, or a column's stored name ("year")
        i += 1
    return items


def head_columns(model: Model, found: Retrieval, head: Head) -> list[tuple[str, str]]:
    """``(alias, SQL)`` of every column the head asks for, each once, in order."""
    noun = tuple(found.tokens[slice(*head.noun)]) if head.noun else ()
    phrase = " ".join(found.words[slice(*head.noun)]) if head.noun else model.name
    if head.which:
        label = row_label(model, noun, phrase)
        return [(label.name, label.sql)]
    out: list[tuple[str, str]] = []
    for item in head.items:
        if isinstance(item, int):
            column = _word_column(model, found.tokens[item], noun, phrase)
        else:
            column = _mention_column(model, found, item)
        if column not in out:
            out.append(column)
    return out


def _word_column(model: Model, word: str, noun: tuple[str, ...], phrase: str) -> tuple[str, str]:
    """The column a bare ``name`` / ``title`` (the label), ``id`` (the key) or a
    column's stored name (``year`` for ``model_year``, whose SQL is ``year``) asks for."""
    if word in KEY_WORDS | LABEL_WORDS:
        return word_column(model, word, noun, phrase)
    stored = [c for c in model.columns() if tokenize(c.sql) == (word,)]
    if len(stored) != 1:
        raise Declined(
            DeclineKind.UNKNOWN_TERM, f"{word!r} names no one column of model {model.name!r}"
        )
    return stored[0].name, stored[0].sql


def _mention_column(model: Model, found: Retrieval, mention: Mention) -> tuple[str, str]:
    """``(alias, SQL)`` of the one column of ``model`` that ``mention`` names."""
    named = {t.name for t in mention.targets if t.model == model.name}
    columns = [c for c in model.columns() if c.name in named]
    if len(columns) != 1:
        phrase = " ".join(found.words[mention.start : mention.end])
        raise Declined(
            DeclineKind.UNKNOWN_TERM, f"{phrase!r} is not one column of model {model.name!r}"
        )
    return columns[0].name, columns[0].sql
