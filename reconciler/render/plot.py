"""Drawing a lens's accuracy trend as a PNG (``dst log LENS --plot out.png``).

matplotlib is an optional extra (``dst-reconciler[plot]``); it is imported only
here and only when a plot is asked for, with the non-interactive Agg backend and
the fonts matplotlib ships, so drawing needs no display and no network.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler.errors import UsageError
from reconciler.render.trend import TrendPoint

WIDTH_IN, HEIGHT_IN, DPI = 8.0, 4.0, 100
ACCURACY_COLOUR = "#1a7f37"
WRONG_COLOUR = "#cf222e"
INSTALL_FIX = (
    "pip install matplotlib (dst's plot extra; from a clone of dst: pip install -e '.[plot]')"
)


def _pyplot() -> Any:
    try:
        import matplotlib  # lazy: an optional extra, and seconds of import for one command
    except ImportError:
        raise UsageError(
            "--plot needs matplotlib, which is not installed", fix=INSTALL_FIX
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt  # lazy: only after the Agg backend is chosen

    return plt


def plot_trend(lens: str, trend: Sequence[TrendPoint], out: Path) -> tuple[int, int]:
    """Write accuracy and wrong-rate per deployment, oldest left, as a PNG.

    The x axis is the deployment sequence (each tick: action, short oid); the
    y axis is percent of the lens's active corpus. A deployment without a
    score leaves a gap in both lines.

    Args:
        lens: the lens name (the title).
        trend: points oldest first (``trend.points``).
        out: the PNG path; its parent directory must exist.

    Returns:
        ``(width, height)`` of the image in pixels (800 × 400).

    Raises:
        UsageError: matplotlib is not installed (the fix names the extra), or
            ``out`` cannot be written.
    """
    plt = _pyplot()
    xs = list(range(len(trend)))
    acc = [math.nan if p.accuracy is None else 100 * p.accuracy for p in trend]
    wrong = [math.nan if p.wrong_rate is None else 100 * p.wrong_rate for p in trend]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    try:
        ax.plot(xs, acc, marker="o", color=ACCURACY_COLOUR, label="accuracy")
        ax.plot(xs, wrong, marker="s", color=WRONG_COLOUR, label="wrong-rate")
        ax.set_ylim(-5, 105)
        ax.set_ylabel("% of active certified answers")
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{p.action}\n{p.deployment[:7]}" for p in trend], fontsize=7)
        if len(xs) == 1:
            ax.set_xlim(-1, 1)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="center left")
        ax.set_title(f"lens {lens}: accuracy and wrong-rate per deployment")
        fig.tight_layout()
        try:
            fig.savefig(out, format="png", dpi=DPI)
        except OSError as exc:
            raise UsageError(
                f"{out}: cannot write the plot ({exc.strerror or exc})",
                fix="pass --plot a path in a writable, existing directory",
            ) from None
    finally:
        plt.close(fig)
    return int(WIDTH_IN * DPI), int(HEIGHT_IN * DPI)
