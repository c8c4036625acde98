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

from reconciler.assets import lens_assets
from reconciler.errors import LensLoadError
from reconciler.ids import AssetId
from reconciler.lens import Lens, load_lens
from tests.helpers import FIXTURES
from tests.helpers.grammar import ask, dimension_values, same_rows

DATA: dict[str, Any] = yaml.safe_load((FIXTURES / "fast_tier_reach.yaml").read_text("utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]


def _lens(name: str, lens_yaml: str | None = None) -> Lens:
    files = {path: text.encode() for path, text in DATA["lenses"][name]["files"].items()}
    if lens_yaml is not None:
        files["lens.yaml"] = lens_yaml.encode()
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


def _lens_hash(lens: Lens) -> str:
    return lens_assets(lens)[AssetId(f"lens/{lens.name}")].hash


def test_vocabulary_is_part_of_the_generation_part() -> None:
    plain = _lens("dealer", "name: dealer\n")
    empty = _lens("dealer", "name: dealer\nvocabulary: {}\n")
    edited = _lens("dealer", "name: dealer\nvocabulary: {brand: make, marque: make}\n")
    assert _lens_hash(empty) == _lens_hash(plain)  # left out while empty: no rehash
    assert _lens_hash(edited) != _lens_hash(_lens("dealer"))  # editing it makes answers stale


@pytest.mark.parametrize(
    ("vocabulary", "message"),
    [
        ("{brand: colour}", "'brand' maps to 'colour', which names no model"),
        ("{brand: 'a;b'}", "map it to a model, metric"),
        ("{make: make}", "'make' maps to itself"),
        ("{'brand;': make}", "vocabulary"),
    ],
)
def test_vocabulary_errors_name_the_line(vocabulary: str, message: str) -> None:
    with pytest.raises(LensLoadError) as caught:
        _lens("dealer", f"name: dealer\nvocabulary: {vocabulary}\n")
    assert message in str(caught.value)
    assert "lens.yaml:2" in str(caught.value)
