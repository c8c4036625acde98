"""``dst ask "QUESTION" --lens L``: the serving path on the serving version.

The lens is read from its serving deployment (``refs/dst/serving/<lens>``), never
from the working tree: what ``dst ask`` answers is what production serves. The
steps are :func:`reconciler.ask.ask`'s. Nothing is written.

Exit codes: 0 when a response was produced (whatever its route or trust state:
a refusal or clarification is a good answer); 2 bad input (an unknown or
never-promoted lens, an unreachable warehouse).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt, WarehouseOpt
from reconciler.errors import UsageError

if TYPE_CHECKING:
    from reconciler.ask import AskResponse


def ask(
    question: Annotated[str, typer.Argument(help="The question, in plain words.")],
    lens: Annotated[str, typer.Option("--lens", help="Lens to answer from (its serving version).")],
    max_repairs: Annotated[
        int, typer.Option("--max-repairs", min=0, max=5, help="Repair attempts after the first.")
    ] = 2,
    repo: RepoOpt = None,
    warehouse: WarehouseOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Answer a question the way production does: certified match, else generation + gates."""
    # lazy: reconciler.ask loads the engines, which `dst --help` does not need
    from reconciler.ask import ask as serve
    from reconciler.candidate import load_serving

    rt = runtime(repo, warehouse)
    try:
        dep, served = load_serving(rt.repo, lens)
        if dep is None or served is None:
            raise UsageError(
                f"lens {lens!r} has no serving version",
                fix=f"promote it first: `dst apply --lens {lens}` (see `dst status`)",
            )
        smart, _why = rt.smart_for(served)
        executor = rt.warehouse_for(served)
        resp = serve(
            served,
            question,
            executor,
            rt.values_for(served, executor),
            smart=smart,
            max_repairs=max_repairs,
            embedder=rt.embedder_for(served)[0],
        )
    finally:
        rt.close()
    if fmt is Format.json:
        out = {"schema_version": 1, "command": "ask", "deployment": dep.oid, **resp.to_json()}
        print(json.dumps(out, indent=2, default=str))
    else:
        for line in render_text(resp):
            print(line)
    return 0


def render_text(resp: AskResponse) -> list[str]:
    """Route and trust state first, then the message or SQL and rows, then failed gates."""
    lines = [f"{resp.lens}: route {resp.route}, trust {resp.trust_state}"]
    if resp.answer:
        lines.append(f"certified answer: {resp.answer}")
    if resp.message:
        lines.append(resp.message)
    if resp.sql:
        lines += ["", resp.sql.strip(), ""]
    payload = resp.to_json()
    if payload["columns"]:
        lines.append(" | ".join(payload["columns"]))
        lines += [" | ".join("" if v is None else str(v) for v in row) for row in payload["rows"]]
        more = payload["row_count"] - len(payload["rows"])
        if more > 0 or payload["truncated"]:
            lines.append(
                f"… {payload['row_count']} rows" + (" (capped)" if payload["truncated"] else "")
            )
    for ev in resp.evaluations:
        if not ev.passed:
            lines.append(f"gate {ev.gate} ({ev.severity}): {ev.detail}")
    lines += [f"note: {n}" for n in resp.notes]
    return lines
