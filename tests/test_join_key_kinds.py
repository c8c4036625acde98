"""Join keys the lens declares of two kinds (text and not) are compared as text.

The fast tier's joins go through :func:`reconciler.assembly.joins.key_pair`; the
golden cases of ``fast_tier_keykinds.yaml`` run the SQL on DuckDB and PostgreSQL.
Here: which pairs are cast, that a pair of one kind is left as it was, and that the
join-grain gate still sees a cast join as the join it is.
"""

from __future__ import annotations

import sqlglot
import yaml

from reconciler.assembly.grain import joins_used
from reconciler.assembly.joins import key_equalities, keys_differ
from reconciler.lens import Lens, load_lens
from tests.helpers import FIXTURES


def _lens() -> Lens:
    spec = yaml.safe_load((FIXTURES / "fast_tier_keykinds.yaml").read_text("utf-8"))
    files = spec["lenses"]["apiary"]["files"]
    return load_lens("apiary", {p: t.encode() for p, t in files.items()})


def test_a_text_key_against_an_integer_key_is_cast_on_both_sides() -> None:
    lens = _lens()
    assert keys_differ(lens, "hives", "apiary_code", "apiaries", "apiary_id")
    join = lens.models["hives"].joins[0]
    (pair,) = key_equalities(lens, "hives", join, "h", "a")
    assert pair.sql("postgres") == "CAST(h.apiary_code AS TEXT) = CAST(a.apiary_id AS TEXT)"
    assert pair.sql("mysql") == "CAST(h.apiary_code AS CHAR) = CAST(a.apiary_id AS CHAR)"


def test_keys_of_one_kind_or_undeclared_are_left_as_they_are() -> None:
    lens = _lens()
    assert not keys_differ(lens, "harvests", "hive_id", "hives", "hive_id")
    assert not keys_differ(lens, "harvests", "no_such_column", "hives", "hive_id")
    join = lens.models["harvests"].joins[0]
    (pair,) = key_equalities(lens, "harvests", join, "v", "h")
    assert pair.sql() == "v.hive_id = h.hive_id"


def test_the_join_grain_gate_sees_a_cast_join() -> None:
    lens = _lens()
    tree = sqlglot.parse_one(
        "SELECT COUNT(*) FROM hive AS h JOIN apiary AS a"
        " ON CAST(h.apiary_code AS TEXT) = CAST(a.apiary_id AS TEXT)"
    )
    assert [(m, j.to) for m, j in joins_used(tree, lens)] == [("hives", "apiaries")]
