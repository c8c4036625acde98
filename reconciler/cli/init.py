"""``dst init [PATH]``: scaffold a dst repository and its first lens.

Writes the files of :func:`reconciler.scaffold.plan_files` into ``PATH`` (default:
the current directory): ``lenses/<name>/`` with an example model, two metrics, a
draft answer and a seed CSV, all of which validate; ``dst.yaml``,
``schemas/*.schema.json`` and the command tier's ``schemas/generator/*.schema.json``
when missing (kept otherwise); a ``.dst/`` line in
``.gitignore``. Then it prints the next steps. :mod:`reconciler.cli.app` registers
:func:`init`.

Git: dst keeps lenses, serving refs and the pre-push hook in git, so ``PATH``
must be the root of a git repository (an empty one is fine). A directory outside
any repository is refused with the fix, unless ``--git`` is passed, which runs
the equivalent of ``git init`` there first; a directory *inside* a repository
but not at its root is refused, because dst reads ``lenses/`` at the root.

Nothing is overwritten: if any lens file exists, init stops before writing
anything (exit 2 naming the file), so running it twice is refused. Every file is
written atomically (temporary file, then link or rename).

With ``--warehouse URL`` the seeding step is ``dst seed --warehouse URL``: a bare
``dst seed`` builds only the embedded file and never writes a configured warehouse.

With ``--ci github --action OWNER/REPO@REF`` init also writes the GitHub workflows of
:func:`reconciler.scaffold.ci_files` (``.github/workflows/lens-check.yml``,
``lens-apply.yml`` and, when ``dst.yaml`` names environments, ``lens-promote.yml``),
each using the composite action of that dst repository and ref, with the webhook
secrets ``dst.yaml``'s ``notify:`` names; a workflow file that exists is kept. In a
repository that already has a lens, only the workflows are written (``"lens": null``).

Exit codes: 0 scaffolded; 2 bad input (an invalid ``--lens`` name, an existing
file, a warehouse URL that does not parse or holds a literal password, no git
repository without ``--git``, ``--ci`` without a pinned ``--action``, a ``dst.yaml``
that does not validate). ``--format json`` prints ``{"schema_version": 1,
"command": "init", "root", "lens", "git_initialized", "written", "kept", "next"}``.
"""

from __future__ import annotations

import json
import re
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.options import Format, FormatOpt
from reconciler.errors import UsageError
from reconciler.files import replace_file, write_new_file

if TYPE_CHECKING:
    from reconciler.scaffold import CiSettings, Scaffold

_ENV_ONLY = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def default_lens_name(directory: Path) -> str:
    """A lens name from a directory's name (``Sales Data`` → ``sales-data``), else ``main``."""
    # lazy: the lens model loads pydantic and sqlglot, which `dst --help` does not need
    from reconciler.lens import LENS_NAME_RE

    name = re.sub(r"[^a-z0-9_-]+", "-", directory.name.lower()).strip("-_")[:63]
    return name if LENS_NAME_RE.match(name) else "main"


def _dialect_of(url: str) -> str:
    """The sqlglot dialect of a warehouse URL; refuses unparsable URLs and literal passwords."""
    # lazy: URL parsing loads SQLAlchemy and sqlglot; only --warehouse needs them
    from reconciler.warehouse.urls import url_facts

    try:
        facts = url_facts(url)
    except ValueError:
        raise UsageError(
            "--warehouse is not a SQLAlchemy URL",
            fix="write it as dialect+driver://user@host/database, e.g. "
            "postgresql://analyst@db:5432/analytics",
        ) from None
    if facts.password is not None and not _ENV_ONLY.match(facts.password):
        raise UsageError(
            "--warehouse holds a password, which dst.yaml would commit to git",
            fix="write the password as an environment reference, e.g. "
            "postgresql://analyst:${PGPASSWORD}@db:5432/analytics, and export it",
        )
    return facts.dialect


def _git_root(target: Path, create: bool) -> bool:
    """Check that ``target`` is a repository root, or create one; True when created."""
    # lazy: reading git loads pygit2 and the lens model, which `dst --help` does not need
    from reconciler.git.trees import enclosing_root, init_repository

    root = enclosing_root(target)
    if root is not None:
        if root != target:
            raise UsageError(
                f"{target} is inside the git repository at {root}; dst reads lenses/ at "
                "the repository root",
                fix=f"run dst init {root}",
            )
        return False
    if not create:
        raise UsageError(
            f"{target} is not inside a git repository; dst keeps lenses and serving state in git",
            fix=f"run git init {target} first, or pass --git to let dst init create it",
        )
    target.mkdir(parents=True, exist_ok=True)
    init_repository(target)
    return True


def _check(target: Path, name: str, warehouse: str | None) -> Scaffold:
    """Refuse, before writing anything, what init cannot do; return the files to write."""
    # lazy: the scaffold renders JSON Schemas from the lens model (pydantic, sqlglot)
    from reconciler.lens import LENS_NAME_RE
    from reconciler.scaffold import plan_files

    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is not a directory", fix="pass a directory as PATH")
    if not LENS_NAME_RE.match(name):
        raise UsageError(
            f"--lens {name!r} is not a valid lens name",
            fix="use lowercase letters, digits, '-' and '_' (at most 63)",
        )
    dialect = _dialect_of(warehouse) if warehouse else "duckdb"
    if warehouse and (target / "dst.yaml").exists():
        raise UsageError(
            "dst.yaml already exists: dst init does not overwrite it",
            fix="set warehouse: in dst.yaml yourself, or drop --warehouse",
        )
    scaffold = plan_files(name, dialect=dialect, warehouse=warehouse)
    # The command tier's request and reply schemas, which the README points at
    # (schemas/generator/); the generators are a sibling layer of the scaffold.
    from reconciler.generators.payload import SCHEMAS_SUBDIR, schemas as tier_schemas
    from reconciler.schemas import SCHEMAS_DIR, render

    for filename, schema in tier_schemas().items():
        rel = f"{SCHEMAS_DIR}/{SCHEMAS_SUBDIR}/{filename}"
        scaffold.repo_files[rel] = render(schema).encode("utf-8")
    for rel in scaffold.lens_files:
        if (target / rel).exists():
            raise UsageError(
                f"{rel} already exists: dst init never overwrites a file",
                fix="choose another --lens name, or move the existing lens away",
            )
    return scaffold


def _write(target: Path, scaffold: Scaffold) -> tuple[list[str], list[str]]:
    """Write the scaffold's files: ``(written, kept)`` repository-relative paths.

    A lens file that appears meanwhile is refused (nothing of it overwritten); a
    repository file that exists is kept.
    """
    # lazy: the scaffold renders JSON Schemas from the lens model (pydantic, sqlglot)
    from reconciler.scaffold import gitignore_with_dst

    written: list[str] = []
    kept: list[str] = []
    for rel, data in scaffold.lens_files.items():
        try:
            write_new_file(target / rel, data)
        except FileExistsError:
            raise UsageError(
                f"{rel} appeared while dst init ran; nothing of it was overwritten",
                fix="check what else writes into the lens, then run dst init again",
            ) from None
        written.append(rel)
    for rel, data in scaffold.repo_files.items():
        try:
            write_new_file(target / rel, data)
            written.append(rel)
        except FileExistsError:
            kept.append(rel)
    ignore = target / ".gitignore"
    amended = gitignore_with_dst(ignore.read_text("utf-8") if ignore.exists() else None)
    if amended is not None:
        replace_file(ignore, amended.encode("utf-8"))
        written.append(".gitignore")
    return written, kept


def _seed_step(name: str, warehouse: str | None) -> tuple[str, str]:
    """Seeding is explicit for a configured warehouse: it may be production."""
    if warehouse is None:
        return "dst seed", f"build the embedded warehouse (.dst/) from lenses/{name}/seeds/"
    return (
        f'dst seed --warehouse "{warehouse}"',
        f"load lenses/{name}/seeds/ into schema {name} there, as an account that may create "
        "it; skip this if the warehouse already holds the tables",
    )


def _next_steps(name: str, warehouse: str | None = None) -> list[tuple[str, str]]:
    return [
        _seed_step(name, warehouse),
        ("dst validate", "check the lens files (editors and pre-commit can run it too)"),
        ("dst hooks install", "gate every push with the pre-push hook"),
        (f'git add -A && git commit -m "Add lens {name}"', "dst applies committed lenses"),
        ("dst apply", "gate and promote the lens (gate SKIPPED until an answer is certified)"),
        (f'dst certify --lens {name} --question "Revenue by region"', "certify an answer"),
    ]


class Ci(str, Enum):
    """CI systems ``dst init --ci`` writes workflows for."""

    github = "github"


_ACTION_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+@[A-Za-z0-9_./-]+$")


def _has_lens(target: Path) -> bool:
    lenses = target / "lenses"
    return lenses.is_dir() and any((d / "lens.yaml").is_file() for d in lenses.iterdir())


def _ci_settings(target: Path, action: str | None, scaffold: Scaffold | None) -> CiSettings:
    """What the workflows need from ``dst.yaml`` (the scaffold's when init writes it)."""
    # lazy: validating dst.yaml loads the lens model (pydantic, sqlglot)
    from reconciler.lensfiles import load_repo_config
    from reconciler.scaffold import CiSettings, seeded_in_ci

    if action is None or not _ACTION_RE.match(action):
        raise UsageError(
            "--ci github needs --action OWNER/REPO@REF: the dst repository and the tag "
            "or commit whose composite action (and dst) the workflows pin"
            + ("" if action is None else f"; got {action!r}"),
            fix="pass e.g. --action acme/dst@v0.1.0 (a fork or mirror of dst, at a tag)",
        )
    path = target / "dst.yaml"
    if scaffold is not None and "dst.yaml" in scaffold.repo_files and not path.exists():
        raw = scaffold.repo_files["dst.yaml"]
    else:
        raw = path.read_bytes() if path.is_file() else b""
    config = load_repo_config(raw)
    return CiSettings(
        action=action,
        webhooks=tuple(dict.fromkeys(hook.url_env for hook in config.notify)),
        environments={n: seeded_in_ci(e.warehouse) for n, e in config.environments.items()},
        seed_default=config.warehouse is None,
    )


def _write_ci(target: Path, files: dict[str, bytes]) -> tuple[list[str], list[str]]:
    written: list[str] = []
    kept: list[str] = []
    for rel, data in files.items():
        try:
            write_new_file(target / rel, data)
            written.append(rel)
        except FileExistsError:
            kept.append(rel)
    return written, kept


def _ci_steps(ci: CiSettings) -> list[tuple[str, str]]:
    steps = [
        (
            'git add .github/workflows && git commit -m "Add dst workflows"',
            "the workflows run from the default branch",
        )
    ]
    for name in ci.webhooks:
        steps.append((f"gh secret set {name}", "the webhook URL dst.yaml's notify: reads"))
    for env, seeded in (ci.environments or {}).items():
        if not seeded:
            steps.append(
                (
                    f"gh secret set DST_WAREHOUSE_URL --env {env}",
                    f"a read-only URL of {env}'s warehouse (else dst.yaml's applies)",
                )
            )
    return steps


def init(
    path: Annotated[
        Path | None, typer.Argument(help="Repository root (default: current directory).")
    ] = None,
    lens: Annotated[
        str | None, typer.Option("--lens", help="Lens name (default: from the directory).")
    ] = None,
    warehouse: Annotated[
        str | None, typer.Option("--warehouse", help="SQLAlchemy URL written to dst.yaml.")
    ] = None,
    git: Annotated[
        bool, typer.Option("--git", help="Create a git repository when PATH is not in one.")
    ] = False,
    ci: Annotated[
        Ci | None,
        typer.Option(
            "--ci",
            help="Also write CI workflows (github: .github/workflows/lens-*.yml); in a "
            "repository that already has lenses, write only those.",
        ),
    ] = None,
    action: Annotated[
        str | None,
        typer.Option(
            "--action",
            help="With --ci github: OWNER/REPO@REF of dst, whose action the workflows pin.",
        ),
    ] = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Scaffold a dst repository and an example lens that validates; print the next steps."""
    # lazy: the CI templates live beside the lens scaffold
    from reconciler.scaffold import ci_files

    target = (path or Path.cwd()).resolve()
    ci_only = ci is not None and _has_lens(target)
    name = lens if lens is not None else default_lens_name(target)
    scaffold = None if ci_only else _check(target, name, warehouse)
    settings = _ci_settings(target, action, scaffold) if ci is not None else None
    created = _git_root(target, git)
    written, kept = ([], []) if scaffold is None else _write(target, scaffold)
    steps = [] if scaffold is None else _next_steps(name, warehouse)
    if settings is not None:
        ci_written, ci_kept = _write_ci(target, ci_files(settings))
        written += ci_written
        kept += ci_kept
        steps += _ci_steps(settings)
        if not settings.environments:
            print(
                "note: dst.yaml names no environments:, so lens-promote.yml was not written; "
                "add environments and run dst init --ci github again",
                file=sys.stderr,
            )
    if ci_only:
        name = ""
    if fmt is Format.json:
        obj = {
            "schema_version": 1,
            "command": "init",
            "root": str(target),
            "lens": name or None,
            "git_initialized": created,
            "written": written,
            "kept": kept,
            "next": [cmd for cmd, _ in steps],
        }
        print(json.dumps(obj, indent=2))
        return 0
    if ci_only:
        print(f"wrote CI workflows in {target}")
    else:
        print(f"initialized lens {name} in {target}" + (" (new git repository)" if created else ""))
    for rel in written:
        print(f"  wrote {rel}")
    for rel in kept:
        print(f"  kept  {rel} (exists)")
    print("next steps:")
    width = max((len(cmd) for cmd, _ in steps), default=0)
    for cmd, why in steps:
        print(f"  {cmd:<{width}}  # {why}")
    return 0
