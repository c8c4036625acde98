"""The candidate a reconcile gates, as lens states: a commit's lens trees or the
working tree, each against what serves it now.

:func:`commit_states` reads a revision (``dst plan``, ``dst apply``, the hook, the
Action); :func:`worktree_states` reads ``lenses/`` on disk (watch). Either way
each lens becomes the input :class:`~reconciler.results.LensState` of the
reconcile's steps; its bindings are the serving deployment's overlaid with the
newest verification of the same lens tree (``refs/dst/verify/<lens>``). A lens tree
that already serves is planned without being opened, so the cost of a plan grows with
the lenses a change touches, not with the repository.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import TYPE_CHECKING

from reconciler.context import Runtime
from reconciler.errors import LensLoadError, StateError, UsageError
from reconciler.git import (
    refs as refstore,
    serving as proven,
    trees as gitstate,
    verifications,
)
from reconciler.ids import Oid
from reconciler.lens import Lens, load_lens
from reconciler.loader import load_yaml

if TYPE_CHECKING:
    # Only for annotations: `dst ask` reads its serving lens (load_serving) and plans
    # nothing, so the plan and the run report load with the first lens state.
    from reconciler.plan import LensPlan
    from reconciler.results import LensState


def load_serving(
    repo: gitstate.Repository, name: str, env: str | None = None, *, marks: bool = True
) -> tuple[refstore.Deployment | None, Lens | None]:
    """The serving deployment of lens ``name`` (in environment ``env``) and its lens,
    or ``(None, None)``.

    With ``marks=False`` the lens loads without the ``.dst/checked/`` markers (every
    SQL check runs, and no marker is written): for a reader that writes nothing
    (``dst mcp``).

    Raises:
        ServingRefError: the serving ref does not point at a deployment whose recorded
            gate passed (:mod:`reconciler.git.serving`).
        StateError: the deployment is unreadable, or its lens no longer loads.
    """
    dep = proven.read_serving(repo, name, env)
    if dep is None:
        return None, None
    return dep, _serving_lens(repo, name, dep, marks=marks)


def _serving_lens(
    repo: gitstate.Repository, name: str, dep: refstore.Deployment, *, marks: bool = True
) -> Lens:
    tree = gitstate.LensTree(name, dep.lens_tree)
    try:
        checked = gitstate.checked_dir(repo) if marks else None
        return gitstate.load_lens_at(repo, tree, checked=checked)
    except LensLoadError as exc:
        raise StateError(
            f"the serving version of lens {name!r} (deployment {dep.oid[:12]}) no longer "
            f"loads: {exc.message}",
            fix=f"it was promoted by a laxer dst; `dst rollback {name} --to DEPLOYMENT` to a "
            f"version that loads, or delete refs/dst/serving/{name} to re-promote from scratch",
        ) from None


def serving_state(
    name: str,
    dep: refstore.Deployment | None,
    *,
    candidate: Lens | None = None,
    candidate_commit: Oid | None = None,
    candidate_tree: Oid | None = None,
    serving_lens: Lens | None = None,
    plan: LensPlan | None = None,
    error: str | None = None,
) -> LensState:
    """The input state of lens ``name``: its candidate, against serving deployment ``dep``."""
    from reconciler.results import LensState  # lazy: see the imports

    state = LensState(
        name=name,
        candidate=candidate,
        candidate_commit=candidate_commit,
        candidate_tree=candidate_tree,
        serving_lens=serving_lens,
        plan=plan,
        error=error,
        messages=(error,) if error else (),
    )
    if dep is None:
        return state
    return replace(
        state,
        serving=dep.oid,
        serving_tree=dep.lens_tree,
        serving_source=dep.source,
        serving_bindings=dep.bindings,
        previous_score=dict(dep.info.score or {}),
    )


def check_seeds_from(lens: Lens, lens_names: Collection[str], lens_yaml: bytes) -> None:
    """Refuse a ``seeds_from`` entry that names no other lens of the repository.

    Checked where the repository's lenses are known (a commit's ``lenses/``, the
    working tree), since :func:`reconciler.lens.load_lens` sees one lens alone.

    Args:
        lens: the loaded lens.
        lens_names: every lens directory of the same commit or working tree.
        lens_yaml: the lens's ``lens.yaml`` bytes, for the line of the entry.

    Raises:
        LensLoadError: at the entry's line of ``lens.yaml``: a name that is not a lens
            there, the lens itself, or a name given twice.
    """
    names = lens.config.seeds_from
    for i, name in enumerate(names):
        if name == lens.name:
            why = "names the lens itself (its own seeds come first anyway)"
        elif name in names[:i]:
            why = f"names {name!r} twice"
        elif name not in lens_names:
            why = f"names {name!r}, which is not a lens of this repository"
        else:
            continue
        doc = load_yaml(f"{lens.root}/lens.yaml", lens_yaml)
        others = ", ".join(sorted(set(lens_names) - {lens.name})) or "none"
        raise LensLoadError(
            doc.path,
            f"seeds_from {why}",
            line=doc.line_of(("seeds_from", i)),
            fix=f"list other lenses whose seeds/ this lens reads (lenses here: {others})",
        )


def _select(names: list[str], only: str | Collection[str] | None, where: str) -> list[str]:
    if only is None:
        return names
    wanted = [only] if isinstance(only, str) else sorted(only)
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise UsageError(
            f"lens {unknown[0]!r} is neither in {where} nor serving",
            fix=f"use one of: {', '.join(names) or 'none'}",
        )
    return wanted


def commit_states(
    rt: Runtime, to: str, only: str | Collection[str] | None
) -> tuple[Oid, list[LensState]]:
    """The input state of every lens at revision ``to`` (or just ``only``: one name or several).

    A lens whose candidate tree already serves gets its (unchanged) plan
    without its tree being opened, so planning a push costs what its changed
    lenses cost.

    Returns:
        ``(candidate commit, states sorted by lens)``.

    Raises:
        LensLoadError: a candidate lens, or ``dst.yaml``, does not load (exit 2,
            nothing promoted).
        UsageError: ``to`` or ``only`` does not resolve.
    """
    from reconciler.plan import unchanged_plan  # lazy: see the imports

    repo = rt.repo
    commit = gitstate.resolve_commit(repo, to)
    rt.environment_config()  # a broken dst.yaml or --env is bad input now, not a stand-down
    env = rt.environment
    trees = gitstate.lens_trees(repo, commit)
    names = _select(sorted(set(trees) | set(refstore.served_lenses(repo, env))), only, to)
    states = []
    for name in names:
        lens_tree = trees.get(name)
        oid = proven.serving_target(repo, name, env)
        tree = lens_tree.tree if lens_tree else None
        # the tree already serves: its plan never consults the bindings, so skip reading them
        same = oid is not None and tree is not None and refstore.deployment_tree(repo, oid) == tree
        dep = refstore.read_deployment(repo, oid, bindings=not same) if oid is not None else None
        if dep is not None and not same:  # the newest verification's re-stamps count too
            dep = verifications.with_verified(repo, dep, env)
        if dep is not None and dep.lens_tree == tree and dep.info.gate in ("off", "warn", "block"):
            plan = unchanged_plan(
                name,
                gate=str(dep.info.gate),
                candidate_commit=commit,
                serving_deployment=dep.oid,
                serving_tree=dep.lens_tree,
            )
            states.append(serving_state(name, dep, candidate_commit=commit, plan=plan))
            continue
        serving = _serving_lens(repo, name, dep) if dep is not None else None
        candidate = serving
        if lens_tree is None:
            candidate = None
        elif dep is None or dep.lens_tree != lens_tree.tree:
            candidate = gitstate.load_lens_at(repo, lens_tree, checked=gitstate.checked_dir(repo))
            if candidate.config.seeds_from:
                path = f"{gitstate.LENSES_DIR}/{name}/lens.yaml"
                check_seeds_from(candidate, trees, gitstate.file_at(repo, commit, path) or b"")
        states.append(
            serving_state(
                name,
                dep,
                candidate=candidate,
                candidate_commit=commit,
                candidate_tree=tree,
                serving_lens=serving,
            )
        )
    return commit, states


def worktree_states(rt: Runtime, names: Collection[str] | None) -> list[LensState]:
    """The input state of each working-tree lens (``lenses/<name>/`` on disk).

    A lens whose files equal the serving lens tree byte for byte is planned as
    that tree (so it is ``unchanged`` without parsing); one that does not load
    carries the error (file and line) and a placeholder plan.

    Raises:
        UsageError: a name in ``names`` is neither on disk nor serving.
        StateError: serving state cannot be read.
    """
    on_disk = set(gitstate.worktree_lens_names(rt.root))
    known = sorted(on_disk | set(refstore.served_lenses(rt.repo, rt.environment)))
    wanted = known if names is None else _select(known, names, "the working tree")
    return [_worktree_state(rt, name, name in on_disk) for name in wanted]


def _worktree_state(rt: Runtime, name: str, on_disk: bool) -> LensState:
    from reconciler.plan import LensPlan  # lazy: see the imports

    dep, serving = load_serving(rt.repo, name, rt.environment)
    if dep is not None:  # the newest verification's re-stamps count too
        dep = verifications.with_verified(rt.repo, dep, rt.environment)
    if not on_disk:
        return serving_state(name, dep, serving_lens=serving)
    try:
        files = gitstate.worktree_files(rt.root, name)
        if dep is not None and gitstate.tree_files(rt.repo, dep.lens_tree) == files:
            # The serving tree itself: the plan short-circuits to "unchanged",
            # as it does for a commit, and nothing needs parsing.
            return serving_state(
                name, dep, candidate=serving, candidate_tree=dep.lens_tree, serving_lens=serving
            )
        candidate = load_lens(name, files)
        check_seeds_from(candidate, gitstate.worktree_lens_names(rt.root), files["lens.yaml"])
    except (LensLoadError, OSError) as exc:
        # OSError: a file went away between listing and reading (an editor's
        # save in flight); that save's own event brings the next check.
        why = exc.render() if isinstance(exc, LensLoadError) else f"{name}: {exc}"
        plan = LensPlan(
            lens=name,
            gate=serving.config.eval_gate if serving else "block",
            serving=dep.oid if dep else None,
            serving_tree=dep.lens_tree if dep else None,
            candidate=None,
            candidate_tree=None,
            unchanged=False,
        )
        return serving_state(name, dep, serving_lens=serving, plan=plan, error=why)
    return serving_state(name, dep, candidate=candidate, serving_lens=serving)
