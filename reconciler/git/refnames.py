"""The names of dst's refs: ``refs/dst/serving/<lens>`` and its kin, per environment (pure)."""

from __future__ import annotations

import pygit2

SERVING = "refs/dst/serving/"
ATTEMPTS = "refs/dst/attempts/"
VERIFY = "refs/dst/verify/"
RETIRED = "refs/dst/retired/"
APPLYING = "refs/dst/applying"
ENVIRONMENTS = "refs/dst/env/"


def namespace(env: str | None = None) -> str:
    """``refs/dst/`` for the default environment, ``refs/dst/env/<env>/`` for a named one."""
    return "refs/dst/" if env is None else f"{ENVIRONMENTS}{env}/"


def serving_ref(lens: str, env: str | None = None) -> str:
    """``refs/dst/serving/<lens>`` (``refs/dst/env/<env>/serving/<lens>`` in ``env``)."""
    return namespace(env) + "serving/" + lens


def attempts_ref(lens: str, env: str | None = None) -> str:
    """``refs/dst/attempts/<lens>`` (``refs/dst/env/<env>/attempts/<lens>`` in ``env``)."""
    return namespace(env) + "attempts/" + lens


def verify_ref(lens: str, env: str | None = None) -> str:
    """``refs/dst/verify/<lens>`` (``refs/dst/env/<env>/verify/<lens>`` in ``env``): the chain
    of verifications of what serves (``dst test``, watch's schedule), never served."""
    return namespace(env) + "verify/" + lens


def retired_ref(lens: str, env: str | None = None) -> str:
    """``refs/dst/retired/<lens>`` (under ``refs/dst/env/<env>/`` in ``env``): the
    retirement deployment of a lens deleted from the source, whose first-parent
    history is the lens's serving history."""
    return namespace(env) + "retired/" + lens


def env_note(env: str | None) -> str:
    """`` (env <E>)`` for a deployment message in environment E, ``""`` in the default one,
    so ``git log`` of a commit tells which environment it served."""
    return "" if env is None else f" (env {env})"


def applying_ref(env: str | None = None) -> str:
    """``refs/dst/applying`` (``refs/dst/env/<env>/applying`` in ``env``): the intent record."""
    return namespace(env) + "applying"


def environments_with_refs(repo: pygit2.Repository) -> list[str]:
    """Names of the named environments that hold any ref under ``refs/dst/env/``, sorted."""
    return sorted(
        {
            r[len(ENVIRONMENTS) :].split("/", 1)[0]
            for r in repo.references
            if r.startswith(ENVIRONMENTS)
        }
    )
