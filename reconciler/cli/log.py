"""``dst log LENS``: a lens's deployment history and its accuracy trend.

The history is the first-parent walk of ``refs/dst/serving/<lens>`` (DESIGN
§3), newest first. The text form ends with accuracy and wrong-rate sparklines
(oldest → newest); ``--plot out.png`` also draws both lines with matplotlib
(the optional ``plot`` extra). Each line also shows the deployment's reach and,
where the active corpus changed size since the deployment before, a
``[corpus 18 → 17]`` mark (``corpus_change`` in JSON; DESIGN §5).
:mod:`reconciler.cli.app` registers :func:`log`.

Exit codes: 0 shown; 2 bad input (no serving version, matplotlib missing for
``--plot``, an unwritable plot path).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from reconciler.cli.common import runtime, short_score
from reconciler.cli.options import Format, FormatOpt, RepoOpt


def log(
    lens: Annotated[str, typer.Argument(help="Lens name.")],
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Also draw accuracy and wrong-rate per deployment to this PNG "
            "(needs: pip install 'dst-reconciler\\[plot]').",
        ),
    ] = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Deployment history of a lens (first-parent history of its serving ref), with its trend."""
    # lazy: reconciler.history loads the engines, which `dst --help` does not need
    from reconciler.history import log as do_log
    from reconciler.render.trend import corpus_marks, percent, points, summary_lines

    deps = do_log(runtime(repo), lens)
    trend = points([(d.oid, d.meta) for d in deps])
    if plot is not None:
        # lazy: matplotlib (the optional plot extra) loads only for --plot
        from reconciler.render.plot import plot_trend

        width, height = plot_trend(lens, trend, plot)
        print(f"plot written to {plot} ({width}×{height} px)", file=sys.stderr)
    by_oid = {p.deployment: p for p in trend}
    marks = corpus_marks(trend)
    if fmt is Format.json:
        print(
            json.dumps(
                {
                    "schema_version": 1,
                    "command": "log",
                    "lens": lens,
                    "deployments": [
                        {
                            "deployment": d.oid,
                            **d.meta,
                            "accuracy": by_oid[d.oid].accuracy,
                            "wrong_rate": by_oid[d.oid].wrong_rate,
                            "corpus_change": marks.get(d.oid),
                        }
                        for d in deps
                    ],
                },
                indent=2,
                default=str,
            )
        )
        return 0
    for d in deps:
        p = by_oid[d.oid]
        reach = d.info.reach
        print(
            f"{d.oid[:12]}  {d.meta.get('action', ''):<9} source "
            f"{str(d.meta.get('source', ''))[:12]}  score {short_score(d.meta.get('score'))}"
            f"  accuracy {percent(p.accuracy)}, wrong {percent(p.wrong_rate)}"
            + (f"  reach {reach.get('reached', 0)}/{reach.get('total', 0)}" if reach else "")
            + (f"  [{marks[d.oid]}]" if d.oid in marks else "")
        )
    for line in summary_lines(trend):
        print(line)
    return 0
