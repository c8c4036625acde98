"""Operations on serving versions: rollback, status, log, seed.

(``dst test``, which re-verifies a serving version, is :mod:`reconciler.verify`.)
Rollback writes a new deployment whose content is an older one's; history is
never rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.context import Runtime
from reconciler.errors import UsageError
from reconciler.git import refs as refstore
from reconciler.git import trees as gitstate
from reconciler.ids import Oid
from reconciler.lens import LENS_NAME_RE, LensConfig
from reconciler.loader import load_yaml, validate
from reconciler.plan import LensPlan
from reconciler.results import Action, LensRun, RunReport
from reconciler.state import DeploymentMeta, RunRecord

if TYPE_CHECKING:
    from reconciler.warehouse.seed import SeedReport


def serving_or_fail(rt: Runtime, name: str) -> refstore.Deployment:
    """The serving deployment of lens ``name``.

    Raises:
        UsageError: nothing serves it (the message lists what does).
    """
    oid = refstore.ref_target(rt.repo, refstore.serving_ref(name))
    if oid is None:
        served = ", ".join(refstore.served_lenses(rt.repo)) or "none"
        raise UsageError(
            f"lens {name!r} has no serving version (serving: {served})",
            fix="promote it first with `dst apply`",
        )
    return refstore.read_deployment(rt.repo, oid)


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
    current = serving_or_fail(rt, name)
    target = _rollback_target(rt, name, current, to)
    plan = LensPlan(
        lens=name,
        gate=target.info.gate or "block",
        serving=current.oid,
        serving_tree=current.lens_tree,
        candidate=target.source,
        candidate_tree=target.lens_tree,
        unchanged=False,
    )
    meta = DeploymentMeta(
        action="rollback",
        lens=name,
        source=target.source,
        previous=current.oid,
        score=target.info.score,
        previous_score=current.info.score,
        gate=target.info.gate,
        rollback_to=target.oid,
        reason=f"rollback to {target.oid[:12]}",
    )
    if target.info.reach is not None:  # the reach of the content it serves again
        meta = meta.model_copy(update={"reach": target.info.reach})
    record = RunRecord(schema_version=1, lens=name, rollback_of=current.oid, rollback_to=target.oid)
    oid = refstore.advance(
        rt.repo,
        refstore.serving_ref(name),
        current.oid,
        refstore.NewDeployment(
            lens=name,
            source=target.source,
            lens_tree=target.lens_tree,
            bindings=target.bindings,
            run=record,
            meta=meta,
            message=f"rollback {name} to {target.oid[:12]} (source {target.source[:12]})",
        ),
        reason=f"dst rollback {name}",
    )
    run = LensRun(
        plan,
        Action.ROLLED_BACK,
        oid,
        previous_score=dict(current.info.score or {}),
        messages=[f"now serving the content of {target.oid[:12]}"],
        recorded=oid,
    )
    return RunReport("rollback", [run])


def _rollback_target(
    rt: Runtime, name: str, current: refstore.Deployment, to: str | None
) -> refstore.Deployment:
    """The deployment whose content a rollback of ``name`` serves again (see :func:`rollback`).

    Raises:
        UsageError: no earlier content exists, ``to`` is not a deployment of this lens,
            or it serves the same lens content as ``current``.
    """
    chain = refstore.history(rt.repo, current.oid)
    if to is None:
        target = next((d for d in chain[1:] if d.lens_tree != current.lens_tree), None)
        if target is None:
            raise UsageError(
                f"lens {name!r} has no earlier deployment with other content",
                fix="pass --to DEPLOYMENT (see `dst log`)",
            )
        return target
    oid = gitstate.resolve_commit(rt.repo, to)
    found = next((d for d in chain if d.oid == oid), None)
    if found is None:
        raise UsageError(
            f"{to} is not a deployment of lens {name!r}", fix=f"pick one from `dst log {name}`"
        )
    if found.lens_tree == current.lens_tree:
        raise UsageError(
            f"{to} serves the same lens content as the current deployment",
            fix=f"pick a deployment with other content from `dst log {name}`",
        )
    return found


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
        names |= set(refstore.ref_names(repo, prefix))
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
    dep = serving_or_fail(rt, name)
    return refstore.history(rt.repo, dep.oid, limit)


def seed(rt: Runtime, url: str | None = None) -> SeedReport:
    """Build the embedded DuckDB warehouse from the working tree's seeds, a schema per lens.

    ``lenses/<L>/seeds/<t>.csv`` becomes table ``<t>`` in schema ``<L>`` and a
    repository-level ``seeds/<t>.csv`` table ``<t>`` in the default schema (DESIGN
    §2); every lens gets its schema, seeds or not.

    Args:
        rt: the invocation's runtime.
        url: seed this SQLAlchemy URL instead (``dst seed --warehouse``); the CSVs
            load through the same DuckDB reader (:func:`reconciler.warehouse.seed.seed`).

    Raises:
        LensLoadError: a CSV does not load (file and line named).
        UsageError: one lens seeds one table from two files with different bytes.
        WarehouseError: ``url`` cannot be seeded (nothing is committed).
    """
    # lazy: SQLAlchemy and DuckDB load only for `dst seed`, not for status or log
    from reconciler.warehouse.seed import SeedFile
    from reconciler.warehouse.seed import seed as build

    names = gitstate.worktree_lens_names(rt.root)
    folders: list[tuple[str | None, Path]] = [(None, rt.root / "seeds")]
    folders += [(n, rt.root / gitstate.LENSES_DIR / n / "seeds") for n in names]
    seeds: list[SeedFile] = []
    for schema, base in folders:
        if not base.is_dir():
            continue
        for csv in sorted(base.glob("*.csv")):
            rel = csv.relative_to(rt.root).as_posix()
            seeds.append(SeedFile(schema, csv.stem.lower(), rel, csv.read_bytes()))
    return build(rt.root, seeds, url=url, schemas=names)


@dataclass(frozen=True)
class OtherWarehouse:
    """A warehouse some working-tree lenses read instead of the embedded one.

    Attributes:
        url: its redacted URL.
        source: where it came from (``DST_WAREHOUSE_URL``, ``lens warehouse:``,
            ``dst.yaml warehouse:``).
        lenses: the lenses that read it (empty: the repository has no lens yet).
    """

    url: str
    source: str
    lenses: tuple[str, ...]


def seed_elsewhere(rt: Runtime) -> tuple[list[OtherWarehouse], list[str]]:
    """Which warehouses the working tree's lenses read, for a bare ``dst seed``.

    A bare ``dst seed`` only ever builds the embedded file: a configured warehouse
    may be production, so seeding it takes ``dst seed --warehouse URL``.

    Returns:
        ``(other warehouses with their lenses, lenses that read the embedded one)``.
        With no lens at all, the repository's own resolution stands in for one.

    Raises:
        LensLoadError: a ``lens.yaml`` or ``dst.yaml`` does not validate.
        UsageError: a configured URL is not a SQLAlchemy URL or names an unset variable.
    """
    # lazy: SQLAlchemy loads only for `dst seed`, not for status or log
    from reconciler.warehouse.connection import redact, resolve_url

    names = gitstate.worktree_lens_names(rt.root)
    others: dict[tuple[str, str], list[str]] = {}
    embedded: list[str] = []
    listed: list[str | None] = list(names) or [None]
    for name in listed:
        lens_url: str | None = None
        if name is not None:
            rel = f"{gitstate.LENSES_DIR}/{name}/lens.yaml"
            doc = load_yaml(rel, (rt.root / rel).read_bytes())
            lens_url = validate(LensConfig, doc).warehouse
        resolved, source = resolve_url(None, rt.env, lens_url, rt.repo_config_url(), rt.root)
        if source == "embedded default":
            embedded.extend([name] if name else [])
        else:
            others.setdefault((redact(resolved), source), []).extend([name] if name else [])
    found = [OtherWarehouse(u, s, tuple(ls)) for (u, s), ls in sorted(others.items())]
    return found, embedded
