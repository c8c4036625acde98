"""Behavioural cases: does the lens clarify, refuse and answer when it should?

A case (``evals/cases.yaml``: ``question``, ``expect: clarify|refuse|answer``,
optional ``term``) runs through the real serving pipeline
(:func:`reconciler.ask.ask`, pre-checks included, certified matching on) and
passes iff the response has the expected *shape*:

* ``clarify`` — the route is ``clarify``;
* ``refuse`` — the route is ``refuse`` and no data was served;
* ``answer`` — data was served (a certified answer or a generated one whose
  trust state is not ``blocked``);

and, where a ``term`` is pinned, the response contains it (normalized words): the
lens term that triggered the pre-check (or the message) for ``clarify``/``refuse``,
the SQL or column names for ``answer``. Any other response is the shape ``declined`` (no data, no
clarification, no refusal). Cases run beside the certified suite in ``dst test``
and in the gate; a lens that regresses into refusing an answerable case fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from reconciler.ask import AskResponse, ask
from reconciler.assembly.similarity import Embedder
from reconciler.assembly.text import normalize
from reconciler.generators import DimensionValues, SmartCall, TierCall
from reconciler.lens import Case, Lens
from reconciler.resultset import Executor

Shape = Literal["clarify", "refuse", "answer", "declined"]


@dataclass(frozen=True)
class CaseResult:
    """One behavioural case's verdict."""

    question: str
    expect: str
    got: Shape
    passed: bool
    detail: str
    route: str
    trust_state: str

    def record(self) -> dict[str, object]:
        """JSON-ready record."""
        return {
            "question": self.question,
            "expect": self.expect,
            "got": self.got,
            "passed": self.passed,
            "detail": self.detail,
            "route": self.route,
            "trust_state": self.trust_state,
        }


def shape_of(resp: AskResponse) -> Shape:
    """The response's shape (module docstring)."""
    if resp.route == "clarify":
        return "clarify"
    if resp.route == "refuse":
        return "declined" if resp.served_rows else "refuse"
    return "answer" if resp.served_rows else "declined"


def run_case(
    lens: Lens,
    case: Case,
    executor: Executor,
    values: DimensionValues,
    *,
    smart: SmartCall | None = None,
    embedder: Embedder | None = None,
    command: TierCall | None = None,
) -> CaseResult:
    """Run ``case`` through :func:`reconciler.ask.ask` on ``lens`` and judge its shape."""
    resp = ask(
        lens, case.question, executor, values, smart=smart, embedder=embedder, command=command
    )
    got = shape_of(resp)
    passed = got == case.expect
    detail = f"expected {case.expect}, got {got}"
    if got == "declined" and resp.message:
        detail += f" ({resp.message})"
    if passed and case.term:
        if got == "answer":
            where = f"{resp.sql or ''} {_columns(resp)}"
        else:
            where = f"{resp.term or ''} {resp.message}"
        if f" {normalize(case.term)} " not in f" {normalize(where)} ":
            passed = False
            detail = f"{got} as expected, but without the pinned term {case.term!r}"
    return CaseResult(
        case.question,
        case.expect,
        got,
        passed,
        "ok" if passed else detail,
        resp.route,
        resp.trust_state,
    )


def _columns(resp: AskResponse) -> str:
    return " ".join(resp.result.columns) if resp.result else ""


def run_cases(
    lens: Lens,
    executor: Executor,
    values: DimensionValues,
    *,
    smart: SmartCall | None = None,
    progress: Callable[[str], None] = lambda _msg: None,
    embedder: Embedder | None = None,
    command: TierCall | None = None,
) -> list[CaseResult]:
    """Every behavioural case of ``lens``, in file order (``command``: the command tier)."""
    results = []
    for case in lens.cases:
        progress(f"{lens.name}: case {case.question!r} (expect {case.expect})")
        results.append(
            run_case(lens, case, executor, values, smart=smart, embedder=embedder, command=command)
        )
    return results
