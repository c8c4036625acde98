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

This module declares the options; the body is :func:`reconciler.cli.oneshot.ask`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from reconciler.cli.options import EnvOpt, Format, FormatOpt, NoCacheOpt, RepoOpt, WarehouseOpt


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
    # lazy: the body is typer-free, so that `dst ask` can run it before typer loads
    from reconciler.cli.oneshot import ask as answer

    return answer(question, lens, max_repairs, show_request, no_cache, repo, warehouse, env, fmt)
