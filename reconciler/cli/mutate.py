"""``dst mutate LENS``: mutation score and formatting false-stale share of one lens.

The work is done by :mod:`reconciler.mutation.driver` in a scratch clone; this module
parses options, renders and exits. :mod:`reconciler.cli.app` registers
:func:`mutate`.

Exit codes: 0 the mutants ran (whatever the score); 1 a formatting-only edit made
an answer stale (a hashing defect); 2 bad input (unknown lens or revision, a lens
that does not load or does not pass its own gate, an unseeded embedded warehouse,
``eval_gate: off``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt, WarehouseOpt

if TYPE_CHECKING:
    from reconciler.mutation.driver import MutationReport


def mutate(
    lens: Annotated[str, typer.Argument(help="Lens whose assets are mutated.")],
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", min=1, help="At most N mutants per operator and N edits per formatting kind."
        ),
    ] = None,
    to: Annotated[str, typer.Option("--to", help="Revision whose lens version is mutated.")] = (
        "HEAD"
    ),
    warehouse: WarehouseOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Mutate a lens's assets in a scratch clone and report how many mutants the gate blocks."""
    # lazy: reconciler.mutation.driver loads the engines, which `dst --help` does not need
    from reconciler.mutation.driver import mutate_lens

    rt = runtime(repo, warehouse)
    report = mutate_lens(rt, lens, rev=to, limit=limit)
    if fmt is Format.json:
        obj = {
            "schema_version": 1,
            "command": "mutate",
            "exit_code": report.exit_code,
            "lenses": [report.record()],
        }
        print(json.dumps(obj, indent=2))
    else:
        print("\n".join(render_text(report)))
    return report.exit_code


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{share * 100:.1f}%"


def render_text(report: MutationReport) -> list[str]:
    """Text lines: score, false-stale share, timing, per-operator counts, survivors."""
    rec = report.record()
    score, fmt, timing = rec["mutation_score"], rec["formatting_false_stale"], rec["timing"]
    lines = [f"{report.lens} @ {report.commit[:12]} (eval_gate: {report.gate})"]
    extra = [f"{score[k]} {k}" for k in ("invalid", "error") if score[k]]
    lines.append(
        f"mutation score: {_pct(score['share'])} ({score['blocked']}/{score['total']} "
        f"semantic mutants blocked{'; ' + ', '.join(extra) + ', not counted' if extra else ''})"
    )
    stale = score["stale_score"]
    lines.append(
        f"stale score: {_pct(stale['share'])} ({stale['blocked']}/{stale['total']} meaning "
        f"changes that make an answer stale blocked); survivors: {score['equivalent']} "
        f"equivalent (the data cannot tell them apart), {score['unread']} unread by the "
        f"generator, {score['untested']} with no answer stale"
    )
    lines.append(
        f"formatting false-stale: {_pct(fmt['share'])} ({fmt['false_stale']}/{fmt['total']} "
        f"formatting-only edits made an answer stale)"
    )
    per = timing["per_mutant_mean_s"]
    lines.append(
        f"time: baseline {timing['baseline_s']:.1f} s; "
        + (
            f"{per:.2f} s per mutant (median {timing['per_mutant_median_s']:.2f} s); "
            if per
            else ""
        )
        + f"{len(report.mutants) + len(report.formatting)} edits in {timing['edits_s']:.1f} s"
    )
    if rec["operators"]:
        lines.append("by operator (blocked/counted):")
        for op, counts in rec["operators"].items():
            counted = counts["blocked"] + counts["survived"]
            lines.append(f"  {op:<14} {counts['blocked']}/{counted}")
    if rec["asset_kinds"]:
        kinds = ", ".join(f"{k} {v['blocked']}/{v['total']}" for k, v in rec["asset_kinds"].items())
        lines.append(f"by asset kind (blocked/counted): {kinds}")
    for message in report.messages:
        lines.append(f"note: {message}")
    if report.survivors:
        lines.append(f"survivors ({len(report.survivors)}):")
        for r in report.survivors:
            e = r.edit
            lines.append(f"  {e.asset} ({e.path}) {e.operator}: {e.change} — {r.detail}")
    for r in report.false_stale:
        e = r.edit
        lines.append(f"FALSE STALE {e.path} {e.operator} ({e.change}): {r.detail}")
    return lines
