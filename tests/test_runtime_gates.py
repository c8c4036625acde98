"""Runtime gates on SQL no tier wrote and on the fast tier's: tie, NULL group, thinned join, shape.

Each case of ``tests/fixtures/runtime_gates.yaml`` is served in-process through
:func:`reconciler.ask.ask` on a real warehouse: a ``sql:`` case as the answer of a
smart tier (a local function standing in for the LLM endpoint, so the SQL is
hand-written, not dst's), a ``fast: true`` case by the fast tier. Every case runs on
DuckDB, and on PostgreSQL (through the lens executor's transpiling, as a lens
written for DuckDB is served there) when one is reachable.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import duckdb
import pytest
import sqlglot
import yaml

from reconciler.ask import AskResponse, ask as serve
from reconciler.assembly.request import GenerationRequest
from reconciler.context import LensExecutor
from reconciler.generators import Generation
from reconciler.lens import Lens, load_lens
from reconciler.probes.cuts import cut_of
from reconciler.probes.thinning import thinning_probe
from reconciler.suite import ValueCache
from reconciler.warehouse.connection import Warehouse
from tests import pg
from tests.helpers import FIXTURES

DATA: dict[str, Any] = yaml.safe_load((FIXTURES / "runtime_gates.yaml").read_text("utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]


def _lens(tier: str) -> Lens:
    files = {path: text.encode() for path, text in DATA["lens"].items()}
    config = files["lens.yaml"].decode().replace("tiers: [fast, smart]", f"tiers: [{tier}]")
    files["lens.yaml"] = config.encode()
    return load_lens("depot", files)


@pytest.fixture(scope="module")
def duck_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("gates") / "depot.duckdb"
    con = duckdb.connect(str(path))
    con.execute(DATA["schema"])
    con.close()
    return f"duckdb:///{path}"


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with pg.scratch_database("dst_gates") as scratch:
        engine = pg.engine(scratch.owner_url)
        try:
            with engine.begin() as conn:
                for statement in sqlglot.transpile(DATA["schema"], read="duckdb", write="postgres"):
                    conn.exec_driver_sql(statement)
                pg.grant_reader(conn, scratch.reader)
        finally:
            engine.dispose()
        yield scratch.reader_url


def _ask(url: str, case: dict[str, Any]) -> AskResponse:
    fast = bool(case.get("fast"))
    lens = _lens("fast" if fast else "smart")

    def smart(_lens: Lens, _request: GenerationRequest, _hint: str | None) -> Generation:
        return Generation("smart", case["sql"])

    warehouse = Warehouse.open(url)
    try:
        executor = LensExecutor(warehouse, (), lens.config.dialect)
        values = ValueCache(executor, 30.0).for_lens(lens)
        return serve(
            lens, case["question"], executor, values, smart=None if fast else smart, max_repairs=0
        )
    finally:
        warehouse.close()


def _canon(rows: Any) -> list[tuple[Any, ...]]:
    def cell(v: Any) -> Any:
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return round(float(v), 6)
        return v

    return sorted((tuple(cell(v) for v in row) for row in rows), key=repr)


def _hold(resp: AskResponse, case: dict[str, Any]) -> None:
    gates = {e.gate: e for e in resp.evaluations}
    where = f"{resp.sql}\n{[e.to_json() for e in resp.evaluations if not e.passed]}"
    if case.get("served", True) is False:
        assert not resp.served_rows, where
        assert resp.trust_state == "blocked", where
    else:
        assert resp.served_rows, where
    if "rows" in case:
        assert resp.result is not None
        assert _canon(resp.result.rows) == _canon(case["rows"]), where
    if "trust" in case:
        assert resp.trust_state == case["trust"], where
    for gate, want in case.get("gates", {}).items():
        assert gate in gates, f"gate {gate} did not run: {where}"
        got = "passed" if gates[gate].passed else gates[gate].severity
        assert got == want, where
    if "note" in case:
        assert any(case["note"] in n for n in resp.notes), (resp.notes, where)
    if "reads_as" in case:  # a fast-tier case: the reading, not only the rows
        assert resp.attempts and resp.attempts[-1].get("reading") == case["reads_as"], where
    if "sql_has" in case:
        assert resp.sql is not None and case["sql_has"] in resp.sql, where


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_gate_case_on_duckdb(duck_url: str, case: dict[str, Any]) -> None:
    if "duckdb" not in case.get("dialects", ["duckdb"]):
        pytest.skip("the case's SQL is not DuckDB's")
    _hold(_ask(duck_url, case), case)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_gate_case_on_postgresql(postgres_url: str, case: dict[str, Any]) -> None:
    if "postgres" not in case.get("dialects", ["postgres"]):
        pytest.skip("the case's SQL is not PostgreSQL's")
    _hold(_ask(postgres_url, case), case)


def test_the_repaired_sql_gives_the_served_rows(duck_url: str) -> None:
    case = next(c for c in CASES if c["id"] == "tie_one_row_most")
    resp = _ask(duck_url, case)
    assert resp.sql is not None and resp.result is not None
    con = duckdb.connect(duck_url.removeprefix("duckdb:///"), read_only=True)
    try:
        rows = con.execute(resp.sql).fetchall()
    finally:
        con.close()
    assert _canon(rows) == _canon(resp.result.rows)
    assert resp.result.columns == ("warehouse_name", "shipments")


def test_a_result_shorter_than_its_limit_runs_no_probe(duck_url: str) -> None:
    case = {
        "question": "Top 10 stores by staff",
        "sql": "SELECT store_name, staff FROM stores WHERE staff > 0 ORDER BY staff DESC LIMIT 10",
    }
    resp = _ask(duck_url, case)
    assert resp.served_rows and resp.trust_state == "grounded"
    assert "tie" not in {e.gate for e in resp.evaluations}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x FROM t",
        "SELECT x FROM t ORDER BY x FETCH FIRST 2 ROWS WITH TIES",
        "SELECT x, RANK() OVER (ORDER BY x) AS r FROM t ORDER BY r LIMIT 2",
        "SELECT x FROM t ORDER BY x LIMIT (SELECT 1)",
    ],
)
def test_no_cut_to_check(sql: str) -> None:
    assert cut_of(sql, "duckdb") is None


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT e.region, COUNT(*) FROM b JOIN e ON e.k = b.k WHERE e.active GROUP BY 1",
        "SELECT e.region, COUNT(*) FROM b LEFT JOIN e ON e.k = b.k GROUP BY 1",
        "SELECT e.region, b.k FROM b JOIN e ON e.k = b.k",
        "SELECT e.region, COUNT(*) FROM b JOIN e ON e.k = b.k GROUP BY 1 ORDER BY 2 LIMIT 3",
        "SELECT region, COUNT(*) FROM b JOIN e ON e.k = b.k WHERE active GROUP BY 1",
    ],
)
def test_no_thinning_to_check(sql: str) -> None:
    assert thinning_probe(sql, "duckdb") is None


ANSWER = """\
id: busiest_warehouse
question: Which warehouse ships the most parcels?
sql: |
  SELECT w.warehouse_name FROM shipments s
  JOIN warehouses w ON s.warehouse_id = w.warehouse_id
  GROUP BY w.warehouse_name ORDER BY COUNT(*) DESC LIMIT 1
status: active
provenance:
  certified_by: Dana Whitfield
  certified_at: "2025-01-15"
  source: manual
"""


@pytest.mark.parametrize(
    ("generated", "outcome"),
    [
        # every tied row, as the tie gate serves it: the oracle is ambiguous, not wrong
        (
            "SELECT warehouse_name FROM (SELECT w.warehouse_name, RANK() OVER (ORDER BY "
            "COUNT(*) DESC) AS r FROM shipments s JOIN warehouses w ON s.warehouse_id = "
            "w.warehouse_id GROUP BY 1) AS t WHERE r <= 1",
            "correct",
        ),
        # one of the tied rows (the oracle's own pick, or another)
        (
            "SELECT w.warehouse_name FROM shipments s JOIN warehouses w ON s.warehouse_id = "
            "w.warehouse_id GROUP BY 1 ORDER BY COUNT(*) DESC, w.warehouse_name DESC LIMIT 1",
            "correct",
        ),
        # a row outside the tie is still wrong
        ("SELECT 'Dee' AS warehouse_name", "wrong"),
    ],
)
def test_an_oracle_ordered_by_a_hidden_count_that_cuts_a_tie_is_ambiguous(
    duck_url: str, generated: str, outcome: str
) -> None:
    from reconciler.suite import run_answer

    files = {path: text.encode() for path, text in DATA["lens"].items()}
    files["lens.yaml"] = files["lens.yaml"].replace(b"tiers: [fast, smart]", b"tiers: [smart]")
    files["answers/busiest_warehouse.yaml"] = ANSWER.encode()
    lens = load_lens("depot", files)

    def smart(_lens: Lens, _request: GenerationRequest, _hint: str | None) -> Generation:
        return Generation("smart", generated)

    warehouse = Warehouse.open(duck_url)
    try:
        executor = LensExecutor(warehouse, (), lens.config.dialect)
        values = ValueCache(executor, 30.0).for_lens(lens)
        result = run_answer(lens, lens.answers["busiest_warehouse"], executor, values, smart=smart)
    finally:
        warehouse.close()
    assert result.outcome.value == outcome, result.detail
    if outcome == "correct" and "RANK()" in generated:
        assert "ambiguous oracle" in result.detail, result.detail


def test_a_certified_cut_inside_a_tie_is_noted_never_repaired(duck_url: str) -> None:
    """A certified answer is served as certified, its SQL and rows as a human wrote them;
    its LIMIT falling inside a tie (three stores at 8 staff) is said in a note."""
    resp = _ask(duck_url, {"question": "Which store is the runner-up by staff?", "sql": ""})
    assert resp.route == "certified_answer" and resp.trust_state == "certified"
    assert resp.result is not None and len(resp.result.rows) == 1
    assert resp.sql is not None and resp.sql.rstrip().endswith("LIMIT 1")
    assert any("cuts a tie: 3 rows tie within it and 1 are shown" in n for n in resp.notes)


def test_a_certified_cut_with_no_tie_has_no_note(duck_url: str) -> None:
    """A certified cut that no tie crosses is served with no tie note."""
    resp = _ask(duck_url, {"question": "Which store is the best staffed?", "sql": ""})
    assert resp.route == "certified_answer" and resp.trust_state == "certified"
    assert resp.result is not None and resp.result.rows == (("Leith", 10),)
    assert not any("cuts a tie" in n for n in resp.notes)
