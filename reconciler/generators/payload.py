"""What an external generator is sent and what it answers: the ``command`` tier's wire format.

:class:`TierRequest` is the assembled generation request with the assets' content
filled in (the models, metrics, exemplars and skills the assembly selected, the
lens's dialect and pinned ``as_of``), as one JSON object. It is built from a
:class:`~reconciler.assembly.request.GenerationRequest`, so it never carries the
answer under test: no answer's SQL is ever part of it, and in the suite the
request's exemplars already exclude the answer's own question and SQL (DESIGN §4
step 2). :class:`TierReply` is what the program prints back.

Both are exported as JSON Schema (``schemas/generator/request.schema.json`` and
``reply.schema.json``; regenerate with ``python -m reconciler.generators.payload``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reconciler.assembly.request import GenerationRequest
from reconciler.generators.cache import payload_digest
from reconciler.generators.smart import prompt as smart_prompt
from reconciler.lens import Exemplar, Lens, Metric, Model
from reconciler.schemas import SCHEMA_DIALECT, SCHEMAS_DIR, render, schema_filename, schema_id

REQUEST_SCHEMA_VERSION = 1
SCHEMAS_SUBDIR = "generator"


class SkillText(BaseModel):
    """One skill: its lens-relative path and its Markdown text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    text: str


class TierRequest(BaseModel):
    """The request an external generator receives (one JSON object on stdin).

    Attributes:
        schema_version: this format's version (1).
        lens: lens name.
        question: the question to answer, as asked.
        dialect: the SQL dialect to write in (sqlglot's name, ``duckdb`` …).
        as_of: the lens's pinned date (``YYYY-MM-DD``) relative periods resolve
            against, ``today`` (against the warehouse's ``CURRENT_DATE``), or ``None``.
        metrics, models, exemplars: the assets the assembly selected (related ones
            from embedding retrieval included), in their ``lens`` file shapes.
        skills: every skill of the lens.
        hint: an executable gate's repair hint on a retry of ``dst ask``, else ``None``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = REQUEST_SCHEMA_VERSION
    lens: str
    question: str
    dialect: str
    as_of: str | None = None
    metrics: tuple[Metric, ...] = ()
    models: tuple[Model, ...] = ()
    exemplars: tuple[Exemplar, ...] = ()
    skills: tuple[SkillText, ...] = ()
    hint: str | None = None


class TierReply(BaseModel):
    """What an external generator prints: exactly one of ``sql`` and ``declined``.

    Any other key fails the schema (the reply is then an error generation), so a
    misspelt ``"sqll"`` or a program that prints its settings is never read as an
    answer.

    Attributes:
        sql: one read-only query (it passes the same guard as every other SQL).
        declined: why the question cannot be answered from the context.
        tokens: tokens the program spent, when it knows.
        cost_usd: what the call cost in USD, when it knows.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    sql: str | None = Field(default=None, min_length=1)
    declined: str | None = None
    tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_of(self) -> TierReply:
        if (self.sql is None) == (self.declined is None):
            raise ValueError('give exactly one of "sql" and "declined"')
        return self


def tier_request(lens: Lens, request: GenerationRequest, hint: str | None = None) -> TierRequest:
    """The wire request for ``request`` on ``lens`` (module docstring)."""
    metrics = dict.fromkeys((*request.metrics, *request.related_metrics))
    models = dict.fromkeys((*request.models, *request.related_models))
    return TierRequest(
        lens=lens.name,
        question=request.question,
        dialect=lens.config.dialect,
        as_of=lens.config.as_of,
        metrics=tuple(lens.metrics[m] for m in metrics),
        models=tuple(lens.models[m] for m in models),
        exemplars=tuple(lens.exemplars[e] for e in request.exemplars),
        skills=tuple(SkillText(path=p, text=lens.skills[p].text) for p in request.skills),
        hint=hint,
    )


def request_json(lens: Lens, request: GenerationRequest, hint: str | None = None) -> str:
    """:func:`tier_request` as the exact bytes' text sent: sorted-key, compact JSON."""
    data = tier_request(lens, request, hint).model_dump(mode="json")
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sent(lens: Lens, request: GenerationRequest, hint: str | None = None) -> dict[str, object]:
    """Exactly what each of ``request``'s tiers is given, JSON-ready (``--show-request``).

    Returns:
        ``{tier: payload}``: ``fast`` is given the recorded request itself (it compiles
        it offline), ``smart`` the chat ``messages`` sent to the endpoint, ``command``
        the ``stdin`` object; each with the ``sha256`` a run records as the call's
        ``usage.request_sha256`` (:func:`~reconciler.generators.cache.payload_digest`).
    """
    tiers: dict[str, object] = {}
    for tier in request.tiers:
        if tier == "fast":
            tiers[tier] = {"compiles": "the request above, offline"}
        elif tier == "smart":
            messages = smart_prompt(lens, request, hint)
            tiers[tier] = {"messages": messages, "sha256": payload_digest(messages)}
        elif tier == "command":
            stdin = request_json(lens, request, hint)
            tiers[tier] = {"stdin": json.loads(stdin), "sha256": payload_digest(stdin)}
    return tiers


def schemas() -> dict[str, dict[str, object]]:
    """``{file name: JSON Schema}`` of the request and the reply (``schemas/generator/``)."""
    out: dict[str, dict[str, object]] = {}
    for name, model, title in (
        ("request", TierRequest, "dst generator request (stdin of a command tier)"),
        ("reply", TierReply, "dst generator reply (stdout of a command tier)"),
    ):
        schema = model.model_json_schema()
        schema["$schema"] = SCHEMA_DIALECT
        schema["$id"] = schema_id(f"generator:{name}")
        schema["title"] = title
        out[schema_filename(name)] = schema
    return out


def main(argv: list[str]) -> int:
    """Write the schemas to ``DIRECTORY/generator/`` (default ``schemas``)."""
    target = Path(argv[0] if argv else SCHEMAS_DIR) / SCHEMAS_SUBDIR
    target.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas().items():
        (target / name).write_text(render(schema), encoding="utf-8")
        print(f"wrote {target / name}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the regeneration entry point
    sys.exit(main(sys.argv[1:]))
