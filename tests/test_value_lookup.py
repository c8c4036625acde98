"""Names the value index cannot hold are looked up in the warehouse for the question.

A dimension with more distinct values than the index keeps (city names here) is
not indexed; :func:`reconciler.assembly.lookup.looked_up` finds the names a question
spells in it with one bounded query per such dimension, so "the district of Kabul"
is read as a filter. Real DuckDB file, in-process :func:`reconciler.ask.ask`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from reconciler.ask import ask
from reconciler.assembly.lexicon import DimensionValues
from reconciler.assembly.lookup import candidates, looked_up
from reconciler.context import LensExecutor
from reconciler.lens import Lens, load_lens
from reconciler.suite import VALUES_PER_DIMENSION, ValueCache
from reconciler.warehouse.connection import Warehouse

Towns = tuple[Lens, LensExecutor, DimensionValues]
CITY = """name: cities
table: cities
primary_key: [id]
dimensions:
  - name: city_name
    expr: name
    synonyms: [city, name]
  - name: district
  - name: country
facts:
  - name: population
    data_type: integer
"""


@pytest.fixture
def towns(tmp_path: Path) -> Iterator[Towns]:
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    columns = "id INTEGER, name TEXT, district TEXT, country TEXT, population INTEGER"
    con.execute(f"CREATE TABLE cities ({columns})")
    rows = [(i, f"Town {i}", f"District {i % 7}", "Ruritania", 1000 + i) for i in range(400)]
    rows += [
        (400, "Kabul", "Kabol", "Afghanistan", 1780000),
        (401, "Qandahar", "Qandahar", "Afghanistan", 237500),
    ]
    rows += [
        (402, "Springfield", "North", "Freedonia", 50),
        (403, "Springfield", "South", "Freedonia", 60),
    ]
    con.executemany("INSERT INTO cities VALUES (?, ?, ?, ?, ?)", rows)
    con.close()
    lens = load_lens("towns", {"lens.yaml": b"name: towns\n", "models/cities.yaml": CITY.encode()})
    warehouse = Warehouse.open(f"duckdb:///{path}")
    executor = LensExecutor(warehouse, lens.config.allow_functions, lens.config.dialect)
    yield lens, executor, ValueCache(executor, 30).for_lens(lens)
    warehouse.close()


def test_a_name_past_the_index_is_looked_up_and_read_as_a_filter(towns: Towns) -> None:
    lens, executor, values = towns
    assert VALUES_PER_DIMENSION < 400 and not values[("cities", "city_name")]  # not indexed
    resp = ask(lens, "What is the district of Kabul?", executor, values, max_repairs=0)
    assert resp.result is not None and resp.result.rows == (("Kabol",),), resp.message
    both = ask(lens, "What are the districts of Springfield?", executor, values, max_repairs=0)
    assert both.result is not None and sorted(both.result.rows) == [("North",), ("South",)]


def test_nothing_found_leaves_the_values_as_they_were(towns: Towns) -> None:
    lens, executor, values = towns
    assert looked_up(lens, "What is the district of Atlantis?", executor, values) is values
    assert looked_up(lens, "what is the district of kabul?", executor, values) is values
    resp = ask(lens, "What is the district of Atlantis?", executor, values, max_repairs=0)
    assert resp.result is None  # an unknown name declines; it is never dropped
    two = ask(lens, "What are the countries of Qandahar?", executor, values, max_repairs=0)
    assert two.result is None and "qandahar" in two.message  # a city and a district: no pick


def test_candidates_are_quoted_text_and_runs_of_capitalised_words() -> None:
    assert candidates("What is the district of Kabul?") == ("Kabul",)
    assert candidates("Flights of 'jet blue' and \"ACME Air\"?")[:2] == ("jet blue", "ACME Air")
    assert "Bank of America" in candidates("Which branches does Bank of America run?")
    assert candidates("Give me Brazil’s population.") == ("Brazil",)
    assert candidates("how many cities are in kabul?") == ()
    assert "Which" not in candidates("Which city is Kabul?")
