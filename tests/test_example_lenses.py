"""The example lenses (``lenses/sales``, ``lenses/finance``) and their seed data.

The README's main job reconciles these lenses, so they must stay valid, their
data must be reproducible from ``scripts/make_example_data.py``, and every
certified oracle must run on the embedded warehouse built from the seeds.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import duckdb
import pytest

from reconciler.lens import Lens

PROJECT = Path(__file__).resolve().parent.parent
LENS_NAMES = ("sales", "finance")
MIN_ACTIVE_ANSWERS = 15
MIN_ORDER_ROWS = 10_000


def _script(name: str) -> ModuleType:
    """Import ``scripts/<name>.py`` (the scripts directory is not a package)."""
    path = PROJECT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_scripts_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while executing
    spec.loader.exec_module(module)
    return module


make_data = _script("make_example_data")
check = _script("check_example_lenses")


@pytest.fixture(scope="module")
def lenses() -> dict[str, Lens]:
    """Both example lenses, loaded from the working tree."""
    loaded: dict[str, Lens] = check.load_lenses(PROJECT, LENS_NAMES)
    return loaded


@pytest.fixture(scope="module")
def warehouse() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB seeded with every example lens's CSVs."""
    con: duckdb.DuckDBPyConnection = check.connect(check.seed_tables(PROJECT))
    yield con
    con.close()


def test_seed_data_regenerates_byte_for_byte(tmp_path: Path) -> None:
    assert make_data.main(["--out", str(tmp_path)]) == 0
    generated = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.csv"))
    committed = sorted(
        p.relative_to(PROJECT).as_posix() for p in (PROJECT / "lenses").glob("*/seeds/*.csv")
    )
    assert generated == committed
    for rel in generated:
        assert (tmp_path / rel).read_bytes() == (PROJECT / rel).read_bytes(), rel


def test_seed_csvs_use_unix_newlines_and_two_decimal_money() -> None:
    orders = (PROJECT / "lenses/sales/seeds/orders.csv").read_bytes()
    assert b"\r" not in orders
    header, first = orders.decode().splitlines()[:2]
    row = dict(zip(header.split(","), first.split(","), strict=True))
    for column in ("unit_price", "discount", "unit_cost"):
        assert re.fullmatch(r"\d+\.\d\d", row[column]), (column, row[column])


@pytest.mark.parametrize("name", LENS_NAMES)
def test_lens_loads_with_enough_active_answers(lenses: dict[str, Lens], name: str) -> None:
    lens = lenses[name]
    assert lens.config.name == name
    assert lens.config.as_of == "2024-12-31"
    assert len(lens.active_answers()) >= MIN_ACTIVE_ANSWERS
    assert {c.expect for c in lens.cases} == {"answer", "clarify", "refuse"}
    assert 2 <= len(lens.exemplars) <= 4
    assert lens.skills


def test_orders_table_is_large_enough(warehouse: duckdb.DuckDBPyConnection) -> None:
    row = warehouse.execute("SELECT COUNT(*), MIN(order_date), MAX(order_date) FROM orders")
    count, first, last = row.fetchone() or (0, None, None)
    assert count >= MIN_ORDER_ROWS
    assert (first.isoformat(), last.isoformat()) == ("2023-01-01", "2024-12-31")


@pytest.mark.parametrize("name", LENS_NAMES)
def test_every_oracle_and_exemplar_runs(
    lenses: dict[str, Lens], warehouse: duckdb.DuckDBPyConnection, name: str
) -> None:
    lens = lenses[name]
    runs = check.run_queries(lens, warehouse)
    assert len(runs) == len(lens.answers) + len(lens.exemplars)
    assert check.problems(lens, runs) == []
    for run in runs:
        if run.kind == "answer":
            assert 1 <= run.rows <= 1000, run


def _metric_phrases(lens: Lens) -> dict[str, set[str]]:
    """Every phrase that names a metric: its name (spaced), label and synonyms."""
    return {
        m.name: {m.name.replace("_", " "), *(s.lower() for s in m.synonyms)}
        | ({m.label.lower()} if m.label else set())
        for m in lens.metrics.values()
    }


def _mentions(text: str, phrase: str) -> bool:
    return re.search(rf"\b{re.escape(phrase)}\b", text.lower()) is not None


@pytest.mark.parametrize("name", LENS_NAMES)
def test_every_answer_names_exactly_one_metric(lenses: dict[str, Lens], name: str) -> None:
    # Staleness tests rely on it: an answer depends on the metric its question names.
    phrases = _metric_phrases(lenses[name])
    for answer in lenses[name].active_answers():
        named = {
            metric
            for metric, words in phrases.items()
            if any(_mentions(answer.question, w) for w in words)
        }
        assert len(named) == 1, (answer.id, named)


@pytest.mark.parametrize("name", LENS_NAMES)
def test_answer_questions_avoid_exemplars_and_guarded_terms(
    lenses: dict[str, Lens], name: str
) -> None:
    lens = lenses[name]
    exemplar_questions = {e.question.lower() for e in lens.exemplars.values()}
    guarded = [*lens.config.exclusions, *(c.term for c in lens.config.clarify)]
    for answer in lens.active_answers():
        assert answer.question.lower() not in exemplar_questions, answer.id
        assert not [t for t in guarded if _mentions(answer.question, t)], answer.id
