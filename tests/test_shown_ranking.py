"""An answer that also shows the value the oracle ranks by (compare.shown, probes.shown).

Cases are data (``tests/fixtures/shown_ranking.yaml``): the widened oracle text, and
the verdict against generated SQL on a real DuckDB file — a right answer with its
ranking value, every row of a tie with theirs, and answers whose extra column is
some other value, or whose entity is wrong, which must not pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlglot
import yaml

from reconciler.compare.diff import Verdict, compare
from reconciler.compare.shown import with_ranking_values
from reconciler.probes.shown import shows_ranking
from reconciler.resultset import ResultSet
from reconciler.warehouse.connection import Warehouse
from tests.helpers import FIXTURES

DATA: dict[str, Any] = yaml.safe_load((FIXTURES / "shown_ranking.yaml").read_text("utf-8"))


@pytest.mark.parametrize("case", DATA["widen"], ids=lambda c: c["id"])
def test_the_oracle_is_widened_by_its_hidden_ordering_values(case: dict[str, Any]) -> None:
    widened = with_ranking_values(case["sql"], "duckdb")
    if case["widened"] is None:
        assert widened is None
        return
    assert widened is not None
    expected = sqlglot.parse_one(case["widened"], read="duckdb").sql(dialect="duckdb")
    assert widened[0] == expected
    assert widened[1] == expected.count("dst_order_")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path: Path = tmp_path_factory.mktemp("shown") / "concerts.duckdb"
    con = duckdb.connect(str(path))
    con.execute(DATA["schema"])
    con.close()
    opened = Warehouse.open(f"duckdb:///{path}")
    yield opened
    opened.close()


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["id"])
def test_an_answer_showing_the_ranking_value_matches_only_that_value(
    warehouse: Any, case: dict[str, Any]
) -> None:
    def run(sql: str) -> ResultSet:
        result: ResultSet = warehouse.execute(sql, row_cap=1000, timeout_s=30.0)
        return result

    oracle, generated = run(case["oracle"]), run(case["generated"])
    assert compare(oracle, generated).verdict is Verdict.DIVERGED  # a column more, always
    assert shows_ranking(case["oracle"], "duckdb", oracle, generated, run) is case["shows"]
