"""The fast tier's counts over compared periods (``tests/fixtures/fast_tier_cortex2.yaml``).

Each case is asked on its small sales lens over a real DuckDB warehouse, in-process:
an answer must return the hand-written oracle's rows with the same column count (in
order where the case says so), a decline must give its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_cortex2.yaml")
CASES = GOLDEN.cases


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    yield GOLDEN.warehouses(tmp_path_factory.mktemp("cortex2"))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_compared_count_case(warehouses: dict[str, Path], case: dict[str, Any]) -> None:
    GOLDEN.check(warehouses, case)
