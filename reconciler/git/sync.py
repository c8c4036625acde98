"""Sharing serving state with a remote: ``dst sync`` (DESIGN §3).

Refs under ``refs/dst/`` are neither cloned nor pushed by default. ``fetch``
brings the remote's into a separate tracking area,
``refs/dst-remote/<remote>/serving/<lens>`` and ``…/attempts/<lens>``, and then
fast-forwards each local ``refs/dst/serving/<lens>`` and
``refs/dst/attempts/<lens>`` whose value is an ancestor of the remote's (or
that does not exist), by compare-and-swap. It never overwrites a local ref
that has deployments the remote lacks: when both sides moved on from a common
deployment, the lens is *diverged* and has to be re-planned.

Verifications (``refs/dst/verify/<lens>``, :mod:`reconciler.git.verifications`) travel
too, but never conflict: when two clones each appended to the chain, the verifications
recorded here are re-recorded on top of the remote's (``rebased``), and a push that
loses a race on a verify ref alone fetches and pushes again.

Every environment's refs travel the same way: ``refs/dst/env/<E>/serving/<lens>``
and its ``attempts/``, ``retired/`` and ``verify/`` siblings are fetched, compared and pushed
exactly like the default environment's, each environment decided on its own;
intent records (``applying``) never leave the repository.

``push`` sends local serving, attempt and retired refs without force, in one
atomic push where the remote supports it, so the remote takes all of them or
none. A retired lens also deletes the remote's serving ref, under a lease on
the deployment it retired; fetch never brings a retired serving ref back and
takes the remote's retirements as fast-forwards (:mod:`reconciler.git.retire`).
Because every deployment commit has the previous deployment as first parent, a
push that only adds deployments is a fast-forward, and a racing promoter's
push is rejected by git itself; this module reports that as *rejected* and
never retries with force.

Network operations run the real ``git`` executable, because that is what the
user's credentials, SSH keys, proxies and URL rewrites are configured for;
pygit2 only reads and moves local refs. No ``--depth`` option is ever passed:
a shallow clone fetches whatever history the deployment commits need.

A clone that has never fetched cannot tell "nothing serves" from "nothing
fetched yet"; :func:`state_known` tells the two apart. Each successful fetch
records its time in git config as ``dst.<remote>.lastfetch`` (Unix seconds), so
a remote without any serving state still counts as known once fetched.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Sequence

import pygit2

from reconciler.errors import DstError, StateError, UsageError
from reconciler.git import (
    attempts as attemptstore,
    refs as refstore,
    retire as retirements,
    verifications,
)
from reconciler.git.known import TRACKING, UNKNOWN_STATE, remotes, state_known
from reconciler.git.sync_report import (
    DST,
    KINDS,
    PushLine,
    RefSync,
    SyncAction,
    SyncReport,
    env_flag,
    parse_porcelain,
    rejected,
    short,
    split_rest,
    tally,
    what_of,
)
from reconciler.ids import Oid

_RANGE = re.compile(r"^(?P<old>[0-9a-f]{4,64})\.{2,3}(?P<new>[0-9a-f]{4,64})$")
_URL_USERINFO = re.compile(r"(://)[^/@\s]+@")


# The report values live in sync_report; they are part of this module's interface too.
__all__ = [
    "DST",
    "TRACKING",
    "UNKNOWN_STATE",
    "PushLine",
    "RefSync",
    "SyncAction",
    "SyncReport",
    "check_remote",
    "fetch",
    "parse_porcelain",
    "push",
    "remotes",
    "require_known",
    "short",
    "state_known",
    "synchronize",
    "tally",
    "tracking_prefix",
]


def tracking_prefix(remote: str) -> str:
    """``refs/dst-remote/<remote>/``: where fetch puts the remote's ``refs/dst/*``."""
    return f"{TRACKING}{remote}/"


def check_remote(repo: pygit2.Repository, remote: str) -> None:
    """Make sure ``remote`` names a configured remote.

    URLs and paths are refused on purpose: the tracking area is named after
    the remote.

    Raises:
        UsageError: no remote of that name; the message lists those there are.
    """
    names = remotes(repo)
    if remote in names and not remote.startswith("-"):
        return
    listed = ", ".join(names) if names else "none configured"
    raise UsageError(
        f"no git remote named {remote!r} (remotes: {listed})",
        fix="pass --remote NAME, or add one with `git remote add NAME URL`",
    )


def require_known(repo: pygit2.Repository) -> None:
    """Refuse to gate when this clone cannot say what serves.

    A gate planned against "nothing serving" treats every answer as new, and
    new answers only alert: the check would pass whatever the change breaks.

    Raises:
        StateError: :func:`state_known` is false.
    """
    if not state_known(repo):
        raise StateError(
            f"{UNKNOWN_STATE}: without it every certified answer looks new and the gate "
            f"could not block",
            fix="run `dst sync --fetch` first (it records the fetch even when the remote has "
            "no serving state yet)",
        )


def _lens_refs(repo: pygit2.Repository, prefix: str) -> dict[str, Oid]:
    """``{"[env/<E>/]<serving|attempts|retired>/<lens>": oid}`` for refs under ``prefix``."""
    out: dict[str, Oid] = {}
    for name in repo.references:
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :]
        if split_rest(rest) is not None:
            target = refstore.ref_target(repo, name)
            if target is not None:
                out[rest] = target
    return out


def _spaces(*sides: dict[str, Oid]) -> list[str]:
    """The environments' key prefixes present on any side (``""`` always first)."""
    found = {parts[0] for side in sides for rest in side if (parts := split_rest(rest))}
    return ["", *sorted(found - {""})]


def _workdir(repo: pygit2.Repository) -> str:
    return str(repo.workdir or repo.path)


def _redact(text: str) -> str:
    return _URL_USERINFO.sub(r"\1***@", text).strip()


def _git(repo: pygit2.Repository, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=_workdir(repo),
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise UsageError(
            "the git executable is not on PATH", fix="install git; dst sync runs it"
        ) from None


def _failed(what: str, done: subprocess.CompletedProcess[str], remote: str) -> UsageError:
    detail = _redact(done.stderr) or f"exit {done.returncode}"
    return UsageError(
        f"`{what}` failed: {detail}",
        fix=f"check that `git fetch {remote}` works here (URL, network, credentials)",
    )


def _mark_fetched(repo: pygit2.Repository, remote: str) -> None:
    # Another process may hold the config lock; the tracking refs still show a fetch.
    with contextlib.suppress(pygit2.GitError):
        repo.config[f"dst.{remote}.lastfetch"] = str(int(time.time()))


def fetch(repo: pygit2.Repository, remote: str = "origin") -> SyncReport:
    """Fetch the remote's ``refs/dst/*`` and fast-forward the local lens refs.

    Runs ``git fetch --no-tags --no-recurse-submodules --prune <remote>
    '+refs/dst/*:refs/dst-remote/<remote>/*'``
    (the tracking area may be rewritten, ``refs/dst/*`` never is by git), then
    moves every local ``refs/dst/{serving,attempts,retired}/<lens>`` that is
    missing or an ancestor of the remote's, in one compare-and-swap. A lens
    retired on either side is decided by :func:`reconciler.git.retire.on_fetch`:
    a local retirement keeps the serving ref deleted, a fetched one deletes a
    local serving ref it descends from (in the same compare-and-swap).

    Returns:
        The report; ``exit_code`` 1 when a lens diverged.

    Raises:
        UsageError: the remote is not configured, or git fails to fetch.
        RefConflict: a local ref moved during the fetch (a concurrent apply); nothing moved.
    """
    check_remote(repo, remote)
    messages = refstore.recover_all(repo)
    prefix = tracking_prefix(remote)
    args = ["fetch", "--no-tags", "--no-recurse-submodules", "--prune", remote]
    args.append(f"+{DST}*:{prefix}*")
    done = _git(repo, args)
    if done.returncode != 0:
        raise _failed(f"git fetch {remote}", done, remote)
    _mark_fetched(repo, remote)
    theirs = _lens_refs(repo, prefix)
    ours = _lens_refs(repo, DST)

    compared = {
        rest: _compare(repo, remote, DST + rest, ours.get(rest), theirs.get(rest))
        for rest in sorted(set(theirs) | set(ours))
    }
    for space in _spaces(ours, theirs):
        compared = retirements.on_fetch(repo, remote, compared, ours, theirs, space)
    results = list(compared.values())
    moves = (SyncAction.FETCHED, SyncAction.FAST_FORWARDED, SyncAction.RETIRED, SyncAction.REBASED)
    updates = [refstore.RefUpdate(r.ref, r.old, r.new) for r in results if r.action in moves]
    refstore.update_refs(repo, updates, reason=f"dst sync --fetch {remote}")
    return SyncReport(remote, tuple(results), tuple(messages))


def _pruned_refs(repo: pygit2.Repository, remote: str, ours: dict[str, Oid]) -> list[RefSync]:
    """The attempts refs ``dst gc`` pruned here since the last fetch: never pushed (the
    remote's longer chain is not a fast-forward of them, and sync never forces)."""
    prefix = tracking_prefix(remote)
    out: list[RefSync] = []
    for rest, local in sorted(ours.items()):
        space, kind, lens = split_rest(rest) or ("", "", "")
        tracked = refstore.ref_target(repo, prefix + rest)
        if kind not in ("attempts", "verify") or tracked is None or tracked == local:
            continue
        if repo.descendant_of(pygit2.Oid(hex=local), pygit2.Oid(hex=tracked)):
            continue
        if attemptstore.pruned_here(repo, local, tracked):
            ref = DST + rest
            msg = f"{what_of(space, kind, lens)} pruned here by dst gc: not pushed"
            fix = attemptstore.pruned_fix(remote, ref, tracked, local)
            out.append(RefSync("push", ref, lens, SyncAction.UP_TO_DATE, tracked, local, msg, fix))
    return out


def _compare(
    repo: pygit2.Repository, remote: str, ref: str, local: Oid | None, theirs: Oid | None
) -> RefSync:
    space, kind, lens = split_rest(ref[len(DST) :]) or ("", "", "")
    what = what_of(space, kind, lens)
    if local == theirs:
        return RefSync(
            "fetch", ref, lens, SyncAction.UP_TO_DATE, local, local, f"{what} up to date"
        )
    if theirs is None:
        return RefSync(
            "fetch",
            ref,
            lens,
            SyncAction.AHEAD,
            None,
            local,
            f"{what} exists here only; `dst sync --push` sends it to {remote}",
        )
    if local is None:
        msg = f"{what} fetched from {remote} at {short(theirs)}"
        return RefSync("fetch", ref, lens, SyncAction.FETCHED, None, theirs, msg)
    if repo.descendant_of(pygit2.Oid(hex=theirs), pygit2.Oid(hex=local)):
        msg = f"{what} fast-forwarded {short(local)} → {short(theirs)}"
        return RefSync("fetch", ref, lens, SyncAction.FAST_FORWARDED, local, theirs, msg)
    if repo.descendant_of(pygit2.Oid(hex=local), pygit2.Oid(hex=theirs)):
        msg = f"{what} is ahead of {remote}; `dst sync --push` sends it"
        return RefSync("fetch", ref, lens, SyncAction.AHEAD, theirs, local, msg)
    rebased = verifications.rebase(repo, local, theirs) if kind == "verify" else None
    if rebased is not None:
        msg = (
            f"{what}: the verifications recorded here were re-recorded on top of {remote}'s "
            f"({short(theirs)} → {short(rebased)}); `dst sync --push` sends them"
        )
        return RefSync("fetch", ref, lens, SyncAction.REBASED, local, rebased, msg)
    if kind in ("attempts", "verify") and attemptstore.pruned_here(repo, local, theirs):
        msg = (
            f"{what} pruned here by dst gc ({short(local)}); {remote} keeps its longer chain "
            f"({short(theirs)}), which sync never overwrites: nothing fetched or pushed"
        )
        fix = attemptstore.pruned_fix(remote, ref, theirs, local)
        return RefSync("fetch", ref, lens, SyncAction.UP_TO_DATE, local, local, msg, fix)
    if kind == "verify":  # every verification here is in the remote's chain already
        msg = (
            f"{what} took {remote}'s chain {short(local)} → {short(theirs)} (it holds all of ours)"
        )
        return RefSync("fetch", ref, lens, SyncAction.FAST_FORWARDED, local, theirs, msg)
    verb = "promoted" if kind == "serving" else "recorded attempts on"
    return RefSync(
        "fetch",
        ref,
        lens,
        SyncAction.DIVERGED,
        local,
        theirs,
        f"diverged: local and remote both {verb} lens {lens} — re-plan "
        f"(local {short(local)}, {remote} {short(theirs)})",
        fix=_adopt_fix(repo, remote, ref, lens, kind, theirs, local),
    )


def _adopt_fix(
    repo: pygit2.Repository, remote: str, ref: str, lens: str, kind: str, theirs: Oid, local: Oid
) -> str:
    """How to take the remote's history for a diverged ref and re-plan on top of it."""
    take = f"take {remote}'s history with `git update-ref {ref} {theirs} {local}`"
    if kind != "serving":
        return f"{take}; attempts only record what was tried"
    try:
        source = str(refstore.read_deployment(repo, theirs).source)
    except DstError:
        replan = f"dst apply{env_flag(ref)} --lens {lens}"
        return f"{take}, then re-plan with `{replan}` and `dst sync --push`"
    # The winner's source commit may be on no branch; the fetched deployment keeps it.
    return (
        f"{take}, bring in what it serves with `git merge --no-edit {source}`, then re-plan "
        f"with `dst apply{env_flag(ref)} --lens {lens}` and `dst sync --push`"
    )


def push(repo: pygit2.Repository, remote: str = "origin") -> SyncReport:
    """Push local serving, attempt and retired refs to ``remote``, never forcing.

    Runs ``git push --porcelain --atomic <remote> 'refs/dst/serving/*:refs/dst/serving/*'
    'refs/dst/attempts/*:refs/dst/attempts/*' 'refs/dst/retired/*:refs/dst/retired/*'``
    (without ``--atomic`` when the remote does not support it) and reads git's
    verdict per ref. A lens retired here that the remote still serves also
    gets ``:refs/dst/serving/<lens>`` with
    ``--force-with-lease=refs/dst/serving/<lens>:<expected>`` (asked of the
    remote first with ``git ls-remote``; see
    :func:`reconciler.git.retire.push_leases`), so the deletion happens only
    if nobody promoted the lens there since. Refs the remote accepted or
    already had are recorded in the tracking area, as git does for
    remote-tracking branches.

    Returns:
        The report; ``exit_code`` 1 when a ref was rejected (another promoter won).

    Raises:
        UsageError: the remote is not configured, or git fails for another reason
            (no such repository, network, credentials).
    """
    check_remote(repo, remote)
    messages = refstore.recover_all(repo)
    ours = _lens_refs(repo, DST)
    if not ours:
        messages.append(f"nothing to push: no {DST}serving/, attempts/, retired/ or verify/ refs")
        return SyncReport(remote, (), tuple(messages))

    leases: list[retirements.Lease] = []
    spaces = _spaces(ours)
    if any(retirements.pending(ours, space) for space in spaces):
        listed = _git(repo, ["ls-remote", "--refs", remote, f"{DST}*"])
        if listed.returncode != 0:
            raise _failed(f"git ls-remote {remote}", listed, remote)
        shown = retirements.advertised(listed.stdout)
        for space in spaces:
            leases += retirements.push_leases(repo, ours, shown, space)
    prefix = tracking_prefix(remote)
    pruned = _pruned_refs(repo, remote, ours)
    skipped = {r.ref for r in pruned}
    specs = [f"{DST}{space}{kind}/*:{DST}{space}{kind}/*" for space in spaces for kind in KINDS]
    if skipped:  # name each ref but the pruned ones: a wildcard would send those too
        specs = [f"{DST}{rest}:{DST}{rest}" for rest in sorted(ours) if DST + rest not in skipped]
    specs += [lease.refspec for lease in leases]
    options = [lease.option for lease in leases]
    done = _git(repo, ["push", "--porcelain", "--atomic", *options, remote, *specs])
    if done.returncode != 0 and "does not support --atomic" in done.stderr:
        messages.append(f"{remote} does not support atomic pushes; refs were pushed one by one")
        done = _git(repo, ["push", "--porcelain", *options, remote, *specs])
    lines = {line.dst: line for line in parse_porcelain(done.stdout)}
    if done.returncode != 0 and not any(line.flag == "!" for line in lines.values()):
        raise _failed(f"git push {remote}", done, remote)
    results = list(pruned)
    for rest, local in sorted(ours.items()):
        line = lines.get(DST + rest)
        if line is None:
            continue
        tracked = refstore.ref_target(repo, prefix + rest)
        result = _pushed(repo, remote, DST + rest, local, tracked, line)
        if result.action in (SyncAction.PUSHED, SyncAction.UP_TO_DATE):
            repo.references.create(prefix + rest, pygit2.Oid(hex=local), force=True)
        results.append(result)
    for lease in leases:
        line = lines.get(lease.ref)
        if line is None:
            continue
        result = retirements.pushed_deletion(remote, lease, line)
        tracking = prefix + lease.ref[len(DST) :]
        if result.action is SyncAction.RETIRED and tracking in repo.references:
            repo.references.delete(tracking)
        results.append(result)
    return SyncReport(remote, tuple(results), tuple(messages))


def _expand(repo: pygit2.Repository, short: str) -> Oid | None:
    try:
        return Oid(str(repo.revparse_single(short).id))
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def _pushed(
    repo: pygit2.Repository,
    remote: str,
    ref: str,
    local: Oid,
    tracked: Oid | None,
    line: PushLine,
) -> RefSync:
    space, kind, lens = split_rest(ref[len(DST) :]) or ("", "", "")
    what = what_of(space, kind, lens)
    if line.flag == "=":
        return RefSync("push", ref, lens, SyncAction.UP_TO_DATE, local, local, f"{what} up to date")
    if line.flag == "!":
        return rejected(remote, ref, lens, kind, local, tracked, line)
    old: Oid | None = None
    if line.flag != "*":
        m = _RANGE.match(line.summary)
        old = (_expand(repo, m["old"]) if m else None) or tracked
    msg = f"{what} pushed to {remote}: {short(old)} → {short(local)}"
    return RefSync("push", ref, lens, SyncAction.PUSHED, old, local, msg)


def synchronize(
    repo: pygit2.Repository,
    remote: str = "origin",
    *,
    do_fetch: bool = True,
    do_push: bool = True,
) -> SyncReport:
    """``dst sync``: fetch, then push — unless the fetch found a diverged lens.

    Args:
        repo: the repository.
        remote: a configured remote's name.
        do_fetch: run :func:`fetch`.
        do_push: run :func:`push` (after the fetch, when both run).

    Returns:
        The fetch entries followed by the push entries, with both phases' messages.

    Raises:
        UsageError: bad remote, or git failed (see :func:`fetch`, :func:`push`).
        RefConflict: a local ref moved while fetching.
    """
    check_remote(repo, remote)
    refs: list[RefSync] = []
    messages: list[str] = []
    if do_fetch:
        fetched = fetch(repo, remote)
        refs += fetched.refs
        messages += fetched.messages
        if fetched.failed and do_push:
            messages.append("push skipped: re-plan the diverged lenses first")
            do_push = False
    for tried in range(VERIFY_RACES + 1) if do_push else ():
        pushed = push(repo, remote)
        if not (do_fetch and tried < VERIFY_RACES and _lost_verify_race(pushed)):
            break
        # Another clone's verification landed first: take it, re-record ours, push again.
        messages.append(f"a verification reached {remote} first; fetching and pushing again")
        again = fetch(repo, remote)
        if again.failed:
            pushed = again
            break
    if do_push:
        refs += pushed.refs
        messages += pushed.messages
    return SyncReport(remote, tuple(refs), tuple(messages))


VERIFY_RACES = 3
"""How often :func:`synchronize` fetches and pushes again after losing a race on verify refs."""


def _lost_verify_race(report: SyncReport) -> bool:
    """The push was rejected only because of verify refs (the others failed with them)."""
    own = [r for r in report.failed if "another ref of this atomic push" not in r.message]
    return bool(own) and all(
        (split_rest(r.ref[len(DST) :]) or ("", ""))[1] == "verify" for r in own
    )
