"""A join method the question names: "by doing a left join from A to B" (pure).

Questions written for a SQL author sometimes say how to join ("… by doing a left join
from the customers to the transactions table", "… based on joining the A, M and B
tables"). Such a phrase adds no condition; it is accounted for only when it names
exactly the models the query reads (and, for "from … to", the listed model first).
"""

from __future__ import annotations

import re

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens
from reconciler.reading.ir import Declined, DeclineKind
from reconciler.reading.phrases.related import Link

_METHOD = re.compile(
    r"[\s,;]*(?:"
    r"by\s+doing\s+an?\s+(?:(?:left|inner)\s+)?join\s+from\s+(?:the\s+)?(?P<first>[\w ]+?)"
    r"\s+to\s+(?:the\s+)?(?P<last>[\w ]+?)"
    r"|based\s+on\s+joining\s+(?:the\s+)?(?P<all>[\w, ]+?)"
    r")\s+tables?[\s.?!]*$",
    re.IGNORECASE,
)


def split_method(lens: Lens, question: str) -> tuple[str, list[str] | None, bool]:
    """``question`` without its method phrase, the models that phrase names in order
    (``None``: no method phrase), and whether that order matters ("from A to B")."""
    match = _METHOD.search(question)
    if match is None:
        return question, None, False
    if match.group("all") is not None:
        names = [n for n in re.split(r"\s*,\s*|\s+and\s+", match.group("all")) if n]
    else:
        names = [match.group("first"), match.group("last")]
    nouns = model_nouns(lens)
    models = []
    for name in names:
        model = nouns.get(tokenize(name))
        if model is None:
            raise Declined(
                DeclineKind.UNKNOWN_TERM,
                f"the question joins {name.strip()!r}, which names no model of the lens",
            )
        models.append(model)
    return question[: match.start()], models, match.group("all") is None


def check_method(named: list[str] | None, ordered: bool, chosen: Link) -> None:
    """A method phrase must name exactly the models the query reads ("from A to B":
    the listed model first)."""
    if named is None:
        return
    if set(named) != chosen.models() or len(named) != len(set(named)):
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"the question says to join {', '.join(named)}, but the query reads "
            f"{', '.join(sorted(chosen.models()))}",
        )
    if ordered and named != [chosen.listed, chosen.related]:
        raise Declined(
            DeclineKind.UNSUPPORTED_CONSTRUCT,
            f"a join from {named[0]} to {named[1]}, but {chosen.listed} are listed",
        )
