"""Accuracy benchmark on real questions: the defog corpora and the Cortex Analyst models.

    python3 -m tests.benchmarks.accuracy [--corpora DIR] [--format text|json]

For each defog database (``defog/data/<db>/<db>.sql`` PostgreSQL DDL and inserts,
``<db>.json`` column glossary):

1. the load script is transpiled to DuckDB with sqlglot (``SERIAL`` → ``INTEGER``,
   foreign keys kept only as lens joins) and loaded into a DuckDB file — statements
   that still fail are counted, never hidden;
2. a lens is built from the DDL alone, never from the questions: one model per
   table (text, boolean, id and year/month columns are dimensions, dates and
   timestamps time dimensions, other numbers facts; primary keys and
   ``REFERENCES`` become ``primary_key`` and ``many_to_one`` joins) with the
   glossary's column descriptions, and one count metric per table
   (``<table>_count``, "number of <table>");
3. every question of ``sql-eval/questions_gen_postgres.csv`` for that database
   goes through the serving path (:func:`reconciler.ask.ask`, fast tier,
   read-only warehouse) and is scored three ways: **correct** when the served
   result matches one of the gold queries' (``;``-separated alternatives, ``{a, b}``
   column sets expanded to each non-empty subset, compared by
   :func:`reconciler.compare.diff.compare`), **wrong** when data was served that matches
   none, **declined** when nothing was served; a gold query that does not run on
   DuckDB makes the question **error** (counted apart, not scored);
4. every ``sql-eval/idk.csv`` question (no data can answer it) must be declined:
   serving any rows is **wrong**.

Each Cortex Analyst model under ``cortex-analyst/`` is imported with
``dst import cortex`` (its seeds included) and its verified queries scored the same
way, through ``dst test``'s own suite (:func:`reconciler.suite.run_answer`).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlglot
import yaml
from sqlglot import exp
from sqlglot.errors import SqlglotError

from reconciler.ask import ask
from reconciler.compare.diff import Verdict, compare
from reconciler.errors import DstError
from reconciler.lens import Lens, load_lens
from reconciler.resultset import ResultSet
from reconciler.suite import ValueCache
from reconciler.warehouse.connection import Warehouse

DEFAULT_CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"
OUTCOMES = ("correct", "wrong", "declined", "error")
MAX_SUBSET_ITEMS = 4
_SET = re.compile(r"\{([^{}]*)\}")
_TEXT = ("TEXT", "VARCHAR", "CHAR", "NCHAR", "NVARCHAR", "BPCHAR", "NAME", "UUID", "BOOLEAN")
_TIME = ("DATE", "TIMESTAMP", "TIMESTAMPTZ", "DATETIME", "TIMESTAMP_S", "TIMESTAMP_MS")


@dataclass
class DatabaseScore:
    """One database's figures."""

    name: str
    statements_loaded: int = 0
    statements_failed: int = 0
    tables: int = 0
    questions: Counter[str] = field(default_factory=Counter)
    idk: Counter[str] = field(default_factory=Counter)
    wrong_examples: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """JSON-ready figures."""
        return {
            "database": self.name,
            "statements_loaded": self.statements_loaded,
            "statements_failed": self.statements_failed,
            "tables": self.tables,
            "questions": {k: self.questions[k] for k in OUTCOMES},
            "idk": {k: self.idk[k] for k in OUTCOMES},
            "wrong_examples": self.wrong_examples[:5],
        }


def load_script(db: str, sql_text: str, target: Path) -> tuple[list[exp.Create], int, int]:
    """Load a defog PostgreSQL script into a new DuckDB file at ``target``.

    Returns:
        ``(CREATE TABLE statements as parsed, statements loaded, statements failed)``.
    """
    import duckdb

    con = duckdb.connect(str(target))
    creates: list[exp.Create] = []
    ok = failed = 0
    try:
        for schema in ("public", *sorted(set(re.findall(r"CREATE SCHEMA\s+(\w+)", sql_text)))):
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        for statement in sqlglot.parse(sql_text, read="postgres"):
            if statement is None:
                continue
            if isinstance(statement, exp.Create) and statement.kind == "TABLE":
                creates.append(statement.copy())
                _loadable(statement)
            try:
                con.execute(statement.sql("duckdb"))
                ok += 1
            except Exception:  # each failure is counted and reported
                failed += 1
    finally:
        con.close()
    return creates, ok, failed


def _loadable(create: exp.Create) -> None:
    """SERIAL types → integers and foreign keys dropped, so DuckDB accepts the table."""
    serial = {exp.DataType.Type.SERIAL, exp.DataType.Type.SMALLSERIAL}
    for dt in create.find_all(exp.DataType):
        if dt.this in serial or dt.this == exp.DataType.Type.BIGSERIAL:
            dt.set("this", exp.DataType.Type.BIGINT)
    for node in list(create.find_all(exp.Reference, exp.ForeignKey)):
        parent = node.parent
        if isinstance(parent, exp.ColumnConstraint):
            parent.pop()
        else:
            node.pop()


def lens_files(
    db: str, creates: Iterable[exp.Create], glossary: dict[str, Any]
) -> dict[str, bytes]:
    """Lens files for one database: ``lens.yaml`` and one model per table."""
    described = glossary.get("table_metadata", {})
    files = {"lens.yaml": yaml.safe_dump({"name": db, "row_cap": 1000}).encode()}
    for create in creates:
        table = create.this.this if isinstance(create.this, exp.Schema) else create.this
        if not isinstance(table, exp.Table):
            continue
        schema = create.this
        name = table.name.lower()
        qualified = f"{table.db}.{name}" if table.db and table.db != "public" else name
        notes = {c["column_name"]: c.get("column_description", "") for c in described.get(name, [])}
        model: dict[str, Any] = {"name": name, "table": qualified}
        dims, times, facts, keys, joins = [], [], [], [], []
        for col in schema.expressions if isinstance(schema, exp.Schema) else []:
            if isinstance(col, exp.ColumnDef):
                cname = col.name.lower()
                kind = col.args.get("kind")
                type_name = kind.this.name if isinstance(kind, exp.DataType) else "TEXT"
                entry = {"name": cname, "description": notes.get(cname, "")}
                if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in col.constraints):
                    keys.append(cname)
                for ref in col.find_all(exp.Reference):
                    joins.append(_join(cname, ref))
                if type_name in _TIME:
                    times.append({**entry, "data_type": "date"})
                elif type_name in _TEXT or cname in keys or cname.endswith(("id", "year", "month")):
                    dims.append(entry)
                else:
                    facts.append({**entry, "data_type": "number"})
            elif isinstance(col, exp.PrimaryKey):
                keys += [e.name.lower() for e in col.expressions]
            elif isinstance(col, exp.ForeignKey):
                ref = col.args.get("reference")
                if isinstance(ref, exp.Reference) and len(col.expressions) == 1:
                    joins.append(_join(col.expressions[0].name.lower(), ref))
        model.update(
            primary_key=keys,
            dimensions=dims,
            time_dimensions=times,
            facts=facts,
            joins=[j for j in joins if j],
        )
        files[f"models/{name}.yaml"] = yaml.safe_dump(model, sort_keys=False).encode()
        counted = f"COUNT(DISTINCT {keys[0]})" if len(keys) == 1 else "COUNT(*)"
        metric = {
            "name": f"{name}_count",
            "label": f"number of {name.replace('_', ' ')}",
            "description": f"How many {name} rows (one per {name}).",
            "model": name,
            "expression": counted,
        }
        files[f"metrics/{name}_count.yaml"] = yaml.safe_dump(metric, sort_keys=False).encode()
    return files


def _join(column: str, ref: exp.Reference) -> dict[str, Any] | None:
    target = ref.this
    table = target.this if isinstance(target, exp.Schema) else target
    cols = target.expressions if isinstance(target, exp.Schema) else []
    if not isinstance(table, exp.Table) or len(cols) != 1:
        return None
    return {
        "to": table.name.lower(),
        "relationship": "many_to_one",
        "on": {column: cols[0].name.lower()},
    }


def gold_variants(query: str) -> list[str]:
    """Every acceptable gold query: ``;`` alternatives × ``{a, b}`` column subsets (sql-eval)."""
    out: list[str] = []
    for alternative in (q.strip() for q in query.split(";")):
        if not alternative:
            continue
        found = _SET.search(alternative)
        if not found or not found.group(1).strip():
            out.append(alternative)
            continue
        items = [i.strip() for i in found.group(1).split(",") if i.strip()][:MAX_SUBSET_ITEMS]
        for size in range(1, len(items) + 1):
            for subset in itertools.combinations(items, size):
                chosen = ", ".join(subset)
                text = alternative[: found.start()] + chosen + alternative[found.end() :]
                out.append(text.replace("{}", chosen))
    return out


def _execute_gold(warehouse: Warehouse, query: str) -> list[ResultSet]:
    results = []
    for variant in gold_variants(query):
        try:
            sql = sqlglot.transpile(variant, read="postgres", write="duckdb")[0]
            results.append(warehouse.execute(sql, row_cap=1000, timeout_s=30))
        except (DstError, SqlglotError):
            continue
    return results


def score_question(
    lens: Lens, warehouse: Warehouse, values: Any, question: str, gold: str | None
) -> tuple[str, str]:
    """``(outcome, detail)`` for one question; ``gold`` ``None`` means it must be declined."""
    resp = ask(lens, question, warehouse, values, max_repairs=0)
    served = resp.served_rows and resp.result is not None
    if gold is None:
        return (
            ("wrong", f"served rows for an unanswerable question: {resp.sql}")
            if served
            else ("declined", "")
        )
    if not served or resp.result is None:
        return "declined", resp.message
    oracles = _execute_gold(warehouse, gold)
    if not oracles:
        return "error", "no gold variant runs on DuckDB"
    if any(compare(o, resp.result).verdict is Verdict.MATCH for o in oracles):
        return "correct", ""
    return "wrong", f"{question!r}: served {resp.sql}"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def run_defog(corpus: Path, work: Path) -> list[DatabaseScore]:
    """Score every defog database under ``corpus`` (``data/`` and ``sql-eval/``)."""
    questions = _rows(corpus / "sql-eval" / "questions_gen_postgres.csv")
    idk = _rows(corpus / "sql-eval" / "idk.csv")
    scores = []
    for folder in sorted(p for p in (corpus / "data").iterdir() if p.is_dir()):
        db = folder.name
        score = DatabaseScore(db)
        target = work / f"{db}.duckdb"
        creates, score.statements_loaded, score.statements_failed = load_script(
            db, (folder / f"{db}.sql").read_text(encoding="utf-8"), target
        )
        glossary = json.loads((folder / f"{db}.json").read_text(encoding="utf-8"))
        lens = load_lens(db, lens_files(db, creates, glossary))
        score.tables = len(lens.models)
        warehouse = Warehouse.open(f"duckdb:///{target}")
        try:
            values = ValueCache(warehouse, 30).for_lens(lens)
            for row in (r for r in questions if r["db_name"] == db):
                outcome, detail = score_question(
                    lens, warehouse, values, row["question"], row["query"]
                )
                score.questions[outcome] += 1
                if outcome == "wrong":
                    score.wrong_examples.append(detail)
            for row in (r for r in idk if r["db_name"] == db):
                outcome, detail = score_question(lens, warehouse, values, row["question"], None)
                score.idk[outcome] += 1
                if outcome == "wrong":
                    score.wrong_examples.append(detail)
        finally:
            warehouse.close()
        scores.append(score)
    return scores


CORTEX_MODELS = {
    "revenue_timeseries": ("revenue_timeseries/revenue_timeseries.yaml", "revenue_timeseries/data"),
    "sfdc_sales": ("sfdc_sales/sfdc_sales.yaml", "sfdc_sales/sample_data"),
}


def run_cortex(corpus: Path, work: Path) -> list[DatabaseScore]:
    """Import each Cortex model into a fresh repository and score its verified queries.

    Runs the real command line (``dst import cortex``, ``dst seed``, ``dst apply``): a
    first promotion self-tests every verified query, and each self-test outcome is
    one question's score.
    """
    repo = work / "cortex"
    repo.mkdir()
    _run(repo, "git", "init", "-q", "-b", "main")
    for lens, (model, data) in CORTEX_MODELS.items():
        _run(repo, sys.executable, "-m", "reconciler", "import", "cortex", str(corpus / model),
             "--lens", lens, "--data", str(corpus / data))  # fmt: skip
    (repo / ".gitignore").write_text(".dst/\n")
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "-c", "user.name=bench", "-c", "user.email=bench@example.com",
         "commit", "-q", "-m", "import")  # fmt: skip
    _run(repo, sys.executable, "-m", "reconciler", "seed")
    applied = json.loads(
        _run(repo, sys.executable, "-m", "reconciler", "apply", "--format", "json", check=False)
    )
    scores = []
    for obj in applied["lenses"]:
        score = DatabaseScore(f"cortex:{obj['lens']}", tables=len(obj.get("changed_assets", [])))
        for r in obj["self_test"]:
            score.questions[r["outcome"] if r["outcome"] in OUTCOMES else "error"] += 1
        scores.append(score)
    return scores


def _run(cwd: Path, *argv: str, check: bool = True) -> str:
    import subprocess

    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed: {done.stderr[-2000:]}")
    return done.stdout


def totals(scores: list[DatabaseScore]) -> dict[str, Counter[str]]:
    """Overall question and idk counters."""
    q: Counter[str] = Counter()
    i: Counter[str] = Counter()
    for s in scores:
        q.update(s.questions)
        i.update(s.idk)
    return {"questions": q, "idk": i}


def _rate(c: Counter[str], key: str) -> str:
    scored = c["correct"] + c["wrong"] + c["declined"]
    return f"{100 * c[key] / scored:.1f}%" if scored else "n/a"


def render(scores: list[DatabaseScore], elapsed_s: float) -> list[str]:
    """The printed table: per database, then overall, with accuracy and wrong-rate."""
    lines = [
        "database        tables  load ok/failed  correct  wrong  declined  error  accuracy  "
        "wrong-rate  idk declined/wrong",
    ]
    for s in scores:
        q, i = s.questions, s.idk
        lines.append(
            f"{s.name:<15} {s.tables:>6}  {s.statements_loaded:>7}/{s.statements_failed:<6} "
            f"{q['correct']:>8} {q['wrong']:>6} {q['declined']:>9} {q['error']:>6}  "
            f"{_rate(q, 'correct'):>8}  {_rate(q, 'wrong'):>10}  {i['declined']:>12}/{i['wrong']}"
        )
    t = totals(scores)
    q, i = t["questions"], t["idk"]
    lines.append(
        f"{'overall':<15} {'':>6}  {'':>14} {q['correct']:>8} {q['wrong']:>6} {q['declined']:>9} "
        f"{q['error']:>6}  {_rate(q, 'correct'):>8}  {_rate(q, 'wrong'):>10}  "
        f"{i['declined']:>12}/{i['wrong']}"
    )
    idk_scored = i["declined"] + i["wrong"]
    lines.append(
        f"unanswerable (idk.csv): {i['wrong']} wrong of {idk_scored} "
        f"(wrong-rate {100 * i['wrong'] / idk_scored if idk_scored else 0:.1f}%); "
        f"{elapsed_s:.1f} s"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table (or JSON); exit 1 if any idk question got rows."""
    parser = argparse.ArgumentParser(prog="python3 -m tests.benchmarks.accuracy")
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    corpus = args.corpora / "defog"
    if not (corpus / "sql-eval" / "idk.csv").is_file():
        print(f"defog corpus not found under {args.corpora}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        scores = run_defog(corpus, Path(tmp))
        if (args.corpora / "cortex-analyst").is_dir():
            scores += run_cortex(args.corpora / "cortex-analyst", Path(tmp))
    elapsed = time.perf_counter() - started
    if args.format == "json":
        t = totals(scores)
        print(
            json.dumps(
                {
                    "databases": [s.record() for s in scores],
                    "overall": {k: dict(v) for k, v in t.items()},
                    "elapsed_s": round(elapsed, 1),
                },
                indent=2,
            )
        )
    else:
        print("\n".join(render(scores, elapsed)))
    return 1 if totals(scores)["idk"]["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
