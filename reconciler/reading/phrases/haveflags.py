"""A yes/no column said with ``have``: "students who have declared a major" (pure).

A boolean dimension (``data_type: boolean``) whose phrase follows ``have`` / ``has``
/ ``had`` right after a noun of its own model — "How many students have declared a
major in each program?", "the number of courses that have exams" — keeps that
model's rows where it is TRUE: a filter, as a flag before its noun ("open
businesses") is, never a breakdown. Between the noun and the verb only ``who``,
``that`` or ``which`` may stand.

Any other place of a boolean dimension is left to the main grammar (a breakdown
``by`` it, or the decline that asks which was meant); one whose noun names another
model, or that has several targets, is too.
"""

from __future__ import annotations

from reconciler.assembly.lexicon import model_nouns
from reconciler.assembly.retrieval import Mention, Retrieval
from reconciler.lens import Lens
from reconciler.reading.lex import HAVE_WORDS, RELATIVE_WORDS


def have_flags(
    lens: Lens, found: Retrieval, dims: list[Mention]
) -> tuple[list[tuple[str, str]], list[Mention]]:
    """``(flags, the other mentions)`` of the dimension mentions ``dims``: each boolean
    dimension said with ``have`` after a noun of its model (module docstring) becomes a
    ``(model, dimension)`` flag."""
    flags: list[tuple[str, str]] = []
    rest: list[Mention] = []
    for mention in dims:
        target = _had(lens, found, mention)
        if target is None:
            rest.append(mention)
        elif target not in flags:
            flags.append(target)
    return flags, rest


def _had(lens: Lens, found: Retrieval, mention: Mention) -> tuple[str, str] | None:
    if mention.kind != "dimension" or len(mention.targets) != 1:
        return None
    target = mention.targets[0]
    column = next((d for d in lens.models[target.model].dimensions if d.name == target.name), None)
    if column is None or column.data_type.lower() != "boolean":
        return None
    toks = found.tokens
    at = mention.start - 1
    if at < 1 or toks[at] not in HAVE_WORDS:
        return None
    end = at - 1 if toks[at - 1] in RELATIVE_WORDS else at
    nouns = model_nouns(lens)
    longest = max((len(k) for k in nouns), default=0)
    noun = next(
        (
            nouns[toks[end - n : end]]
            for n in range(min(longest, end), 0, -1)
            if toks[end - n : end] in nouns
        ),
        None,
    )
    return (target.model, target.name) if noun == target.model else None
