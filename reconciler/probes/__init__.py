"""The runtime gates that look at the warehouse: one bounded probe each, for every tier.

DESIGN §1 runtime gates. The pure gates of :mod:`reconciler.trust` read the SQL
and the rows it returned; the tie and NULL-group gates (:mod:`reconciler.probes.cuts`) and
the thinned-join gate (:mod:`reconciler.probes.thinning`), the undated-rows gate
(:mod:`reconciler.probes.undated`) and the namesake gate
(:mod:`reconciler.probes.namesakes`) need to see rows the query did
not return, so each writes one probe query, capped at the lens's ``row_cap`` and
run on the same read-only executor with the same timeout and pinned ``as_of``.

:func:`probe` runs them on one execution of generated SQL. Certified SQL is served as
certified and never repaired (only a human certifies), but a cut of it that falls
inside a tie is said in a note. A cut whose
ties or NULL group can be repaired comes back as a new execution of the repaired
SQL, with a note; every other finding is an evaluation. A probe that fails to run
is recorded as a passed evaluation whose detail says so: the gate could not look,
and the answer keeps the trust the other gates give it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reconciler.errors import DstError
from reconciler.probes.cuts import (
    GATE_NULL_GROUP,
    GATE_TIE,
    cut_of,
    failed,
    judge,
    needs_probe,
    null_group_note,
    null_groups,
)
from reconciler.probes.namesakes import (
    GATE_NAMESAKE,
    Label,
    Namesake,
    judge as judge_namesake,
    namesake_probes,
)
from reconciler.probes.thinning import GATE_THINNED_JOIN, judge_thinning, thinning_probe
from reconciler.probes.undated import GATE_UNDATED, judge_undated, undated_probe
from reconciler.resultset import Executor, ResultSet
from reconciler.trust import Evaluation, Execution


@dataclass(frozen=True)
class Probed:
    """What the probes made of one execution.

    Attributes:
        execution: the execution to serve: the given one, or the repaired cut's.
        result: the result to serve with it (``None`` when it stands unchanged).
        evaluations: the probing gates' verdicts.
        notes: lines for the asker (a repaired cut, a NULL group shown as missing).
    """

    execution: Execution
    result: ResultSet | None
    evaluations: tuple[Evaluation, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Limits:
    """How a probe runs: ``row_cap`` rows, ``timeout_s`` seconds, at ``as_of``; ``labels``
    are the lens's name columns the namesake gate checks
    (:func:`reconciler.probes.namesakes.lens_labels`)."""

    row_cap: int
    timeout_s: float
    as_of: str | None = None
    labels: tuple[Label, ...] = ()


def probe(ex: Execution, served: ResultSet, executor: Executor, limits: Limits) -> Probed:
    """Run the tie, NULL-group, thinned-join, undated-rows and namesake probes on ``ex``
    (module docstring).

    Args:
        ex: an execution that ran without error, of a generated or research route.
        served: its result.
        executor: the read-only warehouse it ran on.
        limits: the lens's row cap, statement timeout and pinned ``as_of``.

    Returns:
        The execution and result to serve, and the evaluations; never raises for
        a probe the warehouse refuses.
    """
    if ex.sql is None or ex.error is not None:
        return Probed(ex, None, ())
    if ex.route == "certified_answer":
        return _certified_tie(ex, served, executor, limits)
    evaluations: list[Evaluation] = []
    notes: list[str] = []
    result: ResultSet | None = None
    cut = cut_of(ex.sql, ex.dialect)
    if cut is not None and needs_probe(cut, served):
        try:
            rows = _run(executor, cut.probe_sql, limits)
        except DstError as exc:
            detail = f"the tie probe did not run: {exc.message}"
            evaluations += [Evaluation(GATE_TIE, True, "info", detail=detail)]
        else:
            verdict = judge(cut, served, rows, ex)
            evaluations += verdict.evaluations
            notes += verdict.notes
            if verdict.repaired is not None and verdict.repaired_sql is not None:
                result = verdict.repaired
                ex = replace(ex, sql=verdict.repaired_sql, columns=result.columns, rows=result.rows)
    elif cut is None and (shown := _breakdown_nulls(ex, served)) is not None:
        evaluations.append(shown)
        notes += [shown.detail] if shown.passed else []
    thinning = thinning_probe(ex.sql, ex.dialect) if ex.sql else None
    if thinning is not None:
        matched = _probe_rows(executor, thinning.probe_sql, limits, GATE_THINNED_JOIN)
        evaluations.append(
            matched if isinstance(matched, Evaluation) else judge_thinning(thinning, matched, ex)
        )
    undated = undated_probe(ex.sql, ex.dialect) if ex.sql else None
    if undated is not None:
        counted = _probe_rows(executor, undated.probe_sql, limits, GATE_UNDATED)
        dated = (
            counted
            if isinstance(counted, Evaluation)
            else judge_undated(undated, counted, result or served, ex)
        )
        evaluations.append(dated)
        if dated.passed and dated.detail and not isinstance(counted, Evaluation):
            notes.append(dated.detail)
    namesakes = namesake_probes(ex.sql or "", ex.dialect, limits.labels)
    for namesake in namesakes:
        counted = _probe_rows(executor, namesake.probe_sql, limits, GATE_NAMESAKE)
        if isinstance(counted, Evaluation):
            evaluations.append(counted)
            continue
        named = judge_namesake(namesake, counted, ex.route)
        alone = len(namesakes) == 1 and result is None  # one repair of the query, at most
        each = None if named.passed or not alone else _run_each(executor, namesake, limits)
        if each is not None and namesake.each_sql is not None:
            result = each
            ex = replace(
                ex, sql=namesake.each_sql, columns=each.columns, rows=each.rows, per_entity=True
            )
            named = judge_namesake(namesake, counted, ex.route, shown_each=True)
            notes.append(named.detail or "")
        evaluations.append(named)
    return Probed(ex, result, tuple(evaluations), tuple(notes))


def _breakdown_nulls(ex: Execution, served: ResultSet) -> Evaluation | None:
    """The NULL-group gate on a breakdown: its NULL group shown and labelled (passed, the
    note in the detail), or blocking when every group shown is the NULL group ("Cancelled
    bookings by year" with no cancelled booking dated: one row, year NULL)."""
    note = null_group_note(ex, ex.dialect)
    groups = null_groups(ex, ex.dialect)
    if note is None or groups is None:
        return None
    if groups[0] < len(served.rows):
        return Evaluation(GATE_NULL_GROUP, True, "info", detail=note)
    detail = f"every group has no value for {groups[1]}: the breakdown names none"
    hint = f"break down by a column the rows have, not {groups[1]}"
    return failed(GATE_NULL_GROUP, "blocking", detail, hint, ex)


def _certified_tie(ex: Execution, served: ResultSet, executor: Executor, limits: Limits) -> Probed:
    """A certified answer as certified, with a note when its cut falls inside a tie: a
    human wrote the SQL, so it is not repaired, but the pick is never silent."""
    assert ex.sql is not None
    cut = cut_of(ex.sql, ex.dialect)
    if cut is None or not cut.keys or cut.offset or not needs_probe(cut, served):
        return Probed(ex, None, ())
    try:
        rows = _run(executor, cut.probe_sql, limits)
    except DstError:
        return Probed(ex, None, ())
    kept = judge(cut, served, rows, ex).repaired
    if kept is None or len(kept.rows) <= len(served.rows):
        return Probed(ex, None, ())
    note = (
        f"the certified answer's {cut.describe()} cuts a tie: {len(kept.rows)} rows tie "
        f"within it and {len(served.rows)} are shown; re-certify it to show every tied row"
    )
    return Probed(ex, None, (Evaluation(GATE_TIE, True, "info", detail=note),), (note,))


def _run_each(executor: Executor, namesake: Namesake, limits: Limits) -> ResultSet | None:
    """The rows of ``namesake``'s one-row-per-entity query, or ``None`` (none, or it did
    not run: the warning stands)."""
    if namesake.each_sql is None:
        return None
    try:
        return _run(executor, namesake.each_sql, limits)
    except DstError:
        return None


def _probe_rows(executor: Executor, sql: str, limits: Limits, gate: str) -> ResultSet | Evaluation:
    """The probe's rows, or the passed ``info`` evaluation saying it did not run."""
    try:
        return _run(executor, sql, limits)
    except DstError as exc:
        detail = f"the {gate.replace('_', '-')} probe did not run: {exc.message}"
        return Evaluation(gate, True, "info", detail=detail)


def _run(executor: Executor, sql: str, limits: Limits) -> ResultSet:
    return executor.execute(
        sql, row_cap=limits.row_cap, timeout_s=limits.timeout_s, as_of=limits.as_of
    )
