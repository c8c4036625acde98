"""Helpers the ``dst`` commands share: open the runtime, print a report, small renderings.

Commands import these (and :mod:`reconciler.cli.options`), never
:mod:`reconciler.cli.app`, which only assembles the typer app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.cli.boundary import silence_stdout
from reconciler.cli.options import Format


def runtime(
    repo: Path | None,
    warehouse: str | None = None,
    jobs: int | None = None,
    environment: str | None = None,
) -> Any:
    """The :class:`reconciler.context.Runtime` of the repository at (or above) ``repo``.

    Args:
        repo: ``--repo`` (default: the current directory).
        warehouse: ``--warehouse`` URL, overriding the configured one.
        jobs: ``--jobs``, answers verified at once.
        environment: ``--env``, the named environment (``None``: the default one).

    Raises:
        UsageError: no git repository there, or one owned by another user.
    """
    # lazy: the runtime loads the engines; `dst --help` and light commands do not need them
    from reconciler.context import Runtime
    from reconciler.git.trees import open_repo

    return Runtime(open_repo(repo), warehouse_url=warehouse, jobs=jobs, environment=environment)


def emit(report: Any, fmt: Format, explain: bool = False) -> int:
    """Print a run report (``--format text|json``) and return its exit code.

    A reader that went away mid-print (``dst plan | head``) is not an error: the
    rest of the output is dropped and the report's exit code still stands.
    """
    # lazy: the renderer imports the report model and sqlglot
    from reconciler.render import text as render

    text = (render.to_json if fmt is Format.json else render.to_text)(report, explain=explain)
    try:
        print(text, flush=True)
    except BrokenPipeError:
        silence_stdout()
    return int(report.exit_code)


def plain(obj: Any) -> dict[str, Any]:
    """A dataclass (or dict) as a plain dict for ``--format json``; else ``{"result": str}``."""
    if hasattr(obj, "__dataclass_fields__"):
        return {k: getattr(obj, k) for k in obj.__dataclass_fields__}
    return dict(obj) if isinstance(obj, dict) else {"result": str(obj)}


def short_score(score: Any) -> str:
    """``correct/total`` of a recorded score, ``n/a`` when there is none."""
    if not score:
        return "n/a"
    return f"{score.get('correct', 0)}/{score.get('total', 0)}"
