"""The fast tier's reach cases (``tests/fixtures/fast_tier_reach.yaml``), in-process.

Each case is asked on its small lens over a real DuckDB warehouse: an answer must
return the hand-written oracle's rows with the same column count, a decline must
give its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from reconciler.lens import Lens, load_lens
from tests.helpers import FIXTURES
from tests.helpers.grammar import ask, dimension_values, same_rows

DATA: dict[str, Any] = yaml.safe_load((FIXTURES / "fast_tier_reach.yaml").read_text("utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]


def _lens(name: str) -> Lens:
    files = {path: text.encode() for path, text in DATA["lenses"][name]["files"].items()}
    return load_lens(name, files)


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("reach")
    paths: dict[str, Path] = {}
    for name, spec in DATA["lenses"].items():
        paths[name] = root / f"{name}.duckdb"
        con = duckdb.connect(str(paths[name]))
        con.execute(spec["schema"])
        con.close()
    yield paths


def _rounded(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [
        tuple(round(float(v), 6) if isinstance(v, (int, float, Decimal)) else v for v in row)
        for row in rows
    ]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reach_case(warehouses: dict[str, Path], case: dict[str, Any]) -> None:
    lens = _lens(case["lens"])
    con = duckdb.connect(str(warehouses[case["lens"]]), read_only=True)
    try:
        result = ask(lens, case["question"], dimension_values(con, lens))
        if "reason" in case:
            assert result.sql is None, f"answered instead of declining:\n{result.sql}"
            assert result.declined is not None and case["reason"] in result.declined, (
                result.declined
            )
            return
        assert result.sql is not None, result.declined
        generated = con.execute(result.sql)
        columns = len(generated.description or ())
        rows = generated.fetchall()
        oracle = con.execute(case["oracle"])
        expected = oracle.fetchall()
        assert expected, "the oracle must return rows for the comparison to mean something"
        assert columns == len(oracle.description or ()), f"column count differs:\n{result.sql}"
        if case.get("ordered"):
            assert _rounded(rows) == _rounded(expected), f"{result.sql}\n{rows} != {expected}"
        else:
            assert same_rows(rows, expected), f"{result.sql}\n{rows} != {expected}"
    finally:
        con.close()
