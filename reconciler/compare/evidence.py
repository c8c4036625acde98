"""What weakens an oracle's evidence, read before any generation (DESIGN §4 step 3).

An *ambiguous* oracle's LIMIT cuts through rows tied on its ORDER BY keys
(:mod:`reconciler.compare.ties`); a *vacuous* one returns no rows, so an empty
generated result proves little unless the answer says ``expect_empty: true``.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.compare.ties import LimitCut, ambiguity, limit_cut
from reconciler.errors import DstError
from reconciler.lens import Answer
from reconciler.resultset import ResultSet

VACUOUS = "vacuous oracle"
"""The note of an answer verified against an oracle with no rows (weak evidence)."""


def oracle_notes(
    answer: Answer, oracle: ResultSet, execute: Callable[[str], ResultSet], dialect: str
) -> tuple[LimitCut | None, ResultSet | None, tuple[str, ...]]:
    """The oracle's LIMIT cut, its result without the LIMIT, and the notes on its evidence.

    The oracle runs once more without its top-level LIMIT (capped at ``row_cap``)
    only when the LIMIT was reached: only then can it have dropped tied rows
    (:mod:`reconciler.compare.ties`). A vacuous oracle (no rows) is noted unless
    the answer is marked ``expect_empty: true``; one so marked that returns rows
    is noted too. Failures of the extra statement leave the comparison strict.
    """
    notes: list[str] = []
    cut = limit_cut(answer.sql, dialect)
    unlimited: ResultSet | None = None
    if cut is not None and len(oracle.rows) == cut.limit:
        try:
            unlimited = execute(cut.unlimited_sql)
        except DstError:
            unlimited = None
        found = ambiguity(cut, oracle, unlimited) if unlimited is not None else None
        if found is not None:
            notes.append(found)
        else:
            unlimited = None
    if not oracle.rows and not answer.expect_empty:
        notes.append(
            f"{VACUOUS}: the certified SQL returns no rows, so an empty generated result is "
            "weak evidence; mark the answer `expect_empty: true` if empty is the answer"
        )
    elif oracle.rows and answer.expect_empty:
        notes.append(f"marked `expect_empty: true` but the oracle returns {len(oracle.rows)} rows")
    return cut, unlimited, tuple(notes)
