"""``dst ci``: the GitHub Actions entry points, a typer sub-app of ``dst``.

* ``dst ci check`` — for pull requests. Resolves the base (surviving shallow
  checkouts, see :func:`reconciler.git.base.resolve_base`), dry-runs the lenses
  that changed between the merge base and head, prints the report (``--format
  github``: annotations and groups), appends the Markdown job summary to
  ``$GITHUB_STEP_SUMMARY`` and writes JUnit on request. On a ``pull_request``
  event HEAD is GitHub's merge commit ``M``: the check covers ``M^1..M`` and
  names the pull request's head. Nothing is promoted.
* ``dst ci apply`` — for pushes to the default branch: the real apply; the
  workflow then pushes ``refs/dst/*`` (a fast-forward). It refuses on a
  pull-request event, where HEAD is a merge commit that never landed.
  ``--env E`` applies to environment E (its refs, its warehouse, its
  ``promote_from`` rule); approvals for E come from the job's GitHub
  ``environment:`` protection rules, never from dst.

The exit code is the report's alone (0 passed, 1 blocked or stood down, 2 bad
input or insufficient history); rendering never decides it. An error is
reported by the command line's boundary, which with ``--format github`` also
prints it as an ``::error`` annotation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reconciler.cli.common import print_lines, runtime
from reconciler.cli.options import EnvOpt, RepoOpt, WarehouseOpt, record_invocation
from reconciler.cli.progress import progress_for
from reconciler.errors import UsageError
from reconciler.git import base as prbase
from reconciler.git.base import Event, load_event

if TYPE_CHECKING:
    from reconciler.render.github import Where
    from reconciler.results import RunReport

ci_app = typer.Typer(
    no_args_is_help=True,
    help="GitHub Actions: check pull requests, apply on the default branch.",
)


class CiFormat(str, Enum):
    """Output format of the ``ci`` commands."""

    text = "text"
    json = "json"
    github = "github"


CiFormatOpt = Annotated[
    CiFormat,
    typer.Option(
        "--format",
        help="text, json, or github (workflow commands: annotations).",
        callback=record_invocation,
    ),
]
MaxDeepenOpt = Annotated[
    int, typer.Option("--max-deepen", min=0, help="Deepening fetches a shallow clone may take.")
]
DeepenByOpt = Annotated[
    int, typer.Option("--deepen-by", min=1, help="Commits of the first deepening step.")
]
RemoteOpt = Annotated[str, typer.Option("--remote", help="Remote to fetch history from.")]
JunitOpt = Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML to FILE.")]


def _locations(rt: Any, report: RunReport) -> dict[tuple[str, str], Where]:
    """Answer files and ``sql:`` lines at the candidate, for annotations and JUnit."""
    # lazy: lens loading and the renderer load pydantic and sqlglot, unneeded by `dst --help`
    from reconciler.git import trees as gitstate
    from reconciler.ids import Oid
    from reconciler.render.github import locate

    repo = rt.repo
    lens_files: dict[str, dict[str, str]] = {}
    commit: str | None = None
    for run in report.lenses:
        if not (run.results or run.self_test) or run.plan.candidate is None:
            continue
        commit = run.plan.candidate
        tree = gitstate.lens_trees(repo, Oid(commit)).get(run.plan.lens)
        if tree is not None:
            lens = gitstate.load_lens_at(repo, tree)
            lens_files[run.plan.lens] = {k: f"{lens.root}/{v}" for k, v in lens.sources.items()}
    at = commit

    def read(path: str) -> bytes | None:
        return gitstate.file_at(repo, at, path) if at is not None else None

    return locate(report, lens_files, read)


def _publish(
    rt: Any,
    report: RunReport,
    fmt: CiFormat,
    junit: Path | None,
    title: str,
    seconds: Mapping[str, float] | None = None,
) -> int:
    # lazy: reconciler.render loads the engines, which `dst --help` does not need
    from reconciler.render import github as ghactions, text as render
    from reconciler.render.junit import to_junit

    locations = _locations(rt, report)
    if fmt is CiFormat.github:
        text, summary = ghactions.to_github(report, locations=locations, title=title)
        print(text, end="", flush=True)
    else:
        summary = ghactions.job_summary(report, locations, title=title)
        if fmt is CiFormat.json:
            print(render.to_json(report, seconds=seconds))
        else:
            print_lines(render.to_lines(report, seconds=seconds))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as out:
            out.write(summary + "\n")
    if junit is not None:
        junit.write_text(to_junit(report, locations), encoding="utf-8")
    return int(report.exit_code)


def _origin_head(git: Callable[[list[str]], str | None], remote: str) -> str | None:
    ref = git(["symbolic-ref", "--quiet", "--short", f"refs/remotes/{remote}/HEAD"])
    return ref.split("/", 1)[1] if ref and "/" in ref else None


def _changed_lenses(repo: Any, base: str, head: str) -> tuple[list[str], list[str]]:
    """Lenses whose tree differs between ``base`` and ``head``: ``(to check, notes)``.

    The same comparison as the pre-push hook's (:func:`reconciler.git.push.changed_lenses`);
    a changed lens is checked when it exists at ``head`` or is serving.
    """
    # lazy: pygit2 loads only for the commands that read git
    from reconciler.git.push import changed_lenses, gateable

    changed = sorted(changed_lenses(repo, base, head))
    check = list(gateable(repo, head, changed))
    notes = [
        f"lens {n} is removed and never served: nothing to check" for n in changed if n not in check
    ]
    if not changed:
        notes.append(f"no lens changed between {base[:12]} and {head[:12]}: nothing to check")
    return check, notes


def _load_every_lens(rt: Any, commit: str, only: list[str] | None) -> None:
    """Load each lens the gate will open at ``commit``, so every load error is reported.

    The reconcile stops at the first lens that does not load; a pull request that
    breaks two lenses should hear about both, each at its file and line. A lens
    whose tree is already serving is not opened (the reconcile does not open it).

    Args:
        rt: the runtime.
        commit: hex oid of the candidate.
        only: the lenses to check; ``None`` for every lens at ``commit``.

    Raises:
        LensLoadError: one lens does not load.
        LensLoadErrors: several do; each keeps its file and line.
    """
    # lazy: lens loading pulls in pydantic and sqlglot, which `dst --help` does not need
    from reconciler.errors import LensLoadError, LensLoadErrors
    from reconciler.git import refs as refstore, serving as proven, trees as gitstate
    from reconciler.ids import Oid

    trees = gitstate.lens_trees(rt.repo, Oid(commit))
    errors: list[LensLoadError] = []
    for name in sorted(trees if only is None else set(only) & set(trees)):
        serving = proven.serving_target(rt.repo, name, rt.environment)
        tree = trees[name].tree
        if serving is not None and refstore.read_deployment(rt.repo, serving).lens_tree == tree:
            continue
        try:
            gitstate.load_lens_at(rt.repo, trees[name])
        except LensLoadError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise LensLoadErrors(tuple(errors))


@ci_app.command("check")
def check(
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="Base branch, tag or oid (default: the pull request's base, or a push's "
            "'before', from the GitHub event).",
        ),
    ] = None,
    head: Annotated[str, typer.Option("--head", help="Revision to check.")] = "HEAD",
    junit: JunitOpt = None,
    max_deepen: MaxDeepenOpt = 10,
    deepen_by: DeepenByOpt = 32,
    remote: RemoteOpt = "origin",
    env: EnvOpt = None,
    warehouse: WarehouseOpt = None,
    repo: RepoOpt = None,
    fmt: CiFormatOpt = CiFormat.text,
) -> int:
    """Dry-run the lenses a pull request changes; annotations, job summary, JUnit."""
    # lazy: the reconcile loads the engines; `dst --help` does not need them
    from reconciler.git.sync import require_known
    from reconciler.reconcile import reconcile

    event = load_event(os.environ)
    rt = runtime(repo, warehouse, environment=env)
    try:
        span = _Span(base, head, max_deepen, deepen_by, remote)
        head_oid, merge_base, notes = _resolve_span(rt, event, span)
        # a dry run: a commit out of reach only warns, as a rewind would
        if _reach_serving(rt, head_oid, span, strict=False):
            rt.close()  # the open repository still sees the old shallow boundary
            rt = runtime(repo, warehouse, environment=env)
        names, more = _changed_lenses(rt.repo, merge_base, head_oid)
        require_known(rt.repo)
        _load_every_lens(rt, head_oid, names)
        with progress_for(rt, quiet=False) as clock:
            report = reconcile(rt, to=head_oid, only=names, dry_run=True)
        report.command = "ci check"
        report.messages[:0] = [*notes, *more]
        return _publish(rt, report, fmt, junit, "dst lens check", clock.seconds)
    finally:
        rt.close()


@dataclass(frozen=True)
class _Span:
    """``dst ci check``'s options that say what to compare: base, head, how to deepen."""

    base: str | None
    head: str
    max_deepen: int
    deepen_by: int
    remote: str


def _resolve_span(rt: Any, event: Event, span: _Span) -> tuple[str, str, list[str]]:
    """``(head oid, merge base oid, notes)`` of a check, deepening a shallow clone as needed.

    On a ``pull_request`` event whose HEAD is GitHub's merge commit ``M``, the base is
    ``M^1`` and the note names the pull request's head.

    Raises:
        UsageError: the head does not resolve, no base is given or known, or the
            history is too shallow (:func:`reconciler.git.base.resolve_base`).
    """
    git = prbase.subprocess_git(rt.root)
    head_oid = git(["rev-parse", "--verify", "--quiet", f"{span.head}^{{commit}}"])
    if head_oid is None:
        raise UsageError(f"head {span.head!r} does not resolve to a commit", fix="pass --head")
    parents = prbase.raw_parents(git, head_oid)
    merge_commit = event.is_pull_request and len(parents) == 2
    base_rev = span.base
    if base_rev is None:
        base_rev = parents[0] if merge_commit else event.base
    if base_rev is None:
        raise UsageError(
            "no base to compare with (no --base and no GitHub event naming one)",
            fix="pass --base REF, e.g. --base main",
        )
    resolved = prbase.resolve_base(
        rt.root,
        base_rev,
        head_oid,
        deepening=prbase.Deepening(span.max_deepen, span.deepen_by),
        default_branch=event.default_branch or _origin_head(git, span.remote),
        remote=span.remote,
    )
    for note in resolved.notes:
        rt.progress(note)
    if merge_commit:
        pr_head = event.pr_head or parents[1]
        note = (
            f"pull request head {pr_head[:12]}: checked as GitHub's merge commit "
            f"{head_oid[:12]} against {resolved.merge_base[:12]}; a merge commit is "
            f"never promoted"
        )
    else:
        note = (
            f"checked {head_oid[:12]} against the merge base "
            f"{resolved.merge_base[:12]} with {base_rev}"
        )
    return head_oid, resolved.merge_base, [note]


def _reach_serving(rt: Any, head: str, span: _Span, *, strict: bool = True) -> bool:
    """Deepen a shallow clone until what serves is reachable from ``head``; whether it fetched.

    Raises:
        UsageError: "cannot tell: shallow clone", only when ``strict``
            (:func:`reconciler.git.base.reach_serving`).
    """
    deepening = prbase.Deepening(span.max_deepen, span.deepen_by)
    # lazy: the ref store loads pygit2, which `dst --help` does not need
    from reconciler.git import refs as refstore

    notes = prbase.reach_serving(
        rt.root,
        head,
        deepening=deepening,
        remote=span.remote,
        strict=strict,
        prefix=refstore.namespace(rt.environment) + "serving/",
    )
    for note in notes:
        rt.progress(note)
    return any(note.startswith("deepened") for note in notes)


@ci_app.command("apply")
def apply(
    junit: JunitOpt = None,
    max_deepen: MaxDeepenOpt = 10,
    deepen_by: DeepenByOpt = 32,
    remote: RemoteOpt = "origin",
    env: EnvOpt = None,
    warehouse: WarehouseOpt = None,
    repo: RepoOpt = None,
    fmt: CiFormatOpt = CiFormat.text,
) -> int:
    """Apply HEAD for real (default branch; ``--env E``: to environment E); the workflow
    then pushes refs/dst/*."""
    # lazy: the reconcile loads the engines; `dst --help` does not need them
    from reconciler.cli.reconcile import confirm_rollforward
    from reconciler.git.sync import require_known
    from reconciler.reconcile import reconcile

    event = load_event(os.environ)
    if event.is_pull_request:
        raise UsageError(
            f"refusing to apply on a {event.name} event: HEAD is GitHub's merge commit "
            f"of the pull request, which never landed, and is never promoted",
            fix="run `dst ci check` on pull requests and `dst ci apply` on pushes to the "
            "default branch",
        )
    rt = runtime(repo, warehouse, environment=env)
    try:
        head = prbase.subprocess_git(rt.root)(["rev-parse", "--verify", "--quiet", "HEAD"])
        if head is not None:
            span = _Span(None, head, max_deepen, deepen_by, remote)
            if _reach_serving(rt, head, span):
                rt.close()  # the open repository still sees the old shallow boundary
                rt = runtime(repo, warehouse, environment=env)
        rt.cache_use = "lens"  # each lens's cache: (verify re-generates cached answers)
        require_known(rt.repo)
        if head is not None:
            _load_every_lens(rt, head, None)
        confirm_rollforward(rt, "HEAD", None, yes=True)  # the notice; CI never asks
        with progress_for(rt, quiet=False) as clock:
            report = reconcile(rt, to="HEAD")
        report.command = "ci apply"
        return _publish(rt, report, fmt, junit, "dst lens apply", clock.seconds)
    finally:
        rt.close()
