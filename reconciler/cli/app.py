"""The ``dst`` command line: parse options, call typed functions, render, exit.

Exit codes (STYLE §4, DESIGN §6): 0 ok or nothing to do; 1 gate blocked, stood
down, divergence, or a lost compare-and-swap (re-plan); 2 usage, configuration or
bad input; 3 unexpected (traceback written to a log file whose path is printed);
130 interrupted. Rendering never decides the exit code.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from reconciler import __version__
from reconciler.errors import DstError, RefConflict, UsageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="dst: plan, gate, promote and roll back text-to-SQL lenses from git.",
)
import_app: typer.Typer = typer.Typer(
    no_args_is_help=True, help="Turn other semantic layers into lenses."
)
app.add_typer(import_app, name="import")

T = TypeVar("T")


class Format(str, Enum):
    """Output format."""

    text = "text"
    json = "json"


RepoOpt = Annotated[Path | None, typer.Option("--repo", help="Repository path (default: cwd).")]
FormatOpt = Annotated[Format, typer.Option("--format", help="text or json (json on stdout).")]
WarehouseOpt = Annotated[
    str | None,
    typer.Option(
        "--warehouse", help="SQLAlchemy URL; overrides DST_WAREHOUSE_URL, lens and dst.yaml."
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No progress on stderr (a bar on a terminal, else lines)."),
]


JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        min=1,
        max=64,
        help="Answers verified at once (default: the lens's jobs:, else 1).",
    ),
]
ProfileOpt = Annotated[
    Path | None,
    typer.Option("--profile", help="Write cProfile stats of the command to this file."),
]


def _runtime(repo: Path | None, warehouse: str | None = None, jobs: int | None = None) -> Any:
    from reconciler.context import Runtime
    from reconciler.git.trees import open_repo

    return Runtime(open_repo(repo), warehouse_url=warehouse, jobs=jobs)


def _guarded(command: str, fmt: Format, body: Callable[[], int]) -> None:
    """Run a command body and map errors to exit codes; the only place that does."""
    try:
        code = body()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise typer.Exit(130) from None
    except DstError as exc:
        code = 1 if isinstance(exc, RefConflict) else exc.exit_code
        if fmt is Format.json:
            print(
                json.dumps(
                    {
                        "schema_version": 1,
                        "command": command,
                        "exit_code": code,
                        "error": {
                            "type": type(exc).__name__,
                            "message": exc.message,
                            "fix": exc.fix,
                        },
                    },
                    indent=2,
                )
            )
        print(f"dst {command}: error: {exc.render()}", file=sys.stderr)
    except BrokenPipeError:
        # The reader went away (`dst status | head`); the work itself is done.
        _silence_stdout()
        code = 0
    except Exception:
        fd, name = tempfile.mkstemp(prefix="dst-crash-", suffix=".log")
        with os.fdopen(fd, "w") as log:
            log.write(traceback.format_exc())
        print(f"dst {command}: unexpected error; traceback written to {name}", file=sys.stderr)
        code = 3
    raise typer.Exit(code)


def _silence_stdout() -> None:
    # Python flushes stdout at exit; after a broken pipe that flush fails too.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _emit(report: Any, fmt: Format, explain: bool = False) -> int:
    from reconciler.render import text as render

    text = (render.to_json if fmt is Format.json else render.to_text)(report, explain=explain)
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _silence_stdout()
    return int(report.exit_code)


@app.command()
def seed(
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            help="Seed this SQLAlchemy URL instead of the embedded DuckDB file; "
            "the tables the seeds name are replaced there.",
        ),
    ] = None,
) -> None:
    """Build the embedded DuckDB warehouse (.dst/) from every lens's seeds/*.csv."""

    def body() -> int:
        from reconciler.history import seed as do_seed

        rt = _runtime(repo)
        result = do_seed(rt, url=warehouse)
        tables = {t.name: t.rows for t in result.tables}
        if fmt is Format.json:
            print(
                json.dumps(
                    {
                        "schema_version": 1,
                        "command": "seed",
                        "warehouse": result.target,
                        "tables": tables,
                    },
                    indent=2,
                )
            )
        else:
            for table, rows in sorted(tables.items()):
                print(f"seeded {table}: {rows} rows")
            print(f"warehouse: {result.target}")
        return 0

    _guarded("seed", fmt, body)


def _plain(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "__dataclass_fields__"):
        return {k: getattr(obj, k) for k in obj.__dataclass_fields__}
    return dict(obj) if isinstance(obj, dict) else {"result": str(obj)}


@app.command()
def plan(
    to: Annotated[str, typer.Option("--to", help="Candidate revision.")] = "HEAD",
    lens: Annotated[str | None, typer.Option("--lens", help="Plan one lens.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Why each answer is stale.")] = False,
    profile: ProfileOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Show the plan: changed assets, stale answers, self-test. Runs nothing."""

    def body() -> int:
        from reconciler.cli.profiling import profiled
        from reconciler.reconcile import reconcile

        rt = _runtime(repo)
        with profiled(profile):
            report = reconcile(rt, to=to, only=lens, run_suite=False)
        return _emit(report, fmt, explain)

    _guarded("plan", fmt, body)


@app.command()
def apply(
    to: Annotated[str, typer.Option("--to", help="Candidate revision.")] = "HEAD",
    lens: Annotated[str | None, typer.Option("--lens", help="Apply one lens alone.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Gate without promoting.")] = False,
    allow_rewind: Annotated[
        bool, typer.Option("--allow-rewind", help="Promote even if it undoes what serves.")
    ] = False,
    warehouse: WarehouseOpt = None,
    quiet: QuietOpt = False,
    jobs: JobsOpt = None,
    profile: ProfileOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Plan → gate → self-test → promote, or roll the whole apply back."""

    def body() -> int:
        from reconciler.cli.profiling import profiled
        from reconciler.cli.progress import progress_for
        from reconciler.reconcile import reconcile

        rt = _runtime(repo, warehouse, jobs)
        try:
            with progress_for(rt, quiet=quiet), profiled(profile):
                report = reconcile(rt, to=to, only=lens, dry_run=dry_run, allow_rewind=allow_rewind)
            return _emit(report, fmt)
        finally:
            rt.close()

    _guarded("apply", fmt, body)


@app.command("test")
def test_cmd(
    lens: Annotated[str | None, typer.Argument(help="Lens to verify.")] = None,
    all_lenses: Annotated[bool, typer.Option("--all", help="Every serving lens.")] = False,
    warehouse: WarehouseOpt = None,
    quiet: QuietOpt = False,
    jobs: JobsOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Re-verify the whole active corpus of serving versions; green answers re-stamp."""

    def body() -> int:
        from reconciler.cli.progress import progress_for
        from reconciler.git import refs as refstore
        from reconciler.verify import verify

        rt = _runtime(repo, warehouse, jobs)
        if (lens is None) == (not all_lenses):
            raise UsageError(
                "name one lens or pass --all" + (", not both" if all_lenses else ""),
                fix="dst test LENS | dst test --all",
            )
        names = refstore.served_lenses(rt.repo) if all_lenses else [str(lens)]
        try:
            with progress_for(rt, quiet=quiet):
                report = verify(rt, names)
            return _emit(report, fmt)
        finally:
            rt.close()

    _guarded("test", fmt, body)


@app.command()
def status(repo: RepoOpt = None, fmt: FormatOpt = Format.text) -> None:
    """Serving version and last attempt of every lens, and any lock file left on refs/dst/."""

    def body() -> int:
        from reconciler.git.locks import ref_locks
        from reconciler.git.sync import UNKNOWN_STATE, state_known
        from reconciler.history import status as do_status

        rt = _runtime(repo)
        known = state_known(rt.repo)
        rows = do_status(rt)
        locks = ref_locks(rt.repo)
        if fmt is Format.json:
            print(
                json.dumps(
                    {
                        "schema_version": 1,
                        "command": "status",
                        "state_known": known,
                        "lenses": [r.record() for r in rows],
                        "locks": [{"path": k.path, "age_s": round(k.age_s, 1)} for k in locks],
                    },
                    indent=2,
                    default=str,
                )
            )
            return 0
        for lock in locks:
            print(f"warning: {lock.describe()}")
        if not known and not rows:
            print(UNKNOWN_STATE)
        for r in rows:
            sm, am = r.serving_meta, r.attempt_meta
            served = (
                (
                    f"serving {r.serving[:12]} ({sm.get('action')}, source "
                    f"{str(sm.get('source', ''))[:12]}, score "
                    f"{_short(sm.get('score'))})"
                )
                if r.serving
                else ("nothing serving" if known else UNKNOWN_STATE)
            )
            if r.retired and not r.serving:
                served = (
                    f"retired by {r.retired[:12]} (source "
                    f"{str(r.retired_meta.get('source', ''))[:12]} deleted the lens); "
                    f"nothing serving"
                )
            print(f"{r.lens}: {served}")
            newer = int(am.get("recorded_at", 0)) >= int(sm.get("recorded_at", 0))
            if r.attempt and (newer or not r.serving):
                print(
                    f"  last attempt {r.attempt[:12]}: {am.get('action')} source "
                    f"{str(am.get('source', ''))[:12]} — {am.get('reason', '')}"
                )
        return 0

    _guarded("status", fmt, body)


def _short(score: Any) -> str:
    if not score:
        return "n/a"
    return f"{score.get('correct', 0)}/{score.get('total', 0)}"


@app.command()
def rollback(
    lens: Annotated[str, typer.Argument(help="Lens name.")],
    to: Annotated[str | None, typer.Option("--to", help="Deployment to restore.")] = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Serve an earlier deployment's content again, as a new deployment commit."""

    def body() -> int:
        from reconciler.history import rollback as do_rollback

        return _emit(do_rollback(_runtime(repo), lens, to), fmt)

    _guarded("rollback", fmt, body)


@import_app.command("cortex")
def import_cortex(
    model: Annotated[Path, typer.Argument(help="Cortex Analyst semantic model YAML.")],
    lens: Annotated[str, typer.Option("--lens", help="Name of the lens to create.")],
    data: Annotated[Path | None, typer.Option("--data", help="Folder of CSVs to seed.")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Pinned date YYYY-MM-DD.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the lens.")] = False,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """Turn a Snowflake Cortex Analyst semantic model into a lens under lenses/."""

    def body() -> int:
        from reconciler.interop.importers.cortex import import_cortex as do_import
        from reconciler.interop.importers.cortex import write_lens

        rt = _runtime(repo)
        if not model.is_file():
            raise UsageError(f"{model}: no such file", fix="pass the semantic model YAML")
        ddl = [p.read_bytes() for p in sorted(model.parent.glob("*.sql"))]
        from reconciler.warehouse.seed import run_on_seeds

        files, report = do_import(
            model.read_bytes(),
            model_path=model.name,
            lens=lens,
            data_dir=data,
            ddl=ddl,
            as_of=as_of,
            run_oracles=run_on_seeds if data is not None else None,
        )
        write_lens(rt.root, lens, files, overwrite=overwrite)
        obj = {"schema_version": 1, "command": "import cortex", **_plain(report)}
        if fmt is Format.json:
            print(json.dumps(obj, indent=2, default=str))
        else:
            print(
                f"imported lens {lens}: {report.models} models, {report.metrics} metrics, "
                f"{report.answers} answers, seeds {dict(report.seeds)}"
            )
            for item in report.unmapped:
                print(f"  not mapped: {item}")
        return 0

    _guarded("import cortex", fmt, body)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        print(f"dst {__version__}")
        raise typer.Exit(0)


# Mounted last: each sub-app imports the helpers defined above.
from reconciler.cli.hooks import hooks_app  # noqa: E402

app.add_typer(hooks_app, name="hooks")
from reconciler.cli.sync import sync_app  # noqa: E402

app.add_typer(sync_app)
from reconciler.cli.ci import ci_app  # noqa: E402

app.add_typer(ci_app, name="ci")
from reconciler.cli.watch import watch as watch_command  # noqa: E402

app.command("watch")(watch_command)
from reconciler.cli.coverage import coverage as coverage_command  # noqa: E402

app.command("coverage")(coverage_command)
from reconciler.cli.validate import validate_app  # noqa: E402

app.add_typer(validate_app)
from reconciler.cli.log import log as log_command  # noqa: E402

app.command("log")(log_command)
from reconciler.cli.certify import certify as certify_command  # noqa: E402

app.command("certify")(certify_command)
from reconciler.cli.ask import ask as ask_command  # noqa: E402

app.command("ask")(ask_command)
from reconciler.cli.report import report as report_command  # noqa: E402

app.command("report")(report_command)
from reconciler.cli.init import init as init_command  # noqa: E402

app.command("init")(init_command)
from reconciler.cli.mutate import mutate as mutate_command  # noqa: E402

app.command("mutate")(mutate_command)
from reconciler.cli.interop import export_app  # noqa: E402  (also adds `import dbt`)

app.add_typer(export_app, name="export")
from reconciler.cli.evals import evals_app  # noqa: E402

app.add_typer(evals_app)
