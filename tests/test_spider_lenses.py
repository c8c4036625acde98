"""The hand-written lenses of the Spider databases (``tests/fixtures/spider_lenses/<db_id>/``).

Each lens was written from its database's schema and data alone. What must hold: every
lens loads through the loader as the benchmark reads it (strict models, SQL guard,
references), describes itself and each model, and matches Spider's schema description
(``tables.json``): every model reads a table of its database, its primary key and join
keys are columns of those tables, and a declared primary key is unique in the SQLite
data. The schema checks skip, saying where they looked, when the corpus is absent.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from reconciler.lens import Lens, load_lens
from tests.benchmarks.defog import read_lens_dir
from tests.helpers import CORPORA, FIXTURES

LENSES = FIXTURES / "spider_lenses"
DATABASES = (
    "battle_death",
    "car_1",
    "concert_singer",
    "course_teach",
    "flight_2",
    "museum_visit",
    "network_1",
    "poker_player",
    "real_estate_properties",
    "singer",
    "student_transcripts_tracking",
    "tvshow",
    "voter_1",
    "world_1",
)
SPIDER = CORPORA / "spider"


def _lens(db: str) -> Lens:
    return load_lens(db, read_lens_dir(LENSES / db), root=f"{LENSES.name}/{db}")


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    """``{db_id: its tables.json entry}``; skips when the Spider corpus is absent."""
    path = SPIDER / "tables.json"
    if not path.is_file():
        pytest.skip(f"Spider corpus not found at {SPIDER} (set DST_CORPORA to the corpora folder)")
    return {d["db_id"]: d for d in json.loads(path.read_text("utf-8"))}


def _columns(schema: dict[str, Any]) -> dict[str, set[str]]:
    """``{lower-case table name: its lower-case column names}`` from a tables.json entry."""
    tables = [t.lower() for t in schema["table_names_original"]]
    out: dict[str, set[str]] = {t: set() for t in tables}
    for table, column in schema["column_names_original"]:
        if table >= 0:
            out[tables[table]].add(column.lower())
    return out


def test_there_is_one_lens_folder_per_database() -> None:
    assert sorted(p.name for p in LENSES.iterdir() if p.is_dir()) == list(DATABASES)


@pytest.mark.parametrize("db", DATABASES)
def test_lens_loads_and_describes_itself(db: str) -> None:
    lens = _lens(db)
    assert lens.config.description.strip(), f"{db}: lens.yaml says nothing it covers"
    assert lens.config.generator.tiers == ("fast",)
    assert lens.models and lens.metrics, f"{db}: a lens needs models and metrics"
    assert not lens.answers, f"{db}: the lens certifies no answers"
    for model in lens.models.values():
        assert model.description, f"{db}/{model.name}: no description"
        for col in model.columns():
            assert col.description, f"{db}/{model.name}.{col.name}: no description"
            assert all(any(ch.isalpha() for ch in s) for s in col.synonyms), (
                f"{db}/{model.name}.{col.name}: a synonym with no word in it"
            )
    if any(m.time_dimensions for m in lens.models.values()):
        assert lens.config.as_of is not None, f"{db}: dated models but no as_of"


@pytest.mark.parametrize("db", DATABASES)
def test_lens_reads_the_tables_and_keys_of_its_database(
    db: str, schemas: dict[str, dict[str, Any]]
) -> None:
    lens = _lens(db)
    columns = _columns(schemas[db])
    problems = []
    for model in lens.models.values():
        table = model.table.lower()
        if table not in columns:
            problems.append(f"{model.name}: table {model.table!r} is not in tables.json")
            continue
        for key in model.primary_key:
            if key.lower() not in columns[table]:
                problems.append(f"{model.name}: primary key {key!r} is not a column of {table}")
        for join in model.joins:
            other = columns.get(lens.models[join.to].table.lower(), set())
            for mine, theirs in join.on.items():
                if mine.lower() not in columns[table] or theirs.lower() not in other:
                    problems.append(f"{model.name} → {join.to}: {mine} = {theirs} names no column")
    assert not problems, problems


@pytest.mark.parametrize("db", DATABASES)
def test_declared_primary_keys_are_unique_in_the_data(
    db: str, schemas: dict[str, dict[str, Any]]
) -> None:
    path = SPIDER / "database" / db / f"{db}.sqlite"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    lens = _lens(db)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        repeats = []
        for model in lens.models.values():
            if not model.primary_key:
                continue
            keys = ", ".join(f'"{k}"' for k in model.primary_key)
            query = f'SELECT {keys} FROM "{model.table}" GROUP BY {keys} HAVING COUNT(*) > 1'
            try:
                found = con.execute(query).fetchall()
            except sqlite3.OperationalError as exc:
                repeats.append(f"{model.name}: {exc}")
                continue
            if found:
                repeats.append(f"{model.name}: ({keys}) repeats {found[0]}")
    finally:
        con.close()
    assert not repeats, repeats
