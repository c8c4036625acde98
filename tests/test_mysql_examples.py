"""The README's main job on MariaDB/MySQL: the example lenses promote exactly as on DuckDB.

The example lenses' SQL is written in DuckDB's dialect; on a MariaDB warehouse every
statement runs transpiled with sqlglot's ``mysql`` dialect (DESIGN §2 "Dialect"), each
lens reads its own database (``<URL database>__<lens>``, which ``dst seed --warehouse``
creates) before the URL's, and the gate runs as a user holding only ``SELECT``. Skips,
naming the reason, when no server answers (``tests/mariadb.py``).
"""

from __future__ import annotations

import time
from pathlib import Path

from tests import mariadb
from tests.figures import record
from tests.helpers import invoke
from tests.helpers.examples import deployment_json, serving

EXPECTED = {"sales": 21, "finance": 19}
NUMERIC_QUESTION = "units sold in 2024"


def _scores(report: dict[str, object]) -> dict[str, tuple[int, int]]:
    lenses = report["lenses"]
    assert isinstance(lenses, list)
    return {x["lens"]: (x["score"]["correct"], x["score"]["total"]) for x in lenses}


def _ask(repo: Path, *extra: str) -> dict[str, object]:
    asked = invoke(repo, "ask", NUMERIC_QUESTION, "--lens", "sales", "--format", "json", *extra)
    assert asked.code == 0, asked.stdout + asked.stderr
    out = asked.json()
    assert isinstance(out, dict)
    return out


def test_example_lenses_promote_on_mariadb_as_on_duckdb(lens_repo: Path) -> None:
    duck = invoke(lens_repo, "apply", "--dry-run", "--format", "json")
    assert duck.code == 0, duck.stdout + duck.stderr
    assert _scores(duck.json()) == {k: (v, v) for k, v in EXPECTED.items()}

    with mariadb.scratch_database("examples") as scratch:
        seeded = invoke(lens_repo, "seed", "--warehouse", scratch.owner_url, "--format", "json")
        assert seeded.code == 0, seeded.stdout + seeded.stderr
        assert seeded.json()["schemas"] == sorted(EXPECTED), "a database per lens"
        assert seeded.json()["databases"] == [f"{scratch.database}__{n}" for n in sorted(EXPECTED)]
        assert "sales.orders" in seeded.json()["tables"]
        admin = mariadb.admin_or_skip()
        with admin.connect() as conn:
            granted = mariadb.grant_reader(conn, scratch)
        admin.dispose()
        assert sorted(granted) == sorted([scratch.database, *seeded.json()["databases"]])

        started = time.monotonic()
        applied = invoke(lens_repo, "apply", "--warehouse", scratch.reader_url, "--format", "json")
        record(f"mariadb examples: apply both lenses {time.monotonic() - started:.2f} s")
        assert applied.code == 0, applied.stdout + applied.stderr
        assert _scores(applied.json()) == _scores(duck.json())
        assert {x["action"] for x in applied.json()["lenses"]} == {"promoted"}
        for lens in EXPECTED:
            oid = serving(lens_repo, lens)
            assert oid is not None
            run = deployment_json(lens_repo, oid, "state/run.json")
            ran = [*run["results"], *run["self_test"]]
            assert len({r["answer"] for r in ran}) == EXPECTED[lens]
            assert {r.get("transpiled") for r in ran} == {"duckdb→mysql"}

        asked = _ask(lens_repo, "--warehouse", scratch.reader_url)
        assert asked["transpiled"] == "duckdb→mysql"
        rows = asked["rows"]
        assert isinstance(rows, list)
        value = rows[0][0]
        assert isinstance(value, int) and not isinstance(value, bool), rows
    # the same deployment served from the embedded DuckDB: the same number
    duck_asked = _ask(lens_repo)
    assert "transpiled" not in duck_asked
    assert duck_asked["rows"] == rows
