"""Embedding retrieval: exemplar folding by cosine, related metrics and models (pure).

Used by :func:`reconciler.assembly.request.assemble` when ``lens.yaml`` sets
``generator.retrieval: embedding`` and a local sentence embedder is available
(:mod:`reconciler.assembly.embedding` loads one from the ``embed`` extra). The embedder is
passed in, so this module never loads a model or touches the filesystem.

Exemplar folding keeps the lexical rule's shape — up to
:data:`~reconciler.assembly.exemplars.MAX_EXEMPLARS` exemplars whose similarity with the
question is at least :data:`~reconciler.assembly.exemplars.MIN_EXEMPLAR_SIMILARITY`, best
first, never the excluded answer's — with cosine similarity of sentence
embeddings in place of the Jaccard similarity of content words.

The fast tier must stay deterministic and never guess, and it reads exactly two
things of a request: the exemplars whose normalized question equals the question
(served verbatim) and ``metrics`` (:func:`reconciler.generators.fast.compile_request`).
So an embedded request keeps the lexical request's ``metrics`` and ``models``,
lists the lexical fold's exact-question exemplars first and admits no other
exact-question exemplar; the fast tier's output is then identical to the lexical
run's. What the embedder adds — other exemplars, ``related_metrics``,
``related_models`` — is recorded and reaches only the smart tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from reconciler.assembly.exemplars import (
    MAX_EXEMPLARS,
    MIN_EXEMPLAR_SIMILARITY,
    eligible_exemplars,
)
from reconciler.assembly.text import normalize
from reconciler.ids import AnswerId
from reconciler.lens import Lens

MAX_RELATED = 3
MIN_RELATED_SIMILARITY = 0.3


class Embedder(Protocol):
    """A sentence embedder as assembly sees it (:mod:`reconciler.assembly.embedding` loads one)."""

    def similarities(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """Cosine similarity of ``query`` with each of ``texts``, in ``[-1, 1]``, same order."""
        ...


def _ranked(
    embedder: Embedder, query: str, names: list[str], texts: list[str], floor: float
) -> list[str]:
    """``names`` whose text scores at least ``floor`` vs ``query``, best first, ties by name."""
    if not names:
        return []
    scores = embedder.similarities(query, texts)
    kept = sorted(
        (-float(score), name) for name, score in zip(names, scores, strict=True) if score >= floor
    )
    return [name for _, name in kept]


def fold_exemplars(
    lens: Lens,
    question: str,
    lexical: Sequence[str],
    exclude_answer: AnswerId | None,
    embedder: Embedder,
) -> tuple[str, ...]:
    """Exemplars for ``question`` by cosine similarity (rules in the module docstring).

    Args:
        lens: the lens version.
        question: the question as asked.
        lexical: the lexical fold's exemplars, best first
            (:func:`reconciler.assembly.exemplars.lexical_fold`).
        exclude_answer: the answer under test, kept out of its own exemplars.
        embedder: the sentence embedder.

    Returns:
        The lexical fold's exact-question exemplars (in their order), then the
        best other eligible exemplars at or above the threshold, at most
        :data:`~reconciler.assembly.exemplars.MAX_EXEMPLARS` in all.
    """
    asked = normalize(question)
    exact = [n for n in lexical if normalize(lens.exemplars[n].question) == asked]
    others = [
        n
        for n in eligible_exemplars(lens, exclude_answer)
        if normalize(lens.exemplars[n].question) != asked
    ]
    texts = [lens.exemplars[n].question for n in others]
    ranked = _ranked(embedder, question, others, texts, MIN_EXEMPLAR_SIMILARITY)
    return tuple((exact + ranked)[:MAX_EXEMPLARS])


def related(
    lens: Lens, question: str, embedder: Embedder
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(metrics, models)`` ranked close to ``question``.

    Assembly asks for them only when lexical retrieval named no metric or model.

    Metrics are scored on their label, name, synonyms and description; models on
    their name, description and column names. At most :data:`MAX_RELATED` of
    each at or above :data:`MIN_RELATED_SIMILARITY`; a related metric's model is
    added to the models.
    """
    metric_names = sorted(lens.metrics)
    metric_texts = [
        " ; ".join([m.label or "", m.name.replace("_", " "), *m.synonyms, m.description]).strip(
            " ;"
        )
        for m in (lens.metrics[n] for n in metric_names)
    ]
    metrics = _ranked(embedder, question, metric_names, metric_texts, MIN_RELATED_SIMILARITY)[
        :MAX_RELATED
    ]
    model_names = sorted(lens.models)
    model_texts = []
    for name in model_names:
        model = lens.models[name]
        columns = (*model.dimensions, *model.time_dimensions, *model.facts)
        model_texts.append(
            f"{name.replace('_', ' ')}: {model.description} "
            + ", ".join(c.name.replace("_", " ") for c in columns)
        )
    models = _ranked(embedder, question, model_names, model_texts, MIN_RELATED_SIMILARITY)
    chosen = dict.fromkeys(models[:MAX_RELATED])
    chosen.update(dict.fromkeys(lens.metrics[m].model for m in metrics))
    return tuple(metrics), tuple(sorted(chosen))
