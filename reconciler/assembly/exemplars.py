"""Exemplar folding: which exemplars a question may see, and the lexical fold (pure).

An answer never sees itself as an example: an exemplar whose normalized question
or canonical SQL is the excluded answer's is not eligible. The lexical fold keeps
up to :data:`MAX_EXEMPLARS` eligible exemplars whose content words have a Jaccard
similarity of at least :data:`MIN_EXEMPLAR_SIMILARITY` with the question's, best
first — or, when that is higher, whose question reads like the asked one token for
token (:data:`MIN_SHAPE_SIMILARITY` of :class:`difflib.SequenceMatcher`'s ratio over all
tokens, stopwords kept: "How many orders in the West region in Q1 2024?" and "… East
region in Q3 2023?" share the shape the fast tier adapts an exemplar across, see
:mod:`reconciler.reading.grammar.adapt`, but few content words); the embedding fold
(:mod:`reconciler.assembly.similarity`) keeps the same shape with cosine similarity.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from reconciler.assembly.text import STOPWORDS, canonical_sql, normalize, tokenize
from reconciler.ids import AnswerId
from reconciler.lens import Lens

MAX_EXEMPLARS = 3
MIN_EXEMPLAR_SIMILARITY = 0.3
MIN_SHAPE_SIMILARITY = 0.7


def eligible_exemplars(lens: Lens, exclude_answer: AnswerId | None) -> tuple[str, ...]:
    """Exemplar names, sorted, less any whose normalized question or canonical SQL is
    the excluded answer's (an answer never sees itself as an example).

    Raises:
        KeyError: ``exclude_answer`` is not an answer of the lens.
    """
    dialect = lens.config.dialect
    banned_question: str | None = None
    banned_sql: str | None = None
    if exclude_answer is not None:
        if exclude_answer not in lens.answers:
            raise KeyError(f"answer {exclude_answer!r} is not in lens {lens.name!r}")
        answer = lens.answers[exclude_answer]
        banned_question = normalize(answer.question)
        banned_sql = canonical_sql(answer.sql, dialect)
    return tuple(
        name
        for name in sorted(lens.exemplars)
        if banned_question is None
        or not (
            normalize(lens.exemplars[name].question) == banned_question
            or canonical_sql(lens.exemplars[name].sql, dialect) == banned_sql
        )
    )


def lexical_fold(
    lens: Lens, tokens: tuple[str, ...], exclude_answer: AnswerId | None
) -> tuple[str, ...]:
    """Names of the eligible exemplars most similar to the question ``tokens``, best first.

    Similarity is the Jaccard index of content words (stopwords dropped), or the
    token-sequence ratio when it reaches :data:`MIN_SHAPE_SIMILARITY`; see the
    module docstring for the limits.
    """
    asked = frozenset(tokens) - STOPWORDS
    scored: list[tuple[float, str]] = []
    for name in eligible_exemplars(lens, exclude_answer):
        ex = lens.exemplars[name]
        sequence = tokenize(ex.question)
        theirs = frozenset(sequence) - STOPWORDS
        union = asked | theirs
        score = len(asked & theirs) / len(union) if union else 0.0
        shape = SequenceMatcher(None, tokens, sequence, autojunk=False).ratio()
        if shape >= MIN_SHAPE_SIMILARITY:
            score = max(score, shape)
        if score >= MIN_EXEMPLAR_SIMILARITY:
            scored.append((-score, name))
    return tuple(name for _, name in sorted(scored)[:MAX_EXEMPLARS])
