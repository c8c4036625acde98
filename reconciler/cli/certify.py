"""``dst certify``: a person certifies an answer after seeing its SQL and executed result.

The flow: load the lens from the working tree → refuse an answer id that is
taken → generate the SQL through the suite's own assembly and generator (or read
``--sql FILE``) → check the lens still loads with the new answer → execute the
SQL read-only on the lens's warehouse → show the SQL and the result (a table of
at most :data:`SHOWN_ROWS` rows) → ask → write ``lenses/<lens>/answers/<id>.yaml``
atomically. :mod:`reconciler.cli.app` registers :func:`certify`.

Confirmation: on a terminal the person answers a yes/no prompt, and ``--by``
defaults to ``git config user.name`` (asked for when unset). Without a terminal
``--yes --by NAME`` is required, naming the person who reviewed the SQL (with
``--dry-run`` first, or with their own ``--sql FILE``); ``--dry-run`` shows the
SQL and result and writes nothing, with or without a terminal.

Exit codes: 0 certified (or a dry run); 1 nothing certified (the generator
declined, or the person said no); 2 bad input (unknown lens, id taken, no
terminal without ``--yes``, ``--yes`` without ``--by``, SQL that is unsafe,
fails or returns more than ``row_cap`` rows, a warehouse that cannot be reached).
With ``--format json`` the preview and prompt go to stderr and stdout holds one
object: ``{"schema_version": 1, "command": "certify", "lens", "answer", "status":
"certified|dry_run|declined|not_confirmed", "path", "candidate", "result",
"provenance"}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reconciler.cli.common import runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt, WarehouseOpt
from reconciler.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from reconciler.certify import Candidate
    from reconciler.lens import Lens
    from reconciler.resultset import ResultSet

SHOWN_ROWS = 20


def _mode(yes: bool, by: str | None, dry_run: bool) -> None:
    """Refuse, before any work, a confirmation that cannot happen."""
    if (yes and by is None) or (by is not None and not by.strip()):
        raise UsageError(
            "--yes needs --by NAME: only a person certifies, and the answer records who",
            fix='pass --by "Your Name" (the person who reviewed the SQL and its result)',
        )
    if not yes and not dry_run and not sys.stdin.isatty():
        raise UsageError(
            "no terminal to confirm on: dst certify shows the SQL and its result and asks",
            fix="run it in a terminal; or review with --dry-run, then pass "
            '--yes --by "Your Name" (add --sql FILE to certify your own SQL)',
        )


def _console(fmt: Format) -> Console:
    # lazy: rich's console loads only when certify shows a result
    from rich.console import Console

    return Console(file=sys.stderr if fmt is Format.json else sys.stdout, highlight=False)


def _show(console: Console, lens: str, candidate: Candidate, result: ResultSet) -> None:
    # lazy: rich's renderables load only when certify shows a result
    from rich.syntax import Syntax
    from rich.table import Table

    what = (
        f"hand-written SQL from {candidate.origin}"
        if candidate.origin
        else f"SQL from the {candidate.tier} generator tier"
    )
    console.print(f"[bold]{lens}[/bold]: {candidate.question}")
    console.print(f"{what}:")
    sql = str(candidate.sql).strip()
    # Syntax pads every line to the console width: colour on a terminal, plain text elsewhere.
    console.print(Syntax(sql, "sql", word_wrap=True) if console.is_terminal else sql, markup=False)
    table = Table(*result.columns, title="executed result", title_justify="left")
    for row in result.rows[:SHOWN_ROWS]:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    console.print(table)
    rows = len(result.rows)
    shown = f"showing {SHOWN_ROWS} of {rows} rows" if rows > SHOWN_ROWS else f"{rows} rows"
    console.print(f"{shown}, {len(result.columns)} columns, {result.elapsed_s:.3f} s")
    if rows == 0:
        console.print("[bold]warning[/bold]: no rows: an empty oracle verifies very little")


def _git_user(rt: Any) -> str | None:
    try:
        name = str(rt.repo.config["user.name"]).strip()
    except (KeyError, ValueError):
        return None
    return name or None


def _emit(fmt: Format, obj: dict[str, Any], line: str) -> None:
    if fmt is Format.json:
        print(json.dumps({"schema_version": 1, "command": "certify", **obj}, indent=2))
    else:
        print(line)


def _free_answer_id(
    lens: Lens, files: Mapping[str, bytes], question: str, given: str | None
) -> str:
    """The new answer's id; refuses one that is taken or a question already certified."""
    # lazy: reconciler loads the engines, which `dst --help` does not need
    from reconciler import certify as cert

    aid = cert.answer_id_for(question, given)
    taken = cert.existing_answer(lens, files, aid)
    if taken is not None:
        raise UsageError(
            f"{lens.root}/{taken} already holds answer {aid!r}: refusing to overwrite it",
            fix="pass another --id, or edit that file if the answer itself must change",
        )
    twin = cert.same_question(lens, question)
    if twin is not None:
        where = lens.sources.get(f"answers/{twin.id}", cert.answer_path(twin.id))
        raise UsageError(
            f"{lens.root}/{where} already certifies this question (answer {twin.id!r})",
            fix="rephrase the question, or retire that answer (status: retired) first",
        )
    return aid


def certify(
    lens: Annotated[str, typer.Option("--lens", help="Lens the answer joins.")],
    question: Annotated[str, typer.Option("--question", help="The question, as users ask it.")],
    answer_id: Annotated[
        str | None, typer.Option("--id", help="Answer id (default: the question slugged).")
    ] = None,
    sql_file: Annotated[
        Path | None,
        typer.Option("--sql", help="Certify this file's SQL instead of the generated one."),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="Confirmed already (needs --by; for no terminal).")
    ] = False,
    by: Annotated[
        str | None,
        typer.Option("--by", help="Who certifies (default on a terminal: git user.name)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the SQL and result; write nothing.")
    ] = False,
    warehouse: WarehouseOpt = None,
    repo: RepoOpt = None,
    fmt: FormatOpt = Format.text,
) -> int:
    """Certify an answer: generate (or read) its SQL, execute it, show both, ask, write."""
    # lazy: reconciler.certify loads the engines, which `dst --help` does not need
    from reconciler import certify as cert

    _mode(yes, by, dry_run)
    rt = runtime(repo, warehouse)
    the_lens, files = _working_lens(rt, lens)
    aid = _free_answer_id(the_lens, files, question, answer_id)
    sql = _read_sql(sql_file)
    try:
        executor = rt.warehouse_for(the_lens)
        values = rt.values_for(the_lens, executor) if sql is None else {}
        origin = sql_file.name if sql_file is not None else None
        smart = rt.smart_for(the_lens)[0] if sql is None else None
        candidate = cert.propose(the_lens, question, values, sql=sql, origin=origin, smart=smart)
        base: dict[str, Any] = {
            "lens": lens,
            "answer": aid,
            "candidate": candidate.record(),
            "provenance": None,
        }
        if candidate.sql is None:
            return _declined(fmt, base, question, candidate)
        at = cert.utc_now()
        run = cert.run_id(candidate, at)
        # Checked before executing: an answer the loader rejects is never shown as certifiable.
        # The person is asked for only after the result is shown; until then a stand-in
        # name (or --by, so a placeholder there fails now) lets the lens load.
        check_by = by if by is not None else "the certifier"
        cert.answer_file(the_lens, files, aid, candidate, cert.Signoff(by=check_by, at=at, run=run))
        cfg = the_lens.config
        result = executor.execute(
            candidate.sql,
            row_cap=cfg.row_cap,
            timeout_s=cfg.statement_timeout_s,
            as_of=cfg.as_of,
        )
    finally:
        rt.close()
    if result.truncated:
        raise UsageError(
            f"the SQL returns more than row_cap={cfg.row_cap} rows; an oracle over the cap "
            "cannot be verified",
            fix="narrow the question (a filter, a top N) or raise row_cap in lens.yaml",
        )
    _show(_console(fmt), lens, candidate, result)
    base["result"] = result.preview(SHOWN_ROWS)
    if dry_run:
        _emit(fmt, {**base, "status": "dry_run", "path": None}, "dry run: nothing written")
        return 0
    if not yes and not _confirmed(aid, lens, fmt):
        _emit(fmt, {**base, "status": "not_confirmed", "path": None}, "not certified")
        return 1
    person = _person(rt, by, fmt)
    draft = _Draft(the_lens, files, aid, candidate, run, result)
    return _write(rt, draft, person, fmt, base)


def _confirmed(aid: str, lens: str, fmt: Format) -> bool:
    """Ask the person on the terminal whether to certify (default: no)."""
    question = f"Certify this SQL as the answer {aid!r} of lens {lens!r}?"
    return typer.confirm(question, default=False, err=fmt is Format.json)


def _person(rt: Any, by: str | None, fmt: Format) -> str:
    """Who certifies: ``--by``, else ``git config user.name``, else asked on the terminal."""
    person = by if by is not None else _git_user(rt)
    if person is None:
        person = typer.prompt("Certified by (your name)", err=fmt is Format.json)
    return str(person)


def _working_lens(rt: Any, lens: str) -> tuple[Lens, dict[str, bytes]]:
    """The lens ``lens`` as the working tree holds it, and its files.

    Raises:
        UsageError: there is no such lens in ``lenses/``.
        LensLoadError: the lens does not load.
    """
    # lazy: the lens model loads pydantic and sqlglot, which `dst --help` does not need
    from reconciler.git.trees import worktree_files, worktree_lens_names
    from reconciler.lens import load_lens

    names = worktree_lens_names(rt.root)
    if lens not in names:
        raise UsageError(
            f"no lens {lens!r} in lenses/ of the working tree",
            fix=f"use one of: {', '.join(names) or 'none (dst init creates one)'}",
        )
    files = worktree_files(rt.root, lens)
    return load_lens(lens, files), files


def _read_sql(sql_file: Path | None) -> str | None:
    """The text of ``--sql FILE`` (``None`` without it); refuses a missing file."""
    if sql_file is None:
        return None
    if not sql_file.is_file():
        raise UsageError(f"{sql_file}: no such file", fix="pass --sql FILE with the query")
    return sql_file.read_text(encoding="utf-8-sig")


def _declined(fmt: Format, base: dict[str, Any], question: str, candidate: Candidate) -> int:
    """Say the generator declined (stderr), report nothing certified; exit code 1."""
    print(
        f"dst certify: the generator declined {question!r}: {candidate.declined}",
        file=sys.stderr,
    )
    _emit(
        fmt,
        {**base, "status": "declined", "path": None, "result": None},
        "nothing certified: rephrase the question, add the metric or dimension it "
        "needs to the lens, or pass your own SQL with --sql FILE",
    )
    return 1


@dataclass(frozen=True)
class _Draft:
    """What a person is asked to certify: the answer's lens, id, SQL and executed result."""

    lens: Lens
    files: dict[str, bytes]
    answer: str
    candidate: Candidate
    run: str
    result: ResultSet


def _write(rt: Any, draft: _Draft, person: str, fmt: Format, base: dict[str, Any]) -> int:
    """Write the confirmed answer file, certified by ``person`` now; report it; exit 0."""
    # lazy: reconciler.certify loads the engines, which `dst --help` does not need
    from reconciler import certify as cert

    answer, content = cert.answer_file(
        draft.lens,
        draft.files,
        draft.answer,
        draft.candidate,
        cert.Signoff(by=person, at=cert.utc_now(), run=draft.run),  # the moment the person said yes
        result_shape=(len(draft.result.rows), len(draft.result.columns)),
    )
    rel = cert.write_answer(rt.root, draft.lens.root, draft.answer, content)
    provenance = answer.provenance.model_dump(mode="json")
    _emit(
        fmt,
        {**base, "status": "certified", "path": rel, "provenance": provenance},
        f"certified {rel} by {answer.provenance.certified_by}\n"
        f"next: git add {rel} && git commit, then dst apply (it self-tests the new answer)",
    )
    return 0
