"""What the MCP tools return: frozen pydantic models, published as their output schemas.

The SDK turns each tool's return annotation into the tool's ``outputSchema`` and
sends the value as ``structuredContent`` (MCP 2025-06-18 "Structured Content"),
so an agent reads fields, never prose. Every shape names the environment and the
serving deployment it was read from: an answer is always traceable to the
promoted version (``git show DEPLOYMENT``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Shape(BaseModel):
    """A frozen output model that rejects unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Served(Shape):
    """Where a result was read from."""

    lens: str
    environment: str | None = Field(description="the dst.yaml environment; null: the default one")
    deployment: str = Field(description="the serving deployment commit (refs/dst/…/serving/LENS)")


class LensEntry(Served):
    """One serving lens, as ``list_lenses`` shows it."""

    description: str
    gate: str | None = Field(description="the gate mode it was promoted under: off, warn, block")
    action: str = Field(description="the record serving: promote, verify or rollback")
    source: str = Field(description="the source commit the deployment serves")
    recorded_at: int = Field(description="when the deployment was recorded, seconds since epoch")
    score: dict[str, int] | None = Field(
        description="its last score: correct, wrong, declined, error, inconclusive, total"
    )
    reach: dict[str, int] | None = Field(
        description="reached / total: active answers the generator reproduces"
    )
    certified_answers: int = Field(description="active certified answers it serves")


class LensList(Shape):
    """``list_lenses``: every lens serving in one environment."""

    environment: str | None
    lenses: list[LensEntry]


class Column(Shape):
    """A dimension, time dimension or fact of a model."""

    name: str
    data_type: str
    description: str
    synonyms: list[str]
    sample_values: list[str]


class ModelEntry(Shape):
    """A semantic model: a table, its columns and where it joins."""

    name: str
    description: str
    table: str
    dimensions: list[Column]
    time_dimensions: list[Column]
    facts: list[Column]
    joins: list[str] = Field(description="the models it joins to")


class MetricEntry(Shape):
    """A metric an agent can ask for by its name, label or a synonym."""

    name: str
    label: str | None
    description: str
    synonyms: list[str]
    model: str


class ClarifyEntry(Shape):
    """A term the lens answers with a question back."""

    term: str
    ask: str


class LensDescription(Served):
    """``describe_lens``: the words a question can use, and what the lens will not answer."""

    description: str
    dialect: str
    row_cap: int
    as_of: str | None = Field(description="the date relative periods are read at, if pinned")
    models: list[ModelEntry]
    metrics: list[MetricEntry]
    vocabulary: dict[str, str] = Field(description="phrases the lens rewrites before reading")
    exclusions: list[str] = Field(description="topics it refuses")
    clarify: list[ClarifyEntry]
    example_questions: list[str] = Field(description="exemplar questions (not certified)")


class Gate(Shape):
    """One executable gate's verdict on the served SQL."""

    gate: str
    passed: bool
    severity: str
    detail: str


class Answered(Served):
    """``ask``: the serving path's result (``dst ask --format json``'s fields)."""

    question: str
    route: str = Field(description="certified_answer, generated, research, clarify or refuse")
    trust_state: str = Field(
        description="certified, grounded, review_required, blocked or not_applicable"
    )
    served: bool = Field(description="rows were served (false: refused, clarify, declined)")
    answer: str | None = Field(description="the certified answer served, on that route")
    sql: str | None
    columns: list[str]
    rows: list[list[Any]] = Field(description="at most the lens's row_cap rows")
    row_count: int
    truncated: bool = Field(description="the result reached the row cap")
    message: str
    reason: str | None = Field(description="why nothing was served, in one line")
    notes: list[str]
    term: str | None = Field(description="the exclusion or clarify term a pre-check matched")
    transpiled: str | None = Field(description="FROM→TO when the SQL ran transpiled")
    gates: list[Gate]


class AnswerEntry(Shape):
    """A certified question: asked verbatim, it is served from its certified SQL."""

    lens: str
    answer: str
    question: str
    description: str
    certified_by: str
    certified_at: str
    verified: bool = Field(description="its binding is stamped: it last ran green")


class AnswerList(Shape):
    """``list_answers``: the active certified answers of the serving versions."""

    environment: str | None
    answers: list[AnswerEntry]


class Explanation(Served):
    """``explain``: one certified answer, what it depends on and what it last scored."""

    answer: str
    question: str
    description: str
    sql: str = Field(description="the certified SQL (the oracle)")
    status: str
    certified_by: str
    certified_at: str
    source: str = Field(description="how it was certified: manual, generated, imported …")
    expect_empty: bool
    assets: dict[str, str] = Field(
        description="asset id -> hash of what its verification depended on (empty: unverified)"
    )
    verified_at: str | None = Field(description="the source commit it last ran green at")
    last_outcome: str | None = Field(
        description="its outcome in the run that produced this deployment, if it ran there"
    )
    request: dict[str, Any] = Field(
        description="what the suite sends its generator to re-ask it (DESIGN §4 step 2)"
    )
