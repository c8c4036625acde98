"""What one ``dst sync`` did, ref by ref, and git's push output it reads (pure values).

:mod:`reconciler.git.sync` moves the refs and :mod:`reconciler.git.retire`
carries retirements; both report through these values, so neither imports the
other for them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from reconciler.ids import LENS_NAME_RE, Oid

DST = "refs/dst/"
KINDS = ("serving", "attempts", "retired", "verify")
"""The lens refs ``dst sync`` shares, under ``refs/dst/`` and each ``refs/dst/env/<E>/``."""
_PORCELAIN = re.compile(
    r"^(?P<flag>[ +\-*!=])\t(?P<src>[^\t]*):(?P<dst>[^\t]+)\t(?P<summary>.*?)"
    r"(?: \((?P<reason>[^()]*)\))?$"
)


class SyncAction(str, Enum):
    """What happened to one ref.

    ``fetched`` a remote ref created locally; ``fast-forwarded`` a local ref
    moved to the remote's descendant; ``up-to-date`` both sides agree;
    ``ahead`` the local ref has deployments the remote lacks (push sends them);
    ``pushed`` the remote ref was created or fast-forwarded; ``rejected`` the
    remote refused the push (another promoter won); ``diverged`` both sides
    have deployments the other lacks, so nothing moved; ``retired`` a serving
    ref was deleted because its lens was retired (fetch: the local one, by a
    retirement from the remote; push: the remote's, by a local retirement —
    see :mod:`reconciler.git.retire`); ``rebased`` the verifications recorded here were
    re-recorded on top of the remote's verify chain (:mod:`reconciler.git.verifications`),
    so the push that follows is a fast-forward.
    """

    FETCHED = "fetched"
    FAST_FORWARDED = "fast-forwarded"
    UP_TO_DATE = "up-to-date"
    AHEAD = "ahead"
    PUSHED = "pushed"
    REJECTED = "rejected"
    DIVERGED = "diverged"
    RETIRED = "retired"
    REBASED = "rebased"


_FAILED = (SyncAction.REJECTED, SyncAction.DIVERGED)


@dataclass(frozen=True)
class RefSync:
    """The outcome for one lens ref.

    Attributes:
        phase: ``fetch`` (the local ref moves) or ``push`` (the remote's moves).
        ref: the local ref, ``refs/dst/{serving,attempts,retired,verify}/<lens>``.
        lens: the lens name.
        action: what happened.
        old: the moving side's value before (``None``: it did not exist); for
            ``diverged`` the local value, for ``rejected`` and ``ahead`` the
            remote's as last fetched.
        new: its value after, or the value it would have taken (``diverged``:
            the remote's; ``rejected``/``ahead``: the local one).
        message: one human line; a failure's starts with ``rejected:`` or
            ``diverged:`` and ends with ``re-plan``.
        fix: what to do next, for failures.
    """

    phase: str
    ref: str
    lens: str
    action: SyncAction
    old: Oid | None
    new: Oid | None
    message: str
    fix: str | None = None

    @property
    def kind(self) -> str:
        """``serving``, ``attempts``, ``retired`` or ``verify``."""
        return self.ref[len(DST) :].split("/", 1)[0]

    def record(self) -> dict[str, Any]:
        """JSON-ready form: phase, ref, lens, kind, action, old, new, message, fix."""
        return {
            "phase": self.phase,
            "ref": self.ref,
            "lens": self.lens,
            "kind": self.kind,
            "action": self.action.value,
            "old": self.old,
            "new": self.new,
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class SyncReport:
    """What one ``dst sync`` did.

    Attributes:
        remote: the remote's name.
        refs: one entry per lens ref and phase, fetch entries first.
        messages: notes (a recovered apply, a skipped push, a fallback).
    """

    remote: str
    refs: tuple[RefSync, ...] = ()
    messages: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """1 when a ref was rejected or diverged (re-plan), else 0."""
        return 1 if any(r.action in _FAILED for r in self.refs) else 0

    @property
    def failed(self) -> tuple[RefSync, ...]:
        """The rejected and diverged refs."""
        return tuple(r for r in self.refs if r.action in _FAILED)

    def record(self) -> dict[str, Any]:
        """The ``--format json`` object: schema_version, command, remote, exit_code, refs,
        messages."""
        return {
            "schema_version": 1,
            "command": "sync",
            "remote": self.remote,
            "exit_code": self.exit_code,
            "refs": [r.record() for r in self.refs],
            "messages": list(self.messages),
        }


@dataclass(frozen=True)
class PushLine:
    """One ref line of ``git push --porcelain`` output.

    Attributes:
        flag: ``' '`` fast-forward, ``'+'`` forced, ``'-'`` deleted, ``'*'`` new,
            ``'!'`` rejected, ``'='`` up to date.
        src: the local ref; dst: the remote ref.
        summary: ``old..new``, ``[new reference]``, ``[up to date]``, ``[rejected]``,
            ``[remote rejected]`` …
        reason: the parenthesised reason (``non-fast-forward``, ``fetch first``,
            ``atomic push failed``, a hook's message), or ``None``.
    """

    flag: str
    src: str
    dst: str
    summary: str
    reason: str | None


def parse_porcelain(text: str) -> list[PushLine]:
    """The ref lines of ``git push --porcelain`` stdout.

    The format is git's own (``git help push``, "OUTPUT"): ``To <url>``, then
    ``<flag> TAB <from>:<to> TAB <summary> [(<reason>)]`` per ref, then ``Done``.
    Other lines are ignored.
    """
    out = []
    for line in text.splitlines():
        m = _PORCELAIN.match(line)
        if m:
            out.append(PushLine(m["flag"], m["src"], m["dst"], m["summary"], m["reason"]))
    return out


def short(oid: str | None) -> str:
    """The first 12 hex digits of ``oid``, or ``(none)``."""
    return oid[:12] if oid else "(none)"


def tally(report: SyncReport) -> Mapping[str, int]:
    """How many refs took each action, e.g. ``{"pushed": 2, "up-to-date": 1}``."""
    counts: dict[str, int] = {}
    for r in report.refs:
        counts[r.action.value] = counts.get(r.action.value, 0) + 1
    return counts


def split_rest(rest: str) -> tuple[str, str, str] | None:
    """``(space, kind, lens)`` of a ref name below ``refs/dst/``, ``None`` for other refs.

    ``space`` is ``""`` for the default environment and ``"env/<E>/"`` for
    environment E; ``kind`` is ``serving``, ``attempts`` or ``retired``.
    """
    space = ""
    if rest.startswith("env/"):
        env, _, rest = rest[len("env/") :].partition("/")
        if not LENS_NAME_RE.match(env):
            return None
        space = f"env/{env}/"
    kind, _, lens = rest.partition("/")
    if kind in KINDS and LENS_NAME_RE.match(lens):
        return space, kind, lens
    return None


def what_of(space: str, kind: str, lens: str) -> str:
    """``lens L: serving`` (``lens L (env E): serving`` in environment E)."""
    where = f" (env {space[len('env/') : -1]})" if space else ""
    return f"lens {lens}{where}: {kind}"


def env_flag(ref: str) -> str:
    """`` --env E`` for a ref of environment E, ``""`` for the default environment's."""
    space = (split_rest(ref[len(DST) :]) or ("",))[0]
    return f" --env {space[len('env/') : -1]}" if space else ""


def rejected(
    remote: str,
    ref: str,
    lens: str,
    kind: str,
    local: Oid,
    tracked: Oid | None,
    line: PushLine,
) -> RefSync:
    reason = line.reason or line.summary
    fix = (
        f"run `dst sync --fetch --remote {remote}` and follow what it says for lens {lens}, "
        f"then re-plan with `dst apply{env_flag(ref)} --lens {lens}`"
    )
    if line.reason == "atomic push failed":
        msg = (
            f"rejected: lens {lens} ({kind}) was not pushed because another ref of this "
            f"atomic push was rejected — re-plan"
        )
    elif line.summary == "[remote rejected]":
        msg = f"rejected: {remote} refused lens {lens} ({kind}): {reason} — re-plan"
        fix = f"see why {remote} refused the push ({reason}), then `dst sync` again"
    elif kind == "serving":
        msg = (
            f"rejected: another promoter won lens {lens} — run dst sync --fetch and re-plan "
            f"({reason})"
        )
    elif kind == "retired":
        msg = (
            f"rejected: lens {lens} was retired differently on {remote} — run dst sync "
            f"--fetch and re-plan ({reason})"
        )
    elif kind == "verify":
        msg = (
            f"rejected: another clone recorded a verification of lens {lens} meanwhile — "
            f"run dst sync again: it re-records this clone's on top ({reason})"
        )
        fix = f"run `dst sync --remote {remote}` again"
    else:
        msg = (
            f"rejected: another promoter recorded an attempt on lens {lens} — run dst sync "
            f"--fetch and re-plan ({reason})"
        )
    return RefSync("push", ref, lens, SyncAction.REJECTED, tracked, local, msg, fix)
