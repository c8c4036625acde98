"""Every golden case of the fast tier, from every fixture file, through one runner.

Each case of each ``tests/fixtures/fast_tier_*.yaml`` in the
:class:`~tests.helpers.grammar.GoldenFile` form is asked in-process on its small lens
over a real DuckDB warehouse (:func:`~tests.helpers.grammar.check_golden_case`): a
served case must be read as its ``reads_as`` says and return the oracle's rows, a
declined one must give its reason and its ``decline_kind``. Test ids are
``<file>::<case id>`` (the file without its ``fast_tier_`` prefix and ``.yaml``).

Each of a case's ``paraphrases`` is asked the same way and must be read as the case
is or decline (:func:`~tests.helpers.grammar.check_paraphrase`), test id
``<file>::<case id>::p<n>``; one marked ``xfail`` is a strict expected failure.

A standing check asks every reader of every golden question, as the tier does
(:func:`reconciler.reading.parse.every_claim`), and holds that at most one SQL comes
out — two only where the case itself declines as ``two_readings``: a new reader
that claims an old question differently shows up here, by name.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pytest

from reconciler.assembly.request import assemble
from reconciler.assembly.retrieval import retrieve
from reconciler.generators import fast
from reconciler.reading.grammar.backrefs import without_backrefs
from reconciler.reading.ir import Declined
from reconciler.reading.parse import every_claim
from tests.helpers.grammar import GoldenFile, dimension_values, paraphrases
from tests.helpers.readings import golden_files

FILES = {name: GoldenFile.read(name) for name in golden_files()}
CASES = [(name, case) for name, golden in FILES.items() for case in golden.cases]
IDS = [f"{name.removeprefix('fast_tier_').removesuffix('.yaml')}::{c['id']}" for name, c in CASES]
PARAPHRASES = [
    pytest.param(
        name,
        case,
        question,
        id=f"{case_id}::p{n}",
        marks=[pytest.mark.xfail(strict=True, reason=xfail)] if xfail else [],
    )
    for case_id, (name, case) in zip(IDS, CASES, strict=True)
    for n, (question, xfail) in enumerate(paraphrases(case), start=1)
]


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``warehouses(file)``: that file's DuckDB warehouses, built on first use."""
    root = tmp_path_factory.mktemp("golden")

    @cache
    def built(name: str) -> dict[str, Path]:
        (root / name).mkdir()
        return FILES[name].warehouses(root / name)

    return built


@pytest.mark.parametrize(("name", "case"), CASES, ids=IDS)
def test_golden_case(warehouses: Any, name: str, case: dict[str, Any]) -> None:
    FILES[name].check(warehouses(name), case)


@pytest.mark.parametrize(("name", "case", "question"), PARAPHRASES)
def test_paraphrase_reads_the_same_or_declines(
    warehouses: Any, name: str, case: dict[str, Any], question: str
) -> None:
    FILES[name].check_paraphrase(warehouses(name), case, question)


@pytest.mark.parametrize(("name", "case"), CASES, ids=IDS)
def test_golden_question_has_at_most_one_reading(
    warehouses: Any, name: str, case: dict[str, Any]
) -> None:
    golden = FILES[name]
    lens_name = case.get("lens") or next(iter(golden.files))
    extra = {"lens.yaml": case["lens_yaml"].encode()} if "lens_yaml" in case else None
    lens = golden.lens(lens_name, extra)
    con = duckdb.connect(str(warehouses(name)[lens_name]), read_only=True)
    try:
        values = dimension_values(con, lens)
    finally:
        con.close()
    request = assemble(lens, case["question"])
    try:
        question = without_backrefs(lens, request.question, values)
        found = retrieve(lens, question, values)
    except Declined:
        return  # declined before any reader is asked
    claims, grammar = every_claim(lens, question, found, values, request.metrics, fast.parse)
    read = {c.reader: c.sql for c in (*claims, grammar) if c is not None and c.sql is not None}
    expected = 2 if case.get("decline_kind") == "two_readings" else 1
    assert len(set(read.values())) <= expected, f"readers differ: {sorted(read)}"
