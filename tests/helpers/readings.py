"""Write the reading or decline kind a golden case lacks, from the current fast tier.

``python -m tests.helpers.readings [fixture.yaml …]`` asks every case of the golden
fixture files (default: every ``tests/fixtures/fast_tier_*.yaml`` in the
:class:`~tests.helpers.grammar.GoldenFile` form, and the sections of
``fast_tier_cases.yaml``) and, under its ``- id:`` line, adds
``reads_as:`` to a served case and ``decline_kind:`` to a declined one that has
none. Cases that state them already are left alone: the runner holds them to what
they say. Review what it wrote before committing: it records what the code does
today, which a golden case must only do once a person has read it and agreed.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import yaml

from reconciler.lens import load_lens
from tests.helpers import FIXTURES
from tests.helpers.grammar import GoldenFile, ask, dimension_values


def golden_files() -> list[str]:
    """Names of the fixture files in the :class:`GoldenFile` form (``cases`` at the top)."""
    return sorted(
        p.name
        for p in FIXTURES.glob("fast_tier_*.yaml")
        if re.search(r"^cases:", p.read_text("utf-8"), re.M)
    )


def fill(name: str, root: Path) -> int:
    """Add the missing ``reads_as`` / ``decline_kind`` lines of ``name``; how many."""
    golden = GoldenFile.read(name)
    (root / name.removesuffix(".yaml")).mkdir()
    warehouses = golden.warehouses(root / name.removesuffix(".yaml"))
    added: dict[str, str] = {}
    for case in golden.cases:
        key = "decline_kind" if "reason" in case else "reads_as"
        if key in case:
            continue
        result = _ask(golden, warehouses, case)
        if "reason" in case:
            assert result.decline_kind is not None, (case["id"], result.sql)
            added[case["id"]] = f"decline_kind: {result.decline_kind.value}"
        else:
            assert result.reading is not None, (case["id"], result.declined)
            added[case["id"]] = f"reads_as: {json.dumps(result.reading, ensure_ascii=False)}"
    _insert(FIXTURES / name, added)
    return len(added)


def fill_sections() -> int:
    """Add the missing ``reads_as`` / ``decline_kind`` lines of ``fast_tier_cases.yaml``
    (sections ``shop``, ``crm`` and ``shop_as_of``, on their lenses); how many."""
    from tests.helpers.grammar import CRM, CRM_SCHEMA, SCHEMA, SHOP
    from tests.test_fast_tier_more import MORE

    lenses = {"shop": (SHOP, SCHEMA), "crm": (CRM, CRM_SCHEMA), "shop_as_of": (MORE, SCHEMA)}
    data = yaml.safe_load((FIXTURES / "fast_tier_cases.yaml").read_text("utf-8"))
    added: dict[str, str] = {}
    for section, (files, schema) in lenses.items():
        lens = load_lens(yaml.safe_load(files["lens.yaml"])["name"], files)
        con = duckdb.connect()
        con.execute(schema)
        values = dimension_values(con, lens)
        for kind in ("shapes", "declines"):
            for case in data[section][kind]:
                key = "reads_as" if kind == "shapes" else "decline_kind"
                if key in case:
                    continue
                result = ask(lens, case["question"], values)
                if kind == "shapes":
                    assert result.reading is not None, (case["id"], result.declined)
                    added[case["id"]] = f"reads_as: {json.dumps(result.reading)}"
                else:
                    assert result.decline_kind is not None, (case["id"], result.sql)
                    added[case["id"]] = f"decline_kind: {result.decline_kind.value}"
        con.close()
    _insert(FIXTURES / "fast_tier_cases.yaml", added)
    return len(added)


def _insert(path: Path, added: dict[str, str]) -> None:
    lines = path.read_text("utf-8").splitlines(keepends=True)
    out: list[str] = []
    for line in lines:
        out.append(line)
        match = re.match(r"^(\s*)- id: (\S+)\s*$", line)
        if match and match[2] in added:
            out.append(f"{match[1]}  {added[match[2]]}\n")
    path.write_text("".join(out), "utf-8")


def _ask(golden: GoldenFile, warehouses: dict[str, Path], case: dict[str, Any]) -> Any:
    name = case.get("lens") or next(iter(golden.files))
    extra = {"lens.yaml": case["lens_yaml"].encode()} if "lens_yaml" in case else None
    lens = golden.lens(name, extra)
    con = duckdb.connect(str(warehouses[name]), read_only=True)
    try:
        return ask(lens, case["question"], dimension_values(con, lens))
    finally:
        con.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in sys.argv[1:] or golden_files():
            print(fixture, fill(fixture, Path(tmp)))
    if not sys.argv[1:]:
        print("fast_tier_cases.yaml", fill_sections())
