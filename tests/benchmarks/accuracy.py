"""Accuracy benchmark on real questions: defog, Cortex Analyst and Spider.

    python3 -m tests.benchmarks.accuracy [--corpora DIR] [--lenses DIR|auto]
        [--only defog|cortex|spider …] [--warehouse postgresql://…]
        [--format text|json] [--details]

``--corpora`` (default ``$DST_CORPORA``, else ``../shared/corpora`` beside the
checkout) is a folder shaped like the shared corpora: ``defog/`` (``data/<db>/``
with ``<db>.sql`` and ``<db>.json``, ``sql-eval/*.csv``), ``cortex-analyst/<model>/``
(semantic model YAML files and one CSV data folder) and ``spider/``
(``database/<db_id>/<db_id>.sqlite``, ``dev_questions.json``); any part may be
absent, and any missing piece is reported and skipped. ``--only`` (repeatable) runs
the parts named.

``--lenses DIR`` gives every part that takes lenses (defog, Spider) its lens from
``DIR/<db>/`` when present; by default each part's hand-written lenses
(``tests/fixtures/defog_lenses/``, ``tests/fixtures/spider_lenses/``); ``auto``:
every lens built from the schema alone (:mod:`tests.benchmarks.autolens`).

Defog (:mod:`tests.benchmarks.defog`): each database is loaded into DuckDB (or, with
``--warehouse``, into a new PostgreSQL database named for the run, dropped after);
its lens is ``--lenses DIR/<db>/`` when present (default: the hand-written lenses of
``tests/fixtures/defog_lenses/``), else — or for every database with ``--lenses auto``
— one built from the DDL alone (:mod:`tests.benchmarks.autolens`). Every question
of ``questions_gen_postgres.csv`` and ``instruct_basic_postgres.csv`` goes through the serving path
(:func:`reconciler.ask.ask`, fast tier, read-only warehouse) and is scored:
**correct** when the served result matches one of the gold queries' (``;``
alternatives, ``{a, b}`` column sets expanded to each non-empty subset, compared by
:func:`reconciler.compare.diff.compare`), **wrong** when data was served that matches
none, **declined** when nothing was served, **error** when no gold variant runs.
Every ``idk.csv`` question is unanswerable: serving any rows is **wrong** ("idk served").

A question that matches one of the lens's certified answers is served through the
certified route, not generated, and is scored **declined** ("not generated").

Cortex (:mod:`tests.benchmarks.cortex`): each model imported with ``dst import
cortex``, the lens author's additions written on top
(:mod:`tests.benchmarks.additions`, each listed under ``additions:``), and its
verified queries scored through ``dst apply``'s self-test.

Spider (:mod:`tests.benchmarks.spider`): each SQLite database copied into DuckDB (or
PostgreSQL), every question of ``dev_questions.json`` through the serving path, its
gold query run on the original SQLite file, outside dst; each wrong answer is listed
with its SQL, trust state and the kind of difference.

Exit 1 when any answer was wrong, 2 when the corpora folder holds none of the parts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.cortex import run_cortex
from tests.benchmarks.defog import QUESTION_FILES, run_defog
from tests.benchmarks.scores import Report, render
from tests.benchmarks.spider import run_spider
from tests.helpers import CORPORA as DEFAULT_CORPORA, PROJECT

HAND_WRITTEN = PROJECT / "tests" / "fixtures" / "defog_lenses"
SPIDER_LENSES = PROJECT / "tests" / "fixtures" / "spider_lenses"
PARTS = {"defog": "defog", "cortex": "cortex-analyst", "spider": "spider"}
"""Each part of the benchmark and its folder under the corpora folder."""


def run(
    corpora: Path,
    work: Path,
    *,
    lenses: Path | None = None,
    spider_lenses: Path | None = None,
    warehouse: str | None = None,
    files: tuple[str, ...] = QUESTION_FILES,
    parts: tuple[str, ...] = tuple(PARTS),
) -> Report:
    """Score every part of ``parts`` found under ``corpora`` (see the module docstring).

    ``lenses`` and ``spider_lenses`` are the defog and Spider lens folders (``None``:
    built from the schema).
    """
    report = Report()
    for part in parts:
        folder = corpora / PARTS[part]
        if not folder.is_dir():
            report.skipped.append(f"{part}: no {PARTS[part]}/ folder under {corpora}")
            continue
        if part == "defog":
            found = run_defog(folder, work, lenses=lenses, warehouse=warehouse, files=files)
        elif part == "cortex":
            found = run_cortex(folder, work)
        else:
            found = run_spider(folder, work, lenses=spider_lenses, warehouse=warehouse)
        report.scores += found.scores
        report.skipped += found.skipped
        report.additions += found.additions
        report.stale_notes += found.stale_notes
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables (or JSON)."""
    parser = argparse.ArgumentParser(prog="python3 -m tests.benchmarks.accuracy")
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument(
        "--lenses",
        default=None,
        help="folder of lenses, one per db (default: the hand-written ones); auto: schema-built",
    )
    parser.add_argument(
        "--only", action="append", choices=tuple(PARTS), help="run this part only (repeatable)"
    )
    parser.add_argument("--warehouse", default=None, help="PostgreSQL superuser URL to load into")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--details", action="store_true", help="json: every question's outcome")
    args = parser.parse_args(argv)
    parts = tuple(dict.fromkeys(args.only or PARTS))
    if not any((args.corpora / PARTS[p]).is_dir() for p in parts):
        folders = ", ".join(f"{PARTS[p]}/" for p in parts)
        print(f"none of {folders} under {args.corpora}", file=sys.stderr)
        return 2
    lenses: Path | None
    spider_lenses: Path | None
    if args.lenses is None:
        lenses, spider_lenses = HAND_WRITTEN, SPIDER_LENSES
    elif args.lenses == "auto":
        lenses = spider_lenses = None
    else:
        lenses = spider_lenses = Path(args.lenses)
        if not lenses.is_dir():
            print(f"--lenses {lenses}: not a folder (a folder of lenses, or auto)", file=sys.stderr)
            return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = run(
            args.corpora,
            Path(tmp),
            lenses=lenses,
            spider_lenses=spider_lenses,
            warehouse=args.warehouse,
            parts=parts,
        )
    elapsed = time.perf_counter() - started
    if args.format == "json":
        print(json.dumps(report.record(elapsed, details=args.details), indent=2))
    else:
        print("\n".join(render(report, elapsed)))
        for s in report.scores:
            for line in s.wrong_examples:
                print(f"wrong: {line}")
    wrong = report.totals()
    return 1 if wrong["questions"]["wrong"] or wrong["idk"]["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
