"""Operations on serving versions: verify (``dst test``), rollback, status, log, seed.

``dst test`` re-verifies the whole active corpus of the serving version and
records the run as a ``verify`` deployment (same lens tree, new state), so the
accuracy trend accrues in ``git log --first-parent refs/dst/serving/<lens>``.
Rollback writes a new deployment whose content is an older one's; history is
never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reconciler.assets import lens_assets
from reconciler.bindings import select_stale
from reconciler.cases import run_cases
from reconciler.context import Runtime
from reconciler.errors import UsageError
from reconciler.fanout import run_answers
from reconciler.git import refs as refstore
from reconciler.git import trees as gitstate
from reconciler.git.crash import crash_point
from reconciler.lens import LENS_NAME_RE, Oid
from reconciler.plan import LensPlan
from reconciler.results import LensRun, RunReport, meta_for, state_for
from reconciler.suite import Outcome

if TYPE_CHECKING:
    from reconciler.warehouse.seed import SeedReport


def _serving_or_fail(rt: Runtime, name: str) -> refstore.Deployment:
    oid = refstore.ref_target(rt.repo, refstore.serving_ref(name))
    if oid is None:
        served = ", ".join(refstore.served_lenses(rt.repo)) or "none"
        raise UsageError(
            f"lens {name!r} has no serving version (serving: {served})",
            fix="promote it first with `dst apply`",
        )
    return refstore.read_deployment(rt.repo, oid)


def verify(rt: Runtime, names: list[str]) -> RunReport:
    """Re-verify every active answer of each named lens's serving version.

    Green answers re-stamp; failures keep their old stamp and are reported. The
    run is recorded as a ``verify`` deployment by compare-and-swap.

    Returns:
        The report; exit code 1 when any answer is not correct.

    Raises:
        UsageError: a lens has no serving version.
        WarehouseError: the warehouse cannot be reached.
        RefConflict: the serving ref moved during the run (re-run).
    """
    report = RunReport("test", [], refstore.recover(rt.repo))
    if not names:
        report.messages.append("nothing is serving yet: promote a lens with `dst apply` first")
    for name in names:
        dep = _serving_or_fail(rt, name)
        lens = gitstate.load_lens_at(rt.repo, gitstate.LensTree(name, dep.lens_tree))
        assets = lens_assets(lens)
        _, deps = select_stale(lens, assets, dep.bindings, None)
        active = len(lens.active_answers())
        plan = LensPlan(
            name,
            lens.config.eval_gate,
            dep.oid,
            dep.lens_tree,
            dep.source,
            dep.lens_tree,
            False,
            active_before=active,
            active_after=active,
            deps=deps,
            assets=assets,
        )
        run = LensRun(
            plan,
            "verified",
            previous_score=dict(dep.meta.get("score") or {}),
            messages=rt.leaner_notes(lens),
        )
        executor = rt.warehouse_for(lens)
        values = rt.values_for(lens, executor)
        smart, _why = rt.smart_for(lens)
        embedder, no_embedder = rt.embedder_for(lens)
        if no_embedder and not any(no_embedder in m for m in run.messages):
            run.messages.append(f"leaner than production: {no_embedder}")
        rt.expect(len(lens.active_answers()))
        run.results = run_answers(
            lens,
            lens.active_answers(),
            executor,
            values,
            jobs=rt.jobs_for(lens),
            smart=smart,
            progress=rt.progress,
            announce=rt.answer,
            embedder=embedder,
        )
        run.cases = run_cases(
            lens, executor, values, smart=smart, progress=rt.progress, embedder=embedder
        )
        failing = [r for r in run.results if r.outcome is not Outcome.CORRECT]
        if failing:
            run.messages.append(
                f"{len(failing)} of {len(run.results)} answers failed; they keep their old "
                f"stamp: fix the definition, or re-certify / retire the answer"
            )
        failing_cases = [c for c in run.cases if not c.passed]
        if failing_cases:
            run.messages.append(
                f"{len(failing_cases)} of {len(run.cases)} behavioural cases failed: the lens "
                f"no longer clarifies, refuses or answers as evals/cases.yaml expects"
            )
        if not run.results:
            run.messages.append("gate SKIPPED: the lens has no active certified answers")
        bindings, record = state_for(run, dep.source, lens, dep.bindings)
        s = run.score
        crash_point("restamp-before")
        oid = refstore.advance(
            rt.repo,
            refstore.serving_ref(name),
            dep.oid,
            lens=name,
            source=dep.source,
            lens_tree=dep.lens_tree,
            bindings=bindings,
            run=record,
            meta=meta_for(run, "verify", dep.source, dep.oid),
            message=f"verify {name} {dep.source[:12]} score {s['correct']}/{s['total']}",
            reason=f"dst test {name}",
        )
        crash_point("restamp-after")
        run.recorded = oid
        run.serving_after = oid
        run.action = "verified" if not (failing or failing_cases) else "failed"
        report.lenses.append(run)
        if failing or failing_cases:
            report.exit_code = 1
    return report


def rollback(rt: Runtime, name: str, to: str | None) -> RunReport:
    """Serve an earlier deployment's content again, as a new deployment commit.

    Args:
        name: the lens.
        to: a deployment commit (any revision naming one in this lens's
            history); default: the newest earlier deployment whose lens tree
            differs from the current one.

    Raises:
        UsageError: nothing serves, no earlier content exists, or ``to`` is not
            a deployment of this lens.
        RefConflict: the serving ref moved meanwhile.
    """
    refstore.recover(rt.repo)
    current = _serving_or_fail(rt, name)
    chain = refstore.history(rt.repo, current.oid)
    if to is None:
        target = next((d for d in chain[1:] if d.lens_tree != current.lens_tree), None)
        if target is None:
            raise UsageError(
                f"lens {name!r} has no earlier deployment with other content",
                fix="pass --to DEPLOYMENT (see `dst log`)",
            )
    else:
        oid = gitstate.resolve_commit(rt.repo, to)
        target = next((d for d in chain if d.oid == oid), None)
        if target is None:
            raise UsageError(
                f"{to} is not a deployment of lens {name!r}", fix=f"pick one from `dst log {name}`"
            )
    if target.lens_tree == current.lens_tree:
        raise UsageError(
            f"{to} serves the same lens content as the current deployment",
            fix=f"pick a deployment with other content from `dst log {name}`",
        )
    plan = LensPlan(
        name,
        str(target.meta.get("gate", "block")),
        current.oid,
        current.lens_tree,
        target.source,
        target.lens_tree,
        False,
    )
    run = LensRun(plan, "rolled_back", previous_score=dict(current.meta.get("score") or {}))
    meta: dict[str, Any] = {
        "action": "rollback",
        "lens": name,
        "source": target.source,
        "previous": current.oid,
        "score": target.meta.get("score"),
        "previous_score": current.meta.get("score"),
        "gate": target.meta.get("gate"),
        "rollback_to": target.oid,
        "reason": f"rollback to {target.oid[:12]}",
    }
    record = {
        "schema_version": 1,
        "lens": name,
        "rollback_of": current.oid,
        "rollback_to": target.oid,
    }
    oid = refstore.advance(
        rt.repo,
        refstore.serving_ref(name),
        current.oid,
        lens=name,
        source=target.source,
        lens_tree=target.lens_tree,
        bindings=target.bindings,
        run=record,
        meta=meta,
        message=f"rollback {name} to {target.oid[:12]} (source {target.source[:12]})",
        reason=f"dst rollback {name}",
    )
    run.serving_after = oid
    run.recorded = oid
    run.messages.append(f"now serving the content of {target.oid[:12]}")
    return RunReport("rollback", [run])


@dataclass(frozen=True)
class LensStatus:
    """Serving and last-attempt state of one lens."""

    lens: str
    serving: Oid | None
    serving_meta: dict[str, Any]
    attempt: Oid | None
    attempt_meta: dict[str, Any]
    retired: Oid | None = None
    retired_meta: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """JSON-ready form (``retired``: the retirement deployment, if the lens has one)."""
        return {
            "lens": self.lens,
            "serving": self.serving,
            "serving_meta": self.serving_meta,
            "last_attempt": self.attempt,
            "last_attempt_meta": self.attempt_meta,
            "retired": self.retired,
            "retired_meta": self.retired_meta,
        }


def status(rt: Runtime) -> list[LensStatus]:
    """Every lens with serving state, in the working tree, with attempts or retired."""
    repo = rt.repo
    names = set(refstore.served_lenses(repo))
    for prefix in (refstore.ATTEMPTS, refstore.RETIRED):
        names |= {r[len(prefix) :] for r in repo.references if r.startswith(prefix)}
    names |= set(gitstate.worktree_lens_names(rt.root))
    names = {n for n in names if LENS_NAME_RE.match(n)}
    out = []
    for name in sorted(names):
        s = refstore.ref_target(repo, refstore.serving_ref(name))
        a = refstore.ref_target(repo, refstore.attempts_ref(name))
        sm = dict(refstore.read_deployment(repo, s).meta) if s else {}
        am = dict(refstore.read_deployment(repo, a).meta) if a else {}
        r = refstore.ref_target(repo, refstore.retired_ref(name))
        rm = dict(refstore.read_deployment(repo, r).meta) if r else {}
        out.append(LensStatus(name, s, sm, a, am, r, rm))
    return out


def log(rt: Runtime, name: str, limit: int = 50) -> list[refstore.Deployment]:
    """A lens's deployments, newest first (first-parent history of its serving ref,
    or of its retirement deployment when the lens was retired and nothing serves it)."""
    retired = refstore.ref_target(rt.repo, refstore.retired_ref(name))
    if retired is not None and refstore.ref_target(rt.repo, refstore.serving_ref(name)) is None:
        return refstore.history(rt.repo, retired, limit)
    dep = _serving_or_fail(rt, name)
    return refstore.history(rt.repo, dep.oid, limit)


def seed(rt: Runtime, url: str | None = None) -> SeedReport:
    """Build the embedded DuckDB warehouse from every working-tree lens's ``seeds/*.csv``.

    Args:
        rt: the invocation's runtime.
        url: seed this SQLAlchemy URL instead (``dst seed --warehouse``); the CSVs
            load through the same DuckDB reader (:func:`reconciler.warehouse.seed.seed`).

    Raises:
        LensLoadError: a CSV does not load (file and line named).
        UsageError: two lenses seed one table with different bytes.
        WarehouseError: ``url`` cannot be seeded (nothing is committed).
    """
    from reconciler.warehouse.seed import seed as build

    seeds: list[tuple[str, str, bytes]] = []
    for name in gitstate.worktree_lens_names(rt.root):
        base = rt.root / gitstate.LENSES_DIR / name / "seeds"
        if not base.is_dir():
            continue
        for csv in sorted(base.glob("*.csv")):
            rel = csv.relative_to(rt.root).as_posix()
            seeds.append((csv.stem.lower(), rel, csv.read_bytes()))
    return build(rt.root, seeds, url=url)
