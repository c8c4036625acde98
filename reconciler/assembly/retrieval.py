"""Assembly: question + lens → one recorded generation request (pure).

Retrieval (lexical match of metric/dimension names, labels, synonyms and known
values), skills merge, exemplar folding and generator tiering. The suite, the
self-test and ``dst ask`` all assemble through :func:`assemble`; what it selected
is the question's part of an answer's dependency set (DESIGN §1), so retrieval is
*precise*: an asset is selected only when the question names it (or, for models,
when a named asset lives on it or on the join path to it).

Text is compared in a normalized form (:func:`tokenize`): lowercase, punctuation
and underscores turned into spaces, apostrophes dropped, each word reduced by a
small plural stemmer (``categories`` → ``category``, ``regions`` → ``region``).
Phrases are matched on whole words, longest first (``net revenue`` beats
``revenue``); at equal length a metric beats a dimension, a value, a model fact
and a boolean flag, in that order. The fast generator tier reuses :func:`retrieve`
so that what it compiles and what assembly recorded can never disagree.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, Protocol

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.assembly import memo as lensmemo

# Edge and join_paths are re-exported: the fast tier renders its joins with them.
from reconciler.assembly.joins import Edge as Edge
from reconciler.assembly.joins import join_index
from reconciler.assembly.joins import join_paths as join_paths
from reconciler.lens import AnswerId, AssetId, Column, Lens, LensName

MAX_EXEMPLARS = 3
MIN_EXEMPLAR_SIMILARITY = 0.3

_APOSTROPHE = re.compile(r"['’‘`]")
_SEPARATOR = re.compile(r"[\W_]+")


def stem(word: str) -> str:
    """Reduce a lowercase word to its singular form with a few plural rules.

    Deliberately tiny (``-ies`` → ``-y``; ``-sses``/``-shes``/``-ches``/``-xes``
    drop ``es``; other ``-s`` drop it unless the word ends in ``ss``/``us``/``is``),
    and applied to both sides of every comparison, so an imperfect stem
    (``series`` → ``sery``) still compares equal to itself.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is")) or not word.endswith("s"):
        return word
    return word[:-1]


def words(text: str) -> tuple[str, ...]:
    """Lowercase words of ``text``: punctuation and underscores split, apostrophes dropped."""
    return tuple(w for w in _SEPARATOR.split(_APOSTROPHE.sub("", text.lower())) if w)


def tokenize(text: str) -> tuple[str, ...]:
    """The normalized tokens of ``text``: :func:`words`, each :func:`stem`-med."""
    return tuple(stem(w) for w in words(text))


def normalize(text: str) -> str:
    """The normalized form of a question or phrase: its tokens joined by one space."""
    return " ".join(tokenize(text))


def _stems(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


# Words that carry no meaning for the question grammar. Conservative on purpose:
# negations, comparisons and relative-date words ("not", "since", "last") are absent,
# so a question using them is left with an unknown word and the fast tier declines.
STOPWORDS = _stems(
    """a about across all am an and any are as at be been being break broken by can could
    did do does down during each every for from get give got group grouped had has have how
    i in into is it its list many me much my of on only or our overall per please see show
    split tell that the their there these those to us was we were what when where which who
    whose with would you your make placed made generated earned booked recorded sold"""
)

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


Kind = Literal["metric", "dimension", "time_dimension", "value", "fact", "flag"]
_PRIORITY: Mapping[str, int] = {
    "metric": 0,
    "dimension": 1,
    "time_dimension": 1,
    "value": 2,
    "fact": 3,
    "flag": 4,
}

# A dimension is a *person* dimension (what "Who …?" asks for) when its name or a
# synonym ends with one of these nouns ("sales rep", "account executive", "owner").
PERSON_NOUNS = _stems(
    """rep representative salesperson salesman saleswoman seller employee person agent
    owner executive"""
)
_PERSON_ENDINGS = frozenset((noun,) for noun in PERSON_NOUNS)
_BOOLEAN_TYPE = re.compile(r"^bool", re.IGNORECASE)
_FLAG_NAME = re.compile(r"^is_?([a-z][a-z0-9_]*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Target:
    """What a phrase can refer to.

    Attributes:
        kind: ``metric``, ``dimension``, ``time_dimension``, ``value``, ``fact`` (a
            model fact, aggregated only when the question says how) or ``flag`` (a
            boolean dimension ``is_<word>`` named by its ``<word>``: "won").
        model: the model holding the column (the metric's model for a metric).
        name: metric or column name.
        value: for ``value``, the exact stored value (original casing).
    """

    kind: Kind
    model: str
    name: str
    value: str | None = None


@dataclass(frozen=True)
class Mention:
    """A matched phrase: tokens ``[start, end)`` and every target it could mean.

    ``facts`` holds the model facts the same phrase also names, when it was matched
    as something else (an imported measure is both a metric and a fact).
    """

    start: int
    end: int
    targets: tuple[Target, ...]
    facts: tuple[Target, ...] = ()

    @property
    def kind(self) -> Kind:
        """The kind of the mention's targets (ties across kinds keep the best priority)."""
        return self.targets[0].kind


@dataclass(frozen=True)
class Retrieval:
    """The lexical analysis of one question against one lens.

    Attributes:
        words: the question's lowercase words (unstemmed; same indices as ``tokens``).
        tokens: the normalized tokens.
        mentions: matched phrases, non-overlapping, in question order.
    """

    words: tuple[str, ...]
    tokens: tuple[str, ...]
    mentions: tuple[Mention, ...]

    def covered(self) -> frozenset[int]:
        """Token positions inside a mention."""
        return frozenset(i for m in self.mentions for i in range(m.start, m.end))

    def leftover(self) -> tuple[str, ...]:
        """Tokens outside every mention, in order."""
        covered = self.covered()
        return tuple(t for i, t in enumerate(self.tokens) if i not in covered)

    def metrics(self) -> tuple[str, ...]:
        """Names of every metric a mention may mean, sorted."""
        return tuple(
            sorted({t.name for m in self.mentions if m.kind == "metric" for t in m.targets})
        )


def lexicon(
    lens: Lens, values: Mapping[tuple[str, str], tuple[str, ...]] | None = None
) -> dict[tuple[str, ...], tuple[Target, ...]]:
    """Every phrase the lens declares, as ``{normalized tokens: targets}``.

    Metrics contribute name, label and synonyms; dimensions, time dimensions and
    facts their name and synonyms, alone and prefixed by their model's name
    (``product category``); dimension values come from ``sample_values`` and from
    ``values`` (``{(model, dimension): distinct values}``); a BOOLEAN dimension
    named ``is_<word>`` or ``is<word>`` contributes ``<word>`` as a flag. Phrases
    made only of stopwords, and values made only of digits, are left out: they
    would match ordinary words and years.
    """
    found: dict[tuple[str, ...], dict[Target, None]] = {}

    def add(text: str, target: Target) -> None:
        key = tokenize(text)
        if not key or all(t in STOPWORDS for t in key):
            return
        if target.kind == "value" and all(t.isdigit() for t in key):
            return
        found.setdefault(key, {})[target] = None

    for metric in lens.metrics.values():
        target = Target("metric", metric.model, metric.name)
        for text in (metric.name, metric.label or "", *metric.synonyms):
            add(text, target)
    for model in lens.models.values():
        groups: tuple[tuple[Kind, tuple[Column, ...]], ...] = (
            ("dimension", model.dimensions),
            ("time_dimension", model.time_dimensions),
            ("fact", model.facts),
        )
        for kind, columns in groups:
            for col in columns:
                target = Target(kind, model.name, col.name)
                for text in (col.name, *col.synonyms):
                    add(text, target)
                    add(f"{model.name} {text}", target)
        for col in model.dimensions:
            stored = tuple((values or {}).get((model.name, col.name), ()))
            seen = {tokenize(v) for v in stored}
            # A sample value the warehouse also holds takes the warehouse's casing.
            hints = tuple(v for v in col.sample_values if tokenize(v) not in seen)
            for value in stored + hints:
                add(value, Target("value", model.name, col.name, value))
            flag = _FLAG_NAME.match(col.name)
            if flag and _BOOLEAN_TYPE.match(col.data_type):
                add(flag.group(1), Target("flag", model.name, col.name))
    return {key: tuple(targets) for key, targets in found.items()}


def person_dimensions(lens: Lens) -> tuple[Target, ...]:
    """Dimensions naming a person: a name or synonym ends with a :data:`PERSON_NOUNS` word."""
    return lensmemo.memoized(lens, "person_dimensions", lambda: _person_dimensions(lens))


def _person_dimensions(lens: Lens) -> tuple[Target, ...]:
    return tuple(
        Target("dimension", model.name, col.name)
        for model in lens.models.values()
        for col in model.dimensions
        if any(tokenize(text)[-1:] in _PERSON_ENDINGS for text in (col.name, *col.synonyms))
    )


def asks_who(found: Retrieval) -> bool:
    """Whether the question opens with the interrogative "who" (a relative "who" does not)."""
    return found.words[:1] == ("who",) and 0 not in found.covered()


def _indexed_lexicon(
    lens: Lens, values: Mapping[tuple[str, str], tuple[str, ...]] | None
) -> tuple[Mapping[tuple[str, ...], tuple[Target, ...]], int]:
    """:func:`lexicon` and its longest phrase (in tokens), once per lens version and values.

    The values are part of the key by content (a sorted tuple), never by identity.
    """
    stored = tuple(sorted((key, tuple(v)) for key, v in values.items())) if values else ()

    def build() -> tuple[Mapping[tuple[str, ...], tuple[Target, ...]], int]:
        lex = lexicon(lens, values)
        return MappingProxyType(lex), max((len(k) for k in lex), default=0)

    return lensmemo.memoized(lens, ("lexicon", stored), build)


def retrieve(
    lens: Lens, question: str, values: Mapping[tuple[str, str], tuple[str, ...]] | None = None
) -> Retrieval:
    """Match the lens's phrases in ``question``: longest match first, whole words.

    Overlaps resolve by length, then kind (metric over dimension over value over
    fact over flag), then position. A phrase that means several targets of the best kind keeps all
    of them (an ambiguity the caller decides on).
    """
    ws = words(question)
    toks = tuple(stem(w) for w in ws)
    lex, longest = _indexed_lexicon(lens, values)
    candidates: list[tuple[int, int, int, tuple[Target, ...]]] = []
    for start in range(len(toks)):
        for end in range(start + 1, min(len(toks), start + longest) + 1):
            targets = lex.get(toks[start:end])
            if targets:
                best = min(_PRIORITY[t.kind] for t in targets)
                kept = tuple(t for t in targets if _PRIORITY[t.kind] == best)
                candidates.append((start, end, best, kept))
    candidates.sort(key=lambda c: (c[0] - c[1], c[2], c[0]))
    taken: set[int] = set()
    mentions: list[Mention] = []
    for start, end, _, targets in candidates:
        span = set(range(start, end))
        if span & taken:
            continue
        taken |= span
        # The facts a metric (or dimension …) phrase also names, for "average <phrase>".
        shadowed = targets[0].kind != "fact"
        facts = tuple(t for t in lex[toks[start:end]] if shadowed and t.kind == "fact")
        mentions.append(Mention(start, end, targets, facts))
    mentions.sort(key=lambda m: m.start)
    return Retrieval(ws, toks, tuple(mentions))


def time_models(lens: Lens, source: str) -> list[str]:
    """The nearest models (by declared joins from ``source``) that have a time dimension."""
    found = lensmemo.memoized(lens, ("time_models", source), lambda: _time_models(lens, source))
    return list(found)


def _time_models(lens: Lens, source: str) -> tuple[str, ...]:
    joins = join_index(lens)
    ranked: dict[int, list[str]] = {}
    for name in sorted(lens.models):
        model = lens.models[name]
        paths = joins.paths(source, name)
        if paths and model.time_dimension() is not None:
            ranked.setdefault(len(paths[0]), []).append(name)
    return tuple(ranked[min(ranked)]) if ranked else ()


def model_named(lens: Lens, qualifier: str) -> str | None:
    """The model a SQL qualifier names: a model name, else the one model on that table."""
    wanted = qualifier.lower()
    if wanted in lens.models:
        return wanted
    by_table = [m.name for m in lens.models.values() if m.table.lower().split(".")[-1] == wanted]
    return by_table[0] if len(by_table) == 1 else None


def model_nouns(lens: Lens) -> dict[tuple[str, ...], str]:
    """``{normalized model name or table name: model}`` — how a question names a model."""
    return dict(lensmemo.memoized(lens, "model_nouns", lambda: tuple(_model_nouns(lens).items())))


def _model_nouns(lens: Lens) -> dict[tuple[str, ...], str]:
    nouns: dict[tuple[str, ...], str] = {}
    for model in lens.models.values():
        for text in (model.name, model.table.split(".")[-1]):
            nouns.setdefault(tokenize(text), model.name)
    return nouns


# "how many customers", "number of customers", "share of customers", "the most customers".
COUNT_OPENERS = frozenset(
    (
        *((w, "of") for w in ("number", "count", "share", "percentage", "percent")),
        ("how", "many"),
        ("most",),
        ("fewest",),
    )
)


def counted_model(lens: Lens, found: Retrieval) -> tuple[int, int, int, str] | None:
    """The first "how many <model noun>" of the question, else ``None``.

    Openers: "how many", "number of", "count of", "share of" (and the other share
    words), "most", "fewest"; boolean flags may stand between ("how many active
    customers"). The noun is a model or table name outside lens phrases, or a
    dimension phrase of that same model spelled like it (a ``customer`` dimension
    of model ``customers``).

    Returns:
        ``(opener start, noun start, noun end, model)``; the fast tier counts that
        model's entities when the question names no metric.
    """
    nouns = model_nouns(lens)
    longest = max((len(k) for k in nouns), default=0)
    covered = found.covered()
    own = {
        (m.start, m.end)
        for m in found.mentions
        if m.kind == "dimension"
        and nouns.get(found.tokens[m.start : m.end]) in {t.model for t in m.targets}
    }
    flag_starts = {m.end: m.start for m in found.mentions if m.kind == "flag"}
    toks = found.tokens
    for i in range(len(toks)):
        n = next(
            (
                n
                for n in range(longest, 0, -1)
                if toks[i : i + n] in nouns
                and ((i, i + n) in own or not covered & set(range(i, i + n)))
            ),
            0,
        )
        if not n:
            continue
        k = i
        while k in flag_starts:
            k = flag_starts[k]
        for width in (2, 1):
            at = k - width
            if at >= 0 and toks[at:k] in COUNT_OPENERS and not covered & set(range(at, k)):
                return at, i, i + n, nouns[toks[i : i + n]]
    return None


def metric_models(lens: Lens, metric: str) -> tuple[str, ...]:
    """The metric's model and any model its expression or filters name as a qualifier."""
    return lensmemo.memoized(lens, ("metric_models", metric), lambda: _metric_models(lens, metric))


def _metric_models(lens: Lens, metric: str) -> tuple[str, ...]:
    m = lens.metrics[metric]
    names = {m.model}
    for sql in (m.expression, *m.filters):
        try:
            tree = sqlglot.parse_one(sql, read=lens.config.dialect)
        except SqlglotError:
            continue
        names.update(
            named
            for col in tree.find_all(exp.Column)
            if col.table and (named := model_named(lens, col.table)) is not None
        )
    return tuple(sorted(names))


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


class Embedder(Protocol):
    """A sentence embedder as assembly sees it (:mod:`reconciler.assembly.embedding` loads one)."""

    def similarities(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """Cosine similarity of ``query`` with each of ``texts``, in ``[-1, 1]``, same order."""
        ...


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

    def record(self, asset_hashes: Mapping[AssetId, str] | None = None) -> dict[str, Any]:
        """JSON-ready record for ``state/run.json``.

        Args:
            asset_hashes: ``{asset id: canonical hash}`` of the lens version the
                request was assembled on (:func:`reconciler.assets.asset_hashes`).
                When given, the record gains ``"assets"``: every asset the request
                used (:meth:`used_assets`) plus ``lens/<name>`` (generation always
                reads the lens's generation settings), each with its hash
                (``None`` for an id the map lacks).
        """
        out: dict[str, Any] = {
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


def _fold_exemplars(
    lens: Lens, tokens: tuple[str, ...], exclude_answer: AnswerId | None
) -> tuple[str, ...]:
    """Names of the most similar exemplars, best first (see :func:`assemble`)."""
    asked = frozenset(tokens) - STOPWORDS
    scored: list[tuple[float, str]] = []
    for name in eligible_exemplars(lens, exclude_answer):
        ex = lens.exemplars[name]
        theirs = frozenset(tokenize(ex.question)) - STOPWORDS
        union = asked | theirs
        score = len(asked & theirs) / len(union) if union else 0.0
        if score >= MIN_EXEMPLAR_SIMILARITY:
            scored.append((-score, name))
    return tuple(name for _, name in sorted(scored)[:MAX_EXEMPLARS])


def assemble(
    lens: Lens,
    question: str,
    *,
    exclude_answer: AnswerId | None = None,
    certified_matching: bool = False,
    embedder: Embedder | None = None,
) -> GenerationRequest:
    """Assemble the generation request for ``question`` on ``lens``.

    Selection, each part only what the question names:

    * metrics: every metric a matched phrase may mean (name, label, synonym);
    * models: the metrics' models (and models their SQL names as qualifiers),
      the models of matched facts (also of facts a metric phrase names), flags,
      dimensions and dimension values (``sample_values``; warehouse values are
      not known here), the person dimensions' models when the question opens
      with "who", the models on every shortest join path from a metric's or
      fact's model to them, and, when the question names a period or grain, the
      nearest model carrying a time dimension; a question naming no metric or fact
      but counting a model ("how many customers", :func:`counted_model`) uses that
      model in place of a metric's;
    * exemplars: up to :data:`MAX_EXEMPLARS` whose content words have a Jaccard
      similarity of at least :data:`MIN_EXEMPLAR_SIMILARITY` with the question's,
      never one whose normalized question or canonical SQL is the excluded answer's;
    * skills: every skill of the lens, by path.

    With ``generator.retrieval: embedding`` in ``lens.yaml`` and an ``embedder``
    given, exemplars are folded by cosine similarity and, when lexical retrieval
    names no metric, related metrics and models are ranked
    (:func:`reconciler.assembly.similarity.embedded_request`); without an embedder the
    lexical selection above stands (the caller states that the run is leaner).

    Args:
        lens: the lens version generation runs against.
        question: the question as asked.
        exclude_answer: id of the answer under test, kept out of its own exemplars.
        certified_matching: recorded; whether serving may return a certified answer.
        embedder: a local sentence embedder (:class:`Embedder`), or ``None``.

    Returns:
        The request, with sorted metric, model and skill names and exemplars best first.

    Raises:
        KeyError: ``exclude_answer`` is not an answer of the lens.
    """
    found = retrieve(lens, question)
    request = GenerationRequest(
        lens=lens.name,
        question=question,
        tiers=tuple(lens.config.generator.tiers),
        metrics=found.metrics(),
        models=_select_models(lens, found),
        exemplars=_fold_exemplars(lens, found.tokens, exclude_answer),
        skills=tuple(sorted(lens.skills)),
        excluded_answer=exclude_answer,
        certified_matching=certified_matching,
    )
    if embedder is None or lens.config.generator.retrieval != "embedding":
        return request
    # Imported here: similarity builds on this module's normalization.
    from reconciler.assembly.similarity import embedded_request

    return embedded_request(lens, request, embedder)
