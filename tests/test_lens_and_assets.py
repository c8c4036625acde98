"""Lens loading, canonical hashing and stale selection, from bytes (no git, no warehouse)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from reconciler.assets import lens_assets
from reconciler.bindings import Bindings, Reason, select_stale, stamp
from reconciler.errors import LensLoadError
from reconciler.ids import AnswerId
from reconciler.lens import Lens, load_lens
from reconciler.loader import load_yaml
from reconciler.plan import LensPlan, plan_lens
from tests.helpers.certified import REVENUE, files
from tests.shop import CUSTOMERS, ORDERS


def test_loads_and_indexes_by_declared_name() -> None:
    lens = load_lens("shop", files())
    assert sorted(lens.models) == ["customers", "orders"]
    assert sorted(lens.metrics) == ["order_count", "revenue"]
    assert [a.id for a in lens.active_answers()] == ["cnt", "rev"]


@pytest.mark.parametrize(
    ("raw", "word"),
    [
        ("NO", "a boolean"),
        ("1.10", "a number"),
        ("012", "an integer"),
        ("12:30", "an integer"),
        ("2024-01-01", "a date"),
    ],
)
def test_implicit_typing_traps_ask_for_quotes(raw: str, word: str) -> None:
    bad = files()
    bad["metrics/revenue.yaml"] = REVENUE.replace(b"label: Revenue", f"label: {raw}".encode())
    with pytest.raises(LensLoadError) as info:
        load_lens("shop", bad)
    msg = info.value.render()
    assert "lenses/shop/metrics/revenue.yaml:2" in msg
    assert word in msg and "quote it" in msg


def test_same_name_in_two_files_is_an_error() -> None:
    bad = files()
    bad["metrics/copy.yaml"] = REVENUE
    with pytest.raises(LensLoadError, match="already declared in lenses/shop/metrics/"):
        load_lens("shop", bad)


def test_lens_name_must_match_directory() -> None:
    with pytest.raises(LensLoadError, match="differs from the directory name"):
        load_lens("other", files())


def _reformat(raw: bytes, indent: int, reverse: bool) -> bytes:
    data = load_yaml("x.yaml", raw).data  # dst's loader: `on` stays a string key
    items = list(data.items())
    if reverse:
        items.reverse()
    return (
        "# reformatted\n"
        + yaml.safe_dump(dict(items), indent=indent, sort_keys=False, default_flow_style=False)
    ).encode()


@settings(max_examples=25, deadline=None)
@given(
    indent=st.integers(min_value=2, max_value=6),
    reverse=st.booleans(),
    sql_case=st.sampled_from(["sum", "SUM", "Sum"]),
    spaces=st.integers(0, 3),
)
def test_formatting_never_changes_an_asset_hash(
    indent: int, reverse: bool, sql_case: str, spaces: int
) -> None:
    original = lens_assets(load_lens("shop", files()))
    metric = REVENUE.replace(b"SUM(amount)", f"{sql_case}({' ' * spaces}amount)".encode())
    edited = files()
    edited["metrics/revenue.yaml"] = _reformat(metric, indent, reverse)
    edited["models/orders.yaml"] = _reformat(ORDERS, indent, reverse)
    assert lens_assets(load_lens("shop", edited)) == original


def test_semantic_edit_changes_exactly_that_hash() -> None:
    original = lens_assets(load_lens("shop", files()))
    edited = files()
    edited["metrics/revenue.yaml"] = REVENUE.replace(b"SUM(amount)", b"SUM(amount) * 2")
    changed = lens_assets(load_lens("shop", edited))
    diff = {k for k in original if original[k].hash != changed[k].hash}
    assert diff == {"metrics/revenue"}


def _stamped(lens_files: dict[str, bytes]) -> tuple[Bindings, Lens]:
    lens = load_lens("shop", lens_files)
    _, deps = select_stale(lens, lens_assets(lens), Bindings(), None)
    assets = lens_assets(lens)
    stamps = {a: stamp(lens, assets, a, deps[a], "c0", 0) for a in deps}
    return Bindings(stamps), lens


def test_stale_selection_names_reason_and_chain() -> None:
    bindings, serving = _stamped(files())
    edited = files()
    edited["models/customers.yaml"] = CUSTOMERS + b"  - name: tier\n"
    lens = load_lens("shop", edited)
    stale, _ = select_stale(lens, lens_assets(lens), bindings, serving)
    by_answer = {s.answer: s for s in stale}
    # both answers read orders, which joins customers: staleness is transitive
    assert set(by_answer) == {"cnt", "rev"}
    reason = by_answer[AnswerId("rev")].reasons[0]
    assert reason.reason is Reason.ASSET_CHANGED
    assert reason.chain[-2:] == ("models/orders", "models/customers")
    assert "models/orders → models/customers" in reason.describe()


def test_metric_edit_stales_only_answers_that_use_it() -> None:
    bindings, serving = _stamped(files())
    edited = files()
    edited["metrics/revenue.yaml"] = REVENUE.replace(b"SUM(amount)", b"SUM(amount) * 2")
    lens = load_lens("shop", edited)
    stale, _ = select_stale(lens, lens_assets(lens), bindings, serving)
    assert [s.answer for s in stale] == ["rev"]
    assert stale[0].reason_codes == (Reason.ASSET_CHANGED,)


def _replan(edited: dict[str, bytes]) -> LensPlan:
    bindings, serving = _stamped(files())
    return plan_lens(
        "shop",
        candidate=load_lens("shop", edited),
        candidate_commit=None,
        candidate_tree=None,
        serving=serving,
        serving_deployment=None,
        serving_tree=None,
        bindings=bindings,
    )


def test_provenance_and_status_edits_are_not_retested() -> None:
    edited = files()
    edited["answers/rev.yaml"] = edited["answers/rev.yaml"].replace(b"Ana", b"Bea")
    edited["answers/cnt.yaml"] = edited["answers/cnt.yaml"].replace(
        b"status: active", b"status: retired"
    )
    plan = _replan(edited)
    assert plan.stale == () and plan.self_test == ()
    assert dict(plan.changed_answers) == {"cnt": "active→retired", "rev": "provenance"}


def test_reauthored_sql_is_self_tested_not_gated() -> None:
    edited = files()
    edited["answers/rev.yaml"] = edited["answers/rev.yaml"].replace(
        b"SUM(amount) FROM orders", b"SUM(amount) AS revenue FROM orders"
    )
    plan = _replan(edited)
    assert plan.self_test == ("rev",)
    assert [s.reason_codes for s in plan.stale] == [(Reason.SQL_REAUTHORED,)]
    assert plan.gated == ()


@pytest.mark.parametrize(
    "setting",
    [
        'max_cost_usd: "1"',
        "max_cost_usd: true",
        'generator: {tiers: [command], command: {run: [x], timeout_s: "30"}}',
        'generator: {tiers: [smart], smart: {timeout_s: "60"}}',
        'generator: {tiers: [smart], smart: {max_retries: "2"}}',
        'generator: {tiers: [smart], smart: {prompt_cost_per_1k: ".nan"}}',
        "generator: {tiers: [smart], smart: {completion_cost_per_1k: .inf}}",
    ],
)
def test_a_number_written_as_a_string_or_a_boolean_is_a_load_error(setting: str) -> None:
    bad = files()
    bad["lens.yaml"] += f"{setting}\n".encode()
    with pytest.raises(LensLoadError) as info:
        load_lens("shop", bad)
    assert "lenses/shop/lens.yaml:3" in info.value.render()


def test_numbers_in_lens_settings_load_as_numbers() -> None:
    good = files()
    good["lens.yaml"] += b"max_cost_usd: 1\ngenerator: {tiers: [smart], smart: {timeout_s: 5}}\n"
    lens = load_lens("shop", good)
    assert lens.config.max_cost_usd == 1.0
    assert lens.config.generator.smart.timeout_s == 5.0


@pytest.mark.parametrize(
    ("path", "old", "new", "fix"),
    [
        (
            "metrics/revenue.yaml",
            b"label: Revenue",
            b"lable: Revenue",
            "did you mean 'label'?",
        ),
        (
            "models/orders.yaml",
            b"joins:",
            b"join:",
            "did you mean 'joins'?",
        ),
    ],
)
def test_an_unknown_key_names_the_key_it_is_closest_to(
    path: str, old: bytes, new: bytes, fix: str
) -> None:
    bad = files()
    assert old in bad[path], bad[path]
    bad[path] = bad[path].replace(old, new)
    with pytest.raises(LensLoadError) as info:
        load_lens("shop", bad)
    msg = info.value.render()
    assert f"lenses/shop/{path}:" in msg and "unknown key" in msg
    assert fix in msg and "keys here:" in msg


def test_an_unknown_key_inside_a_list_item_lists_that_items_keys() -> None:
    bad = files()
    bad["models/orders.yaml"] = bad["models/orders.yaml"].replace(
        b"  - name: order_date", b"  - name: order_date\n    zzz_key: 1", 1
    )
    with pytest.raises(LensLoadError) as info:
        load_lens("shop", bad)
    msg = info.value.render()
    assert "unknown key 'zzz_key'" in msg
    assert "use one of the keys here:" in msg and "data_type" in msg
