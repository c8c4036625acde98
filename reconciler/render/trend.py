"""A lens's accuracy trend across its deployments (pure).

Every deployment commit's ``state/meta.json`` carries the lens's standing score
(``runs.LensRun.score``: correct, wrong, declined, error, unverified, total over
the whole active corpus). Accuracy is ``correct / total`` and the wrong-rate
``wrong / total``; DESIGN §1 makes the wrong-rate a co-headline with accuracy,
so both travel together here. A deployment without a score (``total`` 0 or
missing, e.g. a lens with nothing certified) has neither: ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BLOCKS = "▁▂▃▄▅▆▇█"
GAP = " "


@dataclass(frozen=True)
class TrendPoint:
    """One deployment's place in the trend.

    Attributes:
        deployment: the deployment commit.
        action: ``promote``, ``verify`` or ``rollback`` (from its meta).
        recorded_at: seconds since the epoch when it was written (0 if unknown).
        accuracy: ``correct / total`` in [0, 1], or ``None`` with no score.
        wrong_rate: ``wrong / total`` in [0, 1], or ``None`` with no score.
        score: the raw counts from the meta.
    """

    deployment: str
    action: str
    recorded_at: int
    accuracy: float | None
    wrong_rate: float | None
    score: Mapping[str, int]


def rates(score: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    """``(accuracy, wrong_rate)`` of a score, each in [0, 1]; ``(None, None)`` when empty."""
    if not score:
        return None, None
    total = int(score.get("total", 0) or 0)
    if total <= 0:
        return None, None
    return int(score.get("correct", 0) or 0) / total, int(score.get("wrong", 0) or 0) / total


def points(deployments: Sequence[tuple[str, Mapping[str, Any]]]) -> list[TrendPoint]:
    """Trend points, oldest first, from ``(deployment oid, meta)`` pairs given newest first.

    ``dst log`` lists deployments newest first (the first-parent walk of the
    serving ref); a trend reads left to right in time, so the order flips here.
    """
    out = []
    for oid, meta in reversed(deployments):
        score = dict(meta.get("score") or {})
        accuracy, wrong = rates(score)
        out.append(
            TrendPoint(
                oid,
                str(meta.get("action", "")),
                int(meta.get("recorded_at", 0) or 0),
                accuracy,
                wrong,
                score,
            )
        )
    return out


def sparkline(values: Sequence[float | None]) -> str:
    """One block character per value in [0, 1]; a space where a value is ``None``.

    The scale is absolute (``▁`` = 0 %, ``█`` = 100 %), not fitted to the
    values' range: a lens steady at 100 % reads as a flat top line, and a drop
    from 100 % to 90 % stays a small step rather than filling the whole height.
    """
    top = len(BLOCKS) - 1
    return "".join(GAP if v is None else BLOCKS[min(top, max(0, round(v * top)))] for v in values)


def percent(value: float | None) -> str:
    """``"93%"``, or ``"n/a"`` for ``None``."""
    return "n/a" if value is None else f"{100 * value:.0f}%"


def corpus_size(point: TrendPoint) -> int | None:
    """The active corpus size a deployment's score covers, ``None`` without a score."""
    total = point.score.get("total")
    return int(total) if total is not None else None


def corpus_marks(trend: Sequence[TrendPoint]) -> dict[str, str]:
    """``{deployment: "corpus 18 → 17"}`` for each deployment whose corpus size
    differs from the scored deployment before it (DESIGN §5: the score never hides a
    shrinking corpus); deployments without a score neither mark nor reset it."""
    marks: dict[str, str] = {}
    before: int | None = None
    for p in trend:
        size = corpus_size(p)
        if size is None:
            continue
        if before is not None and size != before:
            marks[p.deployment] = f"corpus {before} → {size}"
        before = size
    return marks


def summary_lines(trend: Sequence[TrendPoint]) -> list[str]:
    """The text trend under ``dst log``: accuracy and wrong-rate sparklines, oldest → newest.

    Returns:
        Three lines (a heading, accuracy, wrong-rate), a fourth listing corpus-size
        changes when there are any, or none for an empty trend.
    """
    if not trend:
        return []
    acc = [p.accuracy for p in trend]
    wrong = [p.wrong_rate for p in trend]
    latest = next((p for p in reversed(trend) if p.accuracy is not None), None)
    now_acc = percent(latest.accuracy) if latest else "n/a"
    now_wrong = percent(latest.wrong_rate) if latest else "n/a"
    scored = [a for a in acc if a is not None]
    low = percent(min(scored)) if scored else "n/a"
    lines = [
        f"trend over {len(trend)} deployment(s), oldest → newest:",
        f"  accuracy   {sparkline(acc)}  now {now_acc} (lowest {low})",
        f"  wrong-rate {sparkline(wrong)}  now {now_wrong}",
    ]
    marks = corpus_marks(trend)
    if marks:
        # one character per deployment under the sparklines: where the corpus changed size
        where = "".join("^" if p.deployment in marks else " " for p in trend)
        changes = "; ".join(f"{m} at {oid[:12]}" for oid, m in marks.items())
        lines.append(f"  corpus     {where}  {changes}")
    return lines
