"""The fast tier's own cost: parse and compile time per question, in-process.

Run from the project root::

    python3 -m tests.benchmarks.fasttier [--corpora DIR] [--only spider,defog]

Every Spider and defog question whose database has a hand-written lens
(``tests/fixtures/spider_lenses/``, ``tests/fixtures/defog_lenses/``) goes once
through :func:`reconciler.generators.fast.compile_request`, the fast tier's whole
work: retrieval, exemplar adaptation, every reader, rendering the SQL. The request
is assembled outside the clock, and each lens is warmed by compiling its first
question once, unmeasured (a serving process or a suite is warm per lens, not per
question). No warehouse is opened: dimension values are empty, so a question that
needs a value filter declines where it would have read one, its cost up to there
counted. Times are wall nanoseconds of this one thread (``perf_counter_ns``) on a
process doing nothing else; the figures are the median, p95 and max per question.

Each construct's share is the time spent inside each top-level reader
(:func:`reconciler.reading.parse.every_shape`'s readers and the one-measure
grammar), measured by wrapping their ``claim`` calls (outermost calls only, so a
reader that calls the grammar's parser is charged for it); "before the readers" is
the rest: retrieval, exemplar adaptation, back-references.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.assembly.request import assemble
from reconciler.generators import fast
from reconciler.lens import Lens, load_lens
from reconciler.reading import parse as shapes
from tests.benchmarks.defog import QUESTION_FILES, question_sets, read_lens_dir
from tests.benchmarks.scores import Report
from tests.benchmarks.spider import questions as spider_questions

PROJECT = Path(__file__).resolve().parents[2]
LENSES = {
    "spider": PROJECT / "tests" / "fixtures" / "spider_lenses",
    "defog": PROJECT / "tests" / "fixtures" / "defog_lenses",
}
BEFORE = "before the readers"


@dataclass
class Costs:
    """Per-question nanoseconds, and nanoseconds per top-level reader."""

    per_question: list[int] = field(default_factory=list)
    per_reader: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)


@contextmanager
def reader_clock(costs: Costs) -> Iterator[None]:
    """Charge the time inside each outermost ``claim(reader, read)`` to ``reader``."""
    original = shapes.claim
    depth = [0]

    def timed(reader: str, read: Callable[[], str | None]) -> Any:
        if depth[0]:
            return original(reader, read)
        depth[0] += 1
        start = time.perf_counter_ns()
        try:
            return original(reader, read)
        finally:
            costs.per_reader[reader] += time.perf_counter_ns() - start
            depth[0] -= 1

    shapes.claim = timed  # type: ignore[assignment]
    try:
        yield
    finally:
        shapes.claim = original


def _lens(corpus: str, db: str, cache: dict[tuple[str, str], Lens | None]) -> Lens | None:
    key = (corpus, db)
    if key not in cache:
        folder = LENSES[corpus] / db
        cache[key] = (
            load_lens(db, read_lens_dir(folder), root=f"{folder.parent.name}/{db}")
            if (folder / "lens.yaml").is_file()
            else None
        )
    return cache[key]


def corpus_questions(corpora: Path, only: set[str]) -> list[tuple[str, str, str]]:
    """``(corpus, database, question)`` of each part present under ``corpora``."""
    report = Report()
    items: list[tuple[str, str, str]] = []
    if "spider" in only and (corpora / "spider").is_dir():
        items += [("spider", q["db_id"], q["question"]) for q in spider_questions(
            corpora / "spider", report)]  # fmt: skip
    if "defog" in only and (corpora / "defog").is_dir():
        for rows in question_sets(corpora / "defog", QUESTION_FILES, report).values():
            items += [("defog", r["db_name"], r["question"]) for r in rows]
    for line in report.skipped:
        print(f"  skipped: {line}", flush=True)
    return items


def measure(items: list[tuple[str, str, str]]) -> dict[str, Costs]:
    """Compile every question with a lens once; the costs per corpus."""
    lenses: dict[tuple[str, str], Lens | None] = {}
    warmed: set[tuple[str, str]] = set()
    out: dict[str, Costs] = {}
    for corpus, db, question in items:
        lens = _lens(corpus, db, lenses)
        if lens is None:
            continue
        costs = out.setdefault(corpus, Costs())
        request = assemble(lens, question, certified_matching=False)
        if (corpus, db) not in warmed:
            warmed.add((corpus, db))
            fast.compile_request(lens, request, {})
        readers = Costs()
        with reader_clock(readers):
            start = time.perf_counter_ns()
            generation = fast.compile_request(lens, request, {})
            took = time.perf_counter_ns() - start
        costs.per_question.append(took)
        costs.per_reader.update(readers.per_reader)
        costs.per_reader[BEFORE] += took - sum(readers.per_reader.values())
        costs.outcomes["read" if generation.sql is not None else "declined"] += 1
    return out


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def render(costs: dict[str, Costs]) -> str:
    """The table: per corpus, the per-question median, p95, max; then each reader's share."""
    lines = [
        "| questions | count | read / declined | median | p95 | max |",
        "|---|---|---|---|---|---|",
    ]
    total = Costs()
    for corpus, c in [*costs.items(), ("all", total)]:
        if corpus != "all":
            total.per_question += c.per_question
            total.per_reader.update(c.per_reader)
            total.outcomes.update(c.outcomes)
        xs = sorted(c.per_question)
        if not xs:
            continue
        p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
        lines.append(
            f"| {corpus} | {len(xs)} | {c.outcomes['read']} / {c.outcomes['declined']} | "
            f"{_ms(statistics.median(xs))} | {_ms(p95)} | {_ms(xs[-1])} |"
        )
    spent = sum(total.per_reader.values()) or 1
    lines += ["", "| reader | share of the fast tier's time | per question |", "|---|---|---|"]
    count = len(total.per_question) or 1
    for reader, ns in total.per_reader.most_common():
        lines.append(f"| {reader} | {100 * ns / spent:.1f} % | {_ms(ns / count)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Costs]:
    """Measure and print the table; returns the costs per corpus."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("DST_CORPORA", PROJECT.parent / "shared" / "corpora"))
    parser.add_argument("--corpora", type=Path, default=default)
    parser.add_argument("--only", default="spider,defog", help="comma list: spider,defog")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args(argv)
    items = corpus_questions(args.corpora, set(args.only.split(",")))
    costs = measure(items)
    print(render(costs), flush=True)
    if args.json is not None:
        raw = {k: {"ns": v.per_question, "readers": dict(v.per_reader)} for k, v in costs.items()}
        args.json.write_text(json.dumps(raw))
    return costs


if __name__ == "__main__":
    main()
