"""The accuracy benchmark on real questions runs in the default suite (defog + Cortex).

Figures are recorded for the terminal summary; the assertions hold what must always
hold: every question is scored, and no unanswerable (``idk.csv``) question is served.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.benchmarks import accuracy
from tests.figures import record
from tests.helpers import CORPORA


@pytest.fixture(scope="module")
def defog() -> Path:
    corpus = CORPORA / "defog"
    if not (corpus / "sql-eval" / "idk.csv").is_file():
        pytest.skip(f"defog corpus not found at {corpus} (set DST_CORPORA to the corpora folder)")
    return corpus


def test_defog_questions_are_scored_and_unanswerable_ones_declined(defog: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scores = accuracy.run_defog(defog, Path(tmp))
    totals = accuracy.totals(scores)
    questions, idk = totals["questions"], totals["idk"]
    assert sum(questions.values()) == 160 and sum(idk.values()) == 75
    assert all(s.tables > 0 and s.statements_loaded > 0 for s in scores)
    assert idk["wrong"] == 0, [e for s in scores for e in s.wrong_examples]
    for line in accuracy.render(scores, 0.0)[-2:]:
        record(f"accuracy (defog, fast tier): {line.split('  ', 1)[-1].strip()}")


def test_gold_variants_expand_alternatives_and_column_sets() -> None:
    got = accuracy.gold_variants("SELECT {a, b} FROM t GROUP BY {};SELECT c FROM t;")
    assert got == [
        "SELECT a FROM t GROUP BY a",
        "SELECT b FROM t GROUP BY b",
        "SELECT a, b FROM t GROUP BY a, b",
        "SELECT c FROM t",
    ]
