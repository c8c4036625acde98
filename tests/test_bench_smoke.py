"""A quick run of the benchmark code at tiny sizes (full run: python3 -m tests.benchmarks.run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.benchmarks import run, synth


def test_benchmarks_run_at_tiny_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DST_BENCH_CACHE", str(tmp_path / "cache"))
    rows = run.bench_plan([synth.Size(2, 6, 2), synth.Size(3, 6, 2)], runs=1)
    rows += run.bench_startup(runs=1)
    rows.append(run.bench_compare(50, 6, runs=1))
    assert [r.name.split(",")[0] for r in rows] == [
        "plan",
        "plan",
        "plan growth 2 -> 3 unchanged lenses",
        "plan",
        "plan peak memory",
        "status",
        "--help vs import typer",
        "compare 50x6 results (vs 10 ms)",
    ]
    assert [r.unit for r in rows].count("KiB") == 1
    for row in rows:
        assert row.measured_s is not None and row.measured_s > 0
        assert row.ratio is not None and row.met in ("met", "MISSED")
    table = run.render(rows)
    assert table.count("\n") == len(rows) + 1 + sum(1 for r in rows if r.note)
    assert (tmp_path / "cache" / synth.Size(3, 6, 2).key / ".complete").is_file()
    assert os.environ["DST_BENCH_CACHE"] == str(tmp_path / "cache")


def test_the_hooked_push_and_the_fast_tier_cost_benchmarks_run(tmp_path: Path) -> None:
    row = run.bench_hooked_push(tmp_path, runs=1)
    assert row.measured_s is not None and row.baseline_s is not None
    assert row.met in ("met", "MISSED")

    from tests.benchmarks import fasttier

    items = [
        ("spider", "concert_singer", "How many singers do we have?"),
        ("spider", "concert_singer", "What is the total number of singers?"),
        ("spider", "no_such_database", "How many?"),  # no lens: not measured
    ]
    costs = fasttier.measure(items)
    assert list(costs) == ["spider"]
    spider = costs["spider"]
    assert len(spider.per_question) == 2 and all(ns > 0 for ns in spider.per_question)
    assert sum(spider.outcomes.values()) == 2
    # every question passes the grammar's reader; the rest of the time is charged apart
    assert spider.per_reader["grammar"] > 0 and fasttier.BEFORE in spider.per_reader
    table = fasttier.render(costs)
    assert "| spider | 2 |" in table and "| all | 2 |" in table and "| grammar |" in table
