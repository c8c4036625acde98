"""``dst ask "QUESTION" --lens L``: the serving path on the serving version.

The lens is read from its serving deployment (``refs/dst/serving/<lens>``, or
``refs/dst/env/<E>/serving/<lens>`` with ``--env E``, on E's warehouse), never from
the working tree: what ``dst ask`` answers is what that environment serves. The
steps are :func:`reconciler.ask.ask`'s. Nothing is written.

Exit codes (DESIGN §6): 0 when data was served (a certified or generated route
with a result); 1 when nothing was (declined, refused, a clarification asked,
blocked by a gate), with a one-line reason on stderr in text mode (the JSON on
stdout is the same either way); 2 bad input (an unknown or never-promoted lens,
listing the lenses that serve and those that exist but do not; an ``--env`` that
``dst.yaml`` does not name; an unreachable warehouse).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import EnvOpt, Format, FormatOpt, NoCacheOpt, RepoOpt, WarehouseOpt

if TYPE_CHECKING:
    from reconciler.ask import AskResponse
    from reconciler.context import Runtime
    from reconciler.lens import Lens


def ask(
    question: Annotated[str, typer.Argument(help="The question, in plain words.")],
    lens: Annotated[str, typer.Option("--lens", help="Lens to answer from (its serving version).")],
    max_repairs: Annotated[
        int, typer.Option("--max-repairs", min=0, max=5, help="Repair attempts after the first.")
    ] = 2,
    show_request: Annotated[
        bool,
        typer.Option(
            "--show-request", help="Print what each generator tier would be sent; run nothing."
        ),
    ] = False,
    no_cache: NoCacheOpt = False,
    repo: RepoOpt = None,
    warehouse: WarehouseOpt = None,
    env: EnvOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Answer a question the way production does: certified match, else generation + gates."""
    # lazy: reconciler.ask loads the engines, which `dst --help` does not need
    from reconciler.ask import serve
    from reconciler.candidate import load_serving
    from reconciler.history import not_serving

    rt = runtime(repo, warehouse, environment=env)
    rt.no_cache = no_cache
    try:
        rt.environment_config()  # an unknown --env is exit 2 before anything is read
        dep, served = load_serving(rt.repo, lens, env)
        if dep is None or served is None:
            raise not_serving(rt, lens)
        if show_request:
            return print_request(rt, served, question, None, fmt)
        resp = serve(rt, served, question, max_repairs=max_repairs)
    finally:
        rt.close()
    if fmt is Format.json:
        out = {
            "schema_version": 1,
            "command": "ask",
            "environment": env,
            "deployment": dep.oid,
            **resp.to_json(),
        }
        print(json.dumps(out, indent=2, default=str))
    else:
        for line in render_text(resp):
            print(line)
    # on stderr in both formats: a script reading the JSON sees exit 1 and, here, why
    reason = resp.unserved_reason()
    if reason is not None:
        print(f"dst ask: nothing served: {reason}", file=sys.stderr, flush=True)
    return resp.exit_code


def print_request(rt: Runtime, lens: Lens, question: str, answer: str | None, fmt: Format) -> int:
    """Print what ``question`` on ``lens`` sends each tier (:mod:`reconciler.generators.payload`).

    Assembled the way serving does (certified matching on; a question a certified
    answer matches is served by it and generates nothing, which is said) when
    ``answer`` is ``None``, else the way the suite re-asks ``answer`` (matching off,
    ``answer`` excluded from its own exemplars, DESIGN §4 step 2). Returns 0.
    """
    # lazy: the assembly and the tiers' payload builders, only when asked
    from reconciler.ask import certified_match
    from reconciler.assembly.request import assemble
    from reconciler.generators.payload import sent
    from reconciler.ids import AnswerId

    embedder = rt.embedder_for(lens)[0]
    excluded = AnswerId(answer) if answer is not None else None
    request = assemble(
        lens,
        question,
        exclude_answer=excluded,
        certified_matching=excluded is None,
        embedder=embedder,
    )
    tiers = sent(lens, request)
    matched = certified_match(lens, question) if excluded is None else None
    if fmt is Format.json:
        shown = {"schema_version": 1, "lens": lens.name, "request": request.record()}
        certified = matched.id if matched else None
        print(json.dumps({**shown, "certified_answer": certified, "tiers": tiers}, indent=2))
        return 0
    print(f"{lens.name}: request for {question!r}")
    if matched is not None:
        print(f"note: serving answers this with certified answer {matched.id}, generating nothing")
    print(json.dumps(request.record(), indent=2))
    for tier, payload in tiers.items():
        print(f"\n--- {tier} tier is sent:")
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    return 0


def render_text(resp: AskResponse) -> list[str]:
    """Route and trust state first, then the message or SQL and rows, then failed gates."""
    # lazy: the text renderer loads the report model, which `dst --help` does not need
    from reconciler.render.text import display_cell

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
        lines += [
            " | ".join("" if v is None else display_cell(v) for v in row) for row in payload["rows"]
        ]
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
