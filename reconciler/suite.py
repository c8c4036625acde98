"""The certified suite for one answer (DESIGN §4).

1. Execute the oracle read-only, capped at ``row_cap``; over the cap is an error.
2. Re-ask the question through the same assembly and generator serving uses,
   certified matching disabled and the answer excluded from its own exemplars.
3. Execute the generated SQL the same way and compare (``compare``).
4. On divergence generate once more; a pass on the second attempt is correct
   but flaky. With ``samples: k`` (lens.yaml) each of ``k`` samples is scored once
   instead: all correct is correct, none correct keeps its outcome, a mix is
   ``flaky`` (:func:`combine`).

The executor is any object with ``execute``/``distinct_values`` (the
``warehouse.Warehouse`` in production), so this module stays free of drivers.

A suite's answers are independent of each other (own oracle, own generation, own
comparison) and mostly wait on the warehouse, so :func:`run_answers` runs up to
``jobs`` of them at once on a thread pool, each statement on its own pooled
connection; results come back in the order the answers were given, so reports,
run records and bindings are the same for ``jobs=1`` and ``jobs=8``. How many at
once: ``--jobs N`` > the lens's ``jobs:`` > 1, bounded by
:data:`reconciler.lens.MAX_JOBS` (:func:`reconciler.lens.resolve_jobs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from reconciler.assembly.lookup import looked_up
from reconciler.assembly.request import assemble
from reconciler.assembly.similarity import Embedder
from reconciler.assembly.values import (  # re-exported: their home is the value index
    VALUES_PER_DIMENSION as VALUES_PER_DIMENSION,
    ValueCache as ValueCache,
)
from reconciler.assets import asset_hashes
from reconciler.compare.diff import Verdict, compare
from reconciler.compare.evidence import VACUOUS as VACUOUS, oracle_notes
from reconciler.compare.ordering import order_keys
from reconciler.compare.shown import SHOWN_NOTE
from reconciler.compare.ties import AMBIGUOUS as AMBIGUOUS_NOTE, LimitCut, kept_other_ties
from reconciler.errors import DstError
from reconciler.generators import DimensionValues, SmartCall, TierCall
from reconciler.generators.cache import SAMPLE
from reconciler.generators.reuse import generate_reusing
from reconciler.ids import AnswerId
from reconciler.lens import Answer, Lens, resolve_jobs as resolve_jobs
from reconciler.probes.cuts import kept_a_tie
from reconciler.probes.shown import shows_ranking
from reconciler.resultset import Executor, ResultSet
from reconciler.state import (
    Outcome as Outcome,  # re-exported: its home is the records
    score as score,
)
from reconciler.trust import Execution, join_grain

MAX_ATTEMPTS = 2


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
        transpiled: ``"<from>→<to>"`` when its statements ran transpiled from the
            lens's dialect to the warehouse's (DESIGN §2), else ``None``.
        notes: what weakens the evidence, whatever the outcome: an ``ambiguous
            oracle`` (its LIMIT cuts through tied rows) or a ``vacuous oracle`` (no
            rows, and the answer is not marked ``expect_empty: true``).
        samples: generations scored (``samples:``, or 2 for a pass on the re-run).
        flaky_samples: of those, the ones that did not pass when others did; the
            answer's flake rate is ``flaky_samples / samples``.
    """

    answer: AnswerId
    outcome: Outcome
    attempts: tuple[dict[str, Any], ...]
    detail: str
    flaky: bool = False
    oracle: dict[str, Any] | None = None
    generated: dict[str, Any] | None = None
    oracle_failed: bool = False
    transpiled: str | None = None
    notes: tuple[str, ...] = ()
    samples: int = 1
    flaky_samples: int = 0

    @property
    def flake_rate(self) -> float:
        """Flaky samples over samples (0.0 for an answer that never disagreed with itself)."""
        return self.flaky_samples / self.samples if self.samples else 0.0

    def record(self) -> dict[str, Any]:
        """JSON-ready record for reports and ``state/run.json``.

        ``transpiled`` is present only when the statements ran transpiled, ``notes``
        only when there are some, ``samples`` / ``flaky_samples`` only when more
        than one generation was scored.
        """
        record: dict[str, Any] = {
            "answer": self.answer,
            "outcome": self.outcome.value,
            "attempts": len(self.attempts),
            "detail": self.detail,
            "flaky": self.flaky,
            "oracle_result": self.oracle,
            "generated_result": self.generated,
            "trace": list(self.attempts),
        }
        if self.transpiled is not None:
            record["transpiled"] = self.transpiled
        if self.notes:
            record["notes"] = list(self.notes)
        if self.samples > 1:
            record["samples"] = self.samples
            record["flaky_samples"] = self.flaky_samples
        return record


def run_answer(
    lens: Lens,
    answer: Answer,
    executor: Executor,
    values: DimensionValues,
    *,
    progress: Callable[[str], None] = lambda _msg: None,
    smart: SmartCall | None = None,
    embedder: Embedder | None = None,
    command: TierCall | None = None,
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
        command: the command generator tier, when the lens lists it.

    The lens's ``samples:`` says how many generations are scored: with 1 a
    divergence is generated once more before counting (DESIGN §4 step 4), with
    more each sample is scored once and :func:`combine` decides. Sampling stops
    after a sample the fast tier generated: it is deterministic, so further
    samples would repeat it.

    Returns:
        The result; never raises for warehouse or generation failures (they
        become ``error`` outcomes).
    """
    cfg = lens.config
    aid = AnswerId(answer.id)

    def execute(sql: str) -> ResultSet:
        return executor.execute(
            sql, row_cap=cfg.row_cap, timeout_s=cfg.statement_timeout_s, as_of=cfg.pinned_as_of
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
    sampling = _Sampling(
        lens,
        answer,
        looked_up(lens, answer.question, executor, values),
        execute,
        oracle,
        order_keys(answer.sql, cfg.dialect),
        *oracle_notes(answer, oracle, execute, cfg.dialect),
        tiers=(smart, command, embedder),
        progress=progress,
    )
    samples = cfg.samples
    if samples <= 1:
        return _sample(sampling, MAX_ATTEMPTS)
    runs: list[AnswerResult] = []
    for index in range(1, samples + 1):
        token = SAMPLE.set(index)
        try:
            runs.append(_sample(sampling, 1, sample=index))
        finally:
            SAMPLE.reset(token)
        if _deterministic(runs[-1]):
            break
    return combine(runs)


@dataclass(frozen=True)
class _Sampling:
    """What every sample of one answer shares: its oracle, the oracle's notes, the tiers."""

    lens: Lens
    answer: Answer
    values: DimensionValues
    execute: Callable[[str], ResultSet]
    oracle: ResultSet
    order: Any
    cut: LimitCut | None
    unlimited: ResultSet | None
    notes: tuple[str, ...]
    tiers: tuple[SmartCall | None, TierCall | None, Embedder | None]
    progress: Callable[[str], None]


def _deterministic(result: AnswerResult) -> bool:
    """The sample's generation came from the fast tier, so every further sample repeats it."""
    if not result.attempts:
        return True
    generation = result.attempts[-1].get("generation", {})
    return isinstance(generation, dict) and generation.get("tier") == "fast"


def _tier_failed(result: AnswerResult) -> bool:
    """The sample's generator tier failed (unreachable, HTTP error, budget spent, crashed)."""
    generation = result.attempts[-1].get("generation", {}) if result.attempts else {}
    return result.outcome is Outcome.ERROR and bool(generation.get("error"))


def combine(runs: Sequence[AnswerResult]) -> AnswerResult:
    """One answer's outcome over its samples: all correct is ``correct``, none correct keeps
    the first failing sample's outcome, a mix is ``flaky`` — unless a sample's generator
    tier failed (no answer at all): then the answer is that ``error``.

    Args:
        runs: one result per sample, in order (at least one).

    Returns:
        The combined result: every sample's attempts (each marked with its ``sample``),
        ``samples`` and ``flaky_samples`` (the samples that did not pass, for a mix).
    """
    first = runs[0]
    if len(runs) == 1:
        return first
    n = len(runs)
    passed = sum(1 for r in runs if r.outcome is Outcome.CORRECT)
    attempts = tuple(
        {**trace, "sample": index} for index, r in enumerate(runs, 1) for trace in r.attempts
    )
    failed = next((r for r in runs if r.outcome is not Outcome.CORRECT), first)
    broken = next((r for r in runs if _tier_failed(r)), None)
    if broken is not None:  # a tier that could not answer is no evidence of disagreement
        detail = f"{broken.detail} (in one of {n} samples)"
        return replace(broken, attempts=attempts, detail=detail, samples=n)
    if passed == n:
        return replace(
            first, attempts=attempts, detail=f"{first.detail} in all {n} samples", samples=n
        )
    if passed == 0:
        return replace(
            failed,
            attempts=attempts,
            detail=f"{failed.detail} (no sample of {n} correct)",
            samples=n,
        )
    return replace(
        failed,
        outcome=Outcome.FLAKY,
        attempts=attempts,
        detail=f"flaky: correct in {passed} of {n} samples; otherwise {failed.outcome.value}: "
        f"{failed.detail}",
        flaky=True,
        samples=n,
        flaky_samples=n - passed,
    )


def _sample(run: _Sampling, max_attempts: int, *, sample: int = 1) -> AnswerResult:
    """One sample of an answer: generate, execute, compare; up to ``max_attempts`` generations.

    One function on purpose (over 80 lines): it is DESIGN §4's steps 2–4 in order,
    each early return one outcome, so the procedure reads as specified.
    """
    lens, answer, oracle, notes = run.lens, run.answer, run.oracle, run.notes
    smart, command, embedder = run.tiers
    aid = AnswerId(answer.id)
    attempts: list[dict[str, Any]] = []
    generated: ResultSet | None = None
    for attempt in range(1, max_attempts + 1):
        request = assemble(
            lens, answer.question, exclude_answer=aid, certified_matching=False, embedder=embedder
        )
        generation = generate_reusing(lens, request, run.values, smart, command)
        trace: dict[str, Any] = {
            "attempt": attempt,
            "request": request.record(asset_hashes(lens)),
            "generation": generation.record(),
        }
        attempts.append(trace)
        if generation.sql is None and generation.error:
            return AnswerResult(
                aid,
                Outcome.ERROR,
                tuple(attempts),
                str(generation.declined),
                oracle=oracle.preview(),
            )
        if generation.sql is None:
            return AnswerResult(
                aid,
                Outcome.DECLINED,
                tuple(attempts),
                f"generator declined: {generation.declined}",
                oracle=oracle.preview(),
                notes=notes,
            )
        grain = join_grain(
            Execution(answer.question, "generated", generation.sql, dialect=lens.config.dialect),
            lens,
            run.values,
        )
        if not grain.passed and grain.severity == "blocking":
            return AnswerResult(
                aid,
                Outcome.WRONG,
                tuple(attempts),
                f"join-grain gate: {grain.detail}",
                oracle=oracle.preview(),
            )
        what = f"attempt {attempt}" if sample == 1 else f"sample {sample}"
        run.progress(f"{lens.name}/{aid}: executing generated SQL ({what})")
        try:
            generated = run.execute(generation.sql)
        except DstError as exc:
            trace["error"] = exc.message
            if attempt < max_attempts:
                continue
            return AnswerResult(
                aid,
                Outcome.ERROR,
                tuple(attempts),
                f"generated SQL failed: {exc.message}",
                oracle=oracle.preview(),
                notes=notes,
            )
        result = compare(oracle, generated, order=run.order)
        trace["comparison"] = result.record()
        tie = result.verdict is Verdict.DIVERGED and (
            (
                run.cut is not None
                and run.unlimited is not None
                and kept_other_ties(run.cut, oracle, run.unlimited, generated)
            )
            or kept_a_tie(run.answer.sql, run.lens.config.dialect, oracle, generated, run.execute)
            is not None
        )
        shown = not (result.verdict is Verdict.MATCH or tie) and shows_ranking(
            run.answer.sql, run.lens.config.dialect, oracle, generated, run.execute
        )
        if result.verdict is Verdict.MATCH or tie or shown:
            flaky = attempt > 1
            detail = "matches the oracle" + (
                f" but for which tied rows it kept ({AMBIGUOUS_NOTE})" if tie else ""
            )
            detail += f" ({SHOWN_NOTE})" if shown else ""
            detail += " on the second attempt (flaky)" if flaky else ""
            return AnswerResult(
                aid,
                Outcome.CORRECT,
                tuple(attempts),
                detail,
                flaky,
                oracle.preview(),
                generated.preview(),
                notes=notes,
                samples=attempt,
                flaky_samples=attempt - 1,
            )
        if result.verdict is Verdict.INCONCLUSIVE:
            return AnswerResult(
                aid,
                Outcome.INCONCLUSIVE,
                tuple(attempts),
                result.detail,
                oracle=oracle.preview(),
                generated=generated.preview(),
                notes=notes,
            )
    last = attempts[-1].get("comparison", {})
    detail = str(last.get("detail", "diverged")) if last else "diverged"
    return AnswerResult(
        aid,
        Outcome.WRONG,
        tuple(attempts),
        f"diverged from the oracle: {detail}; fix the definition, re-certify the answer "
        f"(dst certify --replace {aid} --lens {lens.name}) or retire it",
        oracle=oracle.preview(),
        generated=generated.preview() if generated else None,
        notes=notes,
    )


@dataclass(frozen=True)
class Scoring:
    """What one lens version is scored with: its warehouse, generator inputs and pool size.

    Built once per lens by :meth:`reconciler.context.Runtime.scoring_for`; the
    suite, the self-test and ``dst test`` all run through it.

    Attributes:
        executor: the read-only warehouse, ``None`` when it cannot be reached.
        values: dimension values for the generator (empty when it cannot score).
        smart: the smart tier, when the lens lists it and it is configured.
        embedder: the local sentence embedder, when the lens asks for one and it loads.
        jobs: answers in flight at once.
        command: the command tier, when the lens lists it and it resolves.
        cannot_score: why the gate cannot score (no warehouse, no generator tier),
            else ``None``.
        no_embedder: why embedding retrieval falls back to lexical, else ``""``.
    """

    executor: Executor | None
    values: DimensionValues = field(default_factory=dict)
    smart: SmartCall | None = None
    embedder: Embedder | None = None
    jobs: int = 1
    command: TierCall | None = None
    cannot_score: str | None = None
    no_embedder: str = ""


def run_answers(
    lens: Lens,
    answers: Sequence[Answer],
    scoring: Scoring,
    *,
    progress: Callable[[str], None] = lambda _msg: None,
    announce: Callable[[str], None] = lambda _msg: None,
    verbs: Mapping[str, str] | None = None,
) -> list[AnswerResult]:
    """Verify ``answers`` of ``lens``, up to ``scoring.jobs`` at a time (:func:`run_answer`).

    Args:
        lens, progress: as for :func:`run_answer`.
        answers: the answers, in the order their results are wanted.
        scoring: the warehouse (it must be reachable, and safe to call from several
            threads: the ``Warehouse`` is, one pooled connection per statement),
            the generator inputs and ``jobs``, the answers in flight at once (1 runs
            them one by one on this thread).
        announce: receives ``<lens>: <verb> <answer id>`` as each answer starts.
        verbs: ``{answer id: verb}`` where it is not ``verifying`` (``self-testing``).

    Returns:
        One result per answer, in the order of ``answers``.

    Raises:
        ValueError: ``scoring.executor`` is ``None`` (the gate cannot score).
    """
    executor = scoring.executor
    if executor is None:
        raise ValueError(f"lens {lens.name}: no warehouse to score with")
    jobs = scoring.jobs
    transpiled = getattr(executor, "transpiled", None)

    def one(answer: Answer) -> AnswerResult:
        announce(f"{lens.name}: {(verbs or {}).get(answer.id, 'verifying')} {answer.id}")
        result = run_answer(
            lens,
            answer,
            executor,
            scoring.values,
            progress=progress,
            smart=scoring.smart,
            embedder=scoring.embedder,
            command=scoring.command,
        )
        return result if transpiled is None else replace(result, transpiled=str(transpiled))

    if jobs <= 1 or len(answers) <= 1:
        return [one(a) for a in answers]
    workers = min(jobs, len(answers))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dst-suite") as pool:
        return list(pool.map(one, answers))
