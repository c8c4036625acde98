"""``dst import cortex|dbt`` and ``dst export cortex``: semantic layers in and out of lenses.

``import_app`` holds ``import cortex`` and ``import dbt`` and ``export_app`` holds
``export cortex``; :mod:`reconciler.cli.app` mounts them as ``dst import`` and
``dst export``. Each prints a report of what was mapped, one line per problem the data showed
(a table no seed creates, a non-unique key, an empty or relative-dated oracle)
and one line per item that could not be mapped, with the reason; ``--format
json`` prints it as one object.
Exit codes: 0 written; 2 bad input (file and line), an existing lens without
``--overwrite``, or an export target that exists without ``--overwrite``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.common import plain, runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt
from reconciler.errors import UsageError

if TYPE_CHECKING:
    from reconciler.interop.importers import ImportReport

import_app = typer.Typer(no_args_is_help=True, help="Turn other semantic layers into lenses.")
export_app = typer.Typer(no_args_is_help=True, help="Write lenses in other semantic-layer formats.")


@import_app.command("cortex")
def import_cortex(
    model: Annotated[Path, typer.Argument(help="Cortex Analyst semantic model YAML.")],
    lens: Annotated[str, typer.Option("--lens", help="Name of the lens to create.")],
    data: Annotated[Path | None, typer.Option("--data", help="Folder of CSVs to seed.")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Pinned date YYYY-MM-DD.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the lens.")] = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Turn a Snowflake Cortex Analyst semantic model into a lens under lenses/."""
    # lazy: the importer loads sqlglot and pydantic; `dst --help` does not need them
    from reconciler.interop.importers import LensSettings
    from reconciler.interop.importers.cortex import import_cortex as do_import, write_lens
    from reconciler.warehouse.seed import run_on_seeds

    rt = runtime(repo)
    if not model.is_file():
        raise UsageError(f"{model}: no such file", fix="pass the semantic model YAML")
    ddl = [p.read_bytes() for p in sorted(model.parent.glob("*.sql"))]
    files, report = do_import(
        model.read_bytes(),
        model_path=model.name,
        lens=lens,
        data_dir=data,
        ddl=ddl,
        settings=LensSettings(as_of=as_of),
        run_oracles=run_on_seeds if data is not None else None,
    )
    write_lens(rt.root, lens, files, overwrite=overwrite)
    return _imported(fmt, "import cortex", report, f"{report.answers} answers")


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
) -> int:
    """Turn a dbt semantic layer (MetricFlow or legacy metrics) into a lens under lenses/."""
    # lazy: the importer loads sqlglot and pydantic; `dst --help` does not need them
    from reconciler.interop.importers.dbt import import_dbt as do_import, write_lens
    from reconciler.interop.importers.dbt_source import collect
    from reconciler.warehouse.seed import run_on_seeds

    rt = runtime(repo)
    sources, data_files, name = collect(source, data)
    runner = run_on_seeds if data_files else None
    files, report = do_import(
        sources, source_name=name, lens=lens, data=data_files, run_oracles=runner
    )
    write_lens(rt.root, lens, files, overwrite=overwrite)
    return _imported(fmt, "import dbt", report, f"{report.exemplars} exemplars")


def _imported(fmt: Format, command: str, report: ImportReport, examples: str) -> int:
    """Print what an import wrote (JSON: the report; text: counts and what was not mapped)."""
    if fmt is Format.json:
        obj = {"schema_version": 1, "command": command, **plain(report)}
        obj["problems"] = [problem.record() for problem in report.problems]
        print(json.dumps(obj, indent=2, default=str))
        return 0
    print(
        f"imported lens {report.lens}: {report.models} models, {report.metrics} metrics, "
        f"{examples}, seeds {dict(report.seeds)}"
    )
    for problem in report.problems:
        print(f"  problem ({problem.kind.value}): {problem.message}")
    for item in report.unmapped:
        print(f"  not mapped: {item}")
    return 0


@export_app.command("cortex")
def export_cortex(
    lens: Annotated[str, typer.Argument(help="Lens to export (lenses/<LENS>).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="File to write (default: stdout).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out.")] = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Write a lens as a Snowflake Cortex Analyst semantic model YAML."""
    # lazy: the exporter loads sqlglot and pydantic; `dst --help` does not need them
    from reconciler.git.trees import worktree_files
    from reconciler.interop.exporters.cortex import export_cortex as do_export
    from reconciler.lens import load_lens

    rt = runtime(repo)
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
        print(json.dumps({**obj, **plain(report)}, indent=2, default=str))
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
