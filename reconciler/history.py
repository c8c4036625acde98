"""Operations on serving versions: rollback, status, log, gc, seed.

(``dst test``, which re-verifies a serving version, is :mod:`reconciler.verify`.)
Rollback writes a new deployment whose content is an older one's; history is
never rewritten.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler import files as repofiles
from reconciler.context import Runtime
from reconciler.errors import UsageError
from reconciler.git import (
    attempts as attemptstore,
    refs as refstore,
    serving as proven,
    trees as gitstate,
    verifications,
)
from reconciler.git.commits import CommitInfo, commit_info
from reconciler.ids import LENS_NAME_RE, Oid

if TYPE_CHECKING:
    from reconciler.results import RunReport
    from reconciler.warehouse.seed import SeedReport


def serving_or_fail(rt: Runtime, name: str) -> refstore.Deployment:
    """The serving deployment of lens ``name``.

    Raises:
        UsageError: nothing serves it (the message lists what does).
        ServingRefError: its serving ref does not point at a deployment whose recorded
            gate passed (:mod:`reconciler.git.serving`).
    """
    env = rt.environment
    oid = proven.serving_target(rt.repo, name, env)
    if oid is None:
        served = ", ".join(refstore.served_lenses(rt.repo, env)) or "none"
        where = f" in environment {env}" if env else ""
        flag = f" --env {env}" if env else ""
        raise UsageError(
            f"lens {name!r} has no serving version{where} (serving: {served})",
            fix=f"promote it first with `dst apply{flag}`",
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
    # lazy: the run report imports the suite and the gate; `dst status` and `dst log` need neither
    from reconciler.plan import LensPlan
    from reconciler.results import Action, LensRun, RunReport
    from reconciler.state import DeploymentMeta, RunRecord

    rt.environment_config()  # an unknown --env is bad input before anything moves
    refstore.recover(rt.repo, rt.environment)
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
        refstore.serving_ref(name, rt.environment),
        current.oid,
        refstore.NewDeployment(
            lens=name,
            source=target.source,
            lens_tree=target.lens_tree,
            bindings=target.bindings,
            run=record,
            meta=meta,
            message=f"rollback {name} to {target.oid[:12]} (source {target.source[:12]})"
            + refstore.env_note(rt.environment),
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
                fix=f"pass --to DEPLOYMENT (see `dst log {name}`)",
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


ATTEMPTS_WARN = 50
"""``dst status`` says to run ``dst gc`` when a lens has more attempts than this."""


def iso_time(ts: int) -> str:
    """``2026-12-01T10:58:09Z`` of a time in seconds since the epoch (UTC)."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(ts: int, now: float | None = None) -> str:
    """How long before ``now`` (default: the clock) ``ts`` was: ``just now``, ``5 min ago``,
    ``3 h ago``, ``2 days ago``; a time in the future (a skewed clock) is ``in the future``."""
    delta = int((time.time() if now is None else now) - ts)
    if delta < -60:
        return "in the future"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if delta >= size:
            n = delta // size
            return f"{n} {'day' if unit == 'days' and n == 1 else unit} ago"
    return "just now"


def _source_record(info: CommitInfo | None, oid: str | None) -> dict[str, Any] | None:
    if info is not None:
        return info.record()
    return {"commit": oid} if oid else None


@dataclass(frozen=True)
class Rollback:
    """A rollback that serves now (possibly under later ``verify`` deployments, which
    ``dst test`` wrote onto serving refs before verifications had their own chain).

    Attributes:
        deployment: the rollback deployment commit.
        rollback_to: the deployment whose content it serves again.
        recorded_at: when the rollback was recorded (seconds since the epoch).
    """

    deployment: Oid
    rollback_to: Oid | None
    recorded_at: int

    def record(self) -> dict[str, Any]:
        """JSON-ready: ``{"deployment", "rollback_to", "recorded_at"}``."""
        return {
            "deployment": self.deployment,
            "rollback_to": self.rollback_to,
            "recorded_at": self.recorded_at,
        }


def serving_rollback(rt: Runtime, name: str) -> Rollback | None:
    """The rollback lens ``name`` serves, until a newer promotion replaces it.

    ``verify`` deployments (``dst test``) keep serving the same content, so the
    walk looks past them; a ``promote`` ends it.
    """
    oid = refstore.ref_target(rt.repo, refstore.serving_ref(name, rt.environment))
    while oid is not None:
        dep = refstore.read_deployment(rt.repo, oid)
        if dep.info.action == "rollback":
            return Rollback(dep.oid, dep.info.rollback_to, dep.info.recorded_at)
        if dep.info.action != "verify":
            return None
        oid = dep.previous
    return None


def rollforwards(rt: Runtime, to: str, only: str | None = None) -> list[tuple[str, Rollback]]:
    """Lenses serving a rollback whose lens tree at ``to`` differs, so applying ``to``
    would roll them forward: ``[(lens, rollback)]``, sorted.

    Raises:
        UsageError: ``to`` does not name a commit.
    """
    trees = gitstate.lens_trees(rt.repo, gitstate.resolve_commit(rt.repo, to))
    out = []
    for name in [only] if only else refstore.served_lenses(rt.repo, rt.environment):
        rolled = serving_rollback(rt, name)
        if rolled is None or name not in trees:
            continue
        serving = refstore.read_deployment(rt.repo, Oid(rolled.deployment))
        if trees[name].tree != serving.lens_tree:
            out.append((name, rolled))
    return out


@dataclass(frozen=True)
class LensStatus:
    """Serving and last-attempt state of one lens.

    Attributes:
        serving_commit, attempt_commit: the source commit's author, time and subject
            (``{"commit", "author", "email", "time", "subject"}``), ``None`` without one.
        rollback: the rollback serving now, if any.
        attempts: attempts recorded under ``refs/dst/attempts/<lens>`` (counted up to
            ``ATTEMPTS_WARN + 1``).
        environment: the environment these refs belong to, ``None`` for the default one.
        verification: the newest verification under ``refs/dst/verify/<lens>``, if any,
            with its meta (``verified`` names the deployment it verified).
    """

    lens: str
    serving: Oid | None
    serving_meta: dict[str, Any]
    attempt: Oid | None
    attempt_meta: dict[str, Any]
    retired: Oid | None = None
    retired_meta: dict[str, Any] = field(default_factory=dict)
    serving_commit: dict[str, Any] | None = None
    attempt_commit: dict[str, Any] | None = None
    rollback: Rollback | None = None
    attempts: int = 0
    environment: str | None = None
    verification: Oid | None = None
    verification_meta: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """JSON-ready form (``retired``: the retirement deployment, if the lens has one)."""
        return {
            "lens": self.lens,
            "environment": self.environment,
            "serving": self.serving,
            "serving_meta": self.serving_meta,
            "serving_commit": self.serving_commit,
            "serving_rollback": self.rollback.record() if self.rollback else None,
            "last_attempt": self.attempt,
            "last_attempt_meta": self.attempt_meta,
            "last_attempt_commit": self.attempt_commit,
            "attempts": self.attempts,
            "retired": self.retired,
            "retired_meta": self.retired_meta,
            "last_verification": self.verification,
            "last_verification_meta": self.verification_meta,
        }


def status(rt: Runtime) -> list[LensStatus]:
    """Every lens with serving state (in ``rt.environment``), in the working tree, with
    attempts or retired.

    Raises:
        ServingRefError: a serving ref does not point at a deployment whose recorded
            gate passed (:mod:`reconciler.git.serving`).
    """
    repo, env = rt.repo, rt.environment
    space = refstore.namespace(env)
    names: set[str] = set()
    for kind in ("serving/", "attempts/", "retired/", "verify/"):
        names |= set(refstore.ref_names(repo, space + kind))
    names |= set(gitstate.worktree_lens_names(rt.root))
    names = {n for n in names if LENS_NAME_RE.match(n)}
    out = []
    for name in sorted(names):
        s = proven.serving_target(repo, name, env)
        a = refstore.ref_target(repo, refstore.attempts_ref(name, env))
        sm = dict(refstore.read_deployment(repo, s).meta) if s else {}
        am = dict(refstore.read_deployment(repo, a).meta) if a else {}
        r = refstore.ref_target(repo, refstore.retired_ref(name, env))
        rm = dict(refstore.read_deployment(repo, r).meta) if r else {}
        sc = _source_record(commit_info(repo, sm.get("source")), sm.get("source"))
        ac = _source_record(commit_info(repo, am.get("source")), am.get("source"))
        count = attemptstore.chain_length(repo, a, ATTEMPTS_WARN + 1) if a else 0
        rolled = serving_rollback(rt, name) if s else None
        v = verifications.last(repo, name, env)
        vm = dict(v.meta) if v else {}
        row = LensStatus(name, s, sm, a, am, r, rm, sc, ac, rolled, count, env)
        out.append(replace(row, verification=v.oid if v else None, verification_meta=vm))
    return out


def not_serving(rt: Runtime, lens: str) -> UsageError:
    """The error for a lens with no serving version, naming the lenses there are.

    Returns:
        A :class:`UsageError` (exit 2): "has no serving version" for a lens that
        exists (in ``lenses/`` or with state under ``refs/dst/``), "no lens" for one
        that does not; both list the serving lenses and those that do not serve.
    """
    rows = status(rt)
    serving = [r.lens for r in rows if r.serving]
    idle = [r.lens for r in rows if not r.serving and r.lens != lens]
    known = (
        f"serving: {', '.join(serving) or 'none'}; "
        f"exist but do not serve: {', '.join(idle) or 'none'}"
    )
    where = f" --env {rt.environment}" if rt.environment else ""
    if any(r.lens == lens for r in rows):
        env = f" in environment {rt.environment}" if rt.environment else ""
        return UsageError(
            f"lens {lens!r} has no serving version{env} ({known})",
            fix=f"promote it first: `dst apply --lens {lens}{where}` (see `dst status{where}`)",
        )
    return UsageError(
        f"no lens {lens!r} ({known})",
        fix="pass --lens one of the serving lenses; a new lens serves after `dst apply`",
    )


def environment_names(rt: Runtime) -> list[str]:
    """The named environments: those ``dst.yaml`` lists, then any others with refs, in order.

    Raises:
        LensLoadError: ``dst.yaml`` does not validate.
    """
    configured = list(rt.committed_environments())
    extra = [e for e in refstore.environments_with_refs(rt.repo) if e not in configured]
    return configured + extra


def log(rt: Runtime, name: str, limit: int = 50) -> list[refstore.Deployment]:
    """A lens's deployments, newest first (first-parent history of its serving ref,
    or of its retirement deployment when the lens was retired and nothing serves it)."""
    env = rt.environment
    retired = refstore.ref_target(rt.repo, refstore.retired_ref(name, env))
    if (
        retired is not None
        and refstore.ref_target(rt.repo, refstore.serving_ref(name, env)) is None
    ):
        return refstore.history(rt.repo, retired, limit)
    dep = serving_or_fail(rt, name)
    return refstore.history(rt.repo, dep.oid, limit)


@dataclass(frozen=True)
class LogEntry:
    """One line of ``dst log``: a deployment, or an attempt (blocked, stood down; never served).

    Attributes:
        deployment: the deployment or attempt commit, read back.
        attempt: it is an attempt (under ``refs/dst/attempts/<lens>``).
        source: the source commit's author, time and subject (``None``: not in this clone).
    """

    deployment: refstore.Deployment
    attempt: bool
    source: CommitInfo | None
    verification: bool = False

    def record(self) -> dict[str, Any]:
        """JSON-ready: the stored meta plus ``deployment``, ``kind`` (``deployment``,
        ``attempt`` or ``verification``), ``recorded_at_iso`` and ``source_commit``."""
        meta = self.deployment.meta
        kind = "attempt" if self.attempt else "deployment"
        return {
            "deployment": self.deployment.oid,
            "kind": "verification" if self.verification else kind,
            **meta,
            "recorded_at_iso": iso_time(int(meta.get("recorded_at", 0))),
            "source_commit": _source_record(self.source, self.deployment.source),
        }


def timeline(rt: Runtime, name: str, limit: int = 50) -> list[LogEntry]:
    """Deployments (:func:`log`), attempts and verifications of lens ``name`` interleaved,
    newest first, at most ``limit`` of each.

    Raises:
        UsageError: the lens has neither a serving (or retired) history nor attempts.
    """
    head = refstore.ref_target(rt.repo, refstore.attempts_ref(name, rt.environment))
    tried = refstore.history(rt.repo, head, limit) if head else []
    try:
        deps = log(rt, name, limit)
    except UsageError:
        if not tried:
            raise
        deps = []
    checked = refstore.ref_target(rt.repo, refstore.verify_ref(name, rt.environment))
    verified = verifications.chain(rt.repo, checked, limit) if checked else []
    entries = [
        LogEntry(d, attempt, commit_info(rt.repo, d.source))
        for d, attempt in [*((d, False) for d in deps), *((d, True) for d in tried)]
    ]
    entries += [LogEntry(d, False, commit_info(rt.repo, d.source), True) for d in verified]
    # Newest first; on a tie (same second) a deployment before the attempt it outlived.
    return sorted(entries, key=lambda e: (-e.deployment.info.recorded_at, e.attempt))


def gc(rt: Runtime, keep: int, names: list[str] | None = None) -> list[attemptstore.Pruned]:
    """Prune every lens's (or ``names``') attempts and verifications to the newest ``keep``
    of each; the newest verification of the serving lens tree is kept whatever its age
    (a plan reads its bindings).

    Raises:
        UsageError: ``keep`` < 1, or a name has neither attempts nor verifications.
        RefConflict: an attempts or verify ref moved meanwhile; that ref did not move.
    """
    if keep < 1:
        raise UsageError(f"--keep {keep}: keep at least one attempt", fix="pass --keep 1 or more")
    rt.environment_config()  # an unknown --env is bad input before anything moves
    env = rt.environment
    refstore.recover(rt.repo, env)
    space = refstore.namespace(env)
    found = {*refstore.ref_names(rt.repo, space + "attempts/")}
    wanted = names or sorted(found | {*refstore.ref_names(rt.repo, space + "verify/")})
    out = []
    for name in wanted:
        serving = refstore.ref_target(rt.repo, refstore.serving_ref(name, env))
        tree = refstore.deployment_tree(rt.repo, serving) if serving else None
        must = verifications.newest_of(rt.repo, name, env, tree) if tree else None
        ref, also = refstore.verify_ref(name, env), must.oid if must else None
        pruned = [
            attemptstore.prune(rt.repo, name, keep, env),
            attemptstore.prune(rt.repo, name, keep, env, ref=ref, also=also),
        ]
        if pruned == [None, None]:
            raise UsageError(
                f"lens {name!r} has no attempts under {refstore.attempts_ref(name, env)} "
                f"and no verifications under {refstore.verify_ref(name, env)}",
                fix="see `dst status`",
            )
        out += [p for p in pruned if p is not None]
    return out


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
    from reconciler.warehouse.seed import SeedFile, seed as build

    names = gitstate.worktree_lens_names(rt.root)
    folders: list[tuple[str | None, Path]] = [(None, rt.root / "seeds")]
    folders += [(n, rt.root / gitstate.LENSES_DIR / n / "seeds") for n in names]
    seeds: list[SeedFile] = []
    for schema, base in folders:
        # A seed is a regular file of the repository: a symlink (to a file or folder
        # outside, or inside) is refused, never followed (reconciler.files).
        repofiles.check_directory(rt.root, base)
        if not base.is_dir():
            continue
        for csv in sorted(base.glob("*.csv")):
            rel = csv.relative_to(rt.root).as_posix()
            data = repofiles.read_file(rt.root, csv)
            seeds.append(SeedFile(schema, csv.stem.lower(), rel, data))
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
    from reconciler.lens import LensConfig
    from reconciler.loader import load_yaml, validate
    from reconciler.warehouse.connection import redact, resolve_url

    names = gitstate.worktree_lens_names(rt.root)
    others: dict[tuple[str, str], list[str]] = {}
    embedded: list[str] = []
    listed: list[str | None] = list(names) or [None]
    for name in listed:
        lens_url: str | None = None
        if name is not None:
            rel = f"{gitstate.LENSES_DIR}/{name}/lens.yaml"
            doc = load_yaml(rel, repofiles.read_file(rt.root, rt.root / rel))
            lens_url = validate(LensConfig, doc).warehouse
        resolved, source = resolve_url(None, rt.env, lens_url, rt.repo_config_url(), rt.root)
        if source == "embedded default":
            embedded.extend([name] if name else [])
        else:
            others.setdefault((redact(resolved), source), []).extend([name] if name else [])
    found = [OtherWarehouse(u, s, tuple(ls)) for (u, s), ls in sorted(others.items())]
    return found, embedded
