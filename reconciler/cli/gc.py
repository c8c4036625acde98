"""``dst gc [LENS ...] [--keep N]``: prune the attempts chains under ``refs/dst/attempts/``
and the verification chains under ``refs/dst/verify/``.

Keeps each lens's newest ``N`` attempts and ``N`` verifications (default 10) and drops
the older ones (:func:`reconciler.history.gc`), keeping the newest verification of the
serving lens tree however old (a plan reads its bindings); serving and retired
histories are never touched. The kept records are rewritten onto the lens's history
root, so a remote that holds the old chain no longer fast-forwards to the new one: the
output gives the ``git push --force-with-lease`` that replaces it there, which
``dst sync`` never does by itself.

Exit codes: 0 pruned or nothing to prune; 1 an attempts or verify ref moved meanwhile
(run it again); 2 bad input (``--keep`` below 1, a lens without attempts or
verifications). ``--env E`` prunes environment E's ``refs/dst/env/<E>/`` chains.
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
    keep: Annotated[
        int, typer.Option("--keep", help="Newest attempts (and verifications) to keep per lens.")
    ] = 10,
    env: EnvOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Prune attempts and verifications to the newest N; serving and retired histories stay."""
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
        print("no attempts or verifications recorded: nothing to prune")
    for p in pruned:
        what = "verifications" if "/verify/" in p.ref else "attempts"
        if not p.dropped:
            print(f"{p.lens}: {p.before} {what[:-1]}(s), nothing to prune")
            continue
        print(f"{p.lens}: kept {p.kept} of {p.before} {what} ({p.ref} {p.new[:12]})")
        print(
            f"  a remote holding the old chain: git push --force-with-lease="
            f"{p.ref}:{p.old} <remote> {p.ref}"
        )
    return 0
