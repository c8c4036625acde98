"""Grammar words of the ``fast`` tier: what the tokens outside lens phrases say (pure).

:func:`read_grammar` walks the question's tokens that no lens phrase covered and
classifies each one — a period (:mod:`reconciler.reading.phrases.periods`), a whole-span
phrase, a model noun, a grain, a ranking word or number, an aggregation word, a
comparison word (``vs``), a share word (``share``, ``percentage``), ``with ties``,
a change between periods (``month over month``, ``yoy``, ``change``, ``percent
change``), an opening ``Return the …`` (as "show me the …") — or records it as
unknown, which makes the question decline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, asks_who
from reconciler.assembly.text import GRAIN_WORDS, STOPWORDS
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.lex import (
    AGGREGATE_WORDS,
    ASCENDING,
    BREAKDOWN_WORDS,
    COMPARE_WORDS,
    DESCENDING,
    NUMBER_WORDS,
    PERCENT_WORDS,
    SHARE_WORDS,
)
from reconciler.reading.phrases.periods import Period, all_time_at, period_at

_CHANGE_GRAINS = {"mom": "month", "qoq": "quarter", "yoy": "year"}
_CHANGE_WORDS = frozenset({"change", "difference"})
# Words that may open a request before its verb: "please provide", "could you provide".
_POLITE = frozenset({"please", "can", "could", "you"})
# Words that tie a measure to the rows it is taken over and add nothing: "the maximum
# fee among members with …", "the corresponding number of loans", "corresponding to".
_LINKING = frozenset({"among", "corresponding"})


@dataclass
class Reading:
    """What the grammar words outside lens phrases said (mutable while scanning)."""

    periods: list[Period] = field(default_factory=list)
    period_spans: list[tuple[int, int]] = field(default_factory=list)  # their tokens
    all_time: bool = False
    comparison: bool = False
    share: str | None = None
    share_at: int = -1
    change_grains: set[str] = field(default_factory=set)
    change: list[str] = field(default_factory=list)
    ties: bool = False
    noun_at: dict[int, str] = field(default_factory=dict)
    grains: dict[str, int] = field(default_factory=dict)
    directions: set[bool] = field(default_factory=set)
    numbers: list[int] = field(default_factory=list)
    number_at: list[int] = field(default_factory=list)  # the token index of each number
    model_nouns: set[str] = field(default_factory=set)
    aggregates: dict[int, str] = field(default_factory=dict)
    who: bool = False
    who_plural: bool = False
    unknown: list[str] = field(default_factory=list)
    # the closing ordering's direction, when it orders by a value (None: no such phrase)
    ordered: bool | None = None


def read_grammar(lens: Lens, found: Retrieval) -> Reading:
    """Classify every token outside a lens phrase, or record it as unknown.

    Raises:
        Declined: a relative period when the lens pins no ``as_of``, or both a
            share and a percentage asked for.
    """
    scan = _Scan(found, lens.config.as_of, model_nouns(lens))
    i = 0
    if asks_who(found):
        scan.reading.who = True
        scan.reading.who_plural = found.words[1:2] in (("are",), ("were",))
        i = 1
    while i < len(found.tokens):
        if i not in scan.free:
            i += 1
            continue
        after = scan.phrase(i)
        if after is None:
            scan.word(i)
            i += 1
        else:
            i = after
    return scan.reading


class _Scan:
    """One pass of :func:`read_grammar` over a question's free tokens."""

    def __init__(
        self, found: Retrieval, as_of: str | None, nouns: Mapping[tuple[str, ...], str]
    ) -> None:
        self.found = found
        self.toks = found.tokens
        self.free = set(range(len(self.toks))) - found.covered()
        self.as_of = as_of
        self.nouns = nouns
        self.longest_noun = max((len(k) for k in nouns), default=0)
        self.reading = Reading()

    def phrase(self, i: int) -> int | None:
        """Read a phrase of several tokens at ``i`` (period, whole span, "month over
        month", model noun); the index after it, or ``None`` when none starts here."""
        r, toks = self.reading, self.toks
        found_period = period_at(toks, i, self.free, self.as_of)
        if found_period is not None:
            after, period = found_period
            if all(p.span != period.span for p in r.periods):
                r.periods.append(period)
            r.period_spans.append((i, after))
            return after
        whole = all_time_at(toks, i, self.free)
        if whole is not None:
            r.all_time = True
            return whole
        over = GRAIN_WORDS.get(toks[i]) if i + 2 in self.free and i + 1 in self.free else None
        if over and toks[i + 1] in ("over", "on") and GRAIN_WORDS.get(toks[i + 2]) == over:
            r.change_grains.add(over)  # "month over month", "year-on-year"
            return i + 3
        width = self._noun_width(i)
        if width:
            noun = self.nouns[toks[i : i + width]]
            r.model_nouns.add(noun)
            r.noun_at[i] = noun
            return i + width
        return None

    def _noun_width(self, i: int) -> int:
        """Tokens in the longest free model noun starting at ``i`` (0: none)."""
        return next(
            (
                n
                for n in range(self.longest_noun, 0, -1)
                if self.toks[i : i + n] in self.nouns
                and all(k in self.free for k in range(i, i + n))
            ),
            0,
        )

    def word(self, i: int) -> None:
        """Classify the single token at ``i``, or record it as unknown."""
        if self._keyword(i) or self._share_or_change(i) or self._filler(i):
            return
        if self.toks[i] not in STOPWORDS:
            self.reading.unknown.append(self.found.words[i])

    def _keyword(self, i: int) -> bool:
        """A grain, ranking direction, number, aggregation or comparison word."""
        r, t = self.reading, self.toks[i]
        if t in ("least", "most") and i > 0 and self.toks[i - 1] == "at":
            # "at least 2", "at most 3": a bound on a count, never a ranking direction;
            # the one-measure grammar has no reading of it (the output shapes do)
            r.unknown.append(f"at {self.found.words[i]}")
        elif t in GRAIN_WORDS:
            r.grains.setdefault(GRAIN_WORDS[t], i)
        elif t in DESCENDING or t in ASCENDING:
            r.directions.add(t in DESCENDING)
        elif t.isdigit() or t in NUMBER_WORDS:
            r.numbers.append(int(t) if t.isdigit() else NUMBER_WORDS[t])
            r.number_at.append(i)
        elif t in AGGREGATE_WORDS:
            r.aggregates[i] = t
        elif t in COMPARE_WORDS:
            r.comparison = True
        else:
            return False
        return True

    def _share_or_change(self, i: int) -> bool:
        """A share word, a change step (``yoy``) or a change word (``percent change``)."""
        r, t = self.reading, self.toks[i]
        if t in SHARE_WORDS:
            if r.share not in (None, t):
                raise Declined(
                    DeclineKind.UNSUPPORTED_CONSTRUCT,
                    f"the question asks for both a {r.share} and a {t}",
                )
            r.share, r.share_at = t, i
        elif t in _CHANGE_GRAINS:
            r.change_grains.add(_CHANGE_GRAINS[t])
        elif t in _CHANGE_WORDS:
            percent = r.share_at == i - 1 and r.share in PERCENT_WORDS
            if percent:
                r.share = None  # "percent change" is a change, not a share
            r.change.append("percent" if percent else "change")
        else:
            return False
        return True

    def _filler(self, i: int) -> bool:
        """``with ties`` / ``including ties``, the ``team`` of "who … in the team", the
        ``database`` of "in the database" and a closing "are listed" (every row: they add
        no filter), a linking word (``among``, ``corresponding``), and an opening ``return
        the`` or ``[please | can you | could you] provide | find`` (a request)."""
        toks, t = self.toks, self.toks[i]
        if t == "database" and toks[max(i - 2, 0) : i] == ("in", "the"):
            return True
        if t == "tie" and i > 0 and toks[i - 1] in ("with", "including"):
            self.reading.ties = True
            return True
        if t == "including" and toks[i + 1 : i + 2] == ("tie",):
            return True
        if t == "return" and i == 0 and toks[1:2] == ("the",):
            return True  # "Return the number of …": an opener, like "show me the …"
        if t in ("provide", "find") and all(w in _POLITE for w in toks[:i]):
            return True  # "Please provide a list of …", "Find the …": a request, like "give"
        if t in _LINKING:
            return True
        if t == "listed" and i == len(toks) - 1 and toks[i - 1 : i] in (("are",), ("is",)):
            return True  # "How many countries are listed?": every row, like "in the database"
        # "who … in the team": the people the person dimension ranges over
        return (
            t == "team" and self.reading.who and i > 0 and self.found.words[i - 1] in ("the", "our")
        )


# Plurals that are their own stem: "the names of the people".
_UNMARKED_PLURALS = frozenset({"people", "children", "men", "women"})


def plural(found: Retrieval, index: int) -> bool:
    """Whether the word at ``index`` is plural: not its own stem, or an unmarked plural."""
    word = found.words[index]
    return word != found.tokens[index] or word in _UNMARKED_PLURALS


def phrase_of(found: Retrieval, m: Mention) -> str:
    return " ".join(found.words[m.start : m.end])


def uninvited(found: Retrieval, breakdowns: list[Mention]) -> list[Mention]:
    """The breakdown mentions no breakdown word introduces, in question order.

    A mention is introduced when the word before it (past any ``the``) is one of
    :data:`BREAKDOWN_WORDS`, or ``and`` right after an introduced mention ("by genre
    and track"). Returns the others: phrases that may be filters, not breakdowns.
    """
    introduced: set[int] = set()  # where an introduced mention ends
    out = []
    for mention in sorted(breakdowns, key=lambda m: m.start):
        k = mention.start - 1
        while k >= 0 and found.tokens[k] == "the":
            k -= 1
        before = found.tokens[k] if k >= 0 else ""
        if before in BREAKDOWN_WORDS or (before == "and" and k in introduced):
            introduced.add(mention.end)
        else:
            out.append(mention)
    return out


# Words right before a number that make it an amount the rows hold ("with 4 cylinders",
# "that have 2 doors"), not how many rows to show.
_HOLDING = frozenset({"with", "having", "has", "have", "had"})


def check_row_count(reading: Reading, found: Retrieval) -> None:
    """Decline when the question's one number is an amount of a column, not a count of
    rows: right after ``with`` / ``has`` / ``having`` …, or right before a fact or
    metric phrase ("Which model with 4 cylinders has the largest horsepower?" names no
    row count; it filters on ``cylinders = 4``, which the ranking shapes do not read).

    Raises:
        Declined: ``UNSUPPORTED_CONSTRUCT``, naming the number and the phrase after it.
    """
    for n, at in zip(reading.numbers, reading.number_at, strict=True):
        after = next((m for m in found.mentions if m.start == at + 1), None)
        held = at > 0 and found.tokens[at - 1] in _HOLDING
        if held or (after is not None and after.kind in ("fact", "metric")):
            what = " ".join(found.words[after.start : after.end]) if after else "the rows"
            raise Declined(
                DeclineKind.UNSUPPORTED_CONSTRUCT,
                f"the number {n} reads as an amount of {what!r}, not as how many rows to show",
            )
