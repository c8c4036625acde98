"""Cortex verified queries → certified answers.

A verified query (Cortex Analyst "Verified Query Repository": ``name``,
``question``, ``sql``, ``verified_at`` in unix seconds, ``verified_by``,
``use_as_onboarding_question``) is a human's statement that this SQL answers
this question — exactly a certified answer. Its SQL names logical tables and
columns, so it is compiled once into physical SQL
(:func:`~reconciler.interop.importers.logical.compile_logical`) and that compiled text
becomes the oracle.

A query that cannot become an active answer (no compile, no certifier on
record, a failing or oversized oracle) is still written, as a ``draft`` whose
description says why; the source SQL is kept in every answer's description.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sqlglot import exp

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from reconciler.interop.importers import (
    Findings,
    ImportProblem,
    OracleRunner,
    ProblemKind,
    dump_yaml,
    scalar_text,
    slugify,
)
from reconciler.interop.importers.logical import (
    LogicalSqlError,
    LogicalTable,
    compile_logical,
    lowercase_identifiers,
    parse_sql,
)
from reconciler.lens import MAX_ROW_CAP, RELATIVE_DATE_RE, Answer, Provenance
from reconciler.provenance import certified_at_problem, certifier_problem

SOURCE_DIALECT = "snowflake"
# The oracle of a draft whose source SQL is not even a query (its description keeps the source).
NO_SQL = "SELECT NULL AS unparsed_source_sql WHERE FALSE"

_QUERY_KEYS = {"name", "question", "sql", "verified_at", "verified_by"}
_LOSSES = {"use_as_onboarding_question": "lenses have no onboarding questions"}


@dataclass
class VerifiedQuery:
    """One verified query while it becomes an answer.

    Attributes:
        id: the answer id (slug of the name, unique within the import).
        name, question: as in the source (the question falls back to the name).
        source_sql: the SQL as written, Snowflake dialect over logical names.
        certified_by: ``verified_by``, or ``"unknown"`` (a draft's; it never passes
            :func:`reconciler.provenance.certifier_problem`).
        certified_at: ``verified_at`` as an ISO day (UTC), or ``"unknown"``.
        verified_at: unix seconds, when given.
        sql: the compiled oracle (lens dialect), or the best loadable SQL for a draft.
        problems: why it is a draft; empty for an active answer.
        reads_clock: the source SQL reads CURRENT_DATE or another clock.
    """

    id: str
    name: str
    question: str
    source_sql: str
    certified_by: str
    certified_at: str
    verified_at: int | None
    sql: str = NO_SQL
    problems: list[str] = field(default_factory=list)
    reads_clock: bool = False

    @property
    def relative(self) -> bool:
        """Whether its answer depends on the day it is asked."""
        return self.reads_clock or RELATIVE_DATE_RE.search(self.question) is not None


def read_verified_queries(
    raw: Any, tables: Sequence[LogicalTable], findings: Findings, *, dialect: str
) -> list[VerifiedQuery]:
    """Read and compile the ``verified_queries`` list.

    Args:
        raw: the source's ``verified_queries`` value (a list of mappings, or ``None``).
        tables: the model's logical tables, for compiling.
        findings: where unknown keys and skipped entries are recorded.
        dialect: the lens dialect to compile to.

    Returns:
        One entry per verified query, in source order; those that cannot be
        active carry their ``problems``.
    """
    taken: set[str] = set()
    queries: list[VerifiedQuery] = []
    for i, entry in enumerate(raw or ()):
        if not isinstance(entry, dict):
            findings.lose(f"verified_queries[{i}]", "not a mapping; ignored")
            continue
        name = scalar_text(entry.get("name")).strip()
        question = scalar_text(entry.get("question")).strip()
        findings.unknown_keys(entry, _QUERY_KEYS, f"verified_queries[{name or i}]", _LOSSES)
        slug = base = slugify(name or question or f"verified query {i + 1}")
        n = 1
        while slug in taken:
            n += 1
            slug = f"{base}_{n}"
        taken.add(slug)
        verified_at = _unix_seconds(entry.get("verified_at"))
        query = VerifiedQuery(
            id=slug,
            name=name or question or slug,
            question=question or name or slug,
            source_sql=scalar_text(entry.get("sql")).strip(),
            certified_by=scalar_text(entry.get("verified_by")).strip() or "unknown",
            certified_at=iso_day(verified_at) if verified_at is not None else "unknown",
            verified_at=verified_at,
        )
        if not question:
            query.problems.append("no question (the name stands in for it)")
        query.problems += _provenance_problems(query, entry)
        _compile(query, tables, dialect)
        queries.append(query)
    return queries


def _compile(query: VerifiedQuery, tables: Sequence[LogicalTable], dialect: str) -> None:
    parsed = parse_sql(query.source_sql, SOURCE_DIALECT)
    try:
        query.reads_clock = parsed is not None and guard.reads_current_date(parsed, SOURCE_DIALECT)
    except UnsafeSqlError:
        query.reads_clock = False
    try:
        query.sql = compile_logical(query.source_sql, tables, read=SOURCE_DIALECT, write=dialect)
        guard.check_read_only(query.sql, dialect)
    except (LogicalSqlError, UnsafeSqlError) as exc:
        query.problems.append(f"not compiled: {exc.message}")
        query.sql = _fallback_sql(parsed, dialect)


def _provenance_problems(query: VerifiedQuery, entry: Mapping[str, Any]) -> list[str]:
    """Why the source's ``verified_by``/``verified_at`` cannot certify an active answer.

    The rules are the loader's (:mod:`reconciler.provenance`): a person's name and a
    past date; anything less makes the query a draft rather than a failing lens.
    """
    problems = []
    given = scalar_text(entry.get("verified_by")).strip()
    who = certifier_problem(given)
    if not given:
        problems.append("no verified_by: nobody is on record as having verified it")
    elif who is not None:
        problems.append(f"verified_by {given!r} {who}: it does not name a person")
    if query.verified_at is None:
        problems.append(f"verified_at {entry.get('verified_at')!r} is not a time in unix seconds")
    elif (when := certified_at_problem(query.certified_at)) is not None:
        problems.append(f"verified_at {query.verified_at} ({query.certified_at}) {when}")
    return problems


def _unix_seconds(value: Any) -> int | None:
    try:
        seconds = int(scalar_text(value).strip())
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def iso_day(seconds: int) -> str:
    """The UTC calendar day of a unix time, ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).date().isoformat()


def _fallback_sql(parsed: exp.Expr | None, dialect: str) -> str:
    """The source SQL as written, for a draft, when it is a loadable query at all."""
    if parsed is None:
        return NO_SQL
    try:
        sql = lowercase_identifiers(parsed).sql(dialect=dialect, pretty=True)
        guard.check_read_only(sql, dialect)
    except Exception:  # a draft only needs loadable SQL; the source is in its description
        return NO_SQL
    return sql


def pin_as_of(
    queries: Sequence[VerifiedQuery],
    as_of: str | None,
    findings: Findings,
    *,
    data_day: tuple[str, str] | None = None,
) -> str | None:
    """Choose the lens's ``as_of`` for queries that depend on the day they are asked.

    The caller's ``as_of`` wins. Otherwise, with data, it is the latest day the
    data holds (``data_day``): relative periods ("this month") then land on the
    data the answers are checked against. Without data it is the day the latest
    such query was verified: the last day a human saw those answers as right.
    When neither is known they become drafts (a relative-date answer without
    ``as_of`` would not load, DESIGN §4). Either way the relative-dated queries
    are reported as one :attr:`ProblemKind.RELATIVE_DATE` problem saying which.

    Args:
        queries: every verified query.
        as_of: the day asked for (``--as-of``), if any.
        findings: where the decision is recorded.
        data_day: ``(YYYY-MM-DD, "table.column")``: the latest day in the data.

    Returns:
        The ``YYYY-MM-DD`` day to write, or ``None``.
    """
    relative = [q for q in queries if q.relative]
    if as_of is not None:
        if relative:
            _relative(findings, relative, f"evaluated at as_of {as_of}, pinned as asked")
        return as_of
    if not relative:
        return None
    if data_day is not None:
        day, column = data_day
        _relative(
            findings, relative, f"evaluated at as_of {day}, the latest day in the data ({column})"
        )
        return day
    # A verified_at in the future is no day a human saw the answer (it is a draft).
    stamped = [
        q
        for q in relative
        if q.verified_at is not None and certified_at_problem(q.certified_at) is None
    ]
    if not stamped:
        for query in relative:
            query.problems.append(
                "it depends on the current date and no verified_at says on "
                "which day it was verified; import again with an as_of date"
            )
        _relative(findings, relative, "written as drafts: no as_of date is known for them")
        return None
    latest = max(stamped, key=lambda q: q.verified_at or 0)
    day = iso_day(latest.verified_at or 0)
    _relative(
        findings,
        relative,
        f"evaluated at as_of {day}, the day the latest of them ({latest.id}) was verified, "
        "the last day a human saw those answers as right",
    )
    return day


def _relative(findings: Findings, relative: Sequence[VerifiedQuery], decision: str) -> None:
    findings.problem(
        ImportProblem(
            ProblemKind.RELATIVE_DATE,
            f"{len(relative)} verified queries read the clock or name a relative period "
            f"({', '.join(q.id for q in relative)}); {decision}",
            answers=tuple(q.id for q in relative),
        )
    )


def draft_joins_through(
    queries: Sequence[VerifiedQuery], through: Mapping[str, str], findings: Findings
) -> None:
    """Draft the queries that join on a non-unique key, reported as one problem.

    Args:
        queries: every verified query.
        through: ``{answer id: "table on columns"}``
            (:func:`~reconciler.interop.importers.checks.oracles_through`).
        findings: where the problem goes.
    """
    hit = [q for q in queries if q.id in through]
    for query in hit:
        query.problems.append(
            f"it joins {through[query.id]}, which is not unique on the seeded data, so its "
            "result may count rows several times; check it and certify it with "
            "`dst certify --replace ID --lens LENS`"
        )
    if hit:
        findings.problem(
            ImportProblem(
                ProblemKind.ORACLE_THROUGH_NON_UNIQUE_KEY,
                f"{len(hit)} verified queries join on a non-unique key and are written as "
                f"drafts: {', '.join(f'{q.id} ({through[q.id]})' for q in hit)}",
                answers=tuple(q.id for q in hit),
            )
        )


def check_oracles(
    queries: Sequence[VerifiedQuery],
    as_of: str | None,
    seeds: Mapping[str, bytes],
    runner: OracleRunner | None,
    findings: Findings,
    *,
    dialect: str,
) -> None:
    """Execute the compiled oracles over the seeds; failures become draft problems.

    Clock reads are pinned to ``as_of`` first (DESIGN §4), so the run sees what
    the gate will see. An oracle returning more than the row cap is a problem
    too: the gate would call it an error. Empty results are reported as one problem.

    Args:
        queries: every query; only those without problems are run.
        as_of: the lens's pinned day, if any.
        seeds: ``{physical table: CSV bytes}``.
        runner: executes the queries; ``None`` skips execution (noted).
        findings: where skips are noted and empty results reported.
        dialect: the lens dialect the oracles are written in.
    """
    candidates = [q for q in queries if not q.problems]
    if not candidates:
        return
    if runner is None or not seeds:
        why = "no oracle runner was given" if runner is None else "there are no seeds"
        findings.note(f"{len(candidates)} oracles compiled but not executed: {why}")
        return
    sql = [guard.pin_current_date(q.sql, as_of, dialect) if as_of else q.sql for q in candidates]
    outcomes = list(runner(seeds, sql))
    if len(outcomes) != len(sql):
        raise ValueError(
            f"the oracle runner returned {len(outcomes)} outcomes for {len(sql)} queries"
        )
    empty: list[str] = []
    for query, outcome in zip(candidates, outcomes, strict=True):
        if outcome.error is not None:
            lines = outcome.error.strip().splitlines() or ["error"]
            query.problems.append(f"the compiled oracle fails on the seeded data: {lines[0]}")
        elif outcome.rows is not None and outcome.rows > MAX_ROW_CAP:
            query.problems.append(f"the oracle returns over {MAX_ROW_CAP} rows (the row cap)")
        elif outcome.rows == 0:
            empty.append(query.id)
    if empty:
        at = f" at as_of {as_of}" if as_of else ""
        findings.problem(
            ImportProblem(
                ProblemKind.EMPTY_ORACLE,
                f"{len(empty)} oracles return no rows on the seeded data{at} (vacuous "
                f"evidence: mark them expect_empty: true or fix the data): {', '.join(empty)}",
                answers=tuple(empty),
            )
        )


def answer_yaml(query: VerifiedQuery, source_name: str) -> bytes:
    """The ``answers/<id>.yaml`` file of one query: active, or draft with its problems."""
    origin = f"Cortex verified query {query.name!r}"
    if query.problems:
        intro = f"Draft: not certified by the import ({'; '.join(query.problems)}). {origin}."
    else:
        intro = (
            f"{origin}. The oracle was compiled at import from logical to physical "
            "names, so later model edits do not move it."
        )
    answer = Answer(
        id=query.id,
        question=query.question,
        sql=query.sql,
        status="draft" if query.problems else "active",
        provenance=Provenance(
            certified_by=query.certified_by,
            certified_at=query.certified_at,
            source=f"cortex:{source_name}",
        ),
        description=f"{intro}\nSource SQL (Snowflake, logical names):\n{query.source_sql}",
    )
    data = answer.model_dump(mode="json")
    order = ("id", "question", "status", "provenance", "description", "sql")
    return dump_yaml({key: data[key] for key in order})
