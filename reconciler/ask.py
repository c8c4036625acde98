"""The serving path (``dst ask``): certified match, pre-checks, generation, gates, trust.

One question against one lens version (the serving version, in the CLI), in order:

1. **certified match** — the question, normalized (:func:`reconciler.assembly.text.normalize`),
   equals an active certified answer's: its certified SQL runs; route
   ``certified_answer``;
2. **pre-checks** — a lens ``exclusions`` term → route ``refuse`` (no SQL runs, no
   rows are served); a ``clarify`` term → route ``clarify`` with the lens's question
   back to the asker;
3. **generation** through the tiers (:func:`reconciler.generators.generate`) with
   certified matching recorded, execution on the read-only warehouse, and the
   executable gates (:mod:`reconciler.trust`), the join-grain gate among them, and the
   gates that probe the warehouse once each (:mod:`reconciler.probes`: tie, NULL group,
   thinned join), which may serve a repaired cut (every tied row) with a note;
4. a **bounded repair loop** (:data:`MAX_REPAIRS`): a failed gate's repair action is
   followed — ``retry`` regenerates on the smart tier with the gate's hint (the fast
   tier is deterministic: without a smart tier the loop stops), ``escalate`` to ``research``
   regenerates on the smart tier with every model of the lens in context;
5. the **trust state** from the final evaluations.

Nothing here writes anything: only a human certifies (``dst certify``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from reconciler.assembly.text import normalize
from reconciler.errors import DstError
from reconciler.lens import Answer, Lens
from reconciler.probes import Limits, probe
from reconciler.probes.namesakes import lens_labels
from reconciler.resultset import Executor, ResultSet
from reconciler.trust import (
    Evaluation,
    Execution,
    Route,
    TrustState,
    evaluate,
    first_repair,
    trust_state_from_evaluations,
)

if TYPE_CHECKING:
    from reconciler.assembly.lexicon import DimensionValues
    from reconciler.assembly.similarity import Embedder
    from reconciler.generators import SmartCall, TierCall

MAX_REPAIRS = 2
ROWS_SHOWN = 50


@dataclass
class AskResponse:
    """What ``dst ask`` serves, and why.

    Attributes:
        route: ``certified_answer``, ``generated``, ``research``, ``clarify`` or ``refuse``.
        sql: the SQL that produced ``rows`` (``None`` when nothing ran).
        result: the executed result (``None`` when nothing ran or it failed).
        message: the clarification asked, the refusal's reason, or why no answer.
        answer: id of the certified answer served (certified route only).
        evaluations: the final attempt's executable gate verdicts.
        trust_state: from :func:`reconciler.trust.trust_state_from_evaluations`.
        attempts: one record per generation (tier, SQL or decline, usage, hint).
        notes: what made this run leaner than production (e.g. no smart tier).
        term: the lens's exclusion or clarify term that a pre-check matched.
        transpiled: ``"<from>→<to>"`` when the SQL ran transpiled from the lens's
            dialect to the warehouse's (DESIGN §2); in the JSON only when set.
    """

    lens: str
    question: str
    route: Route
    sql: str | None = None
    result: ResultSet | None = None
    message: str = ""
    answer: str | None = None
    evaluations: tuple[Evaluation, ...] = ()
    trust_state: TrustState = "review_required"
    attempts: list[dict[str, object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    term: str | None = None
    transpiled: str | None = None
    probed: tuple[Evaluation, ...] = ()

    @property
    def served_rows(self) -> bool:
        """Whether data was served (a refusal or clarification never serves rows)."""
        return self.result is not None and self.trust_state != "blocked"

    @property
    def exit_code(self) -> int:
        """``dst ask``'s exit code (DESIGN §6): 0 when data was served, 1 when nothing was."""
        return 0 if self.served_rows else 1

    def unserved_reason(self) -> str | None:
        """Why nothing was served, as one line, or ``None`` when data was.

        Returns:
            ``"refused: …"``, ``"clarification needed: …"``, ``"declined: …"`` (the
            generator produced no SQL) or ``"blocked by <gate>: …"`` (the first failed
            blocking gate; ``"blocked: …"`` when none names itself).
        """
        if self.served_rows:
            return None
        if self.route == "refuse":
            reason = f"refused: {self.message}"
        elif self.route == "clarify":
            reason = f"clarification needed: {self.message}"
        elif self.sql is None:
            reason = f"declined: {self.message or 'no answer'}"
        else:
            failed = [e for e in self.evaluations if not e.passed]
            worst = next((e for e in failed if e.severity == "blocking"), None)
            worst = worst or next(iter(failed), None)
            reason = (
                f"blocked by {worst.gate}: {worst.detail}"
                if worst
                else f"blocked: {self.message or 'no result'}"
            )
        return " ".join(reason.split())

    def to_json(self, rows_shown: int = ROWS_SHOWN) -> dict[str, Any]:
        """The response as JSON; rows capped at ``rows_shown``."""
        rows = self.result.preview(rows_shown) if self.served_rows and self.result else None
        out: dict[str, Any] = {
            "lens": self.lens,
            "question": self.question,
            "route": self.route,
            "answer": self.answer,
            "sql": self.sql,
            "columns": rows["columns"] if rows else [],
            "rows": rows["rows"] if rows else [],
            "row_count": rows["row_count"] if rows else 0,
            "truncated": rows["truncated"] if rows else False,
            "message": self.message,
            "evaluations": [e.to_json() for e in self.evaluations],
            "trust_state": self.trust_state,
            "attempts": self.attempts,
            "notes": self.notes,
            "term": self.term,
        }
        if self.transpiled is not None and self.sql is not None:
            out["transpiled"] = self.transpiled
        return out


def precheck(lens: Lens, question: str) -> tuple[Route, str, str] | None:
    """``("refuse", reason, term)`` for an excluded term, ``("clarify", ask, term)`` for
    an ambiguous one, else ``None``.

    Terms match on whole normalized words, exclusions first (DESIGN §2 lens settings).
    """
    text = f" {normalize(question)} "
    for term in lens.config.exclusions:
        if f" {normalize(term)} " in text:
            return "refuse", f"this lens does not answer questions about {term!r}", term
    for item in lens.config.clarify:
        if f" {normalize(item.term)} " in text:
            return "clarify", item.ask, item.term
    return None


def certified_match(lens: Lens, question: str) -> Answer | None:
    """The active certified answer whose normalized question equals ``question``'s."""
    asked = normalize(question)
    for aid in sorted(lens.answers):
        answer = lens.answers[aid]
        if answer.status == "active" and normalize(answer.question) == asked:
            return answer
    return None


def serve_certified(lens: Lens, question: str, executor: Executor) -> AskResponse | None:
    """Step 1 alone: the certified answer ``question`` matches, run and gated; else ``None``.

    Loads neither the request assembly nor the generator tiers, so a caller that
    tries this first (``dst ask``) pays for generation only when it generates. A
    certified answer runs as certified whatever tiers the lens lists: its response
    carries no "leaner than production" note.

    Returns:
        The ``certified_answer`` response, or ``None`` when no active certified
        answer's normalized question equals ``question``'s.
    """
    certified = certified_match(lens, question)
    if certified is None:
        return None
    resp = AskResponse(lens.name, question, "certified_answer", answer=certified.id)
    ex = _run(lens, question, "certified_answer", certified.sql, executor, resp)
    return _finish(resp, lens, ex)


def ask(
    lens: Lens,
    question: str,
    executor: Executor,
    values: DimensionValues,
    *,
    smart: SmartCall | None = None,
    max_repairs: int = MAX_REPAIRS,
    embedder: Embedder | None = None,
    command: TierCall | None = None,
) -> AskResponse:
    """Answer ``question`` on ``lens`` (steps in the module docstring).

    Args:
        lens: the lens version to serve from.
        question: the question as asked.
        executor: the read-only warehouse.
        values: dimension values for the fast tier's value filters, with the
            warehouse's join-key facts for the join-grain gate
            (:class:`~reconciler.assembly.grain.WarehouseFacts`).
        smart: the smart tier, or ``None`` (then stated in ``notes``).
        max_repairs: repair attempts after the first generation (0 disables).
        embedder: the local sentence embedder, or ``None``: with a lens that asks
            for embedding retrieval, retrieval is then lexical (stated in ``notes``).
        command: the command tier, when the lens lists it.

    Returns:
        The response; warehouse and generator failures become evaluations, never
        exceptions.
    """
    served = serve_certified(lens, question, executor)
    if served is not None:
        return served
    # lazy: the assembly and the tiers load only when the question is generated
    from reconciler.assembly.lookup import looked_up
    from reconciler.assembly.request import assemble
    from reconciler.generators import generate

    resp = AskResponse(lens.name, question, "generated")
    if smart is None and "smart" in lens.config.generator.tiers:
        resp.notes.append("leaner than production: the smart tier is not configured")
    if embedder is None and lens.config.generator.retrieval == "embedding":
        resp.notes.append(
            "leaner than production: no local embedder (the embed extra), so retrieval is lexical"
        )
    pre = precheck(lens, question)
    if pre is not None:
        resp.route, resp.message, resp.term = pre
        resp.trust_state = trust_state_from_evaluations(resp.route, ())
        return resp
    route: Route = "generated"
    hint: str | None = None
    request = assemble(lens, question, certified_matching=True, embedder=embedder)
    values = looked_up(lens, question, executor, values)
    for attempt in range(max_repairs + 1):
        if route == "research":
            request = replace(request, models=tuple(sorted(lens.models)), tiers=("smart",))
        elif attempt:
            request = replace(request, tiers=("smart",))
        gen = generate(lens, request, values, smart=smart, hint=hint, command=command)
        resp.attempts.append({"attempt": attempt + 1, "route": route, **gen.record()})
        resp.route = route
        if gen.sql is None:
            resp.message = gen.declined or "no answer"
        ex = _run(lens, question, route, gen.sql, executor, resp)
        _finish(resp, lens, ex, values)
        action = first_repair(resp.evaluations)
        if action is None or attempt == max_repairs or smart is None:
            break
        route, hint = action.route, action.hint
    return resp


class Tiers(Protocol):
    """What the serving path takes from a command's runtime for one lens version
    (:class:`reconciler.context.Runtime` is one): its warehouse and its tiers."""

    def warehouse_for(self, lens: Lens) -> Executor:
        """The read-only warehouse of ``lens``."""
        ...

    def values_for(self, lens: Lens, executor: Executor) -> DimensionValues:
        """Dimension values and join-key facts of ``lens`` on ``executor``."""
        ...

    def smart_for(self, lens: Lens) -> tuple[SmartCall | None, str]:
        """The smart tier, or ``(None, why)``."""
        ...

    def embedder_for(self, lens: Lens) -> tuple[Embedder | None, str]:
        """The local embedder, or ``(None, why)``."""
        ...

    def command_for(self, lens: Lens) -> TierCall | None:
        """The command tier, when the lens lists one."""
        ...


def serve(
    tiers: Tiers, lens: Lens, question: str, *, max_repairs: int = MAX_REPAIRS
) -> AskResponse:
    """Answer ``question`` on ``lens`` with ``tiers``'s warehouse and generators.

    The one serving call of ``dst ask`` and ``dst mcp``: it resolves the smart
    tier, the warehouse, its dimension values, the embedder and the command tier of
    ``lens`` from ``tiers`` (each cached there, so a long-lived runtime answers warm),
    then runs :func:`ask`.

    Raises:
        WarehouseError: the warehouse cannot be reached.
        LensLoadError: the lens lists the command tier without a ``command:`` block.
    """
    executor = tiers.warehouse_for(lens)
    # a certified match runs first: no tier, no dimension values, no assembly load
    certified = serve_certified(lens, question, executor)
    if certified is not None:
        return certified
    smart, _why = tiers.smart_for(lens)
    return ask(
        lens,
        question,
        executor,
        tiers.values_for(lens, executor),
        smart=smart,
        max_repairs=max_repairs,
        embedder=tiers.embedder_for(lens)[0],
        command=tiers.command_for(lens),
    )


def _run(
    lens: Lens,
    question: str,
    route: Route,
    sql: str | None,
    executor: Executor,
    resp: AskResponse,
) -> Execution:
    cfg = lens.config
    resp.sql, resp.result, resp.probed = sql, None, ()
    transpiled = getattr(executor, "transpiled", None)
    resp.transpiled = None if transpiled is None else str(transpiled)
    if sql is None:
        return Execution(question, route, dialect=cfg.dialect)
    try:
        result = executor.execute(
            sql, row_cap=cfg.row_cap, timeout_s=cfg.statement_timeout_s, as_of=cfg.pinned_as_of
        )
    except DstError as exc:
        return Execution(
            question, route, sql=sql, error=exc.message, executed=True, dialect=cfg.dialect
        )
    resp.result = result
    ex = Execution(
        question,
        route,
        sql=sql,
        columns=result.columns,
        rows=result.rows,
        executed=True,
        dialect=cfg.dialect,
    )
    limits = Limits(cfg.row_cap, cfg.statement_timeout_s, cfg.pinned_as_of, lens_labels(lens))
    probed = probe(ex, result, executor, limits)
    resp.probed = probed.evaluations
    for note in probed.notes:
        if note not in resp.notes:
            resp.notes.append(note)
    if probed.result is not None:
        resp.sql, resp.result = probed.execution.sql, probed.result
    return probed.execution


def _finish(
    resp: AskResponse, lens: Lens, ex: Execution, values: DimensionValues | None = None
) -> AskResponse:
    resp.evaluations = (*evaluate(ex, lens, values), *resp.probed)
    resp.trust_state = trust_state_from_evaluations(resp.route, resp.evaluations)
    return resp
