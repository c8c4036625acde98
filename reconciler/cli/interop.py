"""``dst import dbt`` and ``dst export cortex``: semantic layers in and out of lenses.

``import dbt`` is registered on the ``import`` app of :mod:`reconciler.cli.app` (next to
``import cortex``); ``export_app`` holds ``export cortex`` and is mounted by
``cli.py`` as ``dst export``. Both print a report of what was mapped and one line
per item that could not be, with the reason; ``--format json`` prints it as one
object. Exit codes: 0 written; 2 bad input (file and line), an existing lens
without ``--overwrite``, or an export target that exists without ``--overwrite``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

export_app = typer.Typer(no_args_is_help=True, help="Write lenses in other semantic-layer formats.")

from reconciler.cli.app import (  # noqa: E402
    Format,
    FormatOpt,
    RepoOpt,
    _guarded,
    _plain,
    _runtime,
    import_app,
)
from reconciler.errors import UsageError  # noqa: E402


@import_app.command("dbt")
def import_dbt(
    source: Annotated[
        Path, typer.Argument(help="dbt project directory, manifest YAML folder, or manifest file.")
    ],
    lens: Annotated[str, typer.Option("--lens", help="Name of the lens to create.")],
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Folder of seed CSVs or MetricFlow table snapshots."),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the lens.")] = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Turn a dbt semantic layer (MetricFlow or legacy metrics) into a lens under lenses/."""

    def body() -> int:
        from reconciler.interop.importers.dbt import import_dbt as do_import
        from reconciler.interop.importers.dbt import write_lens
        from reconciler.interop.importers.dbt_source import collect

        rt = _runtime(repo)
        sources, data_files, name = collect(source, data)
        files, report = do_import(sources, source_name=name, lens=lens, data=data_files)
        write_lens(rt.root, lens, files, overwrite=overwrite)
        if fmt is Format.json:
            obj = {"schema_version": 1, "command": "import dbt", **_plain(report)}
            print(json.dumps(obj, indent=2, default=str))
        else:
            print(
                f"imported lens {lens}: {report.models} models, {report.metrics} metrics, "
                f"{report.exemplars} exemplars, seeds {dict(report.seeds)}"
            )
            for item in report.unmapped:
                print(f"  not mapped: {item}")
        return 0

    _guarded("import dbt", fmt, body)


@export_app.command("cortex")
def export_cortex(
    lens: Annotated[str, typer.Argument(help="Lens to export (lenses/<LENS>).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="File to write (default: stdout).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out.")] = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Write a lens as a Snowflake Cortex Analyst semantic model YAML."""

    def body() -> int:
        from reconciler.git.trees import worktree_files
        from reconciler.interop.exporters.cortex import export_cortex as do_export
        from reconciler.lens import load_lens

        rt = _runtime(repo)
        if not (rt.root / "lenses" / lens / "lens.yaml").is_file():
            raise UsageError(f"lenses/{lens}: no such lens", fix="name a lens under lenses/")
        loaded = load_lens(lens, worktree_files(rt.root, lens))
        text, report = do_export(loaded)
        if out is None and fmt is Format.json:
            raise UsageError("--format json prints the report", fix="pass --out FILE for the YAML")
        if out is not None:
            if out.exists() and not overwrite:
                raise UsageError(f"{out} already exists", fix="pass --overwrite to replace it")
            out.write_bytes(text)
        else:
            print(text.decode("utf-8"), end="")
        if fmt is Format.json:
            obj = {"schema_version": 1, "command": "export cortex", "out": str(out)}
            print(json.dumps({**obj, **_plain(report)}, indent=2, default=str))
        else:
            # With the YAML on stdout, the report goes to stderr.
            stream = sys.stdout if out is not None else sys.stderr
            print(
                f"exported lens {lens} to {out or 'stdout'}: {report.tables} tables, "
                f"{report.facts} facts, {report.metrics} metrics, "
                f"{report.relationships} relationships, {report.verified_queries} verified queries",
                file=stream,
            )
            for item in report.unmapped:
                print(f"  not mapped: {item}", file=stream)
        return 0

    _guarded("export cortex", fmt, body)
