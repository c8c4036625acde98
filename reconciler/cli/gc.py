"""``dst gc [LENS ...] [--keep N]``: prune the attempts chains under ``refs/dst/attempts/``.

Keeps each lens's newest ``N`` attempts (default 10) and drops the older ones
(:func:`reconciler.history.gc`); serving and retired histories are never touched.
The kept attempts are rewritten onto the lens's history root, so a remote that
holds the old chain no longer fast-forwards to the new one: the output gives the
``git push --force-with-lease`` that replaces it there, which ``dst sync``
never does by itself.

Exit codes: 0 pruned or nothing to prune; 1 an attempts ref moved meanwhile (run
it again); 2 bad input (``--keep`` below 1, a lens without attempts). ``--env E``
prunes environment E's ``refs/dst/env/<E>/attempts/``.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import EnvOpt, Format, FormatOpt, RepoOpt


def gc(
    lenses: Annotated[
        list[str] | None, typer.Argument(help="Lenses to prune (default: every lens).")
    ] = None,
    keep: Annotated[int, typer.Option("--keep", help="Newest attempts to keep per lens.")] = 10,
    env: EnvOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Prune each lens's attempts to the newest N; serving and retired histories stay."""
    # lazy: reconciler.history loads the engines, which `dst --help` does not need
    from reconciler.history import gc as do_gc

    pruned = do_gc(runtime(repo, environment=env), keep, lenses or None)
    if fmt is Format.json:
        print(
            json.dumps(
                {
                    "schema_version": 1,
                    "command": "gc",
                    "keep": keep,
                    "lenses": [
                        {
                            "lens": p.lens,
                            "ref": p.ref,
                            "before": p.before,
                            "kept": p.kept,
                            "dropped": p.dropped,
                            "old": p.old,
                            "new": p.new,
                        }
                        for p in pruned
                    ],
                },
                indent=2,
            )
        )
        return 0
    if not pruned:
        print("no attempts recorded: nothing to prune")
    for p in pruned:
        if not p.dropped:
            print(f"{p.lens}: {p.before} attempt(s), nothing to prune")
            continue
        print(f"{p.lens}: kept the newest {p.kept} of {p.before} attempts ({p.ref} {p.new[:12]})")
        print(
            f"  a remote holding the old chain: git push --force-with-lease="
            f"{p.ref}:{p.old} <remote> {p.ref}"
        )
    return 0
