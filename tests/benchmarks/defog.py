"""The defog part of the accuracy benchmark: load each database, score its questions.

Layout read (any folder shaped like it, nothing hard-coded)::

    <corpus>/data/<db>/<db>.sql        PostgreSQL DDL and inserts
    <corpus>/data/<db>/<db>.json       column glossary (optional)
    <corpus>/sql-eval/<file>.csv       question files: question, query, db_name

A piece that is missing is reported in :attr:`~tests.benchmarks.scores.Report.skipped`
and left out, never a crash. Each database is loaded into a new DuckDB file (the
script transpiled with sqlglot) or, given a PostgreSQL URL, into a new database
named for the run (the script as written), dropped afterwards. Its lens is the
hand-written one in ``lenses/<db>/`` when a lenses folder is given and holds one,
else one built from the DDL alone (:mod:`tests.benchmarks.autolens`).
"""

from __future__ import annotations

import csv
import functools
import itertools
import json
import re
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import sqlglot
from sqlalchemy.engine import make_url
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.ask import ask
from reconciler.compare.diff import Verdict, compare
from reconciler.context import LensExecutor
from reconciler.errors import DstError
from reconciler.lens import Lens, load_lens
from reconciler.probes.cuts import kept_a_tie
from reconciler.probes.shown import shows_ranking
from reconciler.resultset import ResultSet
from reconciler.suite import ValueCache
from reconciler.warehouse.connection import Warehouse
from reconciler.warehouse.readonly import with_installed_driver
from tests.benchmarks.autolens import lens_files, loadable
from tests.benchmarks.scores import IDK_FILE, Report, Score, not_served
from tests.benchmarks.sqlite_load import read_only_role
from tests.servers import PREFIX

QUESTION_FILES = ("questions_gen_postgres.csv", "instruct_basic_postgres.csv", IDK_FILE)
MAX_SUBSET_ITEMS = 4
ROW_CAP = 1000
TIMEOUT_S = 30.0
_SET = re.compile(r"\{([^{}]*)\}")
# sqlglot writes PostgreSQL's INTERVAL '15 min' as INTERVAL '15' MIN, which DuckDB rejects.
_MIN_UNIT = re.compile(r"(INTERVAL '[^']*') MIN\b")


def gold_variants(query: str) -> list[str]:
    """Every acceptable gold query: ``;`` alternatives × ``{a, b}`` column subsets (sql-eval)."""
    out: list[str] = []
    for alternative in (q.strip() for q in query.split(";")):
        if not alternative:
            continue
        found = _SET.search(alternative)
        if not found or not found.group(1).strip():
            out.append(alternative)
            continue
        items = [i.strip() for i in found.group(1).split(",") if i.strip()][:MAX_SUBSET_ITEMS]
        for size in range(1, len(items) + 1):
            for subset in itertools.combinations(items, size):
                chosen = ", ".join(subset)
                text = alternative[: found.start()] + chosen + alternative[found.end() :]
                out.append(text.replace("{}", chosen))
    return out


def load_duckdb(sql_text: str, target: Path) -> tuple[list[exp.Create], dict[str, int]]:
    """Load a defog PostgreSQL script into a new DuckDB file at ``target``.

    A multi-row INSERT that DuckDB refuses is retried row by row, so one row with a
    PostgreSQL-only expression loses that row, not the table.

    Returns:
        ``(CREATE TABLE statements as parsed, {"statements", "failed", "rows_dropped"})``.
    """
    import duckdb  # why: only this loader writes a DuckDB file; the benchmark reads it read-only

    con = duckdb.connect(str(target))
    creates: list[exp.Create] = []
    counts = {"statements": 0, "failed": 0, "rows_dropped": 0}
    try:
        for schema in sorted(set(re.findall(r"CREATE SCHEMA\s+(\w+)", sql_text))):
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        for statement in sqlglot.parse(sql_text, read="postgres"):
            if statement is None:
                continue
            _public_to_default(statement)
            if isinstance(statement, exp.Create) and statement.kind == "TABLE":
                creates.append(statement.copy())
                loadable(statement)
            try:
                con.execute(_duckdb_sql(statement))
                counts["statements"] += 1
            except duckdb.Error:
                dropped = _rows_one_by_one(con, statement)
                counts["failed" if dropped is None else "statements"] += 1
                counts["rows_dropped"] += dropped or 0
    finally:
        con.close()
    return creates, counts


def _public_to_default(statement: exp.Expr) -> None:
    """``public.t`` → ``t``: PostgreSQL's default schema is DuckDB's ``main``, where bare
    names (the lens's, the gold queries') resolve."""
    for table in statement.find_all(exp.Table):
        if table.db.lower() == "public":
            table.set("db", None)


def _duckdb_sql(statement: exp.Expr) -> str:
    return _MIN_UNIT.sub(r"\1 MINUTE", statement.sql("duckdb"))


def _rows_one_by_one(con: Any, statement: exp.Expr) -> int | None:
    """Insert a refused INSERT's rows one at a time; rows dropped, or ``None`` if not an INSERT."""
    values = statement.expression if isinstance(statement, exp.Insert) else None
    if not isinstance(values, exp.Values):
        return None
    dropped = 0
    for row in values.expressions:
        single = statement.copy()
        single.set("expression", exp.Values(expressions=[row.copy()]))
        try:
            con.execute(_duckdb_sql(single))
        except Exception:  # counted: the row's expression does not carry over to DuckDB
            dropped += 1
    return dropped


@contextmanager
def postgres_database(admin_url: str, db: str, sql_text: str) -> Iterator[tuple[str, int]]:
    """A new PostgreSQL database ``dst_test_bench_<db>_<token>`` loaded with the script
    as the superuser, read through a read-only role (:func:`read_only_role`).

    The script runs as written, in one call; if PostgreSQL refuses it, it runs again
    statement by statement (each as sqlglot writes it back in PostgreSQL), and the
    statements that still fail are counted.

    Yields:
        ``(the read-only role's URL, statements that failed)``; the database and the role
        are dropped on exit.
    """
    name = f"{PREFIX}bench_{db}"[:55] + f"_{secrets.token_hex(3)}"
    parsed = with_installed_driver(make_url(admin_url))
    admin = sa.create_engine(parsed, isolation_level="AUTOCOMMIT")
    url = parsed.set(database=name).render_as_string(hide_password=False)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            failed = _load_postgres(url, sql_text)
            with read_only_role(admin, url) as reader:
                yield reader, failed
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def _load_postgres(url: str, sql_text: str) -> int:
    # psycopg2 reads % as a parameter marker even without parameters.
    loader = sa.create_engine(make_url(url), isolation_level="AUTOCOMMIT")
    failed = 0
    try:
        with loader.connect() as conn:
            try:
                conn.exec_driver_sql(sql_text.replace("%", "%%"))
                return 0
            except sa.exc.DBAPIError:
                pass
            for statement in sqlglot.parse(sql_text, read="postgres"):
                if statement is None:
                    continue
                try:
                    conn.exec_driver_sql(statement.sql("postgres").replace("%", "%%"))
                except sa.exc.DBAPIError:
                    failed += 1
    finally:
        loader.dispose()
    return failed


def read_lens_dir(folder: Path) -> dict[str, bytes]:
    """``{lens-relative posix path: bytes}`` for every file under a lens directory."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _execute_gold(executor: Warehouse, query: str, dialect: str) -> list[tuple[str, ResultSet]]:
    """``(variant as run, its result)`` for every gold variant that runs on ``dialect``."""
    results = []
    for variant in gold_variants(query):
        try:
            sql = sqlglot.transpile(variant, read="postgres", write=dialect)[0]
            results.append((sql, executor.execute(sql, row_cap=ROW_CAP, timeout_s=TIMEOUT_S)))
        except (DstError, SqlglotError):
            continue
    return results


def _run_gold(executor: Warehouse, sql: str) -> ResultSet:
    return executor.execute(sql, row_cap=ROW_CAP, timeout_s=TIMEOUT_S)


def score_question(
    lens: Lens, warehouse: Warehouse, values: Any, question: str, gold: str | None
) -> tuple[str, str]:
    """``(outcome, detail)`` for one question; ``gold`` ``None`` means it must be declined.

    The question goes through :func:`reconciler.ask.ask` (the serving path) with no
    repair attempts; one that matches a certified answer of the lens is declined, not
    correct (:func:`~tests.benchmarks.scores.not_served`).
    """
    executor = LensExecutor(warehouse, lens.config.allow_functions, lens.config.dialect)
    resp = ask(lens, question, executor, values, max_repairs=0)
    unserved = not_served(resp)
    if gold is None:
        if unserved is None:
            return "wrong", f"{question!r}: served rows for an unanswerable question: {resp.sql}"
        return "declined", ""
    if unserved is not None or resp.result is None:
        return "declined", unserved or ""
    oracles = _execute_gold(warehouse, gold, warehouse.dialect)
    if not oracles:
        return "error", f"no gold variant runs on {warehouse.dialect}"
    verdicts = [compare(o, resp.result) for _, o in oracles]
    if any(v.verdict is Verdict.MATCH for v in verdicts):
        return "correct", ""
    for sql, oracle in oracles:  # a gold LIMIT cutting a tie: every tied row is right too
        run = functools.partial(_run_gold, warehouse)
        if kept_a_tie(sql, warehouse.dialect, oracle, resp.result, run) is not None:
            return "correct", "ambiguous gold: its LIMIT cuts a tie"
        if shows_ranking(sql, warehouse.dialect, oracle, resp.result, run):
            return "correct", "shows the value the gold ranks by"
    return "wrong", f"{question!r}: served {resp.sql} -- {verdicts[0].detail}"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def question_sets(corpus: Path, names: Sequence[str], report: Report) -> dict[str, list[Any]]:
    """``{file name: rows}`` for each question file present; a missing one is reported."""
    out: dict[str, list[Any]] = {}
    for name in names:
        path = corpus / "sql-eval" / name
        if not path.is_file():
            report.skipped.append(f"defog: question file sql-eval/{name} not found")
            continue
        rows = _rows(path)
        if rows and not {"question", "db_name"} <= rows[0].keys():
            report.skipped.append(f"defog: sql-eval/{name} has no question/db_name columns")
            continue
        out[name] = rows
    return out


def _lens_for(
    db: str, folder: Path, creates: list[exp.Create] | None, lenses: Path | None, score: Score
) -> Lens:
    """The hand-written lens when ``lenses`` holds one, else one from ``creates`` (parsed
    from the script when not given)."""
    hand = lenses / db if lenses is not None else None
    if hand is not None and (hand / "lens.yaml").is_file():
        score.lens = "hand-written"
        return load_lens(db, read_lens_dir(hand), root=f"{hand.parent.name}/{db}")
    if creates is None:
        script = (folder / f"{db}.sql").read_text("utf-8")
        creates = [
            c
            for c in sqlglot.parse(script, read="postgres")
            if isinstance(c, exp.Create) and c.kind == "TABLE"
        ]
    glossary_path = folder / f"{db}.json"
    glossary = json.loads(glossary_path.read_text("utf-8")) if glossary_path.is_file() else {}
    return load_lens(db, lens_files(db, creates, glossary))


def _score_database(
    lens: Lens, url: str, rows: dict[str, list[Any]], db: str, score: Score
) -> None:
    warehouse = Warehouse.open(url)
    try:
        executor = LensExecutor(warehouse, lens.config.allow_functions, lens.config.dialect)
        values = ValueCache(executor, TIMEOUT_S).for_lens(lens)
        for name, questions in rows.items():
            for row in (r for r in questions if r["db_name"] == db):
                gold = None if name == IDK_FILE else row.get("query", "")
                outcome, detail = score_question(lens, warehouse, values, row["question"], gold)
                score.count(name, outcome, detail, row["question"])
    finally:
        warehouse.close()


def run_defog(
    corpus: Path,
    work: Path,
    *,
    lenses: Path | None = None,
    warehouse: str | None = None,
    databases: Sequence[str] | None = None,
    files: Sequence[str] = QUESTION_FILES,
) -> Report:
    """Score every defog database under ``corpus`` (or only ``databases``).

    Args:
        corpus: a folder with ``data/`` and ``sql-eval/``.
        work: a scratch folder for the DuckDB files.
        lenses: a folder of lens directories, one per database name.
        warehouse: a PostgreSQL superuser URL: load there instead of DuckDB.
        databases: database names to run (default every folder under ``data/``).
        files: question files under ``sql-eval/``.

    Returns:
        The scores and the skipped pieces.
    """
    report = Report()
    if not (corpus / "data").is_dir():
        report.skipped.append(f"defog: no data/ folder under {corpus.name}")
        return report
    rows = question_sets(corpus, files, report)
    folders = sorted(p for p in (corpus / "data").iterdir() if p.is_dir())
    for folder in folders:
        db = folder.name
        if databases is not None and db not in databases:
            continue
        script = folder / f"{db}.sql"
        if not script.is_file():
            report.skipped.append(f"defog: data/{db}/{db}.sql not found, {db} skipped")
            continue
        score = Score("defog", db)
        try:
            _run_one(db, folder, script.read_text("utf-8"), work, rows, lenses, warehouse, score)
        except (DstError, SqlglotError, sa.exc.SQLAlchemyError) as exc:
            report.skipped.append(f"defog: {db} skipped: {str(exc).splitlines()[0]}")
            continue
        report.scores.append(score)
    return report


def _run_one(
    db: str,
    folder: Path,
    sql_text: str,
    work: Path,
    rows: dict[str, list[Any]],
    lenses: Path | None,
    warehouse: str | None,
    score: Score,
) -> None:
    if warehouse is not None:
        lens = _lens_for(db, folder, None, lenses, score)
        with postgres_database(warehouse, db, sql_text) as (url, failed):
            score.load = {"failed": failed}
            _score_database(lens, url, rows, db, score)
        return
    target = work / f"{db}.duckdb"
    creates, score.load = load_duckdb(sql_text, target)
    lens = _lens_for(db, folder, creates, lenses, score)
    _score_database(lens, f"duckdb:///{target}", rows, db, score)
