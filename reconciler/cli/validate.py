"""``dst validate``: check lens directories in the working tree, offline and fast.

For editors and pre-commit: no warehouse, no git history, no serving state. Each
lens is loaded from the working tree with :func:`reconciler.lens.load_lens`, the
same loader plan and apply use, so a lens that validates here loads there (the
warehouse-side checks, oracles and evals, are left to ``dst plan``).

``--warehouse URL`` adds one data check per model, bounded by the lens's
``statement_timeout_s`` (:func:`reconciler.warehouse.declared.verify_keys`): its table is
there, and a declared ``primary_key`` is unique over it (``COUNT(*)`` against the
distinct key count). A table that cannot be read is an error at the model file's
``table`` line, a key that is not unique at its ``primary_key`` line.

``PATH`` may be a lens directory (``lenses/sales``), any file or folder inside one
(``lenses/sales/models/orders.yaml``, as pre-commit passes them), a ``lenses/``
folder or a directory holding one (every lens in it); with no ``PATH``, every lens
under the nearest ``lenses/`` folder at or above ``--repo`` (default: cwd). Each
lens is checked once however many of its files are named. ``dst.yaml`` is checked
too, as every command reads it (unknown keys such as ``enviroments:``, types,
environments): the one beside the ``lenses/`` folder of each lens checked, and any
``dst.yaml`` named as a ``PATH``.

``validate_app`` is a typer app holding the one command; :mod:`reconciler.cli.app`
merges it into the main app with ``app.add_typer(validate_app)``.

Exit codes: 0 every lens and ``dst.yaml`` is valid; 2 a lens or ``dst.yaml`` is
invalid (``file:line: message`` and its fix on stderr), a declared key does not
hold on ``--warehouse``, or a ``PATH`` is not in a lens.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reconciler.cli.options import Format, FormatOpt, RepoOpt, WarehouseOpt
from reconciler.errors import LensLoadError, UsageError

if TYPE_CHECKING:
    from reconciler.warehouse.access import OpenWarehouse as Warehouse

validate_app = typer.Typer()

LENSES_DIR = "lenses"
CONFIG_FILE = "dst.yaml"


@dataclass(frozen=True)
class LensCheck:
    """The outcome of validating one lens directory.

    Attributes:
        lens: the lens name (its directory name).
        root: the lens directory relative to the current directory, for messages.
        error: the first problem found, or ``None`` when the lens is valid.
        data_errors: with ``--warehouse``, declared keys the warehouse contradicts.
    """

    lens: str
    root: str
    error: LensLoadError | None = None
    data_errors: tuple[LensLoadError, ...] = ()

    @property
    def valid(self) -> bool:
        """Whether the lens loaded without error and the warehouse holds its keys."""
        return self.error is None and not self.data_errors

    @property
    def errors(self) -> tuple[LensLoadError, ...]:
        """Every problem found, the load error first."""
        return ((self.error,) if self.error is not None else ()) + self.data_errors

    def record(self) -> dict[str, Any]:
        """The JSON object of this lens (``lens``, ``valid``, ``error``, ``data_errors``)."""
        error = None if self.error is None else _error_record(self.error)
        return {
            "lens": self.lens,
            "valid": self.valid,
            "error": error,
            "data_errors": [_error_record(e) for e in self.data_errors],
        }


def _error_record(error: LensLoadError) -> dict[str, Any]:
    return {
        "type": type(error).__name__,
        "path": error.path,
        "line": error.line,
        "message": error.message,
        "fix": error.fix,
    }


def _display(path: Path) -> str:
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def _lens_dir_of(path: Path) -> Path | None:
    """The ``lenses/<name>`` directory holding ``path`` (itself included), if any."""
    for candidate in (path, *path.parents):
        if candidate.parent.name == LENSES_DIR and candidate.is_dir():
            return candidate
    return None


def _lenses_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def find_lens_dirs(paths: list[Path], start: Path) -> list[Path]:
    """The lens directories ``paths`` designate (see the module docstring), deduplicated.

    Args:
        paths: as given on the command line; empty means every lens.
        start: where to look for ``lenses/`` when ``paths`` is empty.

    Returns:
        Absolute lens directories, sorted.

    Raises:
        UsageError: a path does not exist or is not inside a lens directory, or no
            ``lenses/`` folder is found at or above ``start``.
    """
    found: set[Path] = set()
    if not paths:
        base = start.resolve()
        for folder in (base, *base.parents):
            if (folder / LENSES_DIR).is_dir():
                return _lenses_in(folder / LENSES_DIR)
        raise UsageError(
            f"no {LENSES_DIR}/ folder in {_display(base)} or above",
            fix="run dst validate inside a repository with lenses, or pass lens directories",
        )
    for given in paths:
        path = given.resolve()
        if not path.exists():
            raise UsageError(f"{given}: no such file or directory", fix="check the path")
        if path.is_dir() and path.name == LENSES_DIR:
            found.update(_lenses_in(path))
        elif path.is_dir() and (path / LENSES_DIR).is_dir() and _lens_dir_of(path) is None:
            found.update(_lenses_in(path / LENSES_DIR))
        else:
            lens_dir = _lens_dir_of(path)
            if lens_dir is None:
                raise UsageError(
                    f"{given}: not inside a lens directory ({LENSES_DIR}/<name>/)",
                    fix="pass a lens directory or a file inside one",
                )
            found.add(lens_dir)
    return sorted(found)


def check_lens(lens_dir: Path, warehouse: Warehouse | None = None) -> LensCheck:
    """Load one lens directory from disk and report its first problem, if any.

    With ``warehouse``, a lens that loads also has its declared keys checked there.
    """
    # lazy: reconciler.git.trees loads the engines, which `dst --help` does not need
    from reconciler.candidate import check_seeds_from
    from reconciler.context import LensExecutor
    from reconciler.git.trees import worktree_files, worktree_lens_names
    from reconciler.lens import load_lens
    from reconciler.warehouse.declared import verify_keys

    root = _display(lens_dir)
    try:
        files = worktree_files(lens_dir.parent.parent, lens_dir.name)
        lens = load_lens(lens_dir.name, files, root=root)
        check_seeds_from(lens, worktree_lens_names(lens_dir.parent.parent), files["lens.yaml"])
    except LensLoadError as exc:
        return LensCheck(lens_dir.name, root, exc)
    if warehouse is None:
        return LensCheck(lens_dir.name, root)
    # A lens reads its own schema, then its seeds_from lenses' (DESIGN §2 "Seeds are per
    # lens"), wherever the warehouse holds them; validate checks keys the same way.
    held = warehouse.schemas()
    path = tuple(s for s in (lens.name, *lens.config.seeds_from) if s in held)
    executor = LensExecutor(warehouse, (), warehouse.dialect, path)
    data_errors = verify_keys(lens, files, executor, dialect=warehouse.dialect)
    return LensCheck(lens_dir.name, root, data_errors=tuple(data_errors))


def validate_paths(
    paths: list[Path], start: Path, warehouse: Warehouse | None = None
) -> list[LensCheck]:
    """Validate every lens ``paths`` designate (all under ``start`` when empty)."""
    return [check_lens(d, warehouse) for d in find_lens_dirs(paths, start)]


def config_files(paths: list[Path], start: Path, lens_dirs: list[Path]) -> list[Path]:
    """The ``dst.yaml`` files to check: those named, and the one beside each lens's
    ``lenses/`` folder (or beside the ``lenses/`` found from ``start``); existing only."""
    found = {p.resolve() for p in paths if p.name == CONFIG_FILE and p.is_file()}
    found |= {d.parent.parent / CONFIG_FILE for d in lens_dirs}
    if not paths:
        base = start.resolve()
        root = next((f for f in (base, *base.parents) if (f / LENSES_DIR).is_dir()), None)
        if root is not None:
            found.add(root / CONFIG_FILE)
    return sorted(p for p in found if p.is_file())


def check_config(path: Path) -> LensLoadError | None:
    """The first problem of one ``dst.yaml``, as ``dst plan`` would report it, or ``None``."""
    # lazy: the runtime module loads the engines, which `dst --help` does not need
    from reconciler.lensfiles import load_repo_config

    try:
        load_repo_config(path.read_bytes(), _display(path))
    except LensLoadError as exc:
        return exc
    return None


@validate_app.command("validate")
def validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Lens directories or files inside them (default: every lens).",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
    repo: RepoOpt = None,
    warehouse: WarehouseOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Check lens files in the working tree (no git): for editors, pre-commit.

    With --warehouse, also check every model's table is there and its primary key unique.
    """
    given = list(paths or ())
    start = repo or Path.cwd()
    # dst.yaml is checked like a lens file (pre-commit passes it too), never as a lens
    lens_paths = [p for p in given if p.name != CONFIG_FILE]
    only_config = bool(given) and not lens_paths
    if warehouse is None:
        checks = [] if only_config else validate_paths(lens_paths, start)
    else:
        # lazy: SQLAlchemy loads only when a warehouse is named
        from reconciler.warehouse.connection import Warehouse

        with Warehouse.open(warehouse) as opened:
            checks = [] if only_config else validate_paths(lens_paths, start, opened)
    lens_dirs = [] if only_config else find_lens_dirs(lens_paths, start)
    configs = [(p, check_config(p)) for p in config_files(given, start, lens_dirs)]
    for _, problem in configs:
        if problem is not None:
            print(f"dst validate: error: {problem.render()}", file=sys.stderr)
    for check in checks:
        for error in check.errors:
            print(f"dst validate: error: {error.render()}", file=sys.stderr)
    if fmt is Format.json:
        obj = {
            "schema_version": 1,
            "command": "validate",
            "lenses": [c.record() for c in checks],
            "configs": [
                {
                    "path": _display(p),
                    "valid": e is None,
                    "error": None if e is None else _error_record(e),
                }
                for p, e in configs
            ],
        }
        print(json.dumps(obj, indent=2))
    else:
        for path, problem in configs:
            print(f"{_display(path)}: {'ok' if problem is None else 'invalid'}")
        for check in checks:
            print(f"{check.root}: {'ok' if check.valid else 'invalid'}")
    valid = all(c.valid for c in checks) and all(e is None for _, e in configs)
    return 0 if valid else 2
