"""NULL and unmatched join keys in breakdowns, and filters that meet a metric's own.

Each case of ``tests/fixtures/fast_tier_nulls.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.grammar import GoldenFile, check_golden_case

GOLDEN = GoldenFile.read("fast_tier_nulls.yaml")
CASES = GOLDEN.cases


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("nulls")
    yield next(iter(GOLDEN.warehouses(root).values()))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_nulls_case(warehouse: Path, case: dict[str, Any]) -> None:
    check_golden_case(GOLDEN.lens(), warehouse, case)
