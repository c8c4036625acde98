"""The Spider part of the accuracy benchmark, scored against the original SQLite files.

Layout read (any folder shaped like it, nothing hard-coded)::

    <corpus>/database/<db_id>/<db_id>.sqlite   the database
    <corpus>/dev_questions.json                [{"db_id", "question", "query"}, ...]

Each database is copied into a new DuckDB file or, given a PostgreSQL URL, into a new
database named for the run and dropped after (:mod:`tests.benchmarks.sqlite_load`).
Its lens is ``lenses/<db_id>/`` when a lenses folder is given and holds one, else one
built from the SQLite schema alone (:mod:`tests.benchmarks.autolens`).

Every question is scored once (:func:`score_question`): its gold query runs on the
**original SQLite file** through Python's ``sqlite3``, not through dst, so neither
dst's loader nor its transpiling can bend the reference; the question goes through
:func:`reconciler.ask.ask` on the copy, read-only. Outcomes: **error** when the gold
query does not run on SQLite; **declined** when nothing was served, or when a
certified answer of the lens was (:func:`~tests.benchmarks.scores.not_served`);
**correct** when the served result matches the gold's by
:func:`reconciler.compare.diff.compare` (numbers by value across types, row order
only where the gold's top-level query has ORDER BY); **wrong** otherwise, with a
class guessed from the difference (:func:`wrong_class`).

SQLite has no date type: its dates are ISO text (sqlite.org/lang_datefunc.html). So
before comparing, a cell on either side that is a date, or text in ISO form, becomes
a timestamp, and so does text spelling a date with its month's English name
('September 24, 2007', '8 August 1986': one reading only); a ``TIMESTAMP`` column
served from the copy then matches the text SQLite returns for the same value.
SQLite's column affinity also lets a file store numbers as text ('71', '2014' in a
column declared ``TEXT``, sqlite.org/datatype3.html): a cell on either side that is
text spelling one decimal number in full becomes that number, so a lens that types
such a column as a number is compared by value. Nothing else is normalised: spaces,
case and any other text stay as stored.

When both the gold and the served result hit the row cap, they are run again with
:data:`WIDE_ROW_CAP` rows on both sides and compared whole; past that cap the
question is inconclusive and counted wrong.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from reconciler.ask import AskResponse, ask
from reconciler.compare.diff import Comparison, DivergenceKind, Verdict, compare
from reconciler.compare.ordering import order_keys
from reconciler.context import LensExecutor
from reconciler.errors import DstError
from reconciler.lens import Lens, load_lens
from reconciler.probes.cuts import kept_a_tie
from reconciler.probes.shown import shows_ranking
from reconciler.resultset import Executor, ResultSet
from reconciler.suite import ValueCache
from reconciler.warehouse.connection import Warehouse
from tests.benchmarks.autolens import lens_files
from tests.benchmarks.defog import read_lens_dir
from tests.benchmarks.scores import Report, Score, not_served
from tests.benchmarks.sqlite_load import (
    ISO_TIMESTAMP,
    Table,
    creates,
    load_duckdb,
    postgres_database,
    read_sqlite,
)

QUESTION_FILE = "dev_questions.json"
GOLD_NOTES = Path(__file__).with_name("spider_gold_notes.yaml")
ROW_CAP = 1000
WIDE_ROW_CAP = 100_000
# A date spelled with its month's English name: one reading only (no day/month swap).
_SPELLED_DATE = re.compile(r"[A-Za-z]{3,9}\.? \d{1,2}, \d{4}|\d{1,2} [A-Za-z]{3,9} \d{4}")
_DATE_SPELLINGS = ("%B %d, %Y", "%b %d, %Y", "%b. %d, %Y", "%d %B %Y", "%d %b %Y")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
TIMEOUT_S = 30.0
MAX_PERMUTED = 5
_PROGRESS_STEPS = 10_000  # SQLite VM steps between deadline checks


class GoldError(DstError):
    """The gold query does not run on the SQLite file (message: SQLite's)."""


@dataclass(frozen=True)
class Scored:
    """One question's outcome.

    Attributes:
        outcome: ``correct``, ``wrong``, ``declined`` or ``error``.
        detail: why (the decline reason, the difference, SQLite's error); empty when
            correct.
        sql: the SQL served (or generated and not served), if any.
        trust_state: the response's trust state.
        wrong_class: for a wrong answer, :func:`wrong_class`'s guess; else empty.
    """

    outcome: str
    detail: str = ""
    sql: str = ""
    trust_state: str = ""
    wrong_class: str = ""


def gold_result(
    database: Path, query: str, *, timeout_s: float = TIMEOUT_S, row_cap: int = ROW_CAP
) -> ResultSet:
    """Run ``query`` on the SQLite file ``database``, opened read-only.

    Returns:
        At most ``row_cap`` rows (``truncated`` when there were more).

    Raises:
        GoldError: SQLite refused the query or it ran past ``timeout_s`` seconds.
    """
    con = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    deadline = time.monotonic() + timeout_s
    con.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
    started = time.perf_counter()
    try:
        cursor = con.execute(query)
        rows = cursor.fetchmany(row_cap + 1)
        columns = tuple(d[0] for d in cursor.description or ())
    except sqlite3.Error as exc:
        raise GoldError(f"{type(exc).__name__}: {exc}") from None
    finally:
        con.close()
    return ResultSet(
        columns=columns,
        rows=tuple(tuple(r) for r in rows[:row_cap]),
        truncated=len(rows) > row_cap,
        elapsed_s=time.perf_counter() - started,
    )


def gold_notes(path: Path | None = None) -> dict[tuple[str, str], str]:
    """The reviewed notes on gold SQL that contradicts its question.

    Returns:
        ``{(db_id, question): reason}``, read from ``path`` (default
        :data:`GOLD_NOTES`; a YAML list of ``{database, question, reason}``); empty
        when the file is absent.

    Raises:
        ValueError: an entry lacks one of the three keys or names a question twice.
    """
    path = GOLD_NOTES if path is None else path
    if not path.is_file():
        return {}
    notes: dict[tuple[str, str], str] = {}
    for n, entry in enumerate(yaml.safe_load(path.read_text("utf-8")) or [], start=1):
        if not isinstance(entry, dict) or {"database", "question", "reason"} - entry.keys():
            raise ValueError(f"{path.name}: entry {n} needs database, question and reason")
        key = (str(entry["database"]), str(entry["question"]))
        if key in notes:
            raise ValueError(f"{path.name}: entry {n} repeats {key[1]!r} of {key[0]}")
        notes[key] = str(entry["reason"])
    return notes


def _as_timestamps(result: ResultSet) -> ResultSet:
    """``result`` with dates and ISO-form text as naive timestamps, and text spelling
    one decimal number as that number (module docstring)."""
    return ResultSet(
        columns=result.columns,
        rows=tuple(tuple(_number(_timestamp(v)) for v in row) for row in result.rows),
        truncated=result.truncated,
        elapsed_s=result.elapsed_s,
    )


def _number(value: Any) -> Any:
    if isinstance(value, str) and _NUMBER.fullmatch(value):
        return float(value) if any(c in value for c in ".") else int(value)
    return value


def _timestamp(value: Any) -> Any:
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str) and ISO_TIMESTAMP.fullmatch(value):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, str) and _SPELLED_DATE.fullmatch(value.strip()):
        for spelling in _DATE_SPELLINGS:
            try:
                return datetime.strptime(value.strip(), spelling)
            except ValueError:
                continue
    return value


def _as_text(result: ResultSet) -> ResultSet:
    return ResultSet(
        columns=result.columns,
        rows=tuple(tuple(None if v is None else str(v) for v in row) for row in result.rows),
    )


def wrong_class(gold: ResultSet, served: ResultSet, comparison: Comparison) -> str:
    """A short guess at why ``served`` is not ``gold``, from their comparison.

    Returns:
        ``cell types`` (equal once every cell is text: the copy typed a column as the
        SQLite file does not), ``columns`` (another column count), ``order``,
        ``missing rows``, ``extra rows``, ``cell difference`` (as many rows missing as
        extra, or a 1×1 result that differs), ``missing and extra rows``, or
        ``row cap`` (a side hit the cap: not comparable).
    """
    if comparison.verdict is Verdict.INCONCLUSIVE:
        return "row cap"
    if compare(_as_text(gold), _as_text(served)).verdict is Verdict.MATCH:
        return "cell types"
    kinds = set(comparison.kinds)
    if DivergenceKind.COLUMN_MISMATCH in kinds:
        return "columns"
    if DivergenceKind.ORDER in kinds:
        return "order"
    if DivergenceKind.SINGLE_CELL in kinds:
        return "cell difference"
    missing = DivergenceKind.MISSING_ROWS in kinds
    extra = DivergenceKind.EXTRA_ROWS in kinds
    if missing and extra:
        if comparison.missing_count == comparison.extra_count:
            return "cell difference"
        return "missing and extra rows"
    return "missing rows" if missing else "extra rows"


def score_question(
    lens: Lens, warehouse: Executor, values: Any, question: str, gold: str, database: Path
) -> Scored:
    """Score one question: gold on the SQLite file ``database``, the question through
    :func:`reconciler.ask.ask` (no repair attempts) on ``warehouse``."""
    try:
        expected = gold_result(database, gold)
    except GoldError as exc:
        return Scored("error", f"gold does not run on SQLite: {exc}")
    executor = LensExecutor(warehouse, lens.config.allow_functions, lens.config.dialect)
    resp = ask(lens, question, executor, values, max_repairs=0)
    unserved = not_served(resp)
    if unserved is not None or resp.result is None:
        return Scored("declined", unserved or "", resp.sql or "", resp.trust_state)
    if expected.truncated and resp.result.truncated and resp.sql:
        try:
            expected = gold_result(database, gold, row_cap=WIDE_ROW_CAP)
            whole = executor.execute(resp.sql, row_cap=WIDE_ROW_CAP, timeout_s=TIMEOUT_S)
        except DstError:
            pass  # not run whole: judged on the capped results (inconclusive)
        else:
            resp = dataclasses.replace(resp, result=whole)
    return _judge(expected, resp, gold, database)


def _permuted(gold: ResultSet, served: ResultSet) -> list[ResultSet]:
    """``served`` with its columns in every other order, named as ``gold``'s.

    Spider's own execution evaluation matches columns up to order ("the average weight
    of cars each year": weight, year or year, weight); a result of one column, of
    another column count, or of more than five columns has none.
    """
    width = len(served.columns)
    if width != len(gold.columns) or not 1 < width <= MAX_PERMUTED:
        return []
    return [
        ResultSet(gold.columns, tuple(tuple(row[i] for i in order) for row in served.rows))
        for order in itertools.permutations(range(width))
        if list(order) != list(range(width))
    ]


def _judge(expected: ResultSet, resp: AskResponse, gold: str, database: Path) -> Scored:
    """Correct when the served result, in its own column order or another, matches the
    gold, differs from it only at a tie the gold's LIMIT cuts, or is the gold's result
    plus the values the gold ranks by; else wrong, with a guess at the class."""
    assert resp.result is not None
    try:
        order = order_keys(gold, "sqlite") or ()
    except DstError:  # sqlglot cannot read the gold: order is not checked
        order = ()
    gold_rows, served_rows = _as_timestamps(expected), _as_timestamps(resp.result)
    verdict = compare(gold_rows, served_rows, order=order)

    def run(sql: str) -> ResultSet:
        return _as_timestamps(gold_result(database, sql))

    sql = resp.sql or ""
    for i, served in enumerate([served_rows, *_permuted(gold_rows, served_rows)]):
        moved = " (columns in another order)" if i else ""
        if compare(gold_rows, served, order=order).verdict is Verdict.MATCH:
            return Scored("correct", moved.strip(" ()"), sql, resp.trust_state)
        if kept_a_tie(gold, "sqlite", gold_rows, served, run) is not None:
            detail = "ambiguous gold: its LIMIT cuts a tie" + moved
            return Scored("correct", detail, sql, resp.trust_state)
        if shows_ranking(gold, "sqlite", gold_rows, served, run):
            detail = "shows the value the gold ranks by" + moved
            return Scored("correct", detail, sql, resp.trust_state)
    guess = wrong_class(gold_rows, served_rows, verdict)
    return Scored("wrong", verdict.detail, sql, resp.trust_state, guess)


def _lens_for(db: str, tables: Sequence[Table], lenses: Path | None, score: Score) -> Lens:
    hand = lenses / db if lenses is not None else None
    if hand is not None and (hand / "lens.yaml").is_file():
        score.lens = "hand-written"
        return load_lens(db, read_lens_dir(hand), root=f"{hand.parent.name}/{db}")
    return load_lens(db, lens_files(db, creates(tables), {}))


def questions(corpus: Path, report: Report) -> list[dict[str, str]]:
    """The question list of ``dev_questions.json``; missing or unreadable: reported, ``[]``."""
    path = corpus / QUESTION_FILE
    if not path.is_file():
        report.skipped.append(f"spider: {QUESTION_FILE} not found")
        return []
    try:
        items = json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        report.skipped.append(f"spider: {QUESTION_FILE} is not JSON: {exc}")
        return []
    keys = {"db_id", "question", "query"}
    if not isinstance(items, list) or not all(
        isinstance(i, dict) and keys <= i.keys() for i in items
    ):
        report.skipped.append(f"spider: {QUESTION_FILE} is not a list of db_id/question/query")
        return []
    return items


def run_spider(
    corpus: Path,
    work: Path,
    *,
    lenses: Path | None = None,
    warehouse: str | None = None,
    databases: Sequence[str] | None = None,
) -> Report:
    """Score every Spider database under ``corpus`` (or only ``databases``).

    Args:
        corpus: a folder with ``database/`` and ``dev_questions.json``.
        work: a scratch folder for the DuckDB files.
        lenses: a folder of lens directories, one per ``db_id``; ``None``: every lens
            built from the schema.
        warehouse: a PostgreSQL superuser URL: load there instead of DuckDB.
        databases: ``db_id`` values to run (default: every folder under ``database/``).

    Returns:
        One score per database (its questions under :data:`QUESTION_FILE`) and the
        skipped pieces.
    """
    report = Report()
    if not (corpus / "database").is_dir():
        report.skipped.append(f"spider: no database/ folder under {corpus.name}")
        return report
    items = questions(corpus, report)
    notes = gold_notes()
    for folder in sorted(p for p in (corpus / "database").iterdir() if p.is_dir()):
        db = folder.name
        if databases is not None and db not in databases:
            continue
        source = folder / f"{db}.sqlite"
        if not source.is_file():
            report.skipped.append(f"spider: database/{db}/{db}.sqlite not found, {db} skipped")
            continue
        score = Score("spider", db)
        asked = [i for i in items if i["db_id"] == db]
        try:
            _run_one(db, source, work, asked, lenses, warehouse, score)
        except (DstError, sqlite3.Error, sa.exc.SQLAlchemyError) as exc:
            report.skipped.append(f"spider: {db} skipped: {str(exc).splitlines()[0]}")
            continue
        _mark_disputed(score, db, notes, report)
        report.scores.append(score)
    known = {p.name for p in (corpus / "database").iterdir()}
    orphans = sorted({i["db_id"] for i in items} - known)
    if orphans:
        report.skipped.append(f"spider: questions for databases not found: {', '.join(orphans)}")
    return report


def _mark_disputed(
    score: Score, db: str, notes: dict[tuple[str, str], str], report: Report
) -> None:
    """Name each wrong answer of ``db`` that a gold note disputes; report stale notes."""
    wrong = {o["question"] for o in score.outcomes if o["outcome"] == "wrong"}
    for (note_db, question), reason in notes.items():
        if note_db != db:
            continue
        if question in wrong:
            score.disputed.append(f"{question!r}: {reason}")
        else:
            report.stale_notes.append(f"{db}: {question!r} is not answered wrong in this run")


def _run_one(
    db: str,
    source: Path,
    work: Path,
    asked: list[dict[str, str]],
    lenses: Path | None,
    warehouse: str | None,
    score: Score,
) -> None:
    tables = read_sqlite(source)
    lens = _lens_for(db, tables, lenses, score)
    if warehouse is not None:
        with postgres_database(warehouse, db, tables) as url:
            _score_database(lens, url, source, asked, score)
        return
    target = work / f"{db}.duckdb"
    score.load = load_duckdb(tables, target)
    _score_database(lens, f"duckdb:///{target}", source, asked, score)


def _score_database(
    lens: Lens, url: str, source: Path, asked: list[dict[str, str]], score: Score
) -> None:
    warehouse = Warehouse.open(url)
    try:
        executor = LensExecutor(warehouse, lens.config.allow_functions, lens.config.dialect)
        values = ValueCache(executor, TIMEOUT_S).for_lens(lens)
        for item in asked:
            question = item["question"]
            s = score_question(lens, warehouse, values, question, item["query"], source)
            extra = {"sql": s.sql, "trust_state": s.trust_state}
            detail = s.detail
            if s.outcome == "wrong":
                score.wrong_classes[s.wrong_class] += 1
                extra["class"] = s.wrong_class
                detail = (
                    f"{question!r}: served {s.sql} (trust {s.trust_state}; {s.wrong_class}) "
                    f"-- {s.detail}"
                )
            score.count(QUESTION_FILE, s.outcome, detail, question, extra)
    finally:
        warehouse.close()
