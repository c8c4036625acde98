"""Provenance is what makes an answer certified (DESIGN §2).

The loader cases are data, ``tests/fixtures/provenance_cases.yaml``, loaded in-process
from bytes; the writers (``dst init``, the Cortex and dbt importers, ``dst certify``,
``dst evals migrate``) are checked to write nothing that is active without a person and
a past date, and the new user's story (a draft flipped to active by hand) runs through
the command line.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import provenance
from reconciler.certify import plan_migration
from reconciler.errors import LensLoadError, UsageError
from reconciler.ids import AnswerId
from reconciler.interop.importers.cortex import import_cortex
from reconciler.interop.importers.dbt import import_dbt
from reconciler.lens import load_lens
from tests.helpers import FIXTURES, commit, git, invoke

CASES = yaml.safe_load((FIXTURES / "provenance_cases.yaml").read_text(encoding="utf-8"))
LINES = {"certified_by": 6, "certified_at": 7}
LENS = {"lens.yaml": b"name: shop\n", "models/orders.yaml": b"name: orders\ntable: orders\n"}


def answer_file(status: str, by: str, at: str) -> bytes:
    return (
        "id: total\n"
        "question: How many orders are there?\n"
        "sql: SELECT COUNT(*) AS n FROM orders\n"
        f"status: {status}\n"
        "provenance:\n"
        f"  certified_by: {json.dumps(by)}\n"
        f"  certified_at: {json.dumps(at)}\n"
    ).encode()


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["id"] for c in CASES["cases"]])
def test_provenance_case(case: dict[str, Any]) -> None:
    by = str(case.get("by", CASES["good_by"]))
    at = str(case.get("at", CASES["good_at"]))
    files = {**LENS, "answers/total.yaml": answer_file(case.get("status", "active"), by, at)}
    bad = case.get("bad")
    if bad is None:
        lens = load_lens("shop", files, root="lenses/shop")
        assert lens.answers[AnswerId("total")].provenance.certified_by == by
        return
    with pytest.raises(LensLoadError) as caught:
        load_lens("shop", files, root="lenses/shop")
    err = caught.value
    assert (err.path, err.line) == ("lenses/shop/answers/total.yaml", LINES[bad])
    assert f"provenance.{bad}" in err.message and "active" in err.message
    assert err.fix is not None and "dst certify" in err.fix and "status: draft" in err.fix


def test_the_future_starts_after_today_anywhere_on_earth() -> None:
    # 12:00 UTC on 1 June: already 2 June at UTC+14, not yet 3 June anywhere.
    noon = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    assert provenance.certified_at_problem("2025-06-02", now=noon) is None
    assert provenance.certified_at_problem("2025-06-02T23:59:00+14:00", now=noon) is None
    assert provenance.certified_at_problem("2025-06-03", now=noon) == "is in the future"
    # 09:00 UTC: 23:00 at UTC+14, so 2 June has not begun anywhere.
    morning = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
    assert provenance.certified_at_problem("2025-06-02", now=morning) == "is in the future"
    assert provenance.certified_at_problem("2025-06-01", now=morning) is None


def test_a_draft_flipped_to_active_by_hand_fails_validate_and_apply(repo: Path) -> None:
    assert invoke(repo, "init", "--lens", "shop").code == 0
    path = repo / "lenses" / "shop" / "answers" / "example_revenue_by_region.yaml"
    text = path.read_text(encoding="utf-8")
    line = text.splitlines().index("  certified_by: nobody yet (draft)") + 1
    path.write_text(text.replace("status: draft", "status: active"), encoding="utf-8")
    checked = invoke(repo, "validate")
    assert checked.code == 2
    where = f"lenses/shop/answers/example_revenue_by_region.yaml:{line}"
    assert where in checked.stderr and "dst certify" in checked.stderr, checked.stderr
    assert invoke(repo, "seed").code == 0
    commit(repo, {}, "shop, with a hand-flipped answer")
    applied = invoke(repo, "apply")
    assert applied.code == 2 and where in applied.stderr, applied.stdout + applied.stderr
    assert git(repo, "for-each-ref", "refs/dst/serving/").strip() == ""


def test_a_hand_flipped_answer_with_a_person_and_a_past_date_validates(repo: Path) -> None:
    assert invoke(repo, "init", "--lens", "shop").code == 0
    path = repo / "lenses" / "shop" / "answers" / "example_revenue_by_region.yaml"
    text = path.read_text(encoding="utf-8")
    text = text.replace("status: draft", "status: active")
    text = text.replace("nobody yet (draft)", "Pat Lee").replace("never", '"2025-01-15"')
    path.write_text(text, encoding="utf-8")
    checked = invoke(repo, "validate")
    assert checked.code == 0, checked.stderr


CORTEX = """\
name: shop
tables:
  - name: orders
    base_table: {database: db, schema: s, table: RAW_ORDERS}
    dimensions:
      - {name: status, expr: st, data_type: TEXT}
    measures:
      - {name: order_total, expr: amt * qty, data_type: NUMBER}
verified_queries:
"""
QUERY = (
    "  - {{name: {name}, question: {q}, sql: SELECT SUM(order_total) AS t FROM __orders{extra}}}\n"
)


def test_cortex_queries_without_a_person_or_a_past_date_become_drafts() -> None:
    queries = {
        "verified": ", verified_by: ana, verified_at: 1714752498",
        "no_verifier": ", verified_at: 1714752498",
        "no_time": ", verified_by: ana",
        "neither": "",
        "placeholder_verifier": ", verified_by: TBD, verified_at: 1714752498",
        "dash_verifier": ", verified_by: '-', verified_at: 1714752498",
        "future_time": ", verified_by: ana, verified_at: 32503680000",
    }
    source = CORTEX + "".join(
        QUERY.format(name=n, q=f"What is the {n} total?", extra=x) for n, x in queries.items()
    )
    files, report = import_cortex(
        source.encode(), model_path="models/shop.yaml", lens="shop", data_dir=None
    )
    lens = load_lens("shop", files)
    status = {a.id: a.status for a in lens.answers.values()}
    assert status == {n: "active" if n == "verified" else "draft" for n in queries}
    assert report.drafts == len(queries) - 1
    unmapped = "\n".join(report.unmapped)
    for name in queries.keys() - {"verified"}:
        assert f"written as draft answers/{name}.yaml" in unmapped
    assert "no verified_by" in unmapped and "is the placeholder 'tbd'" in unmapped
    assert "is in the future" in unmapped and "has no letters" in unmapped
    for answer in lens.answers.values():
        if answer.status == "draft":  # its placeholders would never pass if flipped
            problems = (
                provenance.certifier_problem(answer.provenance.certified_by),
                provenance.certified_at_problem(answer.provenance.certified_at),
            )
            assert problems != (None, None), answer.id


def test_dbt_saved_queries_never_become_certified_answers() -> None:
    source = """\
semantic_model:
  name: sales
  node_relation: {alias: raw_sales}
  defaults: {agg_time_dimension: day}
  primary_entity: sale
  dimensions:
    - {name: day, type: time, type_params: {time_granularity: day}}
    - {name: channel, type: categorical}
  measures:
    - {name: revenue, agg: sum, expr: amount}
---
metric:
  name: revenue
  type: simple
  type_params: {measure: revenue}
---
saved_query:
  name: revenue_by_channel
  query_params:
    metrics: [revenue]
    group_by: ["Dimension('sale__channel')"]
"""
    files, _ = import_dbt({"m.yaml": source.encode()}, source_name="m.yaml", lens="s")
    lens = load_lens("s", files)
    assert lens.exemplars and not lens.answers
    assert not [p for p in files if p.startswith("answers/")]


def test_migrate_and_certify_refuse_a_placeholder_person() -> None:
    files = {
        **LENS,
        "evals/cases.yaml": b"cases:\n  - question: How many orders?\n"
        b"    sql: SELECT COUNT(*) AS n FROM orders\n",
    }
    for by in ("", "  ", "TBD", "nobody", "-", "<your name>"):
        with pytest.raises(UsageError, match="only a named person certifies"):
            plan_migration("shop", files, "lenses/shop", by=by, at="2025-01-15T00:00:00Z")
    plan_migration("shop", files, "lenses/shop", by="Ada", at="2025-01-15T00:00:00Z")


def test_certify_cli_refuses_a_placeholder_by(lens_repo: Path) -> None:
    done = invoke(
        lens_repo,
        "certify",
        "--lens",
        "sales",
        "--question",
        "How many orders were placed in 2024?",
        "--yes",
        "--by",
        "TBD",
    )
    assert done.code == 2
    assert "certified_by 'TBD' is the placeholder 'tbd'" in done.stderr, done.stderr
    assert not list((lens_repo / "lenses" / "sales" / "answers").glob("how_many_orders*"))


def test_a_future_verified_at_does_not_pin_as_of() -> None:
    # "today" makes the answer depend on the day; year 3000 is no day a human saw it.
    query = QUERY.format(
        name="today", q="How much today?", extra=", verified_by: ana, verified_at: 32503680000"
    )
    files, _ = import_cortex(
        (CORTEX + query).encode(), model_path="models/shop.yaml", lens="shop", data_dir=None
    )
    lens = load_lens("shop", files)
    assert lens.config.as_of is None
    assert lens.answers[AnswerId("today")].status == "draft"


def test_certify_cli_refuses_a_by_of_two_lines(lens_repo: Path) -> None:
    done = invoke(
        lens_repo, "certify", "--lens", "sales", "--question",
        "How many orders were placed in 2024?", "--yes", "--by", "Dana Whitfield\nPat Lee",
    )  # fmt: skip
    assert done.code == 2, done.stdout + done.stderr
    assert "line break" in done.stderr
    assert not list((lens_repo / "lenses/sales/answers").glob("how_many_orders*"))
