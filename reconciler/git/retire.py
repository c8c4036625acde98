"""Retired lenses across remotes: what ``dst sync`` does with ``refs/dst/retired/<lens>``.

``dst apply`` retires a lens the candidate deletes with a deployment commit
whose first parent is the serving deployment it retired, and moves
``refs/dst/serving/<lens>`` to ``refs/dst/retired/<lens>`` in one
compare-and-swap (DESIGN §3). Sharing that with a remote takes two moves
that plain fast-forwards cannot express, because a retirement *removes* a
serving ref:

Push (:func:`push_leases`, :func:`pushed_deletion`): the retired ref goes out
like any other (new or fast-forward, never forced), and the remote's serving
ref is deleted in the same atomic push, guarded by
``--force-with-lease=refs/dst/serving/<lens>:<expected>``. ``expected`` is the
retirement's first parent (the deployment it retired), or an older deployment
in its first-parent history when the remote never received the last ones.
When the remote serves anything else it was promoted again meanwhile: git
refuses the lease (``stale info``), the atomic push moves nothing, and the lens
is reported *rejected* — re-plan. A remote that already holds this retirement
(or a later one) is left alone, so a lens that came back there keeps serving.

Fetch (:func:`on_fetch`): a local retirement the remote has not heard of keeps
the local serving ref deleted (the remote's copy is what it retired; push sends
the retirement). A retirement fetched from the remote deletes the local serving
ref when that ref is the retired deployment or one of its first-parent
ancestors (fast-forward semantics); a local serving ref that moved past it is
*diverged* and neither ref moves.

Each environment's refs are decided alone: every function takes the key prefix
``space`` of the environment's refs below ``refs/dst/`` (``""`` for the default
one, ``"env/<E>/"`` for environment E), so a retirement in one environment never
deletes another's serving ref.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import pygit2

from reconciler.errors import DstError
from reconciler.git import refs as refstore
from reconciler.git.sync_report import DST, PushLine, RefSync, SyncAction, short
from reconciler.ids import Oid

SERVING = "serving/"
RETIRED = "retired/"


def first_parent(repo: pygit2.Repository, oid: Oid) -> Oid | None:
    """The first parent of commit ``oid`` (for a retirement: the deployment it retired).

    ``None`` when the commit has no parent or its object is not in ``repo``.
    """
    try:
        found = repo[pygit2.Oid(hex=oid)].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return Oid(str(found.parent_ids[0])) if found.parent_ids else None


def within(repo: pygit2.Repository, older: Oid, newer: Oid) -> bool:
    """Whether ``older`` is ``newer`` or one of its ancestors.

    False when either object is not in ``repo`` (an unfetched deployment is
    never assumed to be related).
    """
    if older == newer:
        return True
    a, b = pygit2.Oid(hex=older), pygit2.Oid(hex=newer)
    if a not in repo or b not in repo:
        return False
    return bool(repo.descendant_of(b, a))


def pending(ours: Mapping[str, Oid], space: str = "") -> bool:
    """Whether a lens is retired here and not serving here (in ``space``), so a push may
    have to delete the remote's serving ref (and has to ask the remote first)."""
    return any(space + SERVING + lens not in ours for lens in _retired_lenses(space, ours))


def _retired_lenses(space: str, *sides: Mapping[str, Oid]) -> list[str]:
    head = space + RETIRED
    return sorted(
        {rest[len(head) :] for side in sides for rest in side if rest.startswith(head)} - {""}
    )


def _serving_ref(space: str, lens: str) -> str:
    return DST + space + SERVING + lens


def on_fetch(
    repo: pygit2.Repository,
    remote: str,
    entries: Mapping[str, RefSync],
    ours: Mapping[str, Oid],
    theirs: Mapping[str, Oid],
    space: str = "",
) -> dict[str, RefSync]:
    """Correct fetch's per-ref verdicts for lenses retired on either side (in ``space``).

    Args:
        repo: the repository (the remote's objects already fetched).
        remote: the remote's name, for messages.
        entries: ``{"<kind>/<lens>": RefSync}`` as plain fast-forwarding decided.
        ours: local ``{"<kind>/<lens>": oid}``; theirs: the remote's, as just fetched.

    Returns:
        ``entries`` with serving (and retired) verdicts replaced where a
        retirement decides: ``retired`` (delete the local serving ref),
        ``ahead`` (keep it deleted; push retires it on the remote),
        ``fast-forwarded`` (retired on the remote, then serving there again) or
        ``diverged``.
    """
    out = dict(entries)
    for lens in _retired_lenses(space, ours, theirs):
        ref = _serving_ref(space, lens)
        serving, retired = space + SERVING + lens, space + RETIRED + lens
        local, there = ours.get(serving), theirs.get(serving)
        mine, fetched = ours.get(retired), theirs.get(retired)
        if fetched is not None and _newer(repo, mine, fetched):
            _taken(repo, remote, out, (space, lens, ref), local, there, fetched)
        elif mine is not None and _newer(repo, fetched, mine):
            _kept(repo, remote, out, (space, lens, ref), local, there, mine)
    return out


def _newer(repo: pygit2.Repository, old: Oid | None, new: Oid) -> bool:
    """Whether ``new`` is news next to ``old``: ``old`` is missing or a strict ancestor."""
    return old is None or (old != new and within(repo, old, new))


def _taken(
    repo: pygit2.Repository,
    remote: str,
    out: dict[str, RefSync],
    where: tuple[str, str, str],
    local: Oid | None,
    there: Oid | None,
    retirement: Oid,
) -> None:
    """A retirement new to this clone: it supersedes a local serving ref it descends from.

    ``where`` is ``(space, lens, serving ref)``.
    """
    space, lens, ref = where
    serving_key, retired_key = space + SERVING + lens, space + RETIRED + lens
    retired = first_parent(repo, retirement)
    if local is None:
        return
    if retired is not None and within(repo, local, retired):
        if there is None:
            msg = (
                f"lens {lens}: serving retired by {short(retirement)} from {remote} "
                f"(was {short(local)})"
            )
            out[serving_key] = RefSync("fetch", ref, lens, SyncAction.RETIRED, local, None, msg)
        elif out[serving_key].action is SyncAction.DIVERGED:
            msg = (
                f"lens {lens}: serving fast-forwarded {short(local)} → "
                f"{short(there)} ({remote} retired the lens and serves it again)"
            )
            out[serving_key] = RefSync(
                "fetch", ref, lens, SyncAction.FAST_FORWARDED, local, there, msg
            )
        return
    if there is not None:
        return  # the remote serves the lens again; plain fast-forwarding decides
    msg = (
        f"diverged: lens {lens} was retired on {remote} ({short(retirement)}) but "
        f"promoted here since ({short(local)}) — re-plan"
    )
    fix = (
        f"to take the retirement, run `git update-ref -d {ref} {local}` and "
        f"`dst sync --fetch --remote {remote}`; to keep the lens, bring it back in a new "
        f"commit on top of the deletion and re-plan with `dst apply --lens {lens}`"
    )
    out[serving_key] = RefSync("fetch", ref, lens, SyncAction.DIVERGED, local, None, msg, fix)
    out[retired_key] = dataclasses.replace(
        out[retired_key],
        action=SyncAction.DIVERGED,
        message=f"diverged: lens {lens}: the retirement from {remote} was not taken "
        f"while the lens serves here — re-plan",
        fix=fix,
    )


def _kept(
    repo: pygit2.Repository,
    remote: str,
    out: dict[str, RefSync],
    where: tuple[str, str, str],
    local: Oid | None,
    there: Oid | None,
    retirement: Oid,
) -> None:
    """A retirement the remote has not heard of: its serving copy is not brought back.

    ``where`` is ``(space, lens, serving ref)``.
    """
    space, lens, ref = where
    serving_key = space + SERVING + lens
    if local is not None or there is None:
        return
    retired = first_parent(repo, retirement)
    if retired is not None and within(repo, there, retired):
        msg = (
            f"lens {lens}: serving retired here by {short(retirement)}; "
            f"`dst sync --push` retires it on {remote}"
        )
        out[serving_key] = RefSync("fetch", ref, lens, SyncAction.AHEAD, there, None, msg)
        return
    source = _source(repo, there)
    merge = f", bring in what it serves with `git merge --no-edit {source}`" if source else ""
    msg = (
        f"diverged: lens {lens} was retired here ({short(retirement)}) but promoted "
        f"again on {remote} ({short(there)}) — re-plan"
    )
    fix = (
        f"take {remote}'s promotion with `git update-ref {ref} {there}`{merge}, then re-plan "
        f"with `dst apply --lens {lens}` and `dst sync --push`"
    )
    out[serving_key] = RefSync("fetch", ref, lens, SyncAction.DIVERGED, None, there, msg, fix)


def _source(repo: pygit2.Repository, deployment: Oid) -> str | None:
    try:
        return str(refstore.read_deployment(repo, deployment).source)
    except (DstError, KeyError, ValueError):  # an unreadable deployment only loses a hint
        return None


@dataclass(frozen=True)
class Lease:
    """One remote serving ref a push deletes because this clone retired its lens.

    Attributes:
        lens: the lens name.
        ref: ``refs/dst/serving/<lens>`` (the same name locally and on the remote).
        expected: the remote's value the deletion is conditional on.
        retirement: the local ``refs/dst/retired/<lens>``.
    """

    lens: str
    ref: str
    expected: Oid
    retirement: Oid

    @property
    def option(self) -> str:
        """``--force-with-lease=<ref>:<expected>`` for ``git push``."""
        return f"--force-with-lease={self.ref}:{self.expected}"

    @property
    def refspec(self) -> str:
        """``:<ref>``: the deletion."""
        return f":{self.ref}"


def push_leases(
    repo: pygit2.Repository,
    ours: Mapping[str, Oid],
    advertised: Mapping[str, Oid],
    space: str = "",
) -> list[Lease]:
    """The remote serving refs a push must delete, each with its lease.

    Args:
        repo: the repository.
        ours: local ``{"<kind>/<lens>": oid}``.
        advertised: the remote's ``{"<kind>/<lens>": oid}`` as ``git ls-remote`` shows it.
        space: the environment's key prefix (``""``, ``"env/<E>/"``).

    Returns:
        One lease per lens retired here (and not serving here) that the remote
        still serves and whose retirement the remote does not hold yet. The
        expected value is the remote's serving value when the retirement's
        first-parent history contains it, else the retirement's first parent
        (which the remote no longer holds, so git refuses the push).
    """
    out = []
    serving, retired_at = space + SERVING, space + RETIRED
    for lens in _retired_lenses(space, ours):
        retirement, there = ours[retired_at + lens], advertised.get(serving + lens)
        if serving + lens in ours or there is None:
            continue
        known = advertised.get(retired_at + lens)
        if known is not None and within(repo, retirement, known):
            continue  # the remote retired it already, and may serve it again since
        retired = first_parent(repo, retirement)
        if retired is None:
            continue
        expected = there if within(repo, there, retired) else retired
        out.append(Lease(lens, _serving_ref(space, lens), expected, retirement))
    return out


def pushed_deletion(remote: str, lease: Lease, line: PushLine) -> RefSync:
    """The verdict on one leased deletion from its ``git push --porcelain`` line."""
    lens, ref = lease.lens, lease.ref
    if line.flag == "-":
        msg = (
            f"lens {lens}: serving retired on {remote} by {short(lease.retirement)} "
            f"(was {short(lease.expected)})"
        )
        return RefSync("push", ref, lens, SyncAction.RETIRED, lease.expected, None, msg)
    fix = (
        f"run `dst sync --fetch --remote {remote}` and follow what it says for lens {lens}, "
        f"then re-plan with `dst apply --lens {lens}`"
    )
    if line.reason == "stale info":
        msg = (
            f"rejected: lens {lens} was promoted again on {remote} since it was retired here "
            f"(the retirement expected {short(lease.expected)}) — run dst sync --fetch "
            f"and re-plan"
        )
    elif line.reason == "atomic push failed":
        msg = (
            f"rejected: lens {lens} was not retired on {remote} because another ref of this "
            f"atomic push was rejected — re-plan"
        )
    else:
        reason = line.reason or line.summary
        msg = f"rejected: {remote} refused to retire lens {lens}: {reason} — re-plan"
    return RefSync("push", ref, lens, SyncAction.REJECTED, lease.expected, None, msg, fix)


def advertised(text: str) -> dict[str, Oid]:
    """``{"<kind>/<lens>": oid}`` from ``git ls-remote`` output for refs under ``refs/dst/``."""
    out: dict[str, Oid] = {}
    for line in text.splitlines():
        oid, _, name = line.partition("\t")
        if name.startswith(DST) and not name.endswith("^{}"):
            out[name[len(DST) :]] = Oid(oid.strip())
    return out
