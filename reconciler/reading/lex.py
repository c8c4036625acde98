"""Word sets the ``fast`` tier's readers share, each written once (pure).

A word set read by one module alone stays in that module, beside its one client;
a set two or more readers need lives here, so that "most" means the same ranking
to a listing, a pronoun and an exemplar.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

# Ranking words: which end of an ordering a question asks for.
DESCENDING = frozenset({"top", "highest", "largest", "biggest", "most", "greatest", "longest"})
ASCENDING = frozenset({"bottom", "lowest", "smallest", "least", "fewest", "shortest"})
_NUMBERS = "one two three four five six seven eight nine ten"
NUMBER_WORDS = {w: i for i, w in enumerate(_NUMBERS.split(), start=1)}
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
COMPARE_WORDS = frozenset({"vs", "versus", "compared", "compare", "against"})
BREAKDOWN_WORDS = frozenset({"by", "per", "each", "every", "across"})
# A share of a total (a ratio), and the words that show it times 100.
SHARE_WORDS = frozenset({"share", "percentage", "percent", "proportion", "fraction", "pct"})
PERCENT_WORDS = frozenset({"percentage", "percent", "pct"})
# Relative periods: the one before the current one, and the current one.
PREVIOUS_WORDS = frozenset({"last", "previous", "prior"})
CURRENT_WORDS = frozenset({"this", "current"})
# Possession and relative pronouns: "customers who have …", "… and how many has he".
HAVE_WORDS = frozenset({"have", "has", "had"})
RELATIVE_WORDS = frozenset({"who", "that", "which"})
# A row's label and key said as a word: "the name of …", "their ids".
LABEL_WORDS = frozenset({"name", "title"})
# Verbs that only tie a row to its attribute ("Which country does JetBlue belong to?",
# "What city is the depot located in?"): a listing reads them as it reads "is".
BELONGING_WORDS = frozenset({"belong", "belongs", "located", "based", "affiliated", "situated"})
KEY_WORDS = frozenset({"id", "identifier"})
# A fact's own head noun said after it: "the staff number", "the most staff members".
FACT_HEADS = frozenset({"number", "member", "figure"})
# Words that open a request for rows or values: "List the …", "What are the …".
LISTING_OPENERS = frozenset(
    {"what", "which", "list", "show", "give", "tell", "return", "provide", "find", "display"}
)
# Irregular participles that "by" follows as the agent's word ("bookings made by
# researchers"); a word ending in "-ed" is one too.
PARTICIPLES = frozenset(
    {
        *("made", "paid", "sold", "done", "written", "taken", "given", "held", "run", "led"),
        *("built", "bought", "taught", "sent", "spent", "won", "drawn", "driven", "shown"),
        *("seen", "known", "chosen", "grown"),
    }
)
# Verbs of a row coming to be: one stands for another in a date's description
# ("when the booking was made" is when it was placed).
CREATION_VERBS = frozenset({"made", "placed", "created", "booked", "recorded", "submitted"})
# Each value once: "the different cities", "distinct names".
DISTINCT_WORDS = frozenset({"distinct", "unique", "different"})
