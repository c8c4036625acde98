"""The fast tier's answered golden cases, collected for running on another warehouse.

Each golden case with an oracle — ``fast_tier_cases.yaml`` (shop, crm, shop as of) and
every fixture file :func:`collect` lists — with the lens it asks and the DuckDB schema
SQL of its data. ``tests/test_fast_tier_postgres.py`` and
``tests/test_fast_tier_mariadb.py`` run them on PostgreSQL and MariaDB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from reconciler.lens import Lens, load_lens
from tests.helpers import FIXTURES
from tests.helpers.grammar import CRM, CRM_SCHEMA, SCHEMA, SHOP, grammar_cases
from tests.test_fast_tier_more import MORE


@dataclass(frozen=True)
class Golden:
    """One answered case: where its lens and data come from, and what it must return."""

    id: str
    lens: str  # also the PostgreSQL schema and the DuckDB file's stem
    question: str
    oracle: str
    ordered: bool = False


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text("utf-8"))
    return data


def collect() -> tuple[dict[str, Lens], dict[str, str], list[Golden]]:
    """``(lenses by schema, schema SQL by schema, answered cases)`` of every fixture."""
    lenses: dict[str, Lens] = {
        "g_shop": load_lens("shop", SHOP),
        "g_crm": load_lens("crm", CRM),
        "g_shop_as_of": load_lens("shop", MORE),
    }
    schemas = {"g_shop": SCHEMA, "g_crm": CRM_SCHEMA, "g_shop_as_of": SCHEMA}
    cases = [
        Golden(f"{section}-{i}", f"g_{section}", q, oracle)
        for section in ("shop", "crm", "shop_as_of")
        for i, q, oracle in grammar_cases(section, "shapes")
    ]
    for fixture in (
        "fast_tier_reach.yaml",
        "fast_tier_soundness.yaml",
        "fast_tier_cortex2.yaml",
        "fast_tier_today.yaml",
        "fast_tier_backrefs.yaml",
        "fast_tier_keykinds.yaml",
    ):
        data, tag = _load(fixture), fixture.removeprefix("fast_tier_").removesuffix(".yaml")
        for name, spec in data["lenses"].items():
            files = {p: t.encode() for p, t in spec["files"].items()}
            lenses[f"g_{tag}_{name}"] = load_lens(name, files)
            schemas[f"g_{tag}_{name}"] = spec["schema"]
        cases += [
            Golden(
                f"{tag}-{c['id']}",
                f"g_{tag}_{c['lens']}",
                c["question"],
                c["oracle"],
                bool(c.get("ordered")),
            )
            for c in data["cases"]
            if "oracle" in c
        ]
    for fixture, name in (
        ("fast_tier_ratios.yaml", "ratio_shop"),
        ("fast_tier_facts.yaml", "fleet"),
        ("fast_tier_more2.yaml", "week_shop"),
        ("fast_tier_zero_rows.yaml", "zero_rows"),
        ("fast_tier_more3.yaml", "calendar_shop"),
        ("fast_tier_nulls.yaml", "lending"),
        ("fast_tier_dates2.yaml", "clinic_dates"),
        ("fast_tier_countconditions.yaml", "league"),
    ):
        data, tag = _load(fixture), fixture.removeprefix("fast_tier_").removesuffix(".yaml")
        lenses[f"g_{tag}"] = load_lens(name, {p: t.encode() for p, t in data["lens"].items()})
        schemas[f"g_{tag}"] = data["schema"]
        cases += [
            Golden(
                f"{tag}-{c['id']}", f"g_{tag}", c["question"], c["oracle"], bool(c.get("ordered"))
            )
            for c in data["cases"]
            if "oracle" in c
        ]
    return lenses, schemas, cases
