"""``dst coverage``: which assets no certified answer verifies, which metrics no case names.

The measures are computed by :mod:`reconciler.coverage`; this module reads the
lenses at a revision, renders and exits. :mod:`reconciler.cli.app` registers
:func:`coverage`.

Exit codes: 0 always when the lenses load (the command informs, it never
gates); 2 bad input (an unknown lens, a revision that is not a commit, a lens
that does not load).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reconciler.cli.options import Format, FormatOpt, RepoOpt
from reconciler.errors import UsageError

if TYPE_CHECKING:
    from reconciler.coverage import LensCoverage


def coverage(
    lens: Annotated[
        str | None, typer.Argument(help="Lens to measure (default: every lens at --to).")
    ] = None,
    to: Annotated[str, typer.Option("--to", help="Revision to read the lenses at.")] = "HEAD",
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Asset coverage (bound by a certified answer) and case coverage (metrics a case names)."""
    # lazy: reconciler.coverage loads the engines, which `dst --help` does not need
    from reconciler.coverage import coverage as measure
    from reconciler.git import trees as gitstate

    git = gitstate.open_repo(repo)
    commit = gitstate.resolve_commit(git, to)
    trees = gitstate.lens_trees(git, commit)
    if lens is not None and lens not in trees:
        raise UsageError(
            f"lens {lens!r} is not in {to}",
            fix=f"use one of: {', '.join(sorted(trees)) or 'none'}",
        )
    names = [lens] if lens is not None else sorted(trees)
    results = [
        measure(gitstate.load_lens_at(git, trees[name]), _flake_rates(git, name)) for name in names
    ]
    if fmt is Format.json:
        print(
            json.dumps(
                {
                    "schema_version": 1,
                    "command": "coverage",
                    "commit": commit,
                    "lenses": [r.record() for r in results],
                },
                indent=2,
            )
        )
    else:
        for line in render_text(results, to):
            print(line)
    return 0


def render_text(results: list[LensCoverage], rev: str) -> list[str]:
    """Text lines: per lens both percentages with counts, then the uncovered lists."""
    if not results:
        return [f"no lenses under lenses/ at {rev}"]
    lines: list[str] = []
    for r in results:
        rec = r.record()
        assets, cases = rec["asset_coverage"], rec["case_coverage"]
        lines.append(
            f"{r.lens}: assets {r.asset_coverage:.1f}% "
            f"({assets['covered']}/{assets['total']} bound by {r.answers} active answers), "
            f"cases {r.case_coverage:.1f}% "
            f"({cases['covered']}/{cases['total']} metrics named by {r.cases} cases)"
        )
        for item in rec["unbound_assets"]:
            where = f" (lenses/{r.lens}/{item['path']})" if item["path"] else ""
            lines.append(f"  unbound: {item['asset']}{where}")
        for name in r.unmentioned:
            lines.append(f"  no case names: metrics/{name}")
        for aid, rate in sorted(r.flake_rates.items()):
            n, m = rate.get("flaky_samples", 0), rate.get("samples", 0)
            lines.append(f"  flaky at serving: {aid} (flake rate {n}/{m})")
    return lines


def _flake_rates(git: Any, lens: str) -> dict[str, dict[str, int]]:
    """The serving deployment's flaky answers (``state/meta.json``), ``{}`` when none serves."""
    # lazy: reconciler.git loads pygit2, which `dst --help` does not need
    from reconciler.git import refs
    from reconciler.git.serving import serving_target

    oid = serving_target(git, lens)
    if oid is None:
        return {}
    return dict(refs.read_deployment(git, oid).info.flake_rates or {})
