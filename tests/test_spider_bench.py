"""The Spider part of the accuracy benchmark, on two small databases.

What must hold: every question of a database is scored exactly once and the outcomes
add up; its gold query runs on the original SQLite file, outside dst (a query only
SQLite runs is scored, one only DuckDB runs is an error); the loader keeps the
contract the Spider lenses are written to (names, four types, fallbacks, empty
strings); PostgreSQL scores as DuckDB does and drops its database; ``--only spider``
runs that part alone and reports questions whose database is missing.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlalchemy as sa

from reconciler.compare.diff import compare
from reconciler.resultset import ResultSet
from tests import pg, servers
from tests.benchmarks import accuracy, spider, sqlite_load
from tests.benchmarks.scores import OUTCOMES
from tests.helpers import CORPORA

SMALL = ("battle_death", "poker_player")


@pytest.fixture(scope="module")
def corpus() -> Path:
    found = CORPORA / "spider"
    if not all((found / "database" / db / f"{db}.sqlite").is_file() for db in SMALL):
        pytest.skip(f"Spider corpus not found at {found} (set DST_CORPORA to the corpora folder)")
    if not (found / spider.QUESTION_FILE).is_file():
        pytest.skip(f"{spider.QUESTION_FILE} not found under {found}")
    return found


def _questions(corpus: Path) -> list[dict[str, str]]:
    items: list[dict[str, str]] = json.loads((corpus / spider.QUESTION_FILE).read_text("utf-8"))
    return items


def _linked_corpus(root: Path, corpus: Path, items: list[dict[str, str]]) -> Path:
    """A Spider-shaped folder: the small databases linked, ``items`` as its questions."""
    (root / "database").mkdir(parents=True)
    for db in SMALL:
        (root / "database" / db).symlink_to(corpus / "database" / db)
    (root / spider.QUESTION_FILE).write_text(json.dumps(items), "utf-8")
    return root


def test_every_question_of_the_small_databases_is_scored_once(corpus: Path, tmp_path: Path) -> None:
    report = spider.run_spider(corpus, tmp_path, databases=SMALL)
    assert not report.skipped, report.skipped
    assert [s.name for s in report.scores] == list(SMALL)
    asked = [i for i in _questions(corpus) if i["db_id"] in SMALL]
    for score in report.scores:
        expected = Counter(i["question"] for i in asked if i["db_id"] == score.name)
        assert Counter(o["question"] for o in score.outcomes) == expected
        counts = score.files[spider.QUESTION_FILE]
        assert set(counts) <= set(OUTCOMES)
        assert sum(counts.values()) == len(score.outcomes) == sum(expected.values())
        assert score.lens == "auto-generated"
        assert counts["error"] == 0, [o for o in score.outcomes if o["outcome"] == "error"]
    totals = report.totals()["questions"]
    assert sum(totals.values()) == len(asked) == 56
    assert totals["correct"] > 0


def test_the_gold_query_runs_on_the_sqlite_file_not_on_the_copy(
    corpus: Path, tmp_path: Path
) -> None:
    question = "How many poker players are there?"
    items = [
        # sqlite_version() exists in SQLite only: scored, so the gold ran there.
        {"db_id": "poker_player", "question": question,
         "query": "SELECT count(*) FROM poker_player WHERE sqlite_version() <> ''"},
        # ILIKE is DuckDB's and PostgreSQL's, not SQLite's: an error, though the copy runs it.
        {"db_id": "poker_player", "question": question,
         "query": "SELECT count(*) FROM poker_player WHERE 'a' ILIKE 'A'"},
        {"db_id": "poker_player", "question": question, "query": "SELECT count(*) FROM nowhere"},
    ]  # fmt: skip
    root = _linked_corpus(tmp_path / "corpora", corpus, items)
    report = spider.run_spider(root, tmp_path, databases=("poker_player",))
    outcomes = [o["outcome"] for o in report.scores[0].outcomes]
    assert outcomes == ["correct", "error", "error"], report.scores[0].outcomes
    copy = duckdb.connect(str(tmp_path / "poker_player.duckdb"), read_only=True)
    try:
        assert copy.execute(items[1]["query"]).fetchone() == (5,)
    finally:
        copy.close()
    assert "no such table: nowhere" in report.scores[0].outcomes[2]["detail"]


def _sqlite(path: Path, statements: list[str], rows: dict[str, list[tuple[Any, ...]]]) -> Path:
    con = sqlite3.connect(path)
    for s in statements:
        con.execute(s)
    for table, values in rows.items():
        marks = ", ".join("?" for _ in values[0])
        con.executemany(f'INSERT INTO "{table}" VALUES ({marks})', values)
    con.commit()
    con.close()
    return path


def test_the_loader_keeps_names_maps_four_types_and_falls_back_to_text(tmp_path: Path) -> None:
    source = _sqlite(
        tmp_path / "kinds.sqlite",
        [
            'CREATE TABLE "Kinds" ("Id" INTEGER PRIMARY KEY AUTOINCREMENT, "Small" smallint, '
            '"Price" DECIMAL(19,4), "Ratio" float(10,2), "Seen" DATETIME, "Born" DATE, '
            '"Odd" INT, "Note" TEXT, "Flag" bool, "Code" varchar(2), "Bad_Day" timestamp)',
            'CREATE TABLE "Link" ("kind_id" INT REFERENCES "Kinds" ("Id"), "n" NUMBER)',
        ],
        {
            "Kinds": [
                (1, 2, 3, 1.5, "2020-01-02 03:04:05", "1999-12-31", 7, "", "T", "x", "2020-01-02"),
                (2, 3.0, "4.5", 2, None, "2000-01-01", "seven", None, "F", 12, "02/01/2020"),
            ],
            "Link": [(1, 1), (2, "")],
        },
    )
    tables = sqlite_load.read_sqlite(source)
    assert [t.name for t in tables] == ["Kinds", "Link"]  # sqlite_sequence is SQLite's own
    target = tmp_path / "kinds.duckdb"
    sqlite_load.load_duckdb(tables, target)
    con = duckdb.connect(str(target), read_only=True)
    try:
        described = {r[0]: r[1] for r in con.execute('DESCRIBE "Kinds"').fetchall()}
        rows = con.execute('SELECT * FROM "Kinds" ORDER BY "Id"').fetchall()
        link = con.execute('SELECT * FROM "Link" ORDER BY "kind_id"').fetchall()
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    finally:
        con.close()
    assert sorted(names) == ["Kinds", "Link"]
    assert described == {
        "Id": "BIGINT", "Small": "BIGINT", "Price": "DOUBLE", "Ratio": "DOUBLE",
        "Seen": "TIMESTAMP", "Born": "TIMESTAMP", "Odd": "VARCHAR", "Note": "VARCHAR",
        "Flag": "VARCHAR", "Code": "VARCHAR", "Bad_Day": "VARCHAR",
    }  # fmt: skip
    assert rows[0] == (
        1, 2, 3.0, 1.5, datetime(2020, 1, 2, 3, 4, 5), datetime(1999, 12, 31),
        "7", "", "T", "x", "2020-01-02",
    )  # fmt: skip
    assert rows[1][:7] == (2, 3, 4.5, 2.0, None, datetime(2000, 1, 1), "seven")
    assert rows[1][7:] == (None, "F", "12", "02/01/2020")
    assert link == [(1, "1"), (2, "")]  # '' does not cast to DOUBLE: the column is text
    keys = {t.name: (t.primary_key, t.foreign_keys) for t in tables}
    assert keys == {"Kinds": (("Id",), ()), "Link": ((), (("kind_id", "Kinds", "Id"),))}


def test_wrong_answers_are_classed_by_their_difference() -> None:
    def rs(*rows: tuple[Any, ...], columns: tuple[str, ...] = ("a", "b")) -> ResultSet:
        return ResultSet(columns=columns, rows=rows)

    def guess(gold: ResultSet, served: ResultSet) -> str:
        return spider.wrong_class(gold, served, compare(gold, served))

    gold = rs((1, "x"), (2, "y"))
    assert guess(gold, rs((1, "x"))) == "missing rows"
    assert guess(gold, rs((1, "x"), (2, "y"), (3, "z"))) == "extra rows"
    assert guess(gold, rs((1, "x"), (2, "w"))) == "cell difference"
    assert guess(gold, rs((1, "x"), (2, "y"), (2, "y"), (3, "q"), (4, "r"))) != "cell difference"
    assert guess(gold, rs((1,), (2,), columns=("a",))) == "columns"
    assert guess(gold, rs(("1", "x"), ("2", "y"))) == "cell types"


def test_spider_on_postgresql_scores_as_on_duckdb_and_drops_its_database(
    corpus: Path, tmp_path: Path
) -> None:
    admin = pg.admin_or_skip()
    before = _databases(admin)
    on_duckdb = spider.run_spider(corpus, tmp_path, databases=("poker_player",))
    on_postgres = spider.run_spider(
        corpus, tmp_path, databases=("poker_player",), warehouse=pg.admin_url()
    )
    assert not on_postgres.skipped, on_postgres.skipped
    assert on_postgres.by_corpus() == on_duckdb.by_corpus()
    left = _databases(admin) - before
    admin.dispose()
    assert not left, left


def _databases(admin: sa.Engine) -> set[str]:
    with admin.connect() as conn:
        names = {r[0] for r in conn.exec_driver_sql("SELECT datname FROM pg_database")}
    # Only the benchmark's own names: other users of the server come and go meanwhile.
    return {n for n in names if n.startswith(f"{servers.PREFIX}bench_")}


def test_only_spider_runs_that_part_and_reports_questions_without_a_database(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [i for i in _questions(corpus) if i["db_id"] in (*SMALL, "singer")]
    corpora = tmp_path / "corpora"
    _linked_corpus(corpora / "spider", corpus, items)
    argv = ["--corpora", str(corpora), "--only", "spider", "--lenses", "auto"]
    code = accuracy.main([*argv, "--format", "json", "--details"])
    out = json.loads(capsys.readouterr().out)
    assert {(d["corpus"], d["database"]) for d in out["databases"]} == {
        ("spider", db) for db in SMALL
    }
    assert out["skipped"] == ["spider: questions for databases not found: singer"]
    scored = out["corpora"]["spider"][spider.QUESTION_FILE]
    assert sum(scored.values()) == 56
    assert code == (1 if scored["wrong"] else 0)
    for db in out["databases"]:
        for q in db["questions"]:
            assert q["outcome"] in OUTCOMES and "trust_state" in q
            assert ("class" in q) == (q["outcome"] == "wrong")
    assert accuracy.main(["--corpora", str(tmp_path / "nothing"), "--only", "spider"]) == 2


def test_columns_match_up_to_order_but_not_in_number() -> None:
    from reconciler.compare.diff import Verdict, compare
    from reconciler.resultset import ResultSet
    from tests.benchmarks.spider import _permuted

    gold = ResultSet(("avg_weight", "year"), ((3000.5, 1970), (2800.0, 1971)))
    served = ResultSet(("model_year", "average_weight"), ((1971, 2800.0), (1970, 3000.5)))
    assert compare(gold, served).verdict is Verdict.DIVERGED
    assert any(compare(gold, p).verdict is Verdict.MATCH for p in _permuted(gold, served))
    wider = ResultSet(("a", "b", "c"), ((1970, 3000.5, 1),))
    assert _permuted(gold, wider) == []


def _towns(tmp_path: Path) -> tuple[Path, Any, Any]:
    """A SQLite file of 1,200 towns whose ``founded`` year is stored as text, its DuckDB
    copy and a hand-written lens typing ``founded`` as a number."""
    from reconciler.context import LensExecutor
    from reconciler.lens import load_lens
    from reconciler.suite import ValueCache
    from reconciler.warehouse.connection import Warehouse

    source = tmp_path / "towns.sqlite"
    con = sqlite3.connect(source)
    con.execute("CREATE TABLE towns (id INTEGER PRIMARY KEY, name TEXT, founded TEXT)")
    con.executemany(
        "INSERT INTO towns VALUES (?, ?, ?)",
        [(i, f"town {i}", str(1800 + i % 150)) for i in range(1200)],
    )
    con.commit()
    con.close()
    target = tmp_path / "towns.duckdb"
    sqlite_load.load_duckdb(sqlite_load.read_sqlite(source), target)
    model = (
        "name: towns\ntable: towns\nprimary_key: [id]\ndimensions:\n"
        "  - name: town_name\n    expr: name\n    synonyms: [town, name]\n"
        "  - name: founded\n    expr: CAST(founded AS BIGINT)\n    data_type: integer\n"
        "    synonyms: [founding year]\n"
    )
    files = {"lens.yaml": b"name: towns\nrow_cap: 1000\n", "models/towns.yaml": model.encode()}
    lens = load_lens("towns", files)
    warehouse = Warehouse.open(f"duckdb:///{target}")
    executor = LensExecutor(warehouse, lens.config.allow_functions, lens.config.dialect)
    return source, (lens, warehouse), ValueCache(executor, 30).for_lens(lens)


def test_numbers_stored_as_text_compare_by_value_and_capped_results_are_run_whole(
    tmp_path: Path,
) -> None:
    source, (lens, warehouse), values = _towns(tmp_path)
    question = "List the names and founding years of the towns."
    try:
        # 1,200 rows on both sides, past the cap of 1,000; '1807' (text) against 1807
        whole = spider.score_question(
            lens, warehouse, values, question, "SELECT name, founded FROM towns", source
        )
        assert whole.outcome == "correct", whole.detail
        fewer = "SELECT name, founded FROM towns WHERE id > 0"
        short = spider.score_question(lens, warehouse, values, question, fewer, source)
        assert (short.outcome, short.wrong_class) == ("wrong", "extra rows"), short
        as_text = "SELECT name, founded || ' ' FROM towns"
        spaced = spider.score_question(lens, warehouse, values, question, as_text, source)
        assert spaced.outcome == "wrong", spaced  # '1807 ' is not a number
    finally:
        warehouse.close()
    cells = ResultSet(("a",), (("07",), ("1.5",), ("1e3",), (" 2",)))
    assert spider._as_timestamps(cells).rows == ((7,), (1.5,), ("1e3",), (" 2",))
    dates = ResultSet(
        ("d",), (("August 8, 1986",), ("8 Aug 1986",), ("08/08/1986",), ("May 40, 1986",))
    )
    assert spider._as_timestamps(dates).rows == (
        (datetime(1986, 8, 8),), (datetime(1986, 8, 8),), ("08/08/1986",), ("May 40, 1986",),
    )  # fmt: skip


def test_every_gold_note_names_a_question_of_the_corpus(corpus: Path) -> None:
    notes = spider.gold_notes()
    assert notes, "tests/benchmarks/spider_gold_notes.yaml holds no note"
    asked = {(i["db_id"], i["question"]) for i in _questions(corpus)}
    assert not [key for key in notes if key not in asked]
    assert all(reason.strip() for reason in notes.values())


def test_a_disputed_gold_stays_wrong_and_a_stale_note_is_reported(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [i for i in _questions(corpus) if i["db_id"] == "battle_death"]
    note = (tmp_path / "notes.yaml", "List the name, date and result of each battle.")
    picked = [i for i in items if i["question"] == note[1]]
    if not picked:
        pytest.skip("the battle_death question the notes name is not in this corpus")
    other = next(i for i in items if i["question"] != note[1])
    note[0].write_text(
        f"- {{database: battle_death, question: {json.dumps(note[1])}, reason: drops a column}}\n"
        f"- {{database: battle_death, question: {json.dumps(other['question'])}, reason: x}}\n"
    )
    notes = spider.gold_notes(note[0])
    assert len(notes) == 2
    (tmp_path / "bad.yaml").write_text("- {database: battle_death}\n")
    with pytest.raises(ValueError, match="needs database, question and reason"):
        spider.gold_notes(tmp_path / "bad.yaml")
    root = _linked_corpus(tmp_path / "c", corpus, [*picked, other])
    monkeypatch.setattr(spider, "GOLD_NOTES", note[0])
    (tmp_path / "w").mkdir()
    report = spider.run_spider(root, tmp_path / "w", lenses=accuracy.SPIDER_LENSES)
    score = report.scores[0]
    outcome = {o["question"]: o["outcome"] for o in score.outcomes}
    if outcome[note[1]] != "wrong":
        pytest.skip("the noted question is no longer answered wrong; the note is stale")
    assert score.files[spider.QUESTION_FILE]["wrong"] >= 1
    assert score.disputed == [f"{note[1]!r}: drops a column"]
    assert not report.skipped
    assert (outcome[other["question"]] == "wrong") or report.stale_notes == [
        f"battle_death: {other['question']!r} is not answered wrong in this run"
    ]
