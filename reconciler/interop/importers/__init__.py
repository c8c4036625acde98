"""Importers: turn another tool's semantic layer into a lens directory.

An importer is pure-ish: it reads its inputs (the source files' bytes and, for
seeds, a data directory) and returns the lens as ``{lens-relative path: bytes}``
together with an :class:`ImportReport`; it never writes. :func:`write_lens`
is the one place that puts those files on disk, atomically. Everything a source
declares that the lens format cannot hold is listed in
:attr:`ImportReport.unmapped` with the reason, never silently dropped.

Oracles are checked by running them over the seeded data, but importers do not
talk to a database themselves (the pure core stays free of SQL engines, see
STYLE.md §2): the caller passes an :data:`OracleRunner` that does it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePosixPath

import yaml

from reconciler.errors import UsageError
from reconciler.lens import LENS_NAME_RE


class ProblemKind(str, Enum):
    """What kind of :class:`ImportProblem` an import found."""

    TABLE_NOT_HELD = "table_not_held"
    """A model's ``table`` is one no seed (of the data given) creates."""
    NON_UNIQUE_KEY = "non_unique_key"
    """A declared primary key has fewer distinct values than rows; it was dropped."""
    JOIN_DROPPED = "join_dropped"
    """A join whose "one" side is not unique on its columns; it was not written."""
    ORACLE_THROUGH_NON_UNIQUE_KEY = "oracle_through_non_unique_key"
    """An oracle joins on a non-unique key (its result may be fanned out); a draft."""
    EMPTY_ORACLE = "empty_oracle"
    """An oracle returns no rows on the seeded data (vacuous evidence)."""
    RELATIVE_DATE = "relative_date"
    """An oracle or question depends on the current date; evaluated at ``as_of``."""


@dataclass(frozen=True)
class ImportProblem:
    """A finding about the data an import was given that the user must know of.

    Attributes:
        kind: what was found.
        message: one line saying what, where, and what the import did about it.
        model: the model it concerns (``models/<model>.yaml``), if any.
        table: the physical table it concerns, if any.
        answers: the ids of the answers it concerns, if any.
    """

    kind: ProblemKind
    message: str
    model: str | None = None
    table: str | None = None
    answers: tuple[str, ...] = ()

    def record(self) -> dict[str, object]:
        """The JSON object of this problem: its fields, ``kind`` as its value, tuples as lists."""
        record: dict[str, object] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            record[name] = (
                value.value
                if isinstance(value, Enum)
                else (list(value) if isinstance(value, tuple) else value)
            )
        return record


@dataclass(frozen=True)
class ImportReport:
    """What an import produced and what it could not carry over.

    Attributes:
        lens: the lens name (``lenses/<lens>``).
        written: repository-relative paths of every file of the lens, sorted.
        models: number of ``models/*.yaml`` files.
        metrics: number of ``metrics/*.yaml`` files.
        answers: number of ``answers/*.yaml`` files, every status.
        seeds: ``{physical table: data rows}`` for every ``seeds/*.csv``.
        unmapped: one line per source item that the lens does not hold (or holds
            only as a draft), each with the reason.
        drafts: how many of ``answers`` were written with status ``draft``.
        as_of: the ``as_of`` date written to ``lens.yaml``, if any.
        notes: decisions worth knowing that lose nothing (renamed seed columns,
            why ``as_of`` is that day, oracles that were not executed).
        exemplars: number of ``exemplars/*.yaml`` files.
        problems: what the data showed to be wrong with the source (tables no
            seed creates, non-unique keys, dropped joins, empty or relative-dated
            oracles), each with the model, table or answers it concerns.
    """

    lens: str
    written: tuple[str, ...]
    models: int
    metrics: int
    answers: int
    seeds: dict[str, int]
    unmapped: tuple[str, ...]
    drafts: int = 0
    as_of: str | None = None
    notes: tuple[str, ...] = ()
    exemplars: int = 0
    problems: tuple[ImportProblem, ...] = ()

    def problems_of(self, kind: ProblemKind) -> tuple[ImportProblem, ...]:
        """The problems of one kind, in the order they were found."""
        return tuple(p for p in self.problems if p.kind is kind)


@dataclass(frozen=True)
class OracleRun:
    """The outcome of executing one compiled oracle over the seeded data.

    Attributes:
        rows: rows returned (``None`` when it failed).
        error: the database's error text (``None`` when it ran).
    """

    rows: int | None = None
    error: str | None = None


OracleRunner = Callable[[Mapping[str, bytes], Sequence[str]], Sequence[OracleRun]]
"""Executes queries over seed tables.

Called once per import as ``runner(seeds, queries)``: ``seeds`` maps each physical
table name to its CSV bytes (header row first), ``queries`` are SQL statements in
the lens dialect with every clock read already pinned. Returns one
:class:`OracleRun` per query, in order. It must not raise for a failing query.
"""


class Findings:
    """What an import leaves behind (``unmapped``), decided (``notes``) and found (``problems``).

    A mutable accumulator, private to one import run; the run freezes the lists
    into its :class:`ImportReport`.
    """

    def __init__(self) -> None:
        self.unmapped: list[str] = []
        self.notes: list[str] = []
        self.problems: list[ImportProblem] = []

    def problem(self, problem: ImportProblem) -> None:
        """Record a problem the data showed."""
        self.problems.append(problem)

    def lose(self, where: str, reason: str) -> None:
        """Record that the source item at ``where`` is not (fully) in the lens, and why."""
        self.unmapped.append(f"{where}: {reason}")

    def note(self, text: str) -> None:
        """Record a decision that loses nothing."""
        self.notes.append(text)

    def unknown_keys(
        self, data: Mapping[str, object], known: set[str], where: str, reasons: Mapping[str, str]
    ) -> None:
        """Record every key of ``data`` outside ``known``, with its reason if one is known."""
        for key in data:
            if key not in known:
                self.lose(f"{where}.{key}", reasons.get(key, "not part of the lens format"))


@dataclass(frozen=True)
class LensSettings:
    """What an importer writes into the new lens's ``lens.yaml`` beyond its name.

    Attributes:
        as_of: the lens's pinned day (``YYYY-MM-DD``), or ``None`` for the
            importer's default.
        dialect: the lens's SQL dialect (sqlglot name).
    """

    as_of: str | None = None
    dialect: str = "duckdb"


def scalar_text(value: object) -> str:
    """A YAML scalar as text (YAML may have read ``2023`` or ``True`` as a number or boolean).

    ``None`` is the empty string; booleans keep their spelling ``True``/``False``.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def slugify(text: str, *, max_length: int = 60) -> str:
    """A lowercase ``[a-z0-9_]`` identifier for ``text``, cut at a word boundary.

    ``"What’s the average deal size?"`` → ``"what_s_the_average_deal_size"``;
    an empty result becomes ``"item"``.
    """
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if len(slug) > max_length:
        cut = slug[:max_length]
        slug = cut.rsplit("_", 1)[0] if "_" in cut else cut
    return slug or "item"


class _LensDumper(yaml.SafeDumper):
    """Safe dumper that writes multi-line strings (SQL, long notes) as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_LensDumper.add_representer(str, _represent_str)


def dump_yaml(data: Mapping[str, object], *, header: str = "") -> bytes:
    """Serialize one lens file.

    Keys keep their insertion order. Strings that YAML 1.1 would read as another
    type (``NO``, ``1.10``, ``2024-01-31``) come out quoted, because the safe
    representer checks the same implicit resolvers the lens loader uses; lines of
    ``header`` are written first as ``#`` comments.

    Returns:
        UTF-8 bytes ending in a newline.
    """
    text = yaml.dump(
        dict(data),
        Dumper=_LensDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return (comment + text).encode("utf-8")


def _checked_relative(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or not path.parts or any(p in ("", ".", "..") for p in path.parts):
        raise UsageError(
            f"refusing to write {rel!r}: not a plain lens-relative path",
            fix="importers must return paths like models/orders.yaml",
        )
    return path


def write_lens(
    repo_root: Path, lens: str, files: Mapping[str, bytes], *, overwrite: bool = False
) -> None:
    """Write a lens directory ``<repo_root>/lenses/<lens>/`` atomically.

    The files are written into a temporary sibling directory, which is then
    renamed into place, so a reader never sees a half-written lens. With
    ``overwrite`` an existing lens is replaced as a whole (files it had that
    ``files`` lacks are gone afterwards).

    Args:
        repo_root: the repository's working tree.
        lens: the lens name.
        files: ``{lens-relative posix path: bytes}``.
        overwrite: replace an existing lens instead of refusing.

    Raises:
        UsageError: the lens name is invalid, a path escapes the lens, or the
            lens exists and ``overwrite`` is false.
    """
    if not LENS_NAME_RE.match(lens):
        raise UsageError(
            f"lens name {lens!r} is not a valid lens name",
            fix="use lowercase letters, digits, '-' and '_'",
        )
    checked = {rel: _checked_relative(rel) for rel in files}
    lenses_dir = repo_root / "lenses"
    target = lenses_dir / lens
    if target.exists() and not overwrite:
        raise UsageError(
            f"lenses/{lens} already exists",
            fix="choose another --lens name, or pass --overwrite to replace it",
        )
    lenses_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{lens}.import-", dir=lenses_dir))
    try:
        for rel, path in checked.items():
            dest = staging.joinpath(*path.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(files[rel])
        os.chmod(staging, 0o755)  # mkdtemp makes it 0700; a lens is an ordinary directory
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{lens}.replaced-", dir=lenses_dir))
            os.replace(target, retired / lens)
            os.replace(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def written_paths(lens: str, files: Mapping[str, bytes]) -> tuple[str, ...]:
    """Repository-relative paths (``lenses/<lens>/<rel>``) of a lens's files, sorted."""
    return tuple(sorted(f"lenses/{lens}/{rel}" for rel in files))
