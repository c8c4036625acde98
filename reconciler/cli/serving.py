"""``dst status`` and ``dst rollback``: what serves, and serving an earlier deployment again.

``status`` lists each lens's serving deployment (when it was recorded, and the
source commit's subject and author), says when a rollback serves, and, when newer,
its last attempt with the reason, and its last verification (``dst test``, watch's
schedule: ``refs/dst/verify/<lens>``) with its score; it warns when a lens has more than
``ATTEMPTS_WARN`` attempts (``dst gc``) and lists any lock file left under
``refs/dst/``; ``rollback`` writes a new deployment commit whose content is an
older one's (DESIGN §3). ``--env E`` shows (or rolls back) environment E alone;
``status`` without it shows the default environment and then every named one.
Exit codes: 0 shown or rolled back; 2 bad input (no such lens or deployment).
``status``'s body is :func:`reconciler.cli.oneshot.status`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from reconciler.cli.common import emit, runtime
from reconciler.cli.options import EnvOpt, Format, FormatOpt, RepoOpt


def status(env: EnvOpt = None, repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> int:
    """Serving version and last attempt of every lens in every environment (or ``--env``'s),
    and any lock file left on refs/dst/."""
    # lazy: the body is typer-free, so that `dst status` can run it before typer loads
    from reconciler.cli.oneshot import status as show

    return show(env, repo, fmt)


def rollback(
    lens: Annotated[str, typer.Argument(help="Lens name.")],
    to: Annotated[str | None, typer.Option("--to", help="Deployment to restore.")] = None,
    env: EnvOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Serve an earlier deployment's content again, as a new deployment commit."""
    # lazy: the rollback loads the engines; `dst --help` does not need them
    from reconciler.history import rollback as do_rollback

    return emit(do_rollback(runtime(repo, environment=env), lens, to), fmt)
