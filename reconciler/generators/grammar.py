"""Grammar words of the ``fast`` tier: what the tokens outside lens phrases say (pure).

:func:`read_grammar` walks the question's tokens that no lens phrase covered and
classifies each one — a period (:mod:`reconciler.generators.periods`), a whole-span
phrase, a model noun, a grain, a ranking word or number, an aggregation word, a
comparison word (``vs``), a share word (``share``, ``percentage``), ``with ties``,
a change between periods (``month over month``, ``yoy``, ``change``, ``percent
change``) — or records it as unknown, which makes the question decline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval, asks_who
from reconciler.assembly.text import GRAIN_WORDS, STOPWORDS
from reconciler.generators.compiler import PERCENT_WORDS, SHARE_WORDS, Declined
from reconciler.generators.periods import Period, all_time_at, period_at
from reconciler.lens import Lens

DESCENDING = frozenset({"top", "highest", "largest", "biggest", "most", "greatest"})
ASCENDING = frozenset({"bottom", "lowest", "smallest", "least", "fewest"})
_NUMBERS = "one two three four five six seven eight nine ten"
_NUMBER_WORDS = {w: i for i, w in enumerate(_NUMBERS.split(), start=1)}
# Aggregation words a question may add, and the aggregates the metric must use for
# the word to be redundant rather than a different question ("average revenue").
AGGREGATE_WORDS: Mapping[str, tuple[type[exp.Expr], ...]] = {
    "total": (exp.Sum, exp.Count),
    "sum": (exp.Sum,),
    "number": (exp.Count, exp.Sum),
    "count": (exp.Count,),
    "average": (exp.Avg, exp.Div),
    "avg": (exp.Avg, exp.Div),
    "mean": (exp.Avg, exp.Div),
    "minimum": (exp.Min,),
    "min": (exp.Min,),
    "maximum": (exp.Max,),
    "max": (exp.Max,),
}
_CHANGE_GRAINS = {"mom": "month", "qoq": "quarter", "yoy": "year"}
_CHANGE_WORDS = frozenset({"change", "difference"})
COMPARE_WORDS = frozenset({"vs", "versus", "compared", "compare", "against"})


@dataclass
class Reading:
    """What the grammar words outside lens phrases said (mutable while scanning)."""

    periods: list[Period] = field(default_factory=list)
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
    model_nouns: set[str] = field(default_factory=set)
    aggregates: dict[int, str] = field(default_factory=dict)
    who: bool = False
    who_plural: bool = False
    unknown: list[str] = field(default_factory=list)


def read_grammar(lens: Lens, found: Retrieval) -> Reading:
    """Classify every token outside a lens phrase, or record it as unknown."""
    toks = found.tokens
    free = set(range(len(toks))) - found.covered()
    nouns = model_nouns(lens)
    longest_noun = max((len(k) for k in nouns), default=0)
    r = Reading()
    i = 0
    if asks_who(found):
        r.who = True
        r.who_plural = found.words[1:2] in (("are",), ("were",))
        i = 1
    while i < len(toks):
        if i not in free:
            i += 1
            continue
        found_period = period_at(toks, i, free, lens.config.as_of)
        if found_period is not None:
            i, period = found_period
            if all(p.span != period.span for p in r.periods):
                r.periods.append(period)
            continue
        whole = all_time_at(toks, i, free)
        if whole is not None:
            r.all_time = True
            i = whole
            continue
        over = GRAIN_WORDS.get(toks[i]) if i + 2 in free and i + 1 in free else None
        if over and toks[i + 1] in ("over", "on") and GRAIN_WORDS.get(toks[i + 2]) == over:
            r.change_grains.add(over)  # "month over month", "year-on-year"
            i += 3
            continue
        noun = next(
            (
                (n, nouns[toks[i : i + n]])
                for n in range(longest_noun, 0, -1)
                if toks[i : i + n] in nouns and all(k in free for k in range(i, i + n))
            ),
            None,
        )
        t = toks[i]
        if noun is not None:
            r.model_nouns.add(noun[1])
            r.noun_at[i] = noun[1]
            i += noun[0]
            continue
        if t in GRAIN_WORDS:
            r.grains.setdefault(GRAIN_WORDS[t], i)
        elif t in DESCENDING or t in ASCENDING:
            r.directions.add(t in DESCENDING)
        elif t.isdigit() or t in _NUMBER_WORDS:
            r.numbers.append(int(t) if t.isdigit() else _NUMBER_WORDS[t])
        elif t in AGGREGATE_WORDS:
            r.aggregates[i] = t
        elif t in COMPARE_WORDS:
            r.comparison = True
        elif t in SHARE_WORDS:
            if r.share not in (None, t):
                raise Declined(f"the question asks for both a {r.share} and a {t}")
            r.share, r.share_at = t, i
        elif t in _CHANGE_GRAINS:
            r.change_grains.add(_CHANGE_GRAINS[t])
        elif t in _CHANGE_WORDS:
            percent = r.share_at == i - 1 and r.share in PERCENT_WORDS
            if percent:
                r.share = None  # "percent change" is a change, not a share
            r.change.append("percent" if percent else "change")
        elif t == "tie" and i > 0 and toks[i - 1] in ("with", "including"):
            r.ties = True
        elif t == "including" and toks[i + 1 : i + 2] == ("tie",):
            pass
        elif t == "team" and r.who and i > 0 and found.words[i - 1] in ("the", "our"):
            pass  # "who … in the team": the people the person dimension ranges over
        elif t not in STOPWORDS:
            r.unknown.append(found.words[i])
        i += 1
    return r


def plural(found: Retrieval, index: int) -> bool:
    return found.words[index] != found.tokens[index]


def phrase_of(found: Retrieval, m: Mention) -> str:
    return " ".join(found.words[m.start : m.end])
