"""What ``dst certify`` shows before it asks: the SQL, its executed result, the previous oracle.

:func:`show` prints a new certification (the SQL and a table of at most
:data:`SHOWN_ROWS` rows); :func:`show_beside` prints a re-certification: the
previous oracle and the new SQL side by side, both executed results, and how they
differ (:class:`Previous`). Cells are rounded for reading only
(:func:`reconciler.render.text.display_cell`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.errors import DstError

if TYPE_CHECKING:
    from rich.console import Console

    from reconciler.certify import Candidate, Replacement
    from reconciler.lens import Answer, Lens
    from reconciler.resultset import Executor, ResultSet

SHOWN_ROWS = 20
"""Rows of a result shown (and kept in the JSON preview)."""


def show(console: Console, lens: str, candidate: Candidate, result: ResultSet) -> None:
    """The question, the candidate SQL, its executed result and the result's size."""
    # lazy: rich's renderables load only when certify shows a result
    from rich.syntax import Syntax

    what = (
        f"hand-written SQL from {candidate.origin}"
        if candidate.origin
        else f"SQL from the {candidate.tier} generator tier"
    )
    console.print(f"[bold]{lens}[/bold]: {candidate.question}")
    console.print(f"{what}:")
    sql = str(candidate.sql).strip()
    # Syntax pads every line to the console width: colour on a terminal, plain text elsewhere.
    console.print(Syntax(sql, "sql", word_wrap=True) if console.is_terminal else sql, markup=False)
    console.print(result_table(result, "executed result"))
    rows = len(result.rows)
    shown = f"showing {SHOWN_ROWS} of {rows} rows" if rows > SHOWN_ROWS else f"{rows} rows"
    console.print(f"{shown}, {len(result.columns)} columns, {result.elapsed_s:.3f} s")


def result_table(result: ResultSet | None, title: str, error: str | None = None) -> Any:
    """A rich table of at most :data:`SHOWN_ROWS` rows (or the error that stopped it)."""
    # lazy: rich's renderables load only when certify shows a result
    from rich.table import Table
    from rich.text import Text

    # lazy: the text renderer loads the report model, which `dst --help` does not need
    from reconciler.render.text import display_cell

    if result is None:
        return Text(f"{title}: does not run now: {error}")
    table = Table(*result.columns, title=title, title_justify="left")
    for row in result.rows[:SHOWN_ROWS]:
        table.add_row(*(display_cell(v) for v in row))
    return table


def show_beside(
    console: Console, lens: str, previous: Previous, candidate: Candidate, result: ResultSet
) -> None:
    """The previous oracle and the new SQL side by side: both SQL texts, both results."""
    # lazy: rich's renderables load only when certify shows a result
    from rich.table import Table
    from rich.text import Text

    old = previous.answer
    made = (
        f"hand-written SQL from {candidate.origin}"
        if candidate.origin
        else f"SQL from the {candidate.tier} generator tier"
    )
    console.print(f"[bold]{lens}[/bold]: re-certifying {old.id}: {old.question}")
    grid = Table(
        f"previous oracle (certified by {old.provenance.certified_by} at "
        f"{old.provenance.certified_at})",
        f"new: {made}",
        show_lines=True,
    )
    grid.add_row(Text(old.sql.strip()), Text(str(candidate.sql).strip()))
    grid.add_row(
        result_table(previous.result, "executed result", previous.error),
        result_table(result, "executed result"),
    )
    console.print(grid)
    console.print(previous.versus(result), markup=False, soft_wrap=True)


@dataclass(frozen=True)
class Previous:
    """The answer a re-certification replaces, and what its SQL returns now."""

    answer: Answer
    result: ResultSet | None
    error: str | None
    dialect: str

    def record(self) -> dict[str, Any]:
        """JSON: the previous SQL, provenance and executed result (or the error)."""
        return {
            "sql": self.answer.sql,
            "provenance": self.answer.provenance.model_dump(mode="json"),
            "result": self.result.preview(SHOWN_ROWS) if self.result is not None else None,
            "error": self.error,
        }

    def versus(self, new: ResultSet) -> str:
        """One line: how the new result compares with the previous oracle's."""
        # lazy: the comparison loads sqlglot, which `dst --help` does not need
        from reconciler.compare.diff import Verdict, compare
        from reconciler.compare.ordering import order_keys

        if self.result is None:
            return f"the previous oracle does not run now ({self.error})"
        found = compare(self.result, new, order=order_keys(self.answer.sql, self.dialect))
        if found.verdict is Verdict.MATCH:
            return "the new result equals the previous oracle's"
        return f"the new result differs from the previous oracle's: {found.detail}"


def previous_of(executor: Executor, lens: Lens, target: Replacement | None) -> Previous | None:
    """The replaced answer's SQL executed now (its failure kept as text), or ``None``."""
    if target is None:
        return None
    cfg = lens.config
    try:
        result: ResultSet | None = executor.execute(
            target.answer.sql,
            row_cap=cfg.row_cap,
            timeout_s=cfg.statement_timeout_s,
            as_of=cfg.pinned_as_of,
        )
        error = None
    except DstError as exc:
        result, error = None, exc.message
    return Previous(target.answer, result, error, cfg.dialect)
