"""The most common value of a dimension: "What is the most common position of players?" (pure).

A question that asks which value of one dimension the most rows of its model hold —
its mode — and nothing else:

    What is the most common position of the players?
    List the most frequent nationality among players.
    Give the position that is most common across all players.

is the dimension's values ranked by the count of that model's rows (``COUNT(DISTINCT
<key>)``, or ``COUNT(*)`` of a composite key's rows), the first kept with every value
tied with it (the tie gate: never a silent pick), a NULL value never ranked (no
entity), and only the dimension shown. The plan is the one-measure grammar's "top 1
<dimension> by number of <model>", with ties kept: its ``RANK()`` cut.

The model is the one that holds the dimension, which the noun after ``of``,
``among``, ``for``, ``across [all]`` must name when it is there. Any other word — a
noun of another model too (the most common value among a related model's rows is the
one-measure grammar's ranking, through its join) — means another shape (``None``);
inside the frame it declines a dimension several models hold and no noun picks one,
or a reading that is not a count of one dimension's rows. "Which position has the
most players?" is the grammar's ranking (it shows the count too).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from reconciler.assembly.lexicon import DimensionValues, model_nouns
from reconciler.assembly.retrieval import retrieve
from reconciler.assembly.text import tokenize
from reconciler.lens import Lens
from reconciler.reading.compile import render
from reconciler.reading.ir import Declined, DeclineKind, Measure, Plan

Parser = Callable[[Lens, str, DimensionValues, tuple[str, ...] | None], Plan]
""":func:`reconciler.generators.fast.parse`, passed in (this module sits below it)."""

_COMMON = r"(?:common|frequent|popular)"
_OPEN = (
    r"(?:(?:what|which)\s+(?:is|are|was|were)"
    r"|(?:please\s+)?(?:list|show|give|find|return)(?:\s+me)?)"
)
_OF = r"(?:\s+(?:of|among|for|across)\s+(?:all\s+)?(?:the\s+)?(?P<noun>[^?.!]+?))?"
_END = r"\s*[?.!]*\s*$"
_FORMS = (
    re.compile(rf"^\s*{_OPEN}\s+the\s+most\s+{_COMMON}\s+(?P<dims>.+?){_OF}{_END}", re.I),
    re.compile(
        rf"^\s*{_OPEN}\s+the\s+(?P<dims>.+?)\s+(?:that|which)\s+(?:is|are|was)\s+"
        rf"(?:the\s+)?most\s+{_COMMON}{_OF}{_END}",
        re.I,
    ),
)


def most_common(
    lens: Lens, question: str, values: DimensionValues, parse: Parser
) -> tuple[str, str] | None:
    """``(SQL, reads_as)`` of a dimension's mode (module docstring), or ``None`` when
    the question is not of that shape.

    Raises:
        Declined: the shape, but not one dimension of the model named, or a metric.
    """
    match = next((m for f in _FORMS if (m := f.match(question))), None)
    if match is None:
        return None
    found = retrieve(lens, match["dims"], values)
    if len(found.mentions) != 1 or found.leftover() or found.mentions[0].kind != "dimension":
        return None
    (dim,) = found.mentions
    models = {t.model for t in dim.targets}
    noun = match["noun"]
    if noun is not None:
        named = model_nouns(lens).get(tokenize(noun))
        if named is None:
            return None
        if named not in models:
            return None  # another model's rows, through a join: the grammar's ranking
        models = {named}
    if len(models) != 1:
        raise Declined(
            DeclineKind.AMBIGUOUS_READING,
            f"{match['dims']!r} is a column of {', '.join(sorted(models))}: the values of which?",
        )
    model = models.pop()
    plan = _plan(lens, parse(lens, f"top 1 {match['dims']} by number of {model}", values, None))
    if plan.base != model or plan.extra or plan.joined or len(plan.breakdowns) != 1:
        raise Declined(
            DeclineKind.UNKNOWN_TERM,
            f"'most common {match['dims']}' does not read as the {model} rows of one value",
        )
    return _shown(lens, plan), f"{plan.reads_as()}, showing {plan.breakdowns[0][1]}"


def _plan(lens: Lens, plan: Plan) -> Plan:
    """``plan`` counting its base's rows (one per key), the first value kept with ties."""
    key = lens.models[plan.base].primary_key
    if not key:
        raise Declined(
            DeclineKind.MISSING_IN_LENS,
            f"counting {plan.base}: model {plan.base!r} declares no primary_key",
        )
    one = exp.Distinct(expressions=[exp.column(key[0])]) if len(key) == 1 else exp.Star()
    sql = exp.Count(this=one).sql(dialect=lens.config.dialect)
    counted = Measure(
        f"{plan.base}_count", plan.base, sql, (), (plan.base,), None, "count_distinct"
    )
    return dataclasses.replace(plan, measure=counted, rank=(True, 1), ties=True)


def _shown(lens: Lens, plan: Plan) -> str:
    """The plan's SQL showing only its dimension (the count still ranks the rows)."""
    dialect = lens.config.dialect
    query = sqlglot.parse_one(render(lens, plan), read=dialect)
    assert isinstance(query, exp.Select)
    shown = plan.breakdowns[0][1]
    kept = [s for s in query.selects if s.alias_or_name == shown]
    if len(kept) != 1:
        raise Declined(DeclineKind.UNSAFE_RESULT, f"the result would not show {shown}")
    query.set("expressions", kept)
    return query.sql(dialect=dialect, pretty=True)
