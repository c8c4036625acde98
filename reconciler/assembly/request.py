"""Assembly: question + lens → one recorded generation request (pure).

Retrieval (:mod:`reconciler.assembly.retrieval`), skills merge, exemplar folding
(:mod:`reconciler.assembly.exemplars`, or :mod:`reconciler.assembly.similarity`
with an embedder) and generator tiering. The suite, the self-test and ``dst ask``
all assemble through :func:`assemble`; what it selected is the question's part of
an answer's dependency set (DESIGN §1), so selection is *precise*: an asset is
selected only when the question names it (or, for models, when a named asset
lives on it or on the join path to it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from reconciler.assembly.aggregatelists import spelled_lists
from reconciler.assembly.exemplars import lexical_fold
from reconciler.assembly.joins import join_index
from reconciler.assembly.lexicon import person_dimensions
from reconciler.assembly.retrieval import (
    Retrieval,
    asks_who,
    counted_model,
    metric_models,
    retrieve,
    time_models,
)
from reconciler.assembly.similarity import Embedder, fold_exemplars, related
from reconciler.assembly.text import mentions_time, ordering_phrase
from reconciler.ids import AnswerId, AssetId, LensName
from reconciler.lens import Lens


@dataclass(frozen=True)
class GenerationRequest:
    """Everything one generation call is given, recorded in the run.

    Attributes:
        lens: lens name.
        question: the question as asked.
        tiers: generator tiers to try, in order (``fast``, ``smart``).
        metrics: names of metrics retrieval selected for the question.
        models: names of models selected (metrics' models, matched dimensions'
            models and the models they join, transitively).
        exemplars: names of exemplars folded into the context (never one whose
            question or SQL is the excluded answer's).
        skills: lens-relative skill paths merged into the context.
        excluded_answer: the answer under test, excluded from its own exemplars.
        certified_matching: whether a certified answer may be served verbatim
            (``False`` in the suite and self-test).
        retrieval: how exemplars were folded: ``lexical`` (Jaccard) or ``embedding``
            (cosine over a local sentence embedder, :mod:`reconciler.assembly.similarity`).
        related_metrics: metrics an embedder ranked close to a question in which
            lexical retrieval found none; the smart tier sees them, the fast tier
            never does (it compiles only what the question names).
        related_models: models ranked the same way, for the same readers.
    """

    lens: LensName
    question: str
    tiers: tuple[str, ...]
    metrics: tuple[str, ...]
    models: tuple[str, ...]
    exemplars: tuple[str, ...]
    skills: tuple[str, ...]
    excluded_answer: AnswerId | None = None
    certified_matching: bool = False
    retrieval: str = "lexical"
    related_metrics: tuple[str, ...] = ()
    related_models: tuple[str, ...] = ()

    def used_assets(self) -> frozenset[AssetId]:
        """Asset ids this request drew on (metrics, models, exemplars, skills, related)."""
        return frozenset(
            [AssetId(f"metrics/{m}") for m in (*self.metrics, *self.related_metrics)]
            + [AssetId(f"models/{m}") for m in (*self.models, *self.related_models)]
            + [AssetId(f"exemplars/{e}") for e in self.exemplars]
            + [AssetId(s) for s in self.skills]
        )

    def record(self, asset_hashes: Mapping[AssetId, str] | None = None) -> dict[str, object]:
        """JSON-ready record for ``state/run.json``.

        Args:
            asset_hashes: ``{asset id: canonical hash}`` of the lens version the
                request was assembled on (:func:`reconciler.assets.asset_hashes`).
                When given, the record gains ``"assets"``: every asset the request
                used (:meth:`used_assets`) plus ``lens/<name>`` (generation always
                reads the lens's generation settings), each with its hash
                (``None`` for an id the map lacks).
        """
        out: dict[str, object] = {
            "question": self.question,
            "tiers": list(self.tiers),
            "metrics": list(self.metrics),
            "models": list(self.models),
            "exemplars": list(self.exemplars),
            "skills": list(self.skills),
            "excluded_answer": self.excluded_answer,
            "certified_matching": self.certified_matching,
            "retrieval": self.retrieval,
            "related_metrics": list(self.related_metrics),
            "related_models": list(self.related_models),
        }
        if asset_hashes is not None:
            ids = sorted(self.used_assets() | {AssetId(f"lens/{self.lens}")})
            out["assets"] = {aid: asset_hashes.get(aid) for aid in ids}
        return out


def _named_metrics(lens: Lens, question: str, found: Retrieval) -> tuple[str, ...]:
    """The metrics the question names, a list of aggregation words spelled out
    ("the average and maximum age": "average age" may be a metric of its own;
    :mod:`reconciler.assembly.aggregatelists`)."""
    spelled = spelled_lists(lens, question)
    if spelled is None:
        return found.metrics()
    return tuple(sorted({*found.metrics(), *retrieve(lens, spelled[0]).metrics()}))


def _select_models(lens: Lens, found: Retrieval) -> tuple[str, ...]:
    """Models the question involves: see :func:`assemble`."""
    facts = [f for m in found.mentions for f in (m.facts or m.targets) if f.kind == "fact"]
    sources = {lens.metrics[name].model for name in found.metrics()} | {f.model for f in facts}
    counted = None if sources else counted_model(lens, found)
    if counted is not None:
        sources = {counted[3]}
    selected: set[str] = set(sources)
    joins = join_index(lens)
    frozen_sources = frozenset(sources)
    # A model some source has a join path to (each source reaches itself).
    reachable_models = frozenset().union(*(joins.reachable(s) for s in sources))

    def add_paths(target: str) -> None:
        # The models on every shortest path to ``target`` from a source.
        selected.add(target)
        selected.update(joins.models_from(frozen_sources, target))

    for name in found.metrics():
        for model in metric_models(lens, name):
            add_paths(model)
    for mention in found.mentions:
        if mention.kind == "metric":
            continue
        reachable = [t for t in mention.targets if t.model in reachable_models]
        for t in reachable or mention.targets:
            add_paths(t.model)
    for fact in facts:
        add_paths(fact.model)
    if asks_who(found):
        for person in person_dimensions(lens):
            if person.model in reachable_models:
                add_paths(person.model)
    if mentions_time(found.leftover()):
        for source in sorted(sources):
            for target in time_models(lens, source):
                add_paths(target)
    return tuple(sorted(selected))


def assemble(
    lens: Lens,
    question: str,
    *,
    exclude_answer: AnswerId | None = None,
    certified_matching: bool = False,
    embedder: Embedder | None = None,
) -> GenerationRequest:
    """Assemble the generation request for ``question`` on ``lens``.

    Selection, each part only what the question names (a closing ordering phrase
    counts by its key alone: "… ordered by region" names ``region``, not "order"):

    * metrics: every metric a matched phrase may mean (name, label, synonym);
    * models: the metrics' models (and models their SQL names as qualifiers),
      the models of matched facts (also of facts a metric phrase names), flags,
      dimensions and dimension values (``sample_values``; warehouse values are
      not known here), the person dimensions' models when the question opens
      with "who", the models on every shortest join path from a metric's or
      fact's model to them, and, when the question names a period or grain, the
      nearest model carrying a time dimension; a question naming no metric or fact
      but counting a model ("how many customers",
      :func:`~reconciler.assembly.retrieval.counted_model`) uses that model in
      place of a metric's;
    * exemplars: up to :data:`~reconciler.assembly.exemplars.MAX_EXEMPLARS` whose
      content words have a Jaccard similarity of at least
      :data:`~reconciler.assembly.exemplars.MIN_EXEMPLAR_SIMILARITY` with the
      question's, never one whose normalized question or canonical SQL is the
      excluded answer's;
    * skills: every skill of the lens, by path.

    With ``generator.retrieval: embedding`` in ``lens.yaml`` and an ``embedder``
    given, exemplars are folded by cosine similarity and, when lexical retrieval
    names no metric, related metrics and models are ranked
    (:mod:`reconciler.assembly.similarity`); without an embedder the
    lexical selection above stands (the caller states that the run is leaner).

    Args:
        lens: the lens version generation runs against.
        question: the question as asked.
        exclude_answer: id of the answer under test, kept out of its own exemplars.
        certified_matching: recorded; whether serving may return a certified answer.
        embedder: a local sentence embedder
            (:class:`~reconciler.assembly.similarity.Embedder`), or ``None``.

    Returns:
        The request, with sorted metric, model and skill names and exemplars best first.

    Raises:
        KeyError: ``exclude_answer`` is not an answer of the lens.
    """
    phrase = ordering_phrase(question)
    found = retrieve(lens, question if phrase is None else f"{phrase[0]} {phrase[1] or ''}")
    request = GenerationRequest(
        lens=lens.name,
        question=question,
        tiers=tuple(lens.config.generator.tiers),
        metrics=_named_metrics(lens, question, found),
        models=_select_models(lens, found),
        exemplars=lexical_fold(lens, found.tokens, exclude_answer),
        skills=tuple(sorted(lens.skills)),
        excluded_answer=exclude_answer,
        certified_matching=certified_matching,
    )
    if embedder is None or lens.config.generator.retrieval != "embedding":
        return request
    if request.metrics or request.models:
        metrics: tuple[str, ...] = ()
        models: tuple[str, ...] = ()
    else:
        metrics, models = related(lens, question, embedder)
    return replace(
        request,
        exemplars=fold_exemplars(lens, question, request.exemplars, exclude_answer, embedder),
        retrieval="embedding",
        related_metrics=metrics,
        related_models=models,
    )
