"""What makes an answer certified: a person's name and a past date (DESIGN §2).

An ``active`` answer's ``provenance`` must name who certified it and when; the
lens loader (:mod:`reconciler.lens`) applies these rules and turns a failure
into a :class:`~reconciler.errors.LensLoadError` at the offending key, and the
writers (``dst certify``, ``dst evals migrate``, the importers) apply the same
rules before they write, so nothing they write as active fails to load and no
placeholder they write for a draft would pass if flipped to active by hand.

The rules, kept deliberately small:

- ``certified_by`` names a person when, trimmed, it contains a letter, is not a
  template slot (``<your name>``, ``{name}``, ``${USER}``, ``[name]``), and is not
  a placeholder word — one of :data:`PLACEHOLDERS` (case-insensitive) on its own
  or followed by a non-letter (``nobody yet (draft)``, ``TODO: fill in``). A
  real name that merely starts with those letters (``Nobuko``, ``Nilsson``) passes.
- ``certified_at`` is a calendar date ``YYYY-MM-DD`` or an ISO-8601 timestamp
  (``2025-01-15T09:30:00Z``, an offset or none). It is in the future when its
  day is after today anywhere on Earth (UTC+14), so a certification made a
  minute ago in any time zone always passes.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from reconciler.errors import LensLoadError
from reconciler.loader import Document

PLACEHOLDERS = (
    "nobody",
    "no one",
    "noone",
    "none",
    "null",
    "nil",
    "unknown",
    "todo",
    "tbd",
    "tba",
    "n/a",
    "anonymous",
    "placeholder",
    "someone",
    "changeme",
    "fixme",
    "xxx",
)
"""Words a scaffold, an importer or a hurried person writes instead of a name."""

_TEMPLATE_RE = re.compile(r"^(<.*>|\{.*\}|\$\{.*\}|\[.*\])$", re.DOTALL)
_TIMESTAMP_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$"
)
# The earliest UTC offset in use: when it is already tomorrow somewhere, a date of
# tomorrow (UTC) is today there, not the future.
_EARLIEST_OFFSET = timedelta(hours=14)


def certifier_problem(certified_by: str) -> str | None:
    """Why ``certified_by`` does not name a person, or ``None`` when it does.

    Args:
        certified_by: the value as written.

    Returns:
        A short reason (``"is blank"``, ``"is the placeholder 'tbd'"`` …) or ``None``.
    """
    name = certified_by.strip()
    if not name:
        return "is blank"
    if any(not ch.isprintable() for ch in name):
        return "holds a line break or a control character (one name on one line)"
    if not any(ch.isalpha() for ch in name):
        return "has no letters"
    if _TEMPLATE_RE.match(name):
        return "is a template slot, not a name"
    lowered = name.casefold()
    for word in PLACEHOLDERS:
        if lowered == word or (lowered.startswith(word) and not lowered[len(word)].isalpha()):
            return f"is the placeholder {word!r}"
    return None


def certified_day(certified_at: str) -> date | None:
    """The calendar day of a ``certified_at`` value, or ``None`` when it is not a date.

    Args:
        certified_at: ``YYYY-MM-DD`` or an ISO-8601 timestamp.

    Returns:
        The day as written (a timestamp's own day, whatever its offset).
    """
    text = certified_at.strip()
    if not _TIMESTAMP_RE.match(text):
        return None
    try:
        return datetime.fromisoformat(text).date() if len(text) > 10 else date.fromisoformat(text)
    except ValueError:
        return None


def certified_at_problem(certified_at: str, *, now: datetime | None = None) -> str | None:
    """Why ``certified_at`` is not a valid past date, or ``None`` when it is.

    Args:
        certified_at: the value as written.
        now: the current time (aware); the clock when omitted.

    Returns:
        A short reason (``"is not a date …"``, ``"is in the future"``) or ``None``.
    """
    day = certified_day(certified_at)
    if day is None:
        return "is not a date (YYYY-MM-DD or an ISO-8601 timestamp)"
    latest_today = ((now or datetime.now(UTC)).astimezone(UTC) + _EARLIEST_OFFSET).date()
    if day > latest_today:
        return "is in the future"
    return None


def require_certified(
    doc: Document, answer_id: str, certified_by: str, certified_at: str, *, lens: str
) -> None:
    """Raise unless an active answer's provenance names a person and a past date.

    Args:
        doc: the answer file, for its path and the line of the offending key.
        answer_id: the answer's ``id``, for the message.
        certified_by, certified_at: the provenance values as validated.
        lens: the lens name, for the ``dst certify`` command in the fix.

    Raises:
        LensLoadError: at the line of ``provenance.certified_by`` or
            ``provenance.certified_at``, with the fix: certify it with
            ``dst certify``, or set ``status: draft``.
    """
    for key, value, problem in (
        ("certified_by", certified_by, certifier_problem(certified_by)),
        ("certified_at", certified_at, certified_at_problem(certified_at)),
    ):
        if problem is not None:
            raise LensLoadError(
                doc.path,
                f"answer {answer_id!r} is active but provenance.{key} {value!r} {problem}: "
                "only a person certifies, on a past date",
                line=doc.line_of(("provenance", key)),
                fix=f"certify it with `dst certify --lens {lens}` (a person's name and the "
                "day they checked the result), or set status: draft",
            )
