"""The certified suite for one answer (DESIGN §4).

1. Execute the oracle read-only, capped at ``row_cap``; over the cap is an error.
2. Re-ask the question through the same assembly and generator serving uses,
   certified matching disabled and the answer excluded from its own exemplars.
3. Execute the generated SQL the same way and compare (``compare``).
4. On divergence generate once more; a pass on the second attempt is correct
   but flaky.

The executor is any object with ``execute``/``distinct_values`` (the
``warehouse.Warehouse`` in production), so this module stays free of drivers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from reconciler.assembly.profiles import ProfileStore
from reconciler.assembly.request import assemble
from reconciler.assembly.similarity import Embedder
from reconciler.assets import asset_hashes
from reconciler.compare.diff import Verdict, compare
from reconciler.compare.ordering import order_keys
from reconciler.errors import DstError
from reconciler.generators import DimensionValues, SmartCall, generate
from reconciler.lens import Answer, AnswerId, Lens
from reconciler.resultset import Executor, ResultSet

MAX_ATTEMPTS = 2
VALUES_PER_DIMENSION = 200


class Outcome(str, Enum):
    """Scored outcomes: correct, wrong, declined; error or inconclusive when it could not score."""

    CORRECT = "correct"
    WRONG = "wrong"
    DECLINED = "declined"
    ERROR = "error"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class AnswerResult:
    """One answer's verification.

    Attributes:
        answer: the answer id.
        outcome: correct / wrong / declined / error / inconclusive.
        attempts: one record per generation attempt (request, generation,
            comparison), at most ``MAX_ATTEMPTS``.
        detail: one human line.
        flaky: passed only on the second attempt.
        oracle: preview of the oracle's executed result (``None`` if it failed).
        generated: preview of the last generated result (``None`` if none ran).
        oracle_failed: the certified SQL itself did not run (or exceeded the cap):
            a broken answer file, not a generation problem.
    """

    answer: AnswerId
    outcome: Outcome
    attempts: tuple[dict[str, Any], ...]
    detail: str
    flaky: bool = False
    oracle: dict[str, Any] | None = None
    generated: dict[str, Any] | None = None
    oracle_failed: bool = False

    def record(self) -> dict[str, Any]:
        """JSON-ready record for reports and ``state/run.json``."""
        return {
            "answer": self.answer,
            "outcome": self.outcome.value,
            "attempts": len(self.attempts),
            "detail": self.detail,
            "flaky": self.flaky,
            "oracle_result": self.oracle,
            "generated_result": self.generated,
            "trace": list(self.attempts),
        }


@dataclass
class ValueCache:
    """Distinct values of a lens's string dimensions, read once per run (generator input).

    With ``profiles`` (a :class:`reconciler.assembly.profiles.ProfileStore`) each
    column's profile comes from the on-disk cache when its content hash matches,
    and is read from the warehouse and cached otherwise; without it every run
    reads the warehouse. ``dialect`` is the warehouse's (for the count query).
    """

    executor: Executor
    timeout_s: float
    profiles: ProfileStore | None = None
    dialect: str = "duckdb"
    _cache: dict[str, DimensionValues] = field(default_factory=dict)

    def for_lens(self, lens: Lens) -> DimensionValues:
        """``{(model, dimension): values}`` for every string dimension of ``lens``."""
        key = f"{lens.name}:{id(lens)}"
        if key not in self._cache:
            values: dict[tuple[str, str], tuple[str, ...]] = {}
            for model in lens.models.values():
                for col in model.dimensions:
                    if col.data_type.lower() not in ("string", "text", "varchar"):
                        continue
                    try:
                        values[(model.name, col.name)] = self._values(model.table, col.sql)
                    except DstError:
                        values[(model.name, col.name)] = ()
            self._cache[key] = values
        return self._cache[key]

    def _values(self, table: str, column_sql: str) -> tuple[str, ...]:
        if self.profiles is None:
            return self.executor.distinct_values(
                table, column_sql, limit=VALUES_PER_DIMENSION, timeout_s=self.timeout_s
            )
        return self.profiles.profile(
            self.executor,
            table,
            column_sql,
            limit=VALUES_PER_DIMENSION,
            timeout_s=self.timeout_s,
            dialect=self.dialect,
        ).values


def run_answer(
    lens: Lens,
    answer: Answer,
    executor: Executor,
    values: DimensionValues,
    *,
    progress: Callable[[str], None] = lambda _msg: None,
    smart: SmartCall | None = None,
    embedder: Embedder | None = None,
) -> AnswerResult:
    """Verify one certified answer against the warehouse.

    Args:
        lens: the lens version under test (its assets feed generation; its
            answer file holds the oracle).
        answer: the answer to verify.
        executor: the read-only warehouse.
        values: dimension values for the generator.
        progress: receives one line per step (stderr in the CLI).
        smart: the smart generator tier, when the lens lists it and it is configured.
        embedder: the local sentence embedder, when the lens asks for embedding
            retrieval and the ``embed`` extra is installed.

    Returns:
        The result; never raises for warehouse or generation failures (they
        become ``error`` outcomes).
    """
    cfg = lens.config
    aid = AnswerId(answer.id)

    def execute(sql: str) -> ResultSet:
        return executor.execute(
            sql, row_cap=cfg.row_cap, timeout_s=cfg.statement_timeout_s, as_of=cfg.as_of
        )

    progress(f"{lens.name}/{aid}: executing oracle")
    try:
        oracle = execute(answer.sql)
    except DstError as exc:
        return AnswerResult(
            aid, Outcome.ERROR, (), f"oracle failed: {exc.message}", oracle_failed=True
        )
    if oracle.truncated:
        return AnswerResult(
            aid,
            Outcome.ERROR,
            (),
            f"oracle returns more than row_cap={cfg.row_cap} rows",
            oracle=oracle.preview(),
            oracle_failed=True,
        )
    order = order_keys(answer.sql, cfg.dialect)
    attempts: list[dict[str, Any]] = []
    generated: ResultSet | None = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        request = assemble(
            lens, answer.question, exclude_answer=aid, certified_matching=False, embedder=embedder
        )
        generation = generate(lens, request, values, smart=smart)
        trace: dict[str, Any] = {
            "attempt": attempt,
            "request": request.record(asset_hashes(lens)),
            "generation": generation.record(),
        }
        attempts.append(trace)
        if generation.sql is None:
            return AnswerResult(
                aid,
                Outcome.DECLINED,
                tuple(attempts),
                f"generator declined: {generation.declined}",
                oracle=oracle.preview(),
            )
        progress(f"{lens.name}/{aid}: executing generated SQL (attempt {attempt})")
        try:
            generated = execute(generation.sql)
        except DstError as exc:
            trace["error"] = exc.message
            if attempt < MAX_ATTEMPTS:
                continue
            return AnswerResult(
                aid,
                Outcome.ERROR,
                tuple(attempts),
                f"generated SQL failed: {exc.message}",
                oracle=oracle.preview(),
            )
        result = compare(oracle, generated, order=order)
        trace["comparison"] = result.record()
        if result.verdict is Verdict.MATCH:
            flaky = attempt > 1
            detail = "matches the oracle" + (" on the second attempt (flaky)" if flaky else "")
            return AnswerResult(
                aid,
                Outcome.CORRECT,
                tuple(attempts),
                detail,
                flaky,
                oracle.preview(),
                generated.preview(),
            )
        if result.verdict is Verdict.INCONCLUSIVE:
            return AnswerResult(
                aid,
                Outcome.INCONCLUSIVE,
                tuple(attempts),
                result.detail,
                oracle=oracle.preview(),
                generated=generated.preview(),
            )
    last = attempts[-1].get("comparison", {})
    detail = str(last.get("detail", "diverged")) if last else "diverged"
    return AnswerResult(
        aid,
        Outcome.WRONG,
        tuple(attempts),
        f"diverged from the oracle: {detail}; fix the definition, or re-certify / retire "
        f"the answer",
        oracle=oracle.preview(),
        generated=generated.preview() if generated else None,
    )


def score(results: list[AnswerResult]) -> dict[str, int]:
    """``{"correct", "wrong", "declined", "error", "inconclusive", "total"}`` counts."""
    counts = {o.value: 0 for o in Outcome}
    for r in results:
        counts[r.outcome.value] += 1
    counts["total"] = len(results)
    return counts
