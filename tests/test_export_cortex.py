"""`dst export cortex`: a lens as a Cortex Analyst semantic model, round-tripped.

Each shared Cortex model is imported (lens A), exported, and the export imported
again (lens B). A and B must be the same lens by canonical hash: every model,
metric and skill asset, the lens's generation part, and every active answer's
oracle (question + normalized SQL). What legitimately differs is checked too:
``provenance.source`` names the exported file, and draft answers of A are not
exported (only active answers are verified queries).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml
from sqlglot import exp

from reconciler.assets import lens_assets, oracle_hash
from reconciler.compare.diff import Verdict, compare
from reconciler.interop.exporters.cortex import export_cortex
from reconciler.interop.importers.cortex import import_cortex
from reconciler.lens import Lens, load_lens
from reconciler.resultset import ResultSet
from tests.helpers import CORPORA, EXAMPLE_LENSES, invoke
from tests.helpers.interop import duckdb_runner, read_lens_dir, seeded

CORTEX = CORPORA / "cortex-analyst"


def cortex_models() -> list[Path]:
    return sorted(p for p in CORTEX.glob("*/*.yaml") if "tables" in yaml.safe_load(p.read_text()))


def canonical(lens: Lens) -> dict[str, str]:
    """Asset hashes keyed by kind and name, the lens's own name left out."""
    out = {}
    for asset_id, asset in lens_assets(lens).items():
        key = "lens" if asset.kind == "lens" else asset_id
        out[key] = asset.hash
    return out


@pytest.mark.parametrize("model_path", cortex_models() if CORTEX.is_dir() else [])
def test_cortex_corpus_round_trips_to_the_same_lens(model_path: Path) -> None:
    first_files, _ = import_cortex(
        model_path.read_bytes(), model_path=model_path.name, lens="a", data_dir=None
    )
    a = load_lens("a", first_files)
    exported, report = export_cortex(a)
    b_files, b_report = import_cortex(exported, model_path="a.yaml", lens="b", data_dir=None)
    b = load_lens("b", b_files)

    assert canonical(a) == canonical(b)
    assert set(a.models) == set(b.models) and set(a.metrics) == set(b.metrics)
    oracles_a = {x.id: oracle_hash(x, "duckdb") for x in a.active_answers()}
    oracles_b = {x.id: oracle_hash(x, "duckdb") for x in b.active_answers()}
    assert oracles_a == oracles_b and oracles_a
    for answer in b.answers.values():
        origin = a.answers[answer.id].provenance
        assert (answer.provenance.certified_by, answer.provenance.certified_at) == (
            origin.certified_by,
            origin.certified_at,
        )
        assert answer.provenance.source == "cortex:a.yaml"
    assert set(b.answers) == {x.id for x in a.active_answers()}
    assert report.tables == len(a.models) and report.verified_queries == len(oracles_a)
    assert report.relationships == sum(len(m.joins) for m in a.models.values())
    assert b_report.drafts == 0


def test_export_cli_writes_the_file_and_refuses_to_overwrite(repo: Path, tmp_path: Path) -> None:
    if not CORTEX.is_dir():
        pytest.skip(f"Cortex corpus not found under {CORPORA} (set DST_CORPORA)")
    source = CORTEX / "sfdc_sales" / "sfdc_sales.yaml"
    assert invoke(repo, "import", "cortex", str(source), "--lens", "sfdc").code == 0
    out = tmp_path / "sfdc.yaml"
    done = invoke(repo, "export", "cortex", "sfdc", "--out", str(out), "--format", "json")
    assert done.code == 0, done.stderr
    report = done.json()
    written = yaml.safe_load(out.read_text())
    assert report["tables"] == len(written["tables"])
    assert report["verified_queries"] == len(written["verified_queries"])
    for query in written["verified_queries"]:  # logical tables only, as Cortex requires
        tree = sqlglot.parse_one(query["sql"], read="snowflake")
        ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
        tables = {t.name for t in tree.find_all(exp.Table)} - ctes
        assert tables and all(t.startswith("__") for t in tables), query["name"]
    again = invoke(repo, "export", "cortex", "sfdc", "--out", str(out))
    assert again.code == 2 and "already exists" in again.stderr
    missing = invoke(repo, "export", "cortex", "nope")
    assert missing.code == 2 and "no such lens" in missing.stderr


def test_example_sales_lens_export_reimports(tmp_path: Path) -> None:
    root = EXAMPLE_LENSES / "sales"
    if not (root / "lens.yaml").is_file():
        pytest.skip("example lens lenses/sales is not present")
    sales = load_lens("sales", read_lens_dir(root))
    exported, report = export_cortex(sales)
    files, back = import_cortex(
        exported,
        model_path="sales.yaml",
        lens="sales-cortex",
        data_dir=root / "seeds",
        run_oracles=duckdb_runner(tmp_path / "run"),
    )
    again = load_lens("sales-cortex", files)
    assert set(again.models) == set(sales.models)
    for name, model in sales.models.items():
        assert again.models[name].joins == model.joins
        # key columns the lens leaves undeclared come back as dimensions
        keys = set(model.primary_key) | {k for j in model.joins for k in j.on}
        keys |= {
            k for m in sales.models.values() for j in m.joins if j.to == name for k in j.on.values()
        }
        declared = {c.name for c in model.columns()}
        assert {c.name for c in again.models[name].columns()} == declared | keys
    assert set(sales.metrics) <= set(again.metrics)
    assert back.answers == report.verified_queries == len(sales.active_answers())
    # every verified query that stays active answers exactly what the original oracle did
    con = seeded({t: (root / rel).read_bytes() for t, rel in sales.seeds.items()}, tmp_path / "db")
    active = again.active_answers()
    assert active
    for answer in active:
        original = sales.answers[answer.id]
        got, want = _result(con, answer.sql), _result(con, original.sql)
        # the project's comparator: multisets, floats within its tolerance, any row order
        assert compare(want, got).verdict is Verdict.MATCH, (answer.id, got.rows, want.rows)
    # filters of lens metrics survive as CASE WHEN inside the aggregate
    assert "CASE WHEN" in again.metrics["net_revenue"].expression
    assert any("filters moved inside" in line for line in report.unmapped)


def _result(con: Any, sql: str) -> ResultSet:
    cursor = con.execute(sql)
    names = tuple(d[0] for d in cursor.description)
    return ResultSet(names, tuple(map(tuple, cursor.fetchall())))


@pytest.mark.parametrize(
    ("stamp", "day"),
    [
        ("2024-11-14T16:45:00Z", "2024-11-14"),
        ("2024-11-14T16:45:00", "2024-11-14"),  # naive: read as UTC
        ("2024-11-14T23:30:00-05:00", "2024-11-15"),  # its instant, a UTC day on import
    ],
)
def test_a_timestamp_certified_at_is_exported_and_reimports_active(stamp: str, day: str) -> None:
    source = CORTEX / "sfdc_sales" / "sfdc_sales.yaml"
    if not source.is_file():
        pytest.skip(f"Cortex corpus not found under {CORPORA} (set DST_CORPORA)")
    files, _ = import_cortex(source.read_bytes(), model_path=source.name, lens="a", data_dir=None)
    answer = "what_is_our_win_rate_over_the_entire_available_time_period"
    path = f"answers/{answer}.yaml"
    files[path] = files[path].replace(
        b"certified_at: '2024-11-14'", f"certified_at: '{stamp}'".encode()
    )
    a = load_lens("a", files)
    assert a.answers[answer].provenance.certified_at == stamp
    exported, report = export_cortex(a)
    assert not [line for line in report.unmapped if "certified_at" in line]
    b_files, b_report = import_cortex(exported, model_path="a.yaml", lens="b", data_dir=None)
    b = load_lens("b", b_files)
    again = b.answers[answer]
    assert again.status == "active" and b_report.drafts == 0
    assert again.provenance.certified_at == day
