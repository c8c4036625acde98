"""Running a suite's answers concurrently, with results in a fixed order (pure).

Each certified answer's verification is independent of the others (its own
oracle, its own generation, its own comparison), and most of its wall time is
spent waiting for the warehouse. So a suite runs up to ``jobs`` answers at once
on a thread pool; each worker borrows its own connection from the warehouse's
pool for each statement. Results come back in the order the answers were
given, whatever order they finish in, so reports, run records and bindings are
the same for ``jobs=1`` and ``jobs=8``.

How many at once: ``--jobs N`` on ``dst apply`` / ``dst test`` > the lens's
``jobs:`` in ``lens.yaml`` > 1, bounded by :data:`reconciler.lens.MAX_JOBS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from reconciler.assembly.similarity import Embedder
from reconciler.generators import DimensionValues, SmartCall
from reconciler.lens import MAX_JOBS, Answer, Lens
from reconciler.resultset import Executor
from reconciler.suite import AnswerResult, run_answer


def resolve_jobs(cli_jobs: int | None, lens: Lens) -> int:
    """How many answers of ``lens`` run at once: ``--jobs`` > ``jobs:`` in lens.yaml > 1.

    Raises:
        ValueError: ``cli_jobs`` is outside ``1..MAX_JOBS`` (the CLI refuses it first).
    """
    if cli_jobs is not None and not 1 <= cli_jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be between 1 and {MAX_JOBS}, got {cli_jobs}")
    return cli_jobs or lens.config.jobs or 1


def run_answers(
    lens: Lens,
    answers: Sequence[Answer],
    executor: Executor,
    values: DimensionValues,
    *,
    jobs: int = 1,
    smart: SmartCall | None = None,
    progress: Callable[[str], None] = lambda _msg: None,
    announce: Callable[[str], None] = lambda _msg: None,
    verbs: Mapping[str, str] | None = None,
    embedder: Embedder | None = None,
) -> list[AnswerResult]:
    """Verify ``answers`` of ``lens``, up to ``jobs`` at a time (:func:`suite.run_answer`).

    Args:
        lens, executor, values, smart, progress, embedder: as for
            :func:`reconciler.suite.run_answer`;
            ``executor`` must be safe to call from several threads (the
            ``Warehouse`` is: one pooled connection per statement).
        answers: the answers, in the order their results are wanted.
        jobs: answers in flight at once (1 runs them one by one on this thread).
        announce: receives ``<lens>: <verb> <answer id>`` as each answer starts.
        verbs: ``{answer id: verb}`` where it is not ``verifying`` (``self-testing``).

    Returns:
        One result per answer, in the order of ``answers``.
    """

    def one(answer: Answer) -> AnswerResult:
        announce(f"{lens.name}: {(verbs or {}).get(answer.id, 'verifying')} {answer.id}")
        return run_answer(
            lens, answer, executor, values, progress=progress, smart=smart, embedder=embedder
        )

    if jobs <= 1 or len(answers) <= 1:
        return [one(a) for a in answers]
    workers = min(jobs, len(answers))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dst-suite") as pool:
        return list(pool.map(one, answers))
