"""Serving state in git: deployment commits under ``refs/dst/`` (DESIGN §3).

A deployment commit is never on a branch. Its tree holds ``lens/`` (the
promoted lens tree itself, same tree id, no copy) and ``state/bindings.json``,
``state/run.json``, ``state/meta.json``; its first parent is the previous
deployment and its second the source commit. Every ref update is a
compare-and-swap inside one libgit2 reference transaction: lock every ref,
re-read it, compare with what the plan saw, set; each set is written to the ref's
reflog with the command as its reason (``git reflog refs/dst/serving/<lens>``). A
multi-lens update is preceded by an intent record ``refs/dst/applying`` and followed
by its removal, so a crash between the two leaves something :func:`recover` rolls
forward.

A named environment E (DESIGN §3 "Environments") keeps the same shapes under
``refs/dst/env/<E>/`` — ``serving/<lens>``, ``attempts/<lens>``, ``retired/<lens>``
and its own intent record ``applying`` — so an apply in one environment never
rolls forward or waits on another's. ``env=None`` is the unnamed default
environment, whose refs sit directly under ``refs/dst/``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from reconciler import __version__
from reconciler.errors import DstError, RefConflict, StateError
from reconciler.git import locks as reflocks
from reconciler.git.crash import crash_point
from reconciler.git.records import (
    STATE_SCHEMA,
    Deployment as Deployment,
    bindings_read_as_is,
    loads_meta,
)
from reconciler.git.refnames import (
    APPLYING as APPLYING,
    ATTEMPTS as ATTEMPTS,
    ENVIRONMENTS as ENVIRONMENTS,
    RETIRED as RETIRED,
    SERVING as SERVING,
    VERIFY as VERIFY,
    applying_ref as applying_ref,
    attempts_ref as attempts_ref,
    env_note as env_note,
    environments_with_refs as environments_with_refs,
    namespace as namespace,
    retired_ref as retired_ref,
    serving_ref as serving_ref,
    verify_ref as verify_ref,
)
from reconciler.ids import Oid

if TYPE_CHECKING:
    from reconciler.bindings import Bindings
    from reconciler.state import DeploymentMeta, RunRecord

# The records' models (reconciler.state, pydantic) load only where a record is written
# or a run record read: a deployment's meta reads through reconciler.git.records.

META_SCHEMA = STATE_SCHEMA


@dataclass(frozen=True)
class RefUpdate:
    """One compare-and-swap: set ``ref`` to ``new`` if it still holds ``old``."""

    ref: str
    old: Oid | None
    new: Oid | None


def deployment_tree(repo: pygit2.Repository, oid: Oid) -> Oid | None:
    """The ``lens/`` tree id of deployment ``oid`` without reading its state, or ``None``."""
    commit = repo.get(oid)
    if not isinstance(commit, pygit2.Commit) or "lens" not in commit.tree:
        return None
    return Oid(str(commit.tree["lens"].id))


def ref_target(repo: pygit2.Repository, ref: str) -> Oid | None:
    """The oid a direct ref points at, or ``None`` when it does not exist."""
    found = repo.references.get(ref)
    return None if found is None else Oid(str(found.target))


def served_lenses(repo: pygit2.Repository, env: str | None = None) -> list[str]:
    """Names of lenses with a serving ref (in ``env``), sorted."""
    return ref_names(repo, namespace(env) + "serving/")


def _blob(repo: pygit2.Repository, oid: pygit2.Oid) -> bytes:
    obj = repo[oid]
    if not isinstance(obj, pygit2.Blob):
        raise StateError(f"{oid}: expected a blob")
    return bytes(obj.data)


def _state_blob(repo: pygit2.Repository, tree: pygit2.Tree, path: str, where: str) -> bytes:
    try:
        entry = tree[path]
    except KeyError:
        raise StateError(
            f"{where}: deployment commit has no {path}",
            fix="the ref does not point at a dst deployment; inspect it",
        ) from None
    return _blob(repo, entry.id)


def read_deployment(repo: pygit2.Repository, oid: Oid, *, bindings: bool = True) -> Deployment:
    """Read a deployment commit.

    With ``bindings=False`` the bindings' header is checked but no binding is
    read (``Deployment.bindings`` is empty): for a plan of a lens tree that
    already serves, which never consults them.

    Raises:
        StateError: the commit lacks ``lens/`` or ``state/*.json``, or its meta
            has an unknown ``schema_version``.
    """
    where = f"deployment {oid[:12]}"
    commit = repo.get(oid)
    if not isinstance(commit, pygit2.Commit):
        raise StateError(f"{where}: not a commit")
    tree = commit.tree
    raw = _state_blob(repo, tree, "state/meta.json", where)
    meta = loads_meta(raw, where=where)
    bindings_raw = _blob(repo, tree["state/bindings.json"].id)
    stamps = None
    if not bindings_read_as_is(bindings_raw, answers=bindings):
        from reconciler.bindings import Bindings  # lazy: see Deployment.bindings

        # raises what a malformed file always raised, at the read
        stamps = Bindings.loads(
            bindings_raw, where=f"{where} state/bindings.json", answers=bindings
        )
    try:
        lens_tree = Oid(str(tree["lens"].id))
    except KeyError:
        raise StateError(f"{where}: deployment commit has no lens/ tree") from None
    return Deployment(
        oid=Oid(str(oid)),
        lens_tree=lens_tree,
        info=meta,
        previous=meta.previous or None,
        stamps=stamps,
        stored_bindings=bindings_raw,
        answers_read=bindings,
    )


def read_run(repo: pygit2.Repository, oid: Oid) -> dict[str, Any]:
    """A deployment or attempt commit's ``state/run.json`` (plan, results, messages),
    JSON-ready (:class:`reconciler.state.RunRecord` as stored).

    Raises:
        StateError: the commit has no ``state/run.json``, it is not JSON, or its
            ``schema_version`` is unknown.
    """
    commit = repo.get(oid)
    where = f"deployment {oid[:12]}"
    if not isinstance(commit, pygit2.Commit):
        raise StateError(f"{where}: not a commit")
    raw = _state_blob(repo, commit.tree, "state/run.json", where)
    from reconciler.state import RunRecord, load  # lazy: see the imports

    return load(RunRecord, raw, where=where, name="state/run.json").record()


def _signature(repo: pygit2.Repository) -> pygit2.Signature:
    try:
        sig = repo.default_signature
        return pygit2.Signature(sig.name, sig.email, int(time.time()), 0)
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("dst", "dst@localhost", int(time.time()), 0)


def write_deployment(
    repo: pygit2.Repository,
    *,
    lens_tree: Oid,
    bindings: Bindings,
    run: RunRecord | Mapping[str, Any],
    meta: DeploymentMeta | Mapping[str, Any],
    parents: Sequence[Oid],
    message: str,
) -> Oid:
    """Write a deployment commit (no ref moves).

    Args:
        lens_tree: the promoted lens tree (reused as is).
        bindings, run, meta: the ``state/`` files (a mapping is validated into its
            model); ``meta`` gets ``schema_version``, ``tool_version`` and
            ``recorded_at`` added.
        parents: previous deployment (if any) first, then the source commit.
        message: the one-line commit message.

    Returns:
        The new commit's oid.

    Raises:
        pydantic.ValidationError: a mapping does not fit its model (a programming error).
    """
    from reconciler.state import DeploymentMeta, RunRecord  # lazy: see the imports

    given = meta.record() if isinstance(meta, DeploymentMeta) else dict(meta)
    full_meta = DeploymentMeta.model_validate(
        {
            "schema_version": META_SCHEMA,
            "tool_version": __version__,
            "recorded_at": int(time.time()),
            **given,
        }
    )
    record = run if isinstance(run, RunRecord) else RunRecord.model_validate(dict(run))
    state = repo.TreeBuilder()
    for name, raw in (
        ("bindings.json", bindings.dumps()),
        ("run.json", record.dumps()),
        ("meta.json", full_meta.dumps()),
    ):
        state.insert(name, repo.create_blob(raw), pygit2.GIT_FILEMODE_BLOB)
    root = repo.TreeBuilder()
    root.insert("lens", pygit2.Oid(hex=lens_tree), pygit2.GIT_FILEMODE_TREE)
    root.insert("state", state.write(), pygit2.GIT_FILEMODE_TREE)
    sig = _signature(repo)
    oid = repo.create_commit(
        None, sig, sig, message, root.write(), [pygit2.Oid(hex=p) for p in dict.fromkeys(parents)]
    )
    crash_point("deployment-written")
    return Oid(str(oid))


def history_root(repo: pygit2.Repository, lens: str) -> Oid:
    """The parentless, empty first commit of a lens's serving (or attempt) history.

    The first deployment takes it as first parent, so ``git log --first-parent``
    of a serving ref ends there instead of running on into the source branch.
    Its content is fixed, so every first deployment of a lens shares one root.
    """
    empty = repo.TreeBuilder().write()
    sig = pygit2.Signature("dst", "dst@localhost", 0, 0)
    oid = repo.create_commit(None, sig, sig, f"dst: history of lens {lens} begins", empty, [])
    return Oid(str(oid))


@dataclass(frozen=True, kw_only=True)
class NewDeployment:
    """What one deployment (or attempt) commit will hold.

    Attributes:
        lens: the lens name (its history root is the first parent of a first deployment).
        source: the source commit (the second parent).
        lens_tree: the tree id stored as ``lens/``.
        bindings: ``state/bindings.json``.
        run: ``state/run.json``.
        meta: ``state/meta.json``.
        message: the commit message's one line.
    """

    lens: str
    source: Oid
    lens_tree: Oid
    bindings: Bindings
    run: RunRecord | Mapping[str, Any]
    meta: DeploymentMeta | Mapping[str, Any]
    message: str


def advance(
    repo: pygit2.Repository, ref: str, old: Oid | None, new: NewDeployment, *, reason: str
) -> Oid:
    """Append one deployment (or attempt) to ``ref``'s history, by compare-and-swap.

    The new commit's parents are ``old`` (or the lens's history root when the
    ref does not exist yet) and ``new.source``.

    Returns:
        The new commit.

    Raises:
        RefConflict: ``ref`` no longer holds ``old``; nothing moved.
    """
    oid = write_deployment(
        repo,
        lens_tree=new.lens_tree,
        bindings=new.bindings,
        run=new.run,
        meta=new.meta,
        parents=[old or history_root(repo, new.lens), new.source],
        message=new.message,
    )
    update_refs(repo, [RefUpdate(ref, old, oid)], reason=reason)
    return oid


def update_refs(
    repo: pygit2.Repository,
    updates: Sequence[RefUpdate],
    *,
    reason: str,
    env: str | None = None,
) -> None:
    """Apply compare-and-swap updates atomically: all move, or none does.

    More than one update is preceded by the intent record (``refs/dst/applying``,
    or ``env``'s own :func:`applying_ref`) and followed by its removal.

    Raises:
        RefConflict: a ref no longer holds the value the plan saw, another
            apply's intent record is in flight, or another process kept a lock
            through the bounded wait while moving it; nothing moved. The fix is
            to re-plan.
        StaleLock: a lock file stayed unchanged through the bounded wait.
    """
    if not updates:
        return
    applying = applying_ref(env)
    intent: Oid | None = None
    if len(updates) > 1:
        intent = _write_intent(repo, updates, reason)
        # Expect no intent: one that exists belongs to an apply in flight (or to a
        # crashed one that the next recover() finishes); overwriting it would lose it.
        _transaction(repo, [RefUpdate(applying, None, intent)], reason)
        crash_point("intent-written")
    try:
        _transaction(repo, updates, reason)
    except RefConflict:
        if intent is not None:
            _transaction(repo, [RefUpdate(applying, intent, None)], reason)
        raise
    crash_point("refs-set")
    if intent is not None:
        _transaction(repo, [RefUpdate(applying, intent, None)], reason)
        crash_point("intent-cleared")


def _transaction(repo: pygit2.Repository, updates: Sequence[RefUpdate], reason: str) -> None:
    """One compare-and-swap reference transaction, retried while a peer holds a lock.

    A lock held by another process is waited out with a bounded backoff
    (:func:`reflocks.wait_out`); the retry then compares afresh, so a peer
    that moved the ref meanwhile turns this into a :class:`RefConflict`.
    """
    deadline = time.monotonic() + reflocks.lock_wait_s()
    while True:
        try:
            _transaction_once(repo, updates, reason)
            return
        except _Locked as locked:
            if time.monotonic() >= deadline:
                raise RefConflict(locked.ref, locked.old, "locked by another process") from None
            # Raises StaleLock when the same lock file outlives the whole wait.
            reflocks.wait_out(repo, [u.ref for u in updates])


class _Locked(Exception):
    def __init__(self, ref: str, old: Oid | None) -> None:
        super().__init__(ref)
        self.ref = ref
        self.old = old


def _transaction_once(repo: pygit2.Repository, updates: Sequence[RefUpdate], reason: str) -> None:
    try:
        with repo.transaction() as txn:
            for u in updates:
                try:
                    txn.lock_ref(u.ref)
                except pygit2.GitError:
                    raise _Locked(u.ref, u.old) from None
                crash_point("ref-locked")
                actual = ref_target(repo, u.ref)
                if actual != u.old:
                    raise RefConflict(u.ref, u.old, actual)
                if u.new is None:
                    txn.remove(u.ref)
                else:
                    _keep_log(repo, u.ref)
                    txn.set_target(u.ref, pygit2.Oid(hex=u.new), message=reason)
    except pygit2.GitError as exc:
        if "lock" in str(exc):
            # Committing can need packed-refs.lock (a deleted packed ref).
            raise _Locked(updates[0].ref, updates[0].old) from None
        raise RefConflict(updates[0].ref, updates[0].old, f"update failed: {exc}") from None


def _keep_log(repo: pygit2.Repository, ref: str) -> None:
    """Make sure ``ref`` has a reflog, so this update and every later one is logged.

    Git and libgit2 log updates of refs outside ``refs/heads/``, ``refs/remotes/`` and
    ``refs/notes/`` only when the ref already has a log (git-config(1),
    ``core.logAllRefUpdates``); an empty log file is what ``git update-ref
    --create-reflog`` leaves. A bare repository logs nothing unless that setting is
    ``always``. The intent record comes and goes with every apply: it gets none.
    """
    if ref.endswith("/applying") or ref == APPLYING:
        return
    gitdir = Path(repo.path)
    common = gitdir / "commondir"  # a linked worktree keeps shared refs' logs in the main dir
    if common.is_file():
        gitdir = gitdir / common.read_text(encoding="utf-8").strip()
    log = gitdir / "logs" / ref
    if log.exists():
        return
    with contextlib.suppress(OSError):  # no log is no reason to leave a ref unmoved
        log.parent.mkdir(parents=True, exist_ok=True)
        log.touch()


def _write_intent(repo: pygit2.Repository, updates: Sequence[RefUpdate], reason: str) -> Oid:
    from reconciler.state import ApplyIntent, IntentUpdate  # lazy: see the imports

    record = ApplyIntent(
        schema_version=STATE_SCHEMA,
        reason=reason,
        updates=tuple(IntentUpdate(ref=u.ref, old=u.old, new=u.new) for u in updates),
    )
    tb = repo.TreeBuilder()
    tb.insert("apply.json", repo.create_blob(record.dumps()), pygit2.GIT_FILEMODE_BLOB)
    sig = _signature(repo)
    parents = [pygit2.Oid(hex=u.new) for u in updates if u.new is not None]
    oid = repo.create_commit(None, sig, sig, f"dst applying: {reason}", tb.write(), parents)
    return Oid(str(oid))


def recover(repo: pygit2.Repository, env: str | None = None) -> list[str]:
    """Roll forward an apply interrupted between its intent record and its removal.

    Every command that moves a ref calls this first, for the environment it
    works in (``None``: the default one); another environment's intent record
    and lock files are left to that environment's next command. It first waits
    out lock files on the environment's refs and ``packed-refs.lock`` (a peer's
    lock lasts milliseconds) and refuses to go
    on past one that a killed process left. Then, if ``refs/dst/applying``
    names an intent, its lens refs move all together or not at all: when each
    still holds its old or already its new deployment, the ones at old roll
    forward in one transaction; when any moved elsewhere, the interrupted apply
    lost a race before it crashed, and none of its refs is moved.

    Returns:
        Messages describing what was rolled forward (empty when nothing was pending).

    Raises:
        StaleLock: a lock file stayed unchanged through the bounded wait.
        StateError: ``refs/dst/applying`` is not a dst intent record.
    """
    reflocks.wait_out(repo, _own_locks(repo, env))
    applying = applying_ref(env)
    intent = ref_target(repo, applying)
    if intent is None:
        return []
    not_intent = StateError(
        f"{applying} points at {intent[:12]}, which is not a dst intent record",
        fix=f"inspect it with `git show {intent[:12]}`; if no dst apply wrote it, "
        f"delete it with `git update-ref -d {applying}`",
    )
    try:
        commit = repo[intent].peel(pygit2.Commit)
        raw = _blob(repo, commit.tree["apply.json"].id)
    except (KeyError, ValueError, TypeError, pygit2.GitError, pygit2.InvalidSpecError):
        raise not_intent from None
    from reconciler.state import ApplyIntent, load  # lazy: see the imports

    # A newer dst's intent says so (upgrade), never "delete it": it must still roll forward.
    record = load(
        ApplyIntent,
        raw,
        where=f"{applying} ({intent[:12]})",
        name="apply.json",
        malformed=not_intent,
    )
    updates = [(u.ref, u.old, u.new) for u in record.updates]
    actual = {ref: ref_target(repo, ref) for ref, _, _ in updates}
    moved = [ref for ref, old, new in updates if actual[ref] not in (old, new)]
    pending = [RefUpdate(ref, old, new) for ref, old, new in updates if actual[ref] == old]
    messages = []
    if moved:
        landed = [ref for ref, _, new in updates if actual[ref] == new]
        messages.append(
            f"the interrupted apply {intent[:12]} was not rolled forward: {', '.join(moved)} "
            f"moved elsewhere since"
            + (f"; {', '.join(landed)} already held its new deployment" if landed else "")
        )
    elif pending:
        _transaction(repo, pending, "recover: roll forward")
        messages.extend(f"rolled forward {u.ref} to {str(u.new)[:12]}" for u in pending)
        crash_point("recover-rolled")
    _transaction(repo, [RefUpdate(applying, intent, None)], "recover: done")
    return messages


def _own_locks(repo: pygit2.Repository, env: str | None) -> list[str]:
    """The refs under ``env``'s namespace that have a lock file now (the default
    environment's exclude ``refs/dst/env/``): another environment's lock, even one a
    killed process left, never holds this environment up."""
    space = namespace(env)
    held = [lock.name.removesuffix(".lock") for lock in reflocks.ref_locks(repo)]
    return [
        ref
        for ref in held
        if ref.startswith(space) and (env is not None or not ref.startswith(ENVIRONMENTS))
    ]


def recover_all(repo: pygit2.Repository) -> list[str]:
    """:func:`recover` the default environment, then every named one with refs
    (``dst sync`` shares them all, so none may be half-applied when it does).

    Raises:
        StaleLock, StateError: as :func:`recover`.
    """
    messages = recover(repo)
    for env in environments_with_refs(repo):
        messages += [f"environment {env}: {m}" for m in recover(repo, env)]
    return messages


def history(repo: pygit2.Repository, head: Oid, limit: int = 1000) -> list[Deployment]:
    """Deployments from ``head`` back along first parents, newest first."""
    out: list[Deployment] = []
    current: Oid | None = head
    while current is not None and len(out) < limit:
        dep = read_deployment(repo, current)
        out.append(dep)
        current = dep.previous
    return out


def head_commit(repo: pygit2.Repository, fallback: Oid | None) -> Oid | None:
    """The commit HEAD resolves to; ``None`` on an unborn branch.

    ``fallback`` is returned while HEAD cannot be read (git is rewriting it right
    now); the caller looks again on its next wake-up.
    """
    try:
        return None if repo.head_is_unborn else Oid(str(repo.head.target))
    except (pygit2.GitError, KeyError):
        return fallback


def head_branch(repo: pygit2.Repository) -> str | None:
    """The short name of the branch HEAD is on, ``None`` when HEAD is detached."""
    head = repo.references.get("HEAD")
    target = head.target if head is not None else None
    if isinstance(target, str) and target.startswith("refs/heads/"):
        return target[len("refs/heads/") :]
    return None


def attempt_of(repo: pygit2.Repository, source: Oid, env: str | None = None) -> str | None:
    """The lens whose ``refs/dst/attempts/<lens>`` (in ``env``) records ``source`` as its
    source, if any.

    An attempt commit that does not read as a deployment, and a ``recovered`` record (a
    revert that made the serving tree current again, not a try that failed), are passed
    over.
    """
    prefix = namespace(env) + "attempts/"
    for name in sorted(r for r in repo.references if r.startswith(prefix)):
        oid = ref_target(repo, name)
        if oid is None:
            continue
        try:
            dep = read_deployment(repo, oid)
        except DstError:
            continue
        if dep.source == source and dep.info.action != "recovered":
            return name[len(prefix) :]
    return None


def ref_names(repo: pygit2.Repository, prefix: str) -> list[str]:
    """The names after ``prefix`` of every ref that starts with it, sorted."""
    return sorted(r[len(prefix) :] for r in repo.references if r.startswith(prefix))
