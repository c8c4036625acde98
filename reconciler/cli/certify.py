"""``dst certify``: a person certifies an answer after seeing its SQL and executed result.

The flow: load the lens from the working tree → refuse an answer id that is
taken → generate the SQL through the suite's own assembly and generator (or read
``--sql FILE``) → check the lens still loads with the new answer → execute the
SQL read-only on the lens's warehouse → show the SQL and the result (a table of
at most :data:`SHOWN_ROWS` rows) → ask → write ``lenses/<lens>/answers/<id>.yaml``
atomically. :mod:`reconciler.cli.app` registers :func:`certify`.

``--replace ID`` re-certifies the active answer ID (its id and question stay):
the new SQL is generated with that answer kept out of its own exemplars (or read
from ``--sql FILE``), both SQL texts and both executed results are shown side by
side with how they differ, and on a yes the file is rewritten atomically with new
provenance (the person, now, what produced the SQL). An unknown ID (the closest
ids are listed), a retired answer or a draft is refused with what to do instead.

What the result cannot prove is said before the question: an *ambiguous* oracle
(its top-level LIMIT cuts through tied rows, or limits without ORDER BY) asks for
a tie-breaker; an empty one asks for the ``expect_empty`` mark (``--expect-empty``,
or a second question on a terminal). The closing "next:" line is the ``git add``
of the answer and of every uncommitted lens file in its dependency set.

Confirmation: on a terminal the person answers a yes/no prompt, and ``--by``
defaults to ``git config user.name`` (asked for when unset). Without a terminal
``--yes --by NAME`` is required, naming the person who reviewed the SQL (with
``--dry-run`` first, or with their own ``--sql FILE``); ``--dry-run`` shows the
SQL and result and writes nothing, with or without a terminal. Ctrl-C at a
prompt exits 130 and writes nothing.

Exit codes: 0 certified (or a dry run); 1 nothing certified (the generator
declined, or the person said no); 2 bad input (unknown lens, id taken, no
terminal without ``--yes``, ``--yes`` without ``--by``, SQL that is unsafe,
fails or returns more than ``row_cap`` rows — for ``--sql FILE`` named as
``FILE:line`` — a warehouse that cannot be reached, an ID ``--replace`` cannot
take). With ``--format json`` the preview and prompt go to stderr and stdout
holds one object: ``{"schema_version": 1, "command": "certify", "lens",
"answer", "status": "certified|dry_run|declined|not_confirmed", "path",
"candidate", "result", "notes", "previous", "provenance", "git_add"}``
(``previous``: the replaced answer's ``sql``, ``provenance``, ``result`` and
``error``, else ``null``; ``git_add`` only once written).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reconciler.cli.common import colour_wanted, ctrl_c_interrupts, runtime
from reconciler.cli.options import Format, FormatOpt, RepoOpt, WarehouseOpt
from reconciler.cli.preview import SHOWN_ROWS, previous_of, show, show_beside
from reconciler.errors import DstError, LensLoadError, UsageError, WarehouseError

if TYPE_CHECKING:
    from rich.console import Console

    from reconciler.certify import Candidate, Replacement, Signoff
    from reconciler.lens import Answer, Lens
    from reconciler.resultset import Executor, ResultSet


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

    out = sys.stderr if fmt is Format.json else sys.stdout
    # NO_COLOR (and a pipe) means no styling at all: rich's own no_color keeps bold and
    # italics, so the colour system is switched off instead
    styled = colour_wanted(out)
    return Console(file=out, highlight=False, color_system="auto" if styled else None)


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
    question: Annotated[
        str | None,
        typer.Option("--question", help="The question, as users ask it (not with --replace)."),
    ] = None,
    answer_id: Annotated[
        str | None, typer.Option("--id", help="Answer id (default: the question slugged).")
    ] = None,
    replace: Annotated[
        str | None,
        typer.Option(
            "--replace",
            metavar="ID",
            help="Re-certify the active answer ID: show its SQL and result beside the new ones.",
        ),
    ] = None,
    sql_file: Annotated[
        Path | None,
        typer.Option("--sql", help="Certify this file's SQL instead of the generated one."),
    ] = None,
    expect_empty: Annotated[
        bool,
        typer.Option("--expect-empty", help="An empty result is the answer (expect_empty: true)."),
    ] = False,
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
    from reconciler.assembly.lookup import looked_up
    from reconciler.guard.sqlfile import check_sql_file
    from reconciler.ids import AnswerId

    _mode(yes, by, dry_run)
    rt = runtime(repo, warehouse)
    the_lens, files = _working_lens(rt, lens)
    target, question, aid = _subject(the_lens, files, question, answer_id, replace)
    sql = _read_sql(sql_file)
    line = (
        check_sql_file(str(sql_file), sql, the_lens.config.dialect, the_lens.config.allow_functions)
        if sql is not None
        else None
    )
    try:
        executor = rt.warehouse_for(the_lens)
        values = (
            looked_up(the_lens, question, executor, rt.values_for(the_lens, executor))
            if sql is None
            else {}
        )
        origin = sql_file.name if sql_file is not None else None
        smart = rt.smart_for(the_lens)[0] if sql is None else None
        command = rt.command_for(the_lens) if sql is None else None
        exclude = AnswerId(aid) if target is not None else None
        candidate = cert.propose(
            the_lens,
            question,
            values,
            sql=sql,
            origin=origin,
            smart=smart,
            exclude=exclude,
            command=command,
        )
        base: dict[str, Any] = {
            "lens": lens,
            "answer": aid,
            "candidate": candidate.record(),
            "provenance": None,
            "previous": None,
        }
        if candidate.sql is None:
            return _declined(fmt, base, question, candidate)
        at = cert.utc_now()
        run = cert.run_id(candidate, at)
        # Checked before executing: an answer the loader rejects is never shown as certifiable.
        # The person is asked for only after the result is shown; until then a stand-in
        # name (or --by, so a placeholder there fails now) lets the lens load.
        check_by = by if by is not None else "the certifier"
        draft = _Draft(the_lens, files, aid, candidate, run, target)
        draft.signed(cert.Signoff(by=check_by, at=at, run=run), expect_empty)
        result = _execute(executor, the_lens, candidate.sql, sql_file, line)
        if expect_empty and result.rows:
            raise UsageError(
                f"--expect-empty: the SQL returns {len(result.rows)} row(s); only an answer "
                "whose result is empty may be marked expect_empty: true",
                fix="drop --expect-empty, or correct the SQL if no rows is the answer",
            )
        notes = _evidence(executor, the_lens, candidate.sql, result, expect_empty)
        previous = previous_of(executor, the_lens, target)
    finally:
        rt.close()
    console = _console(fmt)
    if previous is not None:
        base["previous"] = previous.record()
        show_beside(console, lens, previous, candidate, result)
    else:
        show(console, lens, candidate, result)
    for note in notes:
        console.print(f"warning: {note}", markup=False, soft_wrap=True)
    base["result"] = result.preview(SHOWN_ROWS)
    base["notes"] = list(notes)
    if dry_run:
        _emit(fmt, {**base, "status": "dry_run", "path": None}, "dry run: nothing written")
        return 0
    if not yes and not _confirmed(aid, lens, fmt, replacing=target is not None):
        _emit(fmt, {**base, "status": "not_confirmed", "path": None}, "not certified")
        return 1
    if not yes and not expect_empty and not result.rows:
        with ctrl_c_interrupts():
            expect_empty = typer.confirm(
                "The result is empty. Is an empty result the answer (mark it expect_empty: true)?",
                default=False,
                err=fmt is Format.json,
            )
    person = _person(rt, by, fmt)
    return _write(rt, dataclasses.replace(draft, result=result), person, fmt, base, expect_empty)


def _subject(
    lens: Lens,
    files: Mapping[str, bytes],
    question: str | None,
    given: str | None,
    replace: str | None,
) -> tuple[Replacement | None, str, str]:
    """``(the answer replaced or None, the question, the answer id)`` of this certification."""
    # lazy: reconciler.certify loads the engines, which `dst --help` does not need
    from reconciler import certify as cert

    if replace is None:
        if question is None:
            raise UsageError(
                "--question is required to certify a new answer",
                fix='pass --question "…", or --replace ID to re-certify an existing answer',
            )
        return None, question, _free_answer_id(lens, files, question, given)
    if question is not None or given is not None:
        raise UsageError(
            "--replace ID keeps the answer's id and question: --question and --id do not apply",
            fix=f"drop --question/--id, or certify a new answer without --replace {replace}",
        )
    target = cert.replacement_target(lens, files, replace)
    return target, target.answer.question, target.answer.id


def _execute(
    executor: Executor, lens: Lens, sql: str, sql_file: Path | None, line: int | None
) -> ResultSet:
    """Execute the candidate SQL read-only, capped; errors of ``--sql FILE`` name FILE:line.

    Raises:
        LensLoadError: ``--sql FILE``'s query failed on the warehouse.
        WarehouseError: generated SQL failed, or the warehouse cannot be reached.
        UsageError: the result is over ``row_cap``.
    """
    cfg = lens.config
    try:
        result = executor.execute(
            sql, row_cap=cfg.row_cap, timeout_s=cfg.statement_timeout_s, as_of=cfg.pinned_as_of
        )
    except WarehouseError as exc:
        if sql_file is None:
            raise
        raise LensLoadError(
            str(sql_file),
            f"the query failed on the warehouse: {exc.message}",
            line=line,
            fix="correct the query in that file (the tables and columns the warehouse has)",
        ) from None
    if result.truncated:
        where = f"{sql_file}: " if sql_file is not None else ""
        raise UsageError(
            f"{where}the SQL returns more than row_cap={cfg.row_cap} rows; an oracle over the cap "
            "cannot be verified",
            fix="narrow the question (a filter, a top N) or raise row_cap in lens.yaml",
        )
    return result


def _evidence(
    executor: Executor, lens: Lens, sql: str, result: ResultSet, expect_empty: bool
) -> tuple[str, ...]:
    """What makes this oracle weak evidence: an ambiguous LIMIT, or no rows (DESIGN §4).

    An ambiguous oracle asks for a tie-breaker; an empty one asks for the
    ``expect_empty`` mark (``--expect-empty``, or a question on the terminal).
    """
    # lazy: the comparison loads sqlglot, which `dst --help` does not need
    from reconciler.compare.ties import ambiguity, limit_cut

    notes: list[str] = []
    cfg = lens.config
    cut = limit_cut(sql, cfg.dialect)
    if cut is not None and len(result.rows) == cut.limit:
        unlimited = _capped(executor, lens, cut.unlimited_sql)
        found = ambiguity(cut, result, unlimited) if unlimited is not None else None
        if found is not None:
            notes.append(found + " before certifying")
    if not notes:
        notes.extend(_broken_tie(executor, lens, sql, result))
    if not result.rows and not expect_empty:
        notes.append(
            "vacuous oracle: no rows, so an empty generated result proves little; if an empty "
            "result is the answer, mark it with --expect-empty"
        )
    return tuple(notes)


def _broken_tie(executor: Executor, lens: Lens, sql: str, result: ResultSet) -> tuple[str, ...]:
    """A tie at the cut that the ranked keys do not settle ("ORDER BY count(*) DESC, name
    LIMIT 1" where three doctors tie on the count, or a count that is not an output
    column): the tie gate of ``dst ask`` would keep every tied row, so the person
    certifying is told the tie is there (one bounded probe, :mod:`reconciler.probes.cuts`)."""
    # lazy: as above
    from reconciler.probes.cuts import cut_of

    cfg = lens.config
    cut = cut_of(sql, cfg.dialect)
    if cut is None or not cut.keys or cut.offset or len(result.rows) != cut.limit:
        return ()
    ranked = _capped(executor, lens, cut.probe_sql)
    if ranked is None or ranked.truncated or len(ranked.rows) <= cut.limit:
        return ()
    return (
        f"tie at the cut: {len(ranked.rows)} rows rank within LIMIT {cut.limit} on "
        f"{', '.join(cut.keys)}, and a later ORDER BY key (or the engine) picks which "
        f"{cut.limit} are kept; if the question does not name that tie-breaker, certify "
        "every tied row (RANK() OVER (ORDER BY …) <= n), as dst ask serves it",
    )


def _capped(executor: Executor, lens: Lens, sql: str) -> ResultSet | None:
    """``sql``'s rows, run as the oracle ran (row cap, timeout, ``as_of``); ``None``
    when it fails (the note it would give is then left out)."""
    cfg = lens.config
    try:
        return executor.execute(
            sql, row_cap=cfg.row_cap, timeout_s=cfg.statement_timeout_s, as_of=cfg.pinned_as_of
        )
    except DstError:
        return None


def _confirmed(aid: str, lens: str, fmt: Format, *, replacing: bool = False) -> bool:
    """Ask the person on the terminal whether to certify (default: no)."""
    question = (
        f"Replace the certified SQL of answer {aid!r} of lens {lens!r} with the new SQL?"
        if replacing
        else f"Certify this SQL as the answer {aid!r} of lens {lens!r}?"
    )
    with ctrl_c_interrupts():
        return typer.confirm(question, default=False, err=fmt is Format.json)


def _person(rt: Any, by: str | None, fmt: Format) -> str:
    """Who certifies: ``--by``, else ``git config user.name``, else asked on the terminal."""
    person = by if by is not None else _git_user(rt)
    if person is None:
        with ctrl_c_interrupts():
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
            fix=f"use one of: {', '.join(names) or 'none (create one with dst init)'}",
        )
    files = worktree_files(rt.root, lens)
    return load_lens(lens, files), files


MAX_SQL_FILE_BYTES = 256 * 1024
"""``--sql FILE`` is refused from its size, before it is read, above 256 KiB."""


def _read_sql(sql_file: Path | None) -> str | None:
    """The text of ``--sql FILE`` (``None`` without it).

    Raises:
        UsageError: the file is missing or cannot be read.
        LensLoadError: it is larger than :data:`MAX_SQL_FILE_BYTES` (before it is
            read), or not UTF-8 (the line of the first bad byte is named).
    """
    if sql_file is None:
        return None
    if not sql_file.is_file():
        raise UsageError(f"{sql_file}: no such file", fix="pass --sql FILE with the query")
    try:
        size = sql_file.stat().st_size
        if size > MAX_SQL_FILE_BYTES:
            raise LensLoadError(
                str(sql_file),
                f"the file is {size:,} bytes; --sql reads at most "
                f"{MAX_SQL_FILE_BYTES:,} bytes ({MAX_SQL_FILE_BYTES // 1024} KiB)",
                fix="certify one query; write it shorter (CTEs instead of repetition)",
            )
        data = sql_file.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"{sql_file}: cannot be read ({exc.strerror})", fix="check the file's permissions"
        ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LensLoadError(
            str(sql_file),
            f"not UTF-8 text (byte 0x{data[exc.start]:02x})",
            line=data[: exc.start].count(b"\n") + 1,
            fix="save the file as UTF-8",
        ) from None


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
    """What a person is asked to certify: the answer's lens, id, SQL and executed result.

    ``target`` is the answer a re-certification replaces (``None`` for a new one).
    """

    lens: Lens
    files: dict[str, bytes]
    answer: str
    candidate: Candidate
    run: str
    target: Replacement | None = None
    result: ResultSet | None = None

    @property
    def rel(self) -> str:
        """The answer's lens-relative file."""
        # lazy: reconciler.certify loads the engines, which `dst --help` does not need
        from reconciler import certify as cert

        return self.target.path if self.target is not None else cert.answer_path(self.answer)

    def signed(self, signoff: Signoff, expect_empty: bool) -> tuple[Answer, bytes]:
        """The validated answer and its file bytes, signed off by ``signoff``."""
        # lazy: reconciler.certify loads the engines, which `dst --help` does not need
        from reconciler import certify as cert

        if self.target is not None:
            return cert.replaced_file(
                self.lens,
                self.files,
                self.target,
                self.candidate,
                signoff,
                expect_empty=expect_empty,
            )
        shape = (len(self.result.rows), len(self.result.columns)) if self.result else None
        return cert.answer_file(
            self.lens,
            self.files,
            self.answer,
            self.candidate,
            signoff,
            result_shape=shape,
            expect_empty=expect_empty,
        )


def _write(
    rt: Any, draft: _Draft, person: str, fmt: Format, base: dict[str, Any], expect_empty: bool
) -> int:
    """Write the confirmed answer file, certified by ``person`` now; report it; exit 0."""
    # lazy: reconciler.certify loads the engines, which `dst --help` does not need
    from reconciler import certify as cert

    # the moment the person said yes
    answer, content = draft.signed(
        cert.Signoff(by=person, at=cert.utc_now(), run=draft.run), expect_empty
    )
    if draft.target is not None:
        rel = cert.replace_answer(rt.root, draft.lens.root, draft.target, content)
        what = "re-certified"
    else:
        rel = cert.write_answer(rt.root, draft.lens.root, draft.answer, content)
        what = "certified"
    provenance = answer.provenance.model_dump(mode="json")
    to_add = [*_uncommitted_dependencies(rt, draft, content), rel]
    _emit(
        fmt,
        {**base, "status": "certified", "path": rel, "provenance": provenance, "git_add": to_add},
        f"{what} {rel} by {answer.provenance.certified_by}\n"
        f"next: git add {' '.join(to_add)} && git commit, then dst apply "
        "(it self-tests the answer)",
    )
    return 0


def _uncommitted_dependencies(rt: Any, draft: _Draft, content: bytes) -> list[str]:
    """Repository paths of the answer's dependency set that are not committed, sorted.

    The dependency set (DESIGN §1) is what the next apply verifies the answer
    with: a metric or model edited for this SQL must be committed with it.
    """
    # lazy: the lens model and the git edge load only when an answer is written
    from reconciler.assets import dependency_set, lens_assets
    from reconciler.git.trees import uncommitted_lens_paths
    from reconciler.ids import AnswerId
    from reconciler.lens import load_lens

    lens = load_lens(draft.lens.name, {**draft.files, draft.rel: content}, root=draft.lens.root)
    assets = lens_assets(lens)
    deps = dependency_set(lens, lens.answers[AnswerId(draft.answer)])
    paths = {f"{lens.root}/{assets[a].path}" for a in deps if a in assets}
    return sorted(paths & set(uncommitted_lens_paths(rt.repo)))
