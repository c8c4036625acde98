"""``dst plan``, ``dst apply`` and ``dst test``: the reconcile and the full re-verification.

``plan`` and ``apply`` run :func:`reconciler.reconcile.reconcile` (``plan`` without
the suite, ``apply --dry-run`` without the promote step); ``test`` runs
:func:`reconciler.verify.verify` over the serving versions. Each prints the run
report (``--format text|json``) and exits with the report's code: 0 promoted,
unchanged or all green; 1 blocked, stood down or a divergence; 2 bad input
(raised, and turned into the exit code by :mod:`reconciler.cli.boundary`).
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.common import ctrl_c_interrupts, emit, runtime
from reconciler.cli.options import (
    EnvOpt,
    Format,
    FormatOpt,
    JobsOpt,
    NoCacheOpt,
    ProfileOpt,
    QuietOpt,
    RepoOpt,
    WarehouseOpt,
)
from reconciler.cli.profiling import profiled
from reconciler.cli.progress import progress_for
from reconciler.errors import UsageError

if TYPE_CHECKING:
    from reconciler.context import Runtime


class CacheChoice(str, Enum):
    """``--cache``: how ``dst apply`` treats a cached smart or command answer."""

    use = "use"
    verify = "verify"


CacheOpt = Annotated[
    CacheChoice | None,
    typer.Option(
        "--cache",
        help="use: score cached smart/command answers as stored; verify: generate each "
        "again and compare (a difference warns; the fresh one is scored). "
        "Default: each lens's cache: (use).",
    ),
]
VerboseOpt = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Full text report: every change, stale answer and step."),
]


def plan(
    to: Annotated[str, typer.Option("--to", help="Candidate revision.")] = "HEAD",
    lens: Annotated[str | None, typer.Option("--lens", help="Plan one lens.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Why each answer is stale.")] = False,
    env: EnvOpt = None,
    no_cache: NoCacheOpt = False,
    profile: ProfileOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
    verbose: VerboseOpt = False,
) -> int:
    """Show the plan: changed assets, stale answers, self-test. Runs nothing."""
    # lazy: the reconcile loads the engines; `dst --help` does not need them
    from reconciler.reconcile import reconcile

    rt = runtime(repo, environment=env)
    rt.no_cache = no_cache
    with profiled(profile):
        report = reconcile(rt, to=to, only=lens, run_suite=False)
    return emit(report, fmt, explain, verbose=verbose)


def apply(
    to: Annotated[str, typer.Option("--to", help="Candidate revision.")] = "HEAD",
    lens: Annotated[str | None, typer.Option("--lens", help="Apply one lens alone.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Gate without promoting.")] = False,
    allow_rewind: Annotated[
        bool, typer.Option("--allow-rewind", help="Promote even if it undoes what serves.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Roll forward a lens serving a rollback; no prompt.")
    ] = False,
    env: EnvOpt = None,
    warehouse: WarehouseOpt = None,
    quiet: QuietOpt = False,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    cache: CacheOpt = None,
    profile: ProfileOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
    verbose: VerboseOpt = False,
) -> int:
    """Plan → gate → self-test → promote, or roll the whole apply back."""
    # lazy: the reconcile loads the engines; `dst --help` does not need them
    from reconciler.reconcile import reconcile

    rt = runtime(repo, warehouse, jobs, env)
    rt.no_cache = no_cache
    rt.cache_use = "lens" if cache is None else cache.value
    try:
        if not dry_run:
            confirm_rollforward(rt, to, lens, yes)
        with progress_for(rt, quiet=quiet, verbose=verbose) as clock, profiled(profile):
            report = reconcile(rt, to=to, only=lens, dry_run=dry_run, allow_rewind=allow_rewind)
        return emit(report, fmt, verbose=verbose, seconds=clock.seconds)
    finally:
        rt.close()


def confirm_rollforward(rt: Runtime, to: str, lens: str | None, yes: bool) -> None:
    """Say which lenses serving a rollback this apply rolls forward; on a terminal,
    without ``--yes``, ask first.

    Off a terminal (CI, hooks, watch) the notice is printed and the apply goes on:
    the commit is the desired state, as in Argo CD once auto-sync is on again.

    Raises:
        UsageError: the person at the terminal declined.
    """
    # lazy: reconciler.history loads the engines, which `dst --help` does not need
    from reconciler.history import rollforwards

    pending = rollforwards(rt, to, lens)
    for name, rolled in pending:
        print(
            f"lens {name} serves a rollback to {str(rolled.rollback_to)[:12]} "
            f"({rolled.deployment[:12]}); this apply rolls it forward to {to}",
            file=sys.stderr,
        )
    if not pending or yes or not sys.stdin.isatty():
        return
    with ctrl_c_interrupts():
        confirmed = typer.confirm("roll forward?", default=False, err=True)
    if not confirmed:
        names = ", ".join(name for name, _ in pending)
        raise UsageError(
            f"not rolled forward: {names} keep serving the rollback",
            fix="pass --yes to roll forward, or `dst apply --lens L` for the other lenses",
        )


def test(
    lens: Annotated[str | None, typer.Argument(help="Lens to verify.")] = None,
    all_lenses: Annotated[bool, typer.Option("--all", help="Every serving lens.")] = False,
    env: EnvOpt = None,
    warehouse: WarehouseOpt = None,
    quiet: QuietOpt = False,
    jobs: JobsOpt = None,
    no_cache: NoCacheOpt = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
    verbose: VerboseOpt = False,
) -> int:
    """Re-verify the whole active corpus of serving versions; green answers re-stamp."""
    # lazy: verification loads the engines; `dst --help` does not need them
    from reconciler.git import refs as refstore
    from reconciler.verify import verify

    rt = runtime(repo, warehouse, jobs, env)
    rt.no_cache = no_cache
    if (lens is None) == (not all_lenses):
        raise UsageError(
            "name one lens or pass --all" + (", not both" if all_lenses else ""),
            fix="dst test LENS | dst test --all",
        )
    names = refstore.served_lenses(rt.repo, env) if all_lenses else [str(lens)]
    try:
        with progress_for(rt, quiet=quiet, verbose=verbose) as clock:
            report = verify(rt, names)
        return emit(report, fmt, verbose=verbose, seconds=clock.seconds)
    finally:
        rt.close()
