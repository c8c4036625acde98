"""The lens's file formats: one strict pydantic model per kind of lens file (DESIGN §2).

``lens.yaml`` (:class:`LensConfig`), ``models/*.yaml`` (:class:`Model`),
``metrics/*.yaml`` (:class:`Metric`), ``exemplars/*.yaml`` (:class:`Exemplar`),
``answers/*.yaml`` (:class:`Answer`), ``evals/cases.yaml`` (:class:`CasesFile`) and
``dst.yaml`` (:class:`RepoConfig`, its webhooks :class:`Webhook`). Every model
forbids unknown keys and coerces nothing, so an unknown key, a wrong type or an unquoted ``NO`` is a
:class:`~reconciler.errors.LensLoadError` at its line once
:func:`reconciler.lens.load_lens` validates a file. The JSON Schemas under
``schemas/`` are generated from these models.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reconciler.errors import LensLoadError
from reconciler.ids import LENS_NAME_RE as LENS_NAME_RE  # re-exported: its home was here

MAX_ROW_CAP = 1000
_NAME_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
_DATE_RE = r"^\d{4}-\d{2}-\d{2}$"
_AS_OF_RE = r"^(\d{4}-\d{2}-\d{2}|today)$"
TODAY = "today"
"""``as_of: today``: relative periods read against the warehouse's current date."""
# Words of a question: letters and digits, single spaces or hyphens between words.
_WORDS_RE = r"^[A-Za-z0-9]+([ -][A-Za-z0-9]+)*$"
# A physical table: an identifier with up to two qualifiers (catalog.schema.table).
_TABLE_RE = r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*){0,2}$"
# A SQLAlchemy URL: dialect[+driver]://…
_URL_RE = r"^[A-Za-z][A-Za-z0-9_]*(\+[A-Za-z0-9_]+)?://"

# Phrases whose meaning depends on the day the question is asked (DESIGN §4: such
# a certified question is evaluated at the lens's pinned as_of, or rejected).
RELATIVE_DATE_RE = re.compile(
    r"\b(today|yesterday|tomorrow|this (week|month|quarter|year)|"
    r"(last|previous|past|prior|current|next) (\d+ )?(calendar |iso )?"
    r"(day|week|month|quarter|year)s?|"
    r"year to date|month to date|quarter to date|ytd|mtd|qtd)\b",
    re.IGNORECASE,
)


class Strict(BaseModel):
    """Base for every lens file model: frozen, unknown keys rejected.

    Pydantic v2 never coerces a number, boolean or date into a ``str`` field, so an
    unquoted ``NO`` or ``1.10`` where text is expected is an error, not a silent cast.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Webhook(Strict):
    """A ``notify:`` entry of ``dst.yaml`` (DESIGN §7); its URL is in variable ``url_env``.

    ``retries`` tries follow a failed first one; ``deadline_s`` (seconds, at most and
    by default 30) bounds everything one event costs at this webhook: connect, send,
    read, every retry and wait (:mod:`reconciler.notify.webhooks`).
    """

    url_env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    events: tuple[Literal["promoted", "blocked", "stood_down", "recovered"], ...]
    retries: int = Field(default=2, ge=0, le=5, strict=True)  # tries after the first
    # One wall-clock bound per event: connect, send, read, every retry and wait (seconds).
    deadline_s: float = Field(default=30.0, gt=0, le=30)


ENVIRONMENT_NAME_RE = LENS_NAME_RE  # it becomes a ref path component: refs/dst/env/<name>/


class Environment(Strict):
    """One entry of ``environments:`` in ``dst.yaml`` (DESIGN §3 "Environments").

    ``warehouse`` is this environment's SQLAlchemy URL (it wins over the lens's and
    ``dst.yaml``'s own ``warehouse:``); ``promote_from`` names the environment a
    lens tree must already serve in before it may be promoted here;
    ``allow_privileged: true`` lets answer SQL run in this environment on a
    connection that could write (a superuser, a role with write grants), with a
    warning each run; without it such a connection is refused (exit 2).
    """

    warehouse: str | None = Field(default=None, pattern=_URL_RE)
    promote_from: str | None = None
    allow_privileged: bool = Field(default=False, strict=True)


class RepoConfig(Strict):
    """``dst.yaml`` at the repository root: settings shared by every lens.

    ``environments`` maps an environment name to its :class:`Environment`; the
    names, ``promote_from`` targets and cycles are checked by
    :func:`environment_problems` (the loader reports them at their line).
    ``allow_privileged`` is :class:`Environment`'s, for the unnamed default
    environment only: a named environment sets its own.
    """

    warehouse: str | None = Field(default=None, pattern=_URL_RE)
    allow_privileged: bool = Field(default=False, strict=True)
    notify: tuple[Webhook, ...] = ()
    environments: dict[str, Environment] = Field(default_factory=dict)


def environment_problems(config: RepoConfig) -> list[tuple[tuple[str, ...], str, str]]:
    """What is wrong with ``config.environments``: ``[(path, problem, fix)]``, first first.

    ``path`` is the key path of the offending value in ``dst.yaml`` (for its line).
    Checks: each name is a valid ref component; ``promote_from`` names another
    environment that exists; following ``promote_from`` never comes back (no cycle).
    """
    envs = config.environments
    out: list[tuple[tuple[str, ...], str, str]] = []
    for name, env in envs.items():
        if not ENVIRONMENT_NAME_RE.match(name):
            out.append(
                (
                    ("environments", name),
                    f"environment name {name!r} is not lower-case letters, digits, - or _",
                    "rename it, e.g. staging or prod",
                )
            )
        source = env.promote_from
        where = ("environments", name, "promote_from")
        if source is None:
            continue
        if source == name:
            out.append((where, f"environment {name!r} promotes from itself", "drop promote_from"))
        elif source not in envs:
            known = ", ".join(sorted(envs))
            out.append(
                (
                    where,
                    f"environment {name!r} promotes from {source!r}, which is not an "
                    f"environment (environments: {known})",
                    f"name one of them, or add {source}: under environments:",
                )
            )
    if out:
        return out
    for name in envs:
        seen, current = [name], envs[name].promote_from
        while current is not None and current not in seen:
            seen.append(current)
            current = envs[current].promote_from
        if current is not None:
            chain = " → ".join([*seen, current])
            out.append(
                (
                    ("environments", name, "promote_from"),
                    f"environments promote from each other in a cycle: {chain}",
                    "break the cycle: the first environment in the chain has no promote_from",
                )
            )
            break
    return out


class SmartTier(Strict):
    """Settings of the optional LLM tier (an OpenAI-compatible endpoint)."""

    model: str | None = None
    base_url: str | None = Field(default=None, pattern=r"^https?://[^@\s]+$")
    base_url_env: str = "DST_LLM_BASE_URL"
    api_key_env: str = "DST_LLM_API_KEY"
    timeout_s: float = Field(default=60.0, gt=0, le=600, strict=True)
    max_retries: int = Field(default=2, ge=0, le=10, strict=True)
    prompt_cost_per_1k: float = Field(default=0.0, ge=0, allow_inf_nan=False, strict=True)
    completion_cost_per_1k: float = Field(default=0.0, ge=0, allow_inf_nan=False, strict=True)


class CommandTier(Strict):
    """The ``command`` tier: an argv run in the lens directory, the request JSON on stdin."""

    run: tuple[str, ...] = Field(min_length=1)
    timeout_s: float = Field(default=30.0, gt=0, le=3600, strict=True)


class GeneratorConfig(Strict):
    """Which generator tiers a lens uses, in order; ``command`` needs a ``command:`` block."""

    tiers: tuple[Literal["fast", "smart", "command"], ...] = Field(default=("fast",), min_length=1)
    smart: SmartTier | None = None
    command: CommandTier | None = None
    # ``embedding`` folds exemplars by cosine over the ``embed`` extra's local model;
    # without that extra the run falls back to ``lexical`` and says so.
    retrieval: Literal["lexical", "embedding"] = "lexical"

    @field_validator("tiers")
    @classmethod
    def _each_tier_once(cls, tiers: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(tiers)) != len(tiers):
            raise ValueError("a tier is listed twice; list each tier once, in order of preference")
        return tiers


class ClarifyTerm(Strict):
    """An ambiguous term: a question containing it is answered with ``ask``."""

    term: str
    ask: str


# A setting added after hashes were stamped stays out of the canonical form at its
# default, so upgrading dst makes nothing stale (DESIGN §2: no silent rehash).
_UNSTAMPED: dict[str, object] = {"retrieval": "lexical", "command": None}
MAX_JOBS = 64  # answers one suite runs at once; bounds threads and connections
MAX_SAMPLES = 10  # generations per stale answer with ``samples:``; bounds calls per answer


class LensConfig(Strict):
    """``lens.yaml``.

    ``generation_fields`` lists the part that feeds generation; only that part is
    the ``lens/<name>`` asset, so editing ``description`` or ``eval_gate`` makes
    nothing stale. ``strict_declines`` is gate policy like ``eval_gate`` (it never
    feeds generation), so it stays out of the asset too: with it, every declined
    stale answer blocks, reached before or not (DESIGN §5). ``vocabulary`` maps the
    domain's own words ("sells", "published") to the lens terms they mean in a
    question ("products", "papers"), or to ``""`` for a word that adds nothing; it
    feeds generation, and stays out of the canonical form while empty.

    ``series_order`` is how the team reads a time series: ``oldest_first`` (the
    default) or ``newest_first`` (latest bucket first, and within a bucket the
    breakdown by its measure, largest first, as BI tools and Cortex Analyst's verified
    queries show it); it feeds generation, and stays out of the canonical form at its
    default.

    ``samples`` (1–10, default 1), ``flaky`` (``block`` / ``warn``), ``max_calls`` and
    ``max_cost_usd`` are verification policy too, outside the asset: ``samples: k``
    asks each stale answer ``k`` times; all correct is ``correct``, all failing keeps
    its outcome, a mix is ``flaky``, which blocks under ``eval_gate: block`` unless
    ``flaky: warn``. ``max_calls`` / ``max_cost_usd`` bound one apply's external-tier
    calls for the lens (``DST_MAX_CALLS`` / ``DST_MAX_COST_USD`` override them).

    ``cache`` is verification policy, outside the asset: ``use`` (the default) scores a
    cached smart or command answer as it is; ``verify`` makes ``dst apply`` generate
    every cached answer again and compare (a difference is a warning, and the fresh
    answer is scored): :mod:`reconciler.generators.cache`.

    ``as_of`` is the day relative periods ("last quarter", "in the past 30 days") are
    read at: a ``YYYY-MM-DD`` date pins it (certified answers and clock reads run on
    that day, DESIGN §4), ``today`` reads them against the warehouse's current date
    in SQL (``CURRENT_DATE``) for served questions, and pins nothing: a certified
    answer with a relative date still needs a date (:attr:`pinned_as_of`).
    """

    name: str
    description: str = ""
    eval_gate: Literal["off", "warn", "block"] = "block"
    strict_declines: bool = Field(default=False, strict=True)
    warehouse: str | None = Field(default=None, pattern=_URL_RE)
    dialect: str = "duckdb"
    row_cap: int = Field(default=MAX_ROW_CAP, ge=1, le=MAX_ROW_CAP, strict=True)
    statement_timeout_s: float = Field(default=30.0, gt=0, le=3600, strict=True)
    jobs: int | None = Field(default=None, ge=1, le=MAX_JOBS, strict=True)
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES, strict=True)
    flaky: Literal["block", "warn"] = "block"
    max_calls: int | None = Field(default=None, ge=0, strict=True)
    max_cost_usd: float | None = Field(default=None, ge=0, strict=True)
    as_of: str | None = Field(default=None, pattern=_AS_OF_RE)
    generator: GeneratorConfig = GeneratorConfig()
    exclusions: tuple[str, ...] = ()
    clarify: tuple[ClarifyTerm, ...] = ()
    allow_functions: tuple[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")], ...] = ()
    seeds_from: tuple[Annotated[str, Field(pattern=LENS_NAME_RE.pattern)], ...] = ()  # DESIGN §2
    # {domain word or phrase: lens term it means, or "" for a word that adds nothing}
    vocabulary: dict[Annotated[str, Field(pattern=_WORDS_RE)], str] = {}
    series_order: Literal["oldest_first", "newest_first"] = "oldest_first"
    cache: Literal["use", "verify"] = "use"

    generation_fields: ClassVar[tuple[str, ...]] = (
        "dialect",
        "row_cap",
        "as_of",
        "generator",
        "exclusions",
        "clarify",
        "allow_functions",
        "seeds_from",
        "vocabulary",
        "series_order",
    )

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, value: str) -> str:
        # lazy: sqlglot loads when a lens.yaml is read, not for dst.yaml (`dst status`)
        from sqlglot.dialects.dialect import Dialect

        try:
            Dialect.get_or_raise(value)
        except ValueError:
            raise ValueError(
                f"unknown SQL dialect {value!r} (use a sqlglot dialect name such "
                f"as duckdb, postgres, sqlite, snowflake)"
            ) from None
        return value

    @field_validator("as_of")
    @classmethod
    def _calendar_date(cls, value: str | None) -> str | None:
        if value is not None and value != TODAY:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"{value!r} is not a calendar date") from None
        return value

    @field_validator("vocabulary")
    @classmethod
    def _plain_vocabulary(cls, value: dict[str, str]) -> dict[str, str]:
        seen: dict[str, str] = {}
        for word, term in value.items():
            if term and not re.fullmatch(_WORDS_RE, term):
                raise ValueError(
                    f"vocabulary: {word!r} maps to {term!r}; map it to a model, metric, "
                    f'dimension or fact phrase of the lens, or to "" (a word that adds nothing)'
                )
            if term.lower() == word.lower():
                raise ValueError(f"vocabulary: {word!r} maps to itself")
            key = word.lower()
            if key in seen:
                raise ValueError(f"vocabulary: {word!r} and {seen[key]!r} are the same word")
            seen[key] = word
        return value

    @property
    def pinned_as_of(self) -> str | None:
        """The pinned ``YYYY-MM-DD`` day, or ``None`` (no ``as_of``, or ``today``)."""
        return None if self.as_of == TODAY else self.as_of

    def generation_part(self) -> dict[str, object]:
        """The fields that feed generation, as plain JSON-ready data."""
        dumped = self.model_dump(mode="json")
        part = {k: dumped[k] for k in self.generation_fields}
        gen = part["generator"]
        part["generator"] = {k: v for k, v in gen.items() if _UNSTAMPED.get(k, ...) != v}
        # A setting added after hashes were stamped stays out of the canonical form at
        # its default, so upgrading dst makes nothing stale (DESIGN §2: no silent rehash).
        late = ("allow_functions", "seeds_from", "vocabulary")
        return {
            k: v
            for k, v in part.items()
            if (v or k not in late) and (k, v) != ("series_order", "oldest_first")
        }


class Column(Strict):
    """A dimension, time dimension or fact of a model; ``expr`` defaults to ``name``."""

    name: str = Field(pattern=_NAME_RE)
    expr: str | None = None
    data_type: str = "string"
    description: str = ""
    synonyms: tuple[str, ...] = ()
    sample_values: tuple[str, ...] = ()

    @property
    def sql(self) -> str:
        """The SQL expression over the model's table."""
        return self.expr or self.name


class Join(Strict):
    """A join from this model to another: ``on`` maps this model's columns to ``to``'s."""

    to: str
    relationship: Literal["many_to_one", "one_to_one", "one_to_many"] = "many_to_one"
    on: dict[str, str]


class Model(Strict):
    """``models/*.yaml``: one physical table and its semantic columns."""

    name: str = Field(pattern=_NAME_RE)
    description: str = ""
    table: str = Field(pattern=_TABLE_RE)
    primary_key: tuple[str, ...] = ()
    dimensions: tuple[Column, ...] = ()
    time_dimensions: tuple[Column, ...] = ()
    facts: tuple[Column, ...] = ()
    default_time_dimension: str | None = None
    joins: tuple[Join, ...] = ()

    def columns(self) -> tuple[Column, ...]:
        """Every declared column: dimensions, time dimensions, facts."""
        return self.dimensions + self.time_dimensions + self.facts

    def time_dimension(self) -> Column | None:
        """The default time dimension, else the first declared one, else ``None``."""
        for col in self.time_dimensions:
            if col.name == self.default_time_dimension:
                return col
        return self.time_dimensions[0] if self.time_dimensions else None


class Metric(Strict):
    """``metrics/*.yaml``: an aggregate ``expression`` over ``model``'s table."""

    name: str = Field(pattern=_NAME_RE)
    label: str | None = None
    description: str = ""
    synonyms: tuple[str, ...] = ()
    model: str
    expression: str
    filters: tuple[str, ...] = ()


class Exemplar(Strict):
    """``exemplars/*.yaml``: an uncertified question → SQL example."""

    name: str = Field(pattern=_NAME_RE)
    question: str
    sql: str
    description: str = ""


class Provenance(Strict):
    """Who certified an answer, when, from what: an active one needs a person, a past date."""

    certified_by: str
    certified_at: str
    source: str = "manual"


class Answer(Strict):
    """``answers/*.yaml``: a certified answer; ``sql`` is the oracle.

    ``expect_empty: true`` says an empty result *is* the answer: only then does an
    oracle with no rows compare plainly against an empty generated result;
    otherwise the suite reports it as a *vacuous oracle* (DESIGN §4 step 3).
    """

    id: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    question: str
    sql: str
    status: Literal["active", "retired", "draft"] = "active"
    provenance: Provenance
    description: str = ""
    expect_empty: bool = False

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is empty")
        return value


class Case(Strict):
    """One behavioural case from ``evals/cases.yaml``."""

    question: str
    expect: Literal["clarify", "refuse", "answer"]
    term: str | None = None


class CasesFile(Strict):
    """``evals/cases.yaml``."""

    cases: tuple[Case, ...] = ()


def _key_line(text: str, key: str) -> int | None:
    """The 1-based line where mapping key ``key`` is written (plain or quoted), if any."""
    pattern = re.compile(rf"^\s*(['\"]?){re.escape(key)}\1\s*:")
    return next((n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)), None)


def load_repo_config(raw: bytes, path: str = "dst.yaml") -> RepoConfig:
    """``dst.yaml``'s bytes, validated as every command reads them (``dst validate`` too).

    Raises:
        LensLoadError: at the offending line of ``path``: YAML, an unknown key (with the
            closest known one, e.g. ``enviroments``), a value of the wrong type, or an
            environment that promotes from an unknown one, from itself or in a cycle.
    """
    from reconciler.loader import load_yaml, validate  # lazy: the loader sits beside

    doc = load_yaml(path, raw)
    config = validate(RepoConfig, doc)
    for where, problem, fix in environment_problems(config)[:1]:
        line = doc.line_of(where)
        if len(where) == 2:  # a bad name: the line of the key itself, not of its value
            line = _key_line(raw.decode("utf-8"), where[1]) or line
        raise LensLoadError(path, problem, line=line, fix=fix)
    return config
