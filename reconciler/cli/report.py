"""``dst report --html out.html``: a run as one self-contained HTML page.

Like ``dbt docs generate`` reading the artifacts of the last run, the page is
built from what dst already recorded: by default, each lens's most recent run
in git (its serving deployment or its last attempt, whichever is newer, from
``state/meta.json`` and ``state/run.json``), so a blocked ``dst apply`` can be
followed by ``dst report --html report.html``. ``--from FILE`` renders a saved
``dst plan|apply|test --format json`` object instead (``-`` reads stdin), which
also covers dry runs and pre-push checks that record nothing. Rendering is
:mod:`reconciler.render.html`; :mod:`reconciler.cli.app` registers :func:`report`.

Exit codes: 0 written (whatever the run's own outcome); 2 bad input (nothing
recorded, an unreadable or malformed ``--from`` file, an unknown lens, an
unwritable path).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt
from reconciler.errors import UsageError

FROM_HELP = (
    "A saved `dst plan|apply|test --format json` object to render ('-': stdin). "
    "Default: each lens's most recent recorded run (serving deployment or last attempt)."
)


def report(
    html: Annotated[Path, typer.Option("--html", help="Write the HTML page here.")],
    source: Annotated[str | None, typer.Option("--from", help=FROM_HELP)] = None,
    lens: Annotated[str | None, typer.Option("--lens", help="Report one lens.")] = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Write a self-contained HTML report of a run: plan, results, divergences, scores.

    By default the page shows each lens's most recent recorded run (after `dst apply` or
    `dst test`); `--from run.json` renders a saved `--format json` object instead.
    Example: `dst apply || dst report --html report.html`.
    """
    # lazy: reconciler.render.html loads the engines, which `dst --help` does not need
    from reconciler.render.html import render

    if source is not None:
        obj, origin = _from_file(source), f"rendered from {source}"
    else:
        obj, origin = _from_git(repo), "the most recent recorded run of each lens"
    lenses = list(obj["lenses"])
    if lens is not None:
        names = [str(x.get("lens")) for x in lenses]
        if lens not in names:
            raise UsageError(
                f"lens {lens!r} is not in the report",
                fix=f"use one of: {', '.join(names) or 'none'}",
            )
        obj = {**obj, "lenses": [x for x in lenses if x.get("lens") == lens]}
    page = render(obj, origin=origin)
    try:
        html.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{html}: cannot write the report ({exc.strerror or exc})",
            fix="pass --html a path in a writable, existing directory",
        ) from None
    shown = [str(x.get("lens")) for x in obj["lenses"]]
    if fmt is Format.json:
        print(
            json.dumps(
                {
                    "schema_version": 1,
                    "command": "report",
                    "html": str(html),
                    "source": source,
                    "lenses": shown,
                    "bytes": len(page.encode("utf-8")),
                },
                indent=2,
            )
        )
    else:
        print(f"wrote {html} ({len(shown)} lens(es): {', '.join(shown) or 'none'})")
    return 0


def _from_file(source: str) -> dict[str, Any]:
    where = "stdin" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{where}: cannot read ({exc})",
            fix="save one with `dst apply --format json > run.json`",
        ) from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{where}:{exc.lineno}: not JSON ({exc.msg})",
            fix="pass the stdout of `dst plan|apply|test --format json` unchanged",
        ) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("lenses"), list):
        hint = " (it is an error report)" if isinstance(obj, dict) and "error" in obj else ""
        raise UsageError(
            f"{where}:1: not a run report: no 'lenses' list{hint}",
            fix="pass the stdout of `dst plan|apply|test --format json`",
        )
    return obj


def _from_git(repo: Path | None) -> dict[str, Any]:
    # lazy: reconciler.git loads the engines, which `dst --help` does not need
    from reconciler.git import refs as refstore
    from reconciler.history import status
    from reconciler.render.html import lens_object_from_record

    rt = runtime(repo)
    lenses = []
    for row in status(rt):
        attempt_newer = row.attempt is not None and int(
            row.attempt_meta.get("recorded_at", 0)
        ) >= int(row.serving_meta.get("recorded_at", 0))
        if attempt_newer and row.attempt is not None:
            oid, meta, served = row.attempt, row.attempt_meta, False
        elif row.serving is not None:
            oid, meta, served = row.serving, row.serving_meta, True
        else:
            continue
        run = refstore.read_run(rt.repo, oid)
        lenses.append(lens_object_from_record(oid, meta, run, served=served, serving=row.serving))
    if not lenses:
        raise UsageError(
            "no run is recorded yet: no lens has a serving deployment or an attempt",
            fix="run `dst apply` first, or pass --from run.json",
        )
    return {"schema_version": 1, "command": "recorded runs", "messages": [], "lenses": lenses}
