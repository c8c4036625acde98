"""The fast tier's existence cases (``tests/fixtures/fast_tier_existence.yaml``), in-process.

Each case is asked on its small lens over a real DuckDB warehouse: an answer must
return the hand-written oracle's rows with the same column count, a decline must
give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from reconciler.lens import Lens
from reconciler.reading.grammar.existence import existence_rows
from reconciler.reading.ir import Declined
from tests.helpers.grammar import GoldenFile, dimension_values

GOLDEN = GoldenFile.read("fast_tier_existence.yaml")


def _lens(name: str) -> Lens:
    return GOLDEN.lens(name)


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("existence")
    yield GOLDEN.warehouses(root)


@pytest.mark.parametrize(
    "question",
    [
        "Return the patient IDs of patients.",  # a plain listing: listing.py's shape
        "Which patients have the most treatments?",  # a ranking, not existence
        "Return the patient IDs of patients who have 3 treatments.",  # a count of rows
        "Return the patient IDs of patients who have treatments by doctor.",  # a breakdown
    ],
)
def test_other_shapes_are_left_alone(warehouses: dict[str, Path], question: str) -> None:
    lens = _lens("clinic")
    con = duckdb.connect(str(warehouses["clinic"]), read_only=True)
    try:
        assert existence_rows(lens, question, dimension_values(con, lens)) is None
    finally:
        con.close()


def test_a_link_without_warehouse_facts_declines(warehouses: dict[str, Path]) -> None:
    lens = _lens("clinic")
    con = duckdb.connect(str(warehouses["clinic"]), read_only=True)
    try:
        plain = dict(dimension_values(con, lens))  # the values, without the join-key facts
    finally:
        con.close()
    question = "Return the drug IDs of drugs that have no treatments."
    with pytest.raises(Declined, match="unique is unknown"):
        existence_rows(lens, question, plain)
