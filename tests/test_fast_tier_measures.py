"""Output clauses, rankings by several measures and ratios of two entity counts.

Each case of ``tests/fixtures/fast_tier_measures.yaml`` is asked in-process on its lens
(assembly, then the fast tier) over a real DuckDB warehouse: an answer must return the
hand-written oracle's rows with the same number of columns (in order where the case
says ``ordered``), a decline must give its reason.

Its golden cases run in ``tests/test_fast_tier_golden.py`` (one runner for every
fixture file); this module keeps the tests that are not golden cases.
"""

from __future__ import annotations

from reconciler.lens import Lens
from reconciler.reading.grammar.outputs import split_outputs
from tests.helpers.grammar import GoldenFile

GOLDEN = GoldenFile.read("fast_tier_measures.yaml")


def _lens() -> Lens:
    return GOLDEN.lens()


def test_an_output_clause_is_split_into_its_items() -> None:
    found = split_outputs(
        "Return the top 5 salespersons by revenue? Return their first and last name, "
        "total number of sales and revenue for each salesperson."
    )
    assert found is not None
    assert found.main == "the top 5 salespersons by revenue?"
    assert found.items == ("first name", "last name", "total number of sales", "revenue")
    assert found.keys == ("salesperson",)


def test_a_single_sentence_is_no_output_clause() -> None:
    assert split_outputs("Return the customer ID and name of customers in Paris") is None
