"""Years as numbers, "in the database", month names ordered, and restating pronouns.

Each case of ``tests/fixtures/fast_tier_backrefs.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows (in order where the case says ``ordered``), a decline must
give its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_backrefs.yaml")
CASES = GOLDEN.cases


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("backrefs")
    yield GOLDEN.warehouses(root)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_backref_case(warehouses: dict[str, Path], case: dict[str, Any]) -> None:
    GOLDEN.check(warehouses, case)
