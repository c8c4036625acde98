"""The base of a pull request or push, even in a shallow checkout (runs git).

A pull-request check in a shallow checkout fetches the base by oid and deepens
step by step until a merge base exists, and otherwise fails with "insufficient
history" — it never diffs against a grafted root as if every lens were new.
``read_event`` reads what GitHub says triggered the run.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.errors import UsageError

DEFAULT_MAX_DEEPEN = 10
DEFAULT_DEEPEN_BY = 32

# ---------------------------------------------------------------- base resolution

Git = Callable[[Sequence[str]], str | None]
"""Runs ``git ARGS`` in the repository: stdout (stripped) on success, ``None`` on failure."""
Fetch = Callable[[Sequence[str]], str | None]
"""Runs ``git fetch ARGS``: ``None`` on success, the error text on failure."""


@dataclass(frozen=True)
class ResolvedBase:
    """A resolved base for a check.

    Attributes:
        merge_base: the merge base of base and head (what the check diffs against).
        base: the base commit itself.
        head: the head commit.
        shallow: the repository was shallow when resolution started.
        deepened: how many deepening fetches it took.
        notes: what was done, for the log.
    """

    merge_base: str
    base: str
    head: str
    shallow: bool
    deepened: int = 0
    notes: tuple[str, ...] = ()


def is_zero_oid(rev: str | None) -> bool:
    """``True`` for git's all-zero oid (a push that creates a branch has it as ``before``)."""
    return bool(rev) and len(rev or "") in (40, 64) and set(rev or "") == {"0"}


def subprocess_git(repo_path: str | os.PathLike[str]) -> Git:
    """A :data:`Git` runner for the git CLI in ``repo_path``."""

    def run(args: Sequence[str]) -> str | None:
        done = subprocess.run(
            ["git", *args], cwd=repo_path, capture_output=True, text=True, check=False
        )
        if done.returncode != 0 and "dubious ownership" in done.stderr:
            # the git CLI refuses where pygit2 did not: say so, not "does not resolve"
            # lazy: trees loads the lens model; only this error path needs it
            from reconciler.git.trees import ownership_refusal

            raise ownership_refusal(os.fspath(repo_path), "the git command line")
        return done.stdout.strip() if done.returncode == 0 else None

    return run


def subprocess_fetch(repo_path: str | os.PathLike[str]) -> Fetch:
    """A :data:`Fetch` runner for ``git fetch`` in ``repo_path``."""

    def run(args: Sequence[str]) -> str | None:
        done = subprocess.run(
            ["git", "fetch", *args], cwd=repo_path, capture_output=True, text=True, check=False
        )
        return None if done.returncode == 0 else (done.stderr.strip() or "git fetch failed")

    return run


def raw_parents(git: Git, commit: str) -> tuple[str, ...]:
    """The parents a commit object names, even when a shallow boundary hides them."""
    raw = git(["cat-file", "commit", commit]) or ""
    parents = []
    for line in raw.splitlines():
        if not line:
            break
        if line.startswith("parent "):
            parents.append(line.split()[1])
    return tuple(parents)


def is_shallow(git: Git) -> bool:
    """Whether the repository is a shallow clone (``git rev-parse --is-shallow-repository``)."""
    answer = git(["rev-parse", "--is-shallow-repository"])
    if answer in ("true", "false"):
        return answer == "true"
    git_dir = git(["rev-parse", "--absolute-git-dir"])
    return bool(git_dir) and os.path.exists(os.path.join(str(git_dir), "shallow"))


def _commit(git: Git, rev: str, remote: str) -> str | None:
    for candidate in (rev, f"refs/remotes/{remote}/{rev}"):
        oid = git(["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"])
        if oid:
            return oid
    return None


@dataclass(frozen=True)
class Deepening:
    """How far a shallow clone may be deepened in search of a merge base.

    Attributes:
        max_steps: deepening fetches allowed (0: none).
        first_step: commits of the first deepening fetch; each later one fetches twice as many.
    """

    max_steps: int = DEFAULT_MAX_DEEPEN
    first_step: int = DEFAULT_DEEPEN_BY


def resolve_base(
    repo_path: str | os.PathLike[str],
    base: str,
    head: str = "HEAD",
    *,
    deepening: Deepening = Deepening(),
    default_branch: str | None = None,
    remote: str = "origin",
    fetch: Fetch | None = None,
    git: Git | None = None,
) -> ResolvedBase:
    """The merge base of ``base`` and ``head``, fetching history a shallow clone lacks.

    A base missing locally is fetched by name or oid (``--depth`` only in a
    shallow clone, never in a full one). A parent of ``head`` is its own merge
    base (a pull request's merge commit checked against its first parent needs
    no history). Otherwise a shallow clone is deepened ``first_step`` commits,
    then twice as much each step, at most ``max_steps`` times, until git finds a
    merge base.

    Args:
        repo_path: the working tree.
        base: a branch, tag or oid; the all-zero oid (branch creation) means
            ``default_branch``.
        head: the revision under check.
        deepening: how far a shallow clone may be deepened.
        default_branch: the base for a branch-creation push.
        remote: the remote to fetch from.
        fetch, git: runners (default: the git CLI in ``repo_path``).

    Returns:
        The resolution, with ``merge_base`` set.

    Raises:
        UsageError: (exit 2) head or base does not resolve or cannot be fetched,
            "insufficient history" when no merge base turns up within the limit,
            or unrelated histories in a full clone.
    """
    git = git or subprocess_git(repo_path)
    fetch = fetch or subprocess_fetch(repo_path)
    notes: list[str] = []
    head_oid = _commit(git, head, remote)
    if head_oid is None:
        raise UsageError(f"head {head!r} does not resolve to a commit", fix="pass --head REV")
    if is_zero_oid(base):
        if not default_branch:
            raise UsageError(
                "the push created a branch (its 'before' is the zero oid) and the default "
                "branch is unknown",
                fix="pass --base with the branch to compare against",
            )
        notes.append(f"new branch: comparing with the default branch {default_branch}")
        base = default_branch
    shallow = is_shallow(git)
    base_oid = _commit(git, base, remote) or _fetch_base(
        git, fetch, base, remote, depth=deepening.first_step if shallow else None, notes=notes
    )
    if base_oid in raw_parents(git, head_oid):
        return ResolvedBase(base_oid, base_oid, head_oid, shallow, 0, tuple(notes))
    merge_base, steps = _deepen_to_merge_base(
        git, fetch, (base, base_oid, head_oid), remote, deepening, notes
    )
    return ResolvedBase(merge_base, base_oid, head_oid, shallow, steps, tuple(notes))


def _fetch_base(
    git: Git, fetch: Fetch, base: str, remote: str, *, depth: int | None, notes: list[str]
) -> str:
    """Fetch ``base`` from ``remote`` (``--depth`` in a shallow clone); its oid.

    Raises:
        UsageError: "insufficient history" when it cannot be fetched.
    """
    error = fetch(["--no-tags", *([f"--depth={depth}"] if depth else []), remote, base])
    base_oid = None if error else git(["rev-parse", "--verify", "--quiet", "FETCH_HEAD"])
    if base_oid is None:
        raise UsageError(
            f"insufficient history: base {base!r} is not in this clone and could not be "
            f"fetched from {remote}: {error or 'FETCH_HEAD is empty'}",
            fix="fetch the base branch first, or use fetch-depth: 0 with actions/checkout",
        )
    notes.append(f"fetched base {base} ({base_oid[:12]}) from {remote}")
    return base_oid


def _deepen_to_merge_base(
    git: Git,
    fetch: Fetch,
    span: tuple[str, str, str],
    remote: str,
    deepening: Deepening,
    notes: list[str],
) -> tuple[str, int]:
    """``(merge base, deepening fetches made)`` of ``span``'s (base name, base oid, head oid).

    Raises:
        UsageError: unrelated histories in a full clone; "insufficient history" when the
            limit is reached or a deepening fetch fails.
    """
    base, base_oid, head_oid = span
    step = 0
    while True:
        merge_base = git(["merge-base", base_oid, head_oid])
        if merge_base:
            return merge_base, step
        if not is_shallow(git):
            raise UsageError(
                f"base {base} ({base_oid[:12]}) and head {head_oid[:12]} share no history; "
                f"dst will not treat every lens as added",
                fix="pass a --base that the head branched from",
            )
        if step >= deepening.max_steps:
            raise UsageError(
                f"insufficient history: no merge base of {base} ({base_oid[:12]}) and "
                f"{head_oid[:12]} in this shallow clone after {step} deepening fetch(es); "
                f"its grafted root is not a base, so nothing was checked",
                fix="use fetch-depth: 0 with actions/checkout, or raise --max-deepen",
            )
        amount = deepening.first_step * 2**step
        error = fetch(["--no-tags", f"--deepen={amount}", remote, base_oid, head_oid])
        if error:
            raise UsageError(
                f"insufficient history: deepening the shallow clone by {amount} failed: {error}",
                fix="use fetch-depth: 0 with actions/checkout",
            )
        step += 1
        notes.append(f"deepened the shallow clone by {amount} commit(s)")


def serving_sources(git: Git, prefix: str = "refs/dst/serving/") -> tuple[str, ...]:
    """The source commits (second parents) of the deployments under ``prefix``, sorted.

    A deployment commit's parents are the previous deployment, then the source
    commit it promoted (:mod:`reconciler.git.refs`).
    """
    listed = git(["for-each-ref", "--format=%(objectname)", prefix]) or ""
    sources = {raw_parents(git, dep)[1:2] for dep in listed.split()}
    return tuple(sorted(p[0] for p in sources if p))


def reach_serving(
    repo_path: str | os.PathLike[str],
    head: str,
    *,
    deepening: Deepening = Deepening(),
    remote: str = "origin",
    fetch: Fetch | None = None,
    git: Git | None = None,
    strict: bool = True,
    prefix: str = "refs/dst/serving/",
) -> tuple[str, ...]:
    """Deepen a shallow clone until every serving source commit is reachable from ``head``.

    The rewind check asks whether ``head`` contains the commit each lens serves;
    in a shallow clone (``actions/checkout``'s default is depth 1) that commit sits
    behind the grafted boundary and looks unrelated. Deepening stops as soon as
    every source is an ancestor of ``head``, or the clone is no longer shallow
    (then an unrelated source is a real rewind, for the rewind check to refuse).
    Steps grow as in :func:`resolve_base`. A full clone is left alone.

    Args:
        repo_path: the working tree.
        head: hex oid of the candidate commit.
        deepening: how far the clone may be deepened.
        remote: the remote to fetch history from.
        fetch, git: runners (default: the git CLI in ``repo_path``).
        strict: raise when a source stays out of reach; ``False`` (a dry run, where a
            rewind only warns) ends the notes with the "cannot tell" line instead.
        prefix: the serving refs to reach (``refs/dst/env/<E>/serving/`` with ``--env E``).

    Returns:
        What was done, for the log (empty for a full clone or nothing to fetch).

    Raises:
        UsageError: (exit 2, only when ``strict``) "cannot tell: shallow clone" when the
            limit is reached or a deepening fetch fails with some source still out of reach.
    """
    git = git or subprocess_git(repo_path)
    fetch = fetch or subprocess_fetch(repo_path)
    notes: list[str] = []
    step = 0
    while is_shallow(git):
        behind = [
            s
            for s in serving_sources(git, prefix)
            if git(["merge-base", "--is-ancestor", s, head]) is None
        ]
        if not behind:
            break
        amount = deepening.first_step * 2**step
        error = None if step < deepening.max_steps else "the deepening limit is reached"
        error = error or fetch(["--no-tags", f"--deepen={amount}", remote, head])
        if error:
            why = (
                f"cannot tell: shallow clone: {behind[0][:12]}, a commit that serves now, is "
                f"not reachable from {head[:12]} in this clone after {step} deepening "
                f"fetch(es) ({error}), so whether promoting would undo it is unknown"
            )
            if not strict:
                return (*notes, why)
            raise UsageError(
                why, fix="use fetch-depth: 0 with actions/checkout, or raise --max-deepen"
            )
        step += 1
        notes.append(f"deepened the shallow clone by {amount} commit(s)")
    return tuple(notes)


# ---------------------------------------------------------------- the event


@dataclass(frozen=True)
class Event:
    """What a workflow run's event says about the check.

    Attributes:
        name: ``GITHUB_EVENT_NAME`` (``pull_request``, ``push`` …), ``None`` outside Actions.
        base: the pull request's base sha, or a push's ``before``.
        pr_head: the pull request's head sha.
        default_branch: the repository's default branch.
    """

    name: str | None = None
    base: str | None = None
    pr_head: str | None = None
    default_branch: str | None = None

    @property
    def is_pull_request(self) -> bool:
        """A ``pull_request`` or ``pull_request_target`` event."""
        return self.name in ("pull_request", "pull_request_target")


EVENT_FIX = (
    "GITHUB_EVENT_PATH must name the event payload GitHub Actions wrote; unset it outside "
    "GitHub Actions"
)


def _member(where: str, obj: Mapping[str, Any], key: str, kind: type, path: str) -> Any:
    """``obj[key]`` when absent, ``null`` or of ``kind``; else a usage error naming it.

    Raises:
        UsageError: (exit 2) the value has another type; names ``path`` and the key.
    """
    value = obj.get(key)
    if value is None or isinstance(value, kind):
        return value
    shown = f"{where}.{key}" if where else key
    raise UsageError(
        f"{path}: key {shown!r} of the GitHub event payload is a {type(value).__name__}, "
        f"expected {'an object' if kind is Mapping else 'a string'}",
        fix=EVENT_FIX,
    )


def read_event(
    env: Mapping[str, str],
    payload: object,
    *,
    path: str = "the GitHub event payload",
) -> Event:
    """The :class:`Event` from the environment and the event payload (``GITHUB_EVENT_PATH``).

    Args:
        env: the environment; reads ``GITHUB_EVENT_NAME``.
        payload: the parsed payload, or ``None`` when there is none.
        path: where the payload came from, for errors.

    Raises:
        UsageError: (exit 2) the payload is not a JSON object, or one of the keys read
            (``pull_request``, ``pull_request.base``/``.head`` and their ``sha``,
            ``repository``, ``repository.default_branch``, ``before``) has the wrong
            type; the message names ``path`` and the key.
    """
    if payload is None:
        payload = {}
    if not isinstance(payload, Mapping):
        raise UsageError(
            f"{path}: the GitHub event payload is a JSON {type(payload).__name__}, "
            f"expected an object",
            fix=EVENT_FIX,
        )
    name = env.get("GITHUB_EVENT_NAME") or None
    repo = _member("", payload, "repository", Mapping, path) or {}
    default = _member("repository", repo, "default_branch", str, path)
    pr = _member("", payload, "pull_request", Mapping, path) or {}
    if pr:
        base = _member("pull_request", pr, "base", Mapping, path) or {}
        head = _member("pull_request", pr, "head", Mapping, path) or {}
        return Event(
            name,
            _member("pull_request.base", base, "sha", str, path),
            _member("pull_request.head", head, "sha", str, path),
            default,
        )
    return Event(name, _member("", payload, "before", str, path), None, default)


def load_event(env: Mapping[str, str]) -> Event:
    """The :class:`Event` of this run: ``GITHUB_EVENT_NAME`` and the ``GITHUB_EVENT_PATH`` file.

    No ``GITHUB_EVENT_PATH`` (or one naming no file) reads as an event without a payload.

    Raises:
        UsageError: (exit 2) the file does not read as UTF-8 JSON, or is malformed
            (:func:`read_event`); the message names the file (and the key).
    """
    path = env.get("GITHUB_EVENT_PATH")
    if not path or not os.path.isfile(path):
        return read_event(env, None)
    try:
        with open(path, encoding="utf-8") as handle:
            payload = json.load(handle)
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{path}: the GitHub event payload does not read as JSON ({exc})",
            fix=EVENT_FIX,
        ) from None
    return read_event(env, payload, path=path)
