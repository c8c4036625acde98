"""``state/meta.json`` read back as a plain frozen value, without its model's library.

Reading serving state is most of what ``dst status``, ``dst log`` and the serving
check of every command do, and building the pydantic model of a record costs more
than those commands' own work. So a meta that already has exactly the shape
:class:`reconciler.state.DeploymentMeta` declares (each key of the JSON type its
field takes, no coercion needed) is read here, by a check of that shape, into a
:class:`Meta` with the same attributes and the same :meth:`Meta.record`. Anything
else — a missing ``source``, a string where a number belongs, a number pydantic
would coerce — goes to the model (:func:`reconciler.state.load`), which raises the
:class:`~reconciler.errors.StateError` it always did or, when it accepts, gives the
record this reads instead. Either way the value and the error are the model's.

A :class:`Deployment` (what :func:`reconciler.git.refs.read_deployment` returns)
holds its meta so, and its ``state/bindings.json`` as stored, parsed on first use.
Writers still build and validate the model: this module only reads.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from reconciler.ids import Oid

if TYPE_CHECKING:
    from reconciler.bindings import Bindings

STATE_SCHEMA: Literal[1] = 1
""":data:`reconciler.state.STATE_SCHEMA`, the one ``schema_version`` this dst reads."""


def _text(v: Any) -> bool:
    return type(v) is str


def _whole(v: Any) -> bool:
    return type(v) is int  # not a bool, not a float the model would coerce


def _optional_text(v: Any) -> bool:
    return v is None or type(v) is str


def _counts(v: Any) -> bool:
    return type(v) is dict and all(_whole(n) for n in v.values())


def _optional_counts(v: Any) -> bool:
    return v is None or _counts(v)


def _optional_flakes(v: Any) -> bool:
    return v is None or (type(v) is dict and all(_counts(c) for c in v.values()))


FIELDS: dict[str, Callable[[Any], bool]] = {
    "schema_version": lambda v: _whole(v) and v == STATE_SCHEMA,
    "tool_version": _text,
    "recorded_at": _whole,
    "action": _text,
    "lens": _text,
    "source": _text,
    "previous": _optional_text,
    "score": _optional_counts,
    "previous_score": _optional_counts,
    "gate": _optional_text,
    "reason": _text,
    "reach": _optional_counts,
    "rollback_to": _optional_text,
    "flake_rates": _optional_flakes,
    "verified": _optional_text,
}
"""Each field of :class:`reconciler.state.DeploymentMeta` and the check of a stored value
the model takes as it is (``tests/test_state.py`` holds the two to the same names)."""


@dataclass(frozen=True)
class Meta:
    """A deployment's (or attempt's, or verification's) ``state/meta.json``, read back.

    The attributes are :class:`reconciler.state.DeploymentMeta`'s, with its defaults
    for keys the file does not hold.

    Attributes:
        stored: the file's object as read, every key it holds (unknown ones too).
    """

    stored: Mapping[str, Any] = field(repr=False)
    source: Oid
    tool_version: str = ""
    recorded_at: int = 0
    action: str = ""
    lens: str = ""
    previous: Oid | None = None
    score: dict[str, int] | None = None
    previous_score: dict[str, int] | None = None
    gate: str | None = None
    reason: str = ""
    reach: dict[str, int] | None = None
    rollback_to: Oid | None = None
    flake_rates: dict[str, dict[str, int]] | None = None
    verified: Oid | None = None

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> Meta:
        """The record of a stored object whose keys the model takes as they are."""
        known = {k: v for k, v in stored.items() if k in FIELDS and k != "schema_version"}
        return cls(stored=dict(stored), **known)

    def record(self) -> dict[str, Any]:
        """The JSON form: exactly the stored keys, sorted (``DeploymentMeta.record``)."""
        return dict(sorted(self.stored.items()))

    def dumps(self) -> bytes:
        """The bytes as stored: sorted keys, two-space indent, trailing newline."""
        return (json.dumps(self.record(), indent=2, sort_keys=True, default=str) + "\n").encode()


def loads_meta(raw: bytes, *, where: str, name: str = "state/meta.json") -> Meta:
    """Parse ``state/meta.json``: as :func:`reconciler.state.load` of a ``DeploymentMeta``.

    Args:
        raw: the file's bytes.
        where: the commit it came from, for messages (``deployment 0123abcd4567``).
        name: the file's path in that commit.

    Raises:
        StateError: not JSON, not an object, an unknown ``schema_version``, no
            ``source``, or a key of the wrong type (the model's message).
    """
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    shaped = type(data) is dict and "source" in data and "schema_version" in data
    if shaped and all(check(data[k]) for k, check in FIELDS.items() if k in data):
        return Meta.of(data)
    # lazy: the model words every problem, and coerces what it accepts
    from reconciler.state import DeploymentMeta, load

    return Meta.of(load(DeploymentMeta, raw, where=where, name=name).record())


BINDINGS_SCHEMA = 1
""":data:`reconciler.bindings.BINDINGS_SCHEMA`."""

HASH_SCHEME = 1
""":data:`reconciler.assets.HASH_SCHEME`, the asset hashing the stored bindings must use."""


def bindings_read_as_is(raw: bytes, *, answers: bool = True) -> bool:
    """``state/bindings.json`` has exactly the shape :meth:`reconciler.bindings.Bindings.loads`
    reads without error: its header is this dst's and (with ``answers``) every answer
    has its assets, oracle, source and whole flake count.

    Then the bindings parse later, when first used, and a reader that never uses them
    (``dst status``) loads nothing to read them. When this is false, the caller parses
    them now, which raises what it always raised.
    """
    try:
        data = json.loads(raw)
    except ValueError:
        return False
    if type(data) is not dict:
        return False
    header = [data.get("schema_version"), data.get("hash_scheme")]
    if any(type(v) is not int for v in header) or header != [BINDINGS_SCHEMA, HASH_SCHEME]:
        return False
    if not answers:
        return True
    stamps = data.get("answers", {})
    return type(stamps) is dict and all(
        type(v) is dict
        and type(v.get("assets")) is dict
        and "oracle" in v
        and "source" in v
        and type(v.get("flakes", 0)) is int
        for v in stamps.values()
    )


@dataclass(frozen=True)
class Deployment:
    """A deployment (or attempt) commit, read back.

    Attributes:
        oid: the deployment commit.
        lens_tree: tree id of its ``lens/``.
        info: ``state/meta.json`` (action, lens, source, previous, score,
            previous_score, gate …).
        previous: the previous deployment (its first parent), ``None`` for the first.
        stamps: the bindings, when given (an overlay of a verification's), else ``None``:
            :attr:`bindings` parses ``stored_bindings`` on first use.
        stored_bindings: ``state/bindings.json`` as stored, of a shape that parses
            (:func:`bindings_read_as_is`).
        answers_read: the bindings' answers are read (``read_deployment(bindings=…)``).
    """

    oid: Oid
    lens_tree: Oid
    info: Meta
    previous: Oid | None
    stamps: Bindings | None = None
    stored_bindings: bytes = field(default=b"", repr=False)
    answers_read: bool = True

    @functools.cached_property
    def bindings(self) -> Bindings:
        """``state/bindings.json`` (or :attr:`stamps`)."""
        if self.stamps is not None:
            return self.stamps
        # lazy: a reader of serving state that never consults the bindings loads no
        # asset hashing (reconciler.assets) to read them
        from reconciler.bindings import Bindings

        where = f"deployment {self.oid[:12]} state/bindings.json"
        return Bindings.loads(self.stored_bindings, where=where, answers=self.answers_read)

    @property
    def source(self) -> Oid:
        """The source commit this deployment promoted."""
        return self.info.source

    @property
    def meta(self) -> dict[str, Any]:
        """``state/meta.json`` as stored (JSON-ready; what ``dst log --format json`` prints)."""
        return self.info.record()
