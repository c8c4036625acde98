"""Accuracy benchmark on real questions: the defog databases and the Cortex Analyst models.

    python3 -m tests.benchmarks.accuracy [--corpora DIR] [--lenses DIR|auto]
        [--warehouse postgresql://…] [--format text|json] [--details]

``--corpora`` (default ``$DST_CORPORA``, else ``../shared/corpora`` beside the
checkout) is a folder shaped like the shared corpora: ``defog/`` (``data/<db>/``
with ``<db>.sql`` and ``<db>.json``, ``sql-eval/*.csv``) and ``cortex-analyst/<model>/``
(semantic model YAML files and one CSV data folder); either part may be absent, and
any missing piece is reported and skipped.

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

Cortex (:mod:`tests.benchmarks.cortex`): each model imported with ``dst import
cortex``, the lens author's additions written on top
(:mod:`tests.benchmarks.additions`, each listed under ``additions:``), and its
verified queries scored through ``dst apply``'s self-test.

Exit 1 when any answer was wrong, 2 when the corpora folder holds neither part.
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
from tests.helpers import CORPORA as DEFAULT_CORPORA
from tests.helpers import PROJECT

HAND_WRITTEN = PROJECT / "tests" / "fixtures" / "defog_lenses"


def run(
    corpora: Path,
    work: Path,
    *,
    lenses: Path | None = None,
    warehouse: str | None = None,
    files: tuple[str, ...] = QUESTION_FILES,
) -> Report:
    """Score every corpus found under ``corpora`` (see the module docstring)."""
    report = Report()
    defog, cortex = corpora / "defog", corpora / "cortex-analyst"
    if defog.is_dir():
        part = run_defog(defog, work, lenses=lenses, warehouse=warehouse, files=files)
        report.scores += part.scores
        report.skipped += part.skipped
    else:
        report.skipped.append(f"defog: no defog/ folder under {corpora}")
    if cortex.is_dir():
        part = run_cortex(cortex, work)
        report.scores += part.scores
        report.skipped += part.skipped
        report.additions += part.additions
    else:
        report.skipped.append(f"cortex: no cortex-analyst/ folder under {corpora}")
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables (or JSON)."""
    parser = argparse.ArgumentParser(prog="python3 -m tests.benchmarks.accuracy")
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument(
        "--lenses",
        default=str(HAND_WRITTEN),
        help="folder of lenses, one per db (default: the hand-written ones); auto: DDL-built",
    )
    parser.add_argument("--warehouse", default=None, help="PostgreSQL superuser URL to load into")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--details", action="store_true", help="json: every question's outcome")
    args = parser.parse_args(argv)
    if not (args.corpora / "defog").is_dir() and not (args.corpora / "cortex-analyst").is_dir():
        print(f"no defog/ or cortex-analyst/ folder under {args.corpora}", file=sys.stderr)
        return 2
    lenses = None if args.lenses == "auto" else Path(args.lenses)
    if lenses is not None and not lenses.is_dir():
        print(f"--lenses {lenses}: not a folder (a folder of lenses, or auto)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = run(args.corpora, Path(tmp), lenses=lenses, warehouse=args.warehouse)
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
