"""Text normalization for retrieval: words, stems, stopwords, time words (pure).

Text is compared in a normalized form (:func:`tokenize`): lowercase, punctuation
and underscores turned into spaces, apostrophes dropped, each word reduced by a
small plural stemmer (``categories`` → ``category``, ``regions`` → ``region``).
Both sides of every comparison — a lens phrase and a question — go through the
same functions, so an imperfect stem still compares equal to itself. SQL is
compared in sqlglot's normalized output (:func:`canonical_sql`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

import sqlglot
from sqlglot.errors import SqlglotError

_APOSTROPHE = re.compile(r"['’‘`]")
_SEPARATOR = re.compile(r"[\W_]+")


def stem(word: str) -> str:
    """Reduce a lowercase word to its singular form with a few plural rules.

    Deliberately tiny (``-ies`` → ``-y``; ``-sses``/``-shes``/``-ches``/``-xes``/``-tuses``
    drop ``es``; other ``-s`` drop it unless the word ends in ``ss``/``us``/``is``),
    and applied to both sides of every comparison, so an imperfect stem
    (``series`` → ``sery``) still compares equal to itself. Words of three letters or
    fewer are kept, but for ``ids`` → ``id`` ("the customer IDs").
    """
    if word == "ids":
        return "id"
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "tuses")):  # "statuses" → "status"
        return word[:-2]
    if word.endswith(("ss", "us", "is")) or not word.endswith("s"):
        return word
    return word[:-1]


def words(text: str) -> tuple[str, ...]:
    """Lowercase words of ``text``: punctuation and underscores split, apostrophes dropped."""
    return tuple(w for w in _SEPARATOR.split(_APOSTROPHE.sub("", text.lower())) if w)


# A word as written: letters and digits, with any apostrophes inside or around it.
_WRITTEN = re.compile(r"(?:[^\W_]|['’‘`])+")
_QUOTES = "'’‘`\"“”"


def written(text: str) -> tuple[tuple[str, bool], ...] | None:
    """Each word of ``text`` as written (its casing kept, apostrophes dropped) and whether
    it stands inside quotes (``'A'``, ``"A"``): the same words, at the same indices, as
    :func:`words`; ``None`` when the two do not line up (a letter whose lowercase splits)."""
    out: list[tuple[str, bool]] = []
    for match in _WRITTEN.finditer(text):
        word = _APOSTROPHE.sub("", match.group(0))
        if not word:
            continue
        before = match.group(0)[:1] in _QUOTES or text[match.start() - 1 : match.start()] in _QUOTES
        after = match.group(0)[-1:] in _QUOTES or text[match.end() : match.end() + 1] in _QUOTES
        out.append((word, bool(before and after)))
    return tuple(out) if tuple(w.lower() for w, _ in out) == words(text) else None


def tokenize(text: str) -> tuple[str, ...]:
    """The normalized tokens of ``text``: :func:`words`, each :func:`stem`-med."""
    return tuple(stem(w) for w in words(text))


def normalize(text: str) -> str:
    """The normalized form of a question or phrase: its tokens joined by one space."""
    return " ".join(tokenize(text))


def stems(text: str) -> frozenset[str]:
    """The set of :func:`tokenize` tokens of ``text``."""
    return frozenset(tokenize(text))


# Words that carry no meaning for the question grammar. Conservative on purpose:
# negations, comparisons and relative-date words ("not", "since", "last") are absent,
# so a question using them is left with an unknown word and the fast tier declines.
STOPWORDS = stems(
    """a about across all am an and any are as at be been being break broken by can could
    did do does down during each every for from get give got group grouped had has have how
    i in into is it its list many me much my of on only or our overall per please see show
    split tell that the their there these those to us use used uses using was we were what
    exist exists occur occurs occurred happen happens happened when where which who whose
    with would you your make placed made generated earned booked recorded sold"""
)
# The stopwords that are domain words, not grammar: a lens column or metric named by one
# ("make" of a car, "land use") keeps its name; "how", "by" or "what" never name a lens
# phrase. "Use" relates rows to what they have, as "have" does ("channels that use
# English"); "occur" and "happen" say no more than "are" ("concerts that occurred in 2014").
DOMAIN_STOPWORDS = stems(
    "make placed made generated earned booked recorded sold use used uses using"
)
# The verbs among them that may name a date ("booked in 2025"): ignorable only when no
# time dimension of the lens shares their root (:func:`verb_root`), see
# :func:`reconciler.assembly.lexicon.lexicon`.
DATE_VERBS = stems("placed made generated earned booked recorded sold")


def verb_root(word: str) -> str:
    """A word without its ``-ing`` / ``-ed`` / ``-e`` ending: ``booked``, ``booking`` and
    ``book`` → ``book``; ``placed`` and ``place`` → ``plac``. Compared only against the
    same reduction of a time dimension's words, so a crude root still compares equal."""
    for ending in ("ing", "ed", "e"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


# Grain words of the time-series grammar (adjective or noun) → DATE_TRUNC unit.
GRAIN_WORDS: Mapping[str, str] = {
    stem(w): g
    for g, ws in {
        "day": "daily day days",
        "week": "weekly week weeks",
        "month": "monthly month months",
        "quarter": "quarterly quarter quarters",
        "year": "yearly annual annually year years",
    }.items()
    for w in ws.split()
}

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
MONTHS: Mapping[str, int] = {
    name: i for i, full in enumerate(_MONTH_NAMES.split(), start=1) for name in (full, full[:3])
} | {"sept": 9}

YEAR_RE = re.compile(r"^(19|20)\d\d$")
QUARTER_RE = re.compile(r"^q([1-4])$")


def mentions_time(tokens: Iterable[str]) -> bool:
    """Whether tokens hold a grain word, a year, a quarter (``q3``) or a month name."""
    return any(
        t in GRAIN_WORDS or YEAR_RE.match(t) or QUARTER_RE.match(t) or t in MONTHS for t in tokens
    )


# Pure in its arguments, and every assembly compares each exemplar's SQL: memoized.
@functools.lru_cache(maxsize=4096)
def canonical_sql(sql: str, dialect: str) -> str:
    """SQL through sqlglot's normalized output (comments dropped); raw text if it fails."""
    try:
        return sqlglot.parse_one(sql, read=dialect).sql(
            dialect=dialect, comments=False, normalize=True
        )
    except SqlglotError:
        return " ".join(sql.split())


# A closing ordering phrase: "… ordered by net revenue", "…, sort the results by month
# desc", "… in descending order", "… sorted in descending order by cost", "… ordered
# from highest to lowest", "… ordered by the highest rating first", "… sorted by rating
# from highest to lowest", "… in descending order of rating", and a sentence
# "Sort by …" or "Sort the names in ascending order.". A bare "order by" is not one
# ("net revenue per order by region").
_VERB = (
    r"[\s,;]*(?:\b(?:ordered|sorted|(?:order|sort)\s+(?:the\s+)?(?:results?|rows|them|it|output))"
    r"|(?<=[.?!])\s*(?:order|sort)(?=\s+by\b)|,\s*and\s+(?:order|sort)(?=\s+by\b))"
)
_END = r"[\s.?!]*$"
_ORDERINGS = tuple(
    re.compile(_VERB + body + _END, re.IGNORECASE)
    for body in (
        r"\s+in\s+(?P<dir>ascending|descending)\s+order\s+by\s+(?P<key>[\w\s]+?)",
        r"\s+from\s+(?P<dir>highest|lowest)\s+to\s+(?:lowest|highest)(?:\s+(?P<key>[\w\s]+?))?",
        r"\s+by\s+(?:the\s+)?(?P<dir>highest|lowest)\s+(?P<key>[\w\s]+?)\s+first",
        r"\s+by\s+(?P<key>[\w\s]+?)[\s,]+from\s+(?P<dir>highest|lowest)\s+to\s+(?:lowest|highest)",
        r"\s+by\s+(?P<key>[\w\s]+?)"
        r"(?:[\s,]+(?:in\s+)?(?P<dir>ascending|descending|asc|desc)(?:\s+order)?)?",
    )
)
# A sentence "Sort the names in ascending order." names its key before the direction.
_SORT_THE = re.compile(
    r"(?<=[.?!])\s*(?:sort|order)\s+(?:the\s+)?"
    r"(?:(?:results?|rows|them|it|output)|(?P<key>[\w\s]+?))\s+in\s+"
    r"(?P<dir>ascending|descending)\s+order" + _END,
    re.IGNORECASE,
)
_ORDERINGS += (_SORT_THE,)
_IN_ORDER = re.compile(
    r"[\s,;]*(?:\b(?:ordered|sorted|arranged|listed)\s+)?"
    r"\bin\s+(?P<dir>ascending|descending)\s+order\b[\s.?!]*$",
    re.IGNORECASE,
)
# "… in descending order of age": the key after the direction, no verb needed.
_IN_ORDER_OF = re.compile(
    r"[\s,;]*(?:\b(?:ordered|sorted|arranged|listed)\s+)?"
    r"\bin\s+(?P<dir>ascending|descending)\s+order\s+of\s+(?P<key>[\w\s]+?)" + _END,
    re.IGNORECASE,
)
_ORDERINGS += (_IN_ORDER_OF,)
_FROM_TO = re.compile(r"\s+from\s+(highest|lowest)\s+to\s+(lowest|highest)\b", re.IGNORECASE)


def ordering_phrase(question: str) -> tuple[str, str | None, str | None] | None:
    """The question's closing ordering phrase, as ``(question without it, the key's
    words or None, the direction word or None)``, else ``None``.

    Assembly retrieves on the question without the phrase's own words ("ordered",
    "by", "descending") but with its key, so "ordered" never selects an ``orders``
    metric; the fast tier reads the phrase (:mod:`reconciler.reading.phrases.ordering`).
    """
    for pattern in _ORDERINGS:
        match = pattern.search(question)
        if match and _one_way(match.group(0)):
            key = match.group("key")
            return question[: match.start()], key.strip() if key else None, match.group("dir")
    match = _IN_ORDER.search(question)
    if match:
        return question[: match.start()], None, match.group("dir")
    return None


def _one_way(phrase: str) -> bool:
    """ "from highest to lowest" / "from lowest to highest", never "highest to highest"."""
    found = _FROM_TO.search(phrase)
    return found is None or found.group(1).lower() != found.group(2).lower()
