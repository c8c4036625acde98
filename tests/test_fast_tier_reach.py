"""The fast tier's reach cases (``tests/fixtures/fast_tier_reach.yaml``), in-process.

Each case is asked on its small lens over a real DuckDB warehouse: an answer must
return the hand-written oracle's rows with the same column count, a decline must
give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

import pytest

from reconciler.assembly.retrieval import spoken
from reconciler.assets import lens_assets
from reconciler.errors import LensLoadError
from reconciler.ids import AssetId
from reconciler.lens import Lens
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_reach.yaml")


def _lens(name: str, lens_yaml: str | None = None) -> Lens:
    return GOLDEN.lens(name, {"lens.yaml": lens_yaml.encode()} if lens_yaml else None)


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


@pytest.mark.parametrize(
    ("said", "spoken_as"),
    [
        (("the", "marque"), ("the", "make")),  # a one-word entry at the question's end
        (("marques", "sold"), ("makes", "sold")),  # a plural said keeps its number
    ],
)
def test_vocabulary_keeps_the_number_said_at_the_end_of_a_question(
    said: tuple[str, ...], spoken_as: tuple[str, ...]
) -> None:
    lens = _lens(
        "dealer", "name: dealer\nvocabulary: {marque: make, brand new: make, big marque: make}\n"
    )
    assert spoken(lens, said) == spoken_as
