"""The fast tier's Cortex-question cases (``tests/fixtures/fast_tier_cortex.yaml``), in-process.

Each case is asked on its small sales lens over a real DuckDB warehouse: an answer
must return the hand-written oracle's rows with the same column count (in order
where the case says so), a decline must give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

import pytest

from reconciler.assets import lens_assets
from reconciler.errors import LensLoadError
from reconciler.ids import AssetId
from reconciler.lens import Lens
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_cortex.yaml")


def _lens(name: str, lens_yaml: str | None = None) -> Lens:
    return GOLDEN.lens(name, {"lens.yaml": lens_yaml.encode()} if lens_yaml else None)


def _lens_hash(lens: Lens) -> str:
    return lens_assets(lens)[AssetId(f"lens/{lens.name}")].hash


def test_series_order_is_part_of_the_generation_part() -> None:
    plain = _lens("sales", "name: sales\n")
    default = _lens("sales", "name: sales\nseries_order: oldest_first\n")
    newest = _lens("sales", "name: sales\nseries_order: newest_first\n")
    assert _lens_hash(default) == _lens_hash(plain)  # left out at its default: no rehash
    assert _lens_hash(newest) != _lens_hash(plain)  # changing it makes answers stale


def test_series_order_names_its_choices() -> None:
    with pytest.raises(LensLoadError) as caught:
        _lens("sales", "name: sales\nseries_order: latest\n")
    assert "lens.yaml:2" in str(caught.value)
