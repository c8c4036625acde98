"""The accuracy benchmark on real questions, in the default suite (defog + Cortex).

What must always hold: every question is scored, no unanswerable (``idk.csv``)
question and no Cortex verified query is answered wrong, no defog question is
answered wrong with the hand-written lenses (the measured figure: 0 of 200), a question
that matches a certified answer of its lens is declined ("not generated"), and the
benchmark runs on any folder shaped like the corpora (missing pieces reported,
never a crash). The hand-written lenses are checked against the data: every
table exists and every declared primary key is unique.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa
import yaml

from reconciler.lens import load_lens
from tests import pg, servers
from tests.benchmarks import accuracy, defog, scores
from tests.benchmarks.scores import IDK_FILE, Report, render
from tests.figures import record
from tests.helpers import CORPORA, PROJECT

LENSES = PROJECT / "tests" / "fixtures" / "defog_lenses"
DATABASES = (
    "academic",
    "advising",
    "atis",
    "broker",
    "car_dealership",
    "derm_treatment",
    "ewallet",
    "scholar",
    "yelp",
)


@pytest.fixture(scope="module")
def corpus() -> Path:
    found = CORPORA / "defog"
    if not (found / "sql-eval" / IDK_FILE).is_file():
        pytest.skip(f"defog corpus not found at {found} (set DST_CORPORA to the corpora folder)")
    return found


@pytest.fixture(scope="module")
def hand_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    """The defog part with the hand-written lenses, and the folder of its DuckDB files."""
    work = tmp_path_factory.mktemp("defog")
    return defog.run_defog(corpus, work, lenses=LENSES), work


def test_defog_with_hand_written_lenses_is_scored_and_never_wrong_on_idk(
    hand_run: tuple[Report, Path],
) -> None:
    report = hand_run[0]
    assert not report.skipped, report.skipped
    assert {s.name for s in report.scores} == set(DATABASES)
    assert all(s.lens == "hand-written" for s in report.scores)
    files = report.by_corpus()["defog"]
    assert sum(files["questions_gen_postgres.csv"].values()) == 160
    assert sum(files["instruct_basic_postgres.csv"].values()) == 40
    assert sum(files[IDK_FILE].values()) == 75
    totals = report.totals()
    questions, idk = totals["questions"], totals["idk"]
    wrong = [e for s in report.scores for e in s.wrong_examples]
    assert idk["wrong"] == 0, wrong
    assert questions["wrong"] == 0, wrong
    assert questions["correct"] > 0
    for line in render(report, 0.0):
        if line.startswith("overall"):
            record(f"accuracy (defog, hand-written lenses, fast tier): {line[9:]}")


def test_defog_with_auto_generated_lenses_scores_every_question(
    corpus: Path, tmp_path: Path
) -> None:
    report = defog.run_defog(corpus, tmp_path, databases=("advising", "broker", "yelp"))
    assert all(s.lens == "auto-generated" for s in report.scores)
    files = report.by_corpus()["defog"]
    assert sum(files["questions_gen_postgres.csv"].values()) == 30 + 5 + 30
    assert sum(files["instruct_basic_postgres.csv"].values()) == 10
    assert report.totals()["idk"]["wrong"] == 0
    broker = next(s for s in report.scores if s.name == "broker")
    assert broker.load["statements"] > 0 and broker.load["rows_dropped"] > 0


def test_defog_on_postgresql_scores_as_on_duckdb_and_drops_its_database(
    corpus: Path, tmp_path: Path
) -> None:
    admin = pg.admin_or_skip()
    picked = ("advising", "ewallet")
    before = _databases(admin)
    on_duckdb = defog.run_defog(corpus, tmp_path, lenses=LENSES, databases=picked)
    on_postgres = defog.run_defog(
        corpus, tmp_path, lenses=LENSES, databases=picked, warehouse=pg.admin_url()
    )
    assert not on_postgres.skipped, on_postgres.skipped
    assert on_postgres.by_corpus() == on_duckdb.by_corpus()
    assert all(s.load == {"failed": 0} for s in on_postgres.scores)
    left = _databases(admin) - before
    admin.dispose()
    assert not left, left


def _databases(admin: sa.Engine) -> set[str]:
    with admin.connect() as conn:
        names = {r[0] for r in conn.exec_driver_sql("SELECT datname FROM pg_database")}
    # Only the benchmark's own names: other users of the server come and go meanwhile.
    return {n for n in names if n.startswith(f"{servers.PREFIX}bench_")}


def test_hand_written_lenses_name_real_tables_and_unique_keys(corpus: Path, tmp_path: Path) -> None:
    problems = []
    for db in DATABASES:
        lens = load_lens(db, defog.read_lens_dir(LENSES / db))
        assert lens.config.description.strip(), f"{db}: lens.yaml says nothing it covers"
        target = tmp_path / f"{db}.duckdb"
        defog.load_duckdb((corpus / "data" / db / f"{db}.sql").read_text("utf-8"), target)
        con = duckdb.connect(str(target), read_only=True)
        try:
            for model in lens.models.values():
                assert model.description, f"{db}/{model.name}: no description"
                if not model.primary_key:
                    continue
                keys = ", ".join(model.primary_key)
                dupes = con.execute(
                    f"SELECT {keys} FROM {model.table} GROUP BY {keys} HAVING COUNT(*) > 1 LIMIT 1"
                ).fetchall()
                if dupes:
                    problems.append(f"{db}/{model.name}: ({keys}) repeats {dupes[0]}")
        finally:
            con.close()
    assert not problems, problems


def _copy_corpus(root: Path) -> Path:
    """Part of the shared corpora under other names: one Cortex model, two defog databases."""
    cortex = CORPORA / "cortex-analyst" / "sfdc_sales"
    if not (cortex / "sfdc_sales.yaml").is_file():
        pytest.skip(f"Cortex corpus not found at {cortex}")
    model = root / "cortex-analyst" / "pipeline"
    model.mkdir(parents=True)
    shutil.copy(cortex / "sfdc_sales.yaml", model / "pipeline_model.yaml")
    shutil.copytree(cortex / "sample_data", model / "csv")
    (root / "cortex-analyst" / "empty").mkdir()
    data = root / "defog" / "data"
    for db in ("advising", "car_dealership"):
        shutil.copytree(CORPORA / "defog" / "data" / db, data / db)
    (data / "ghost").mkdir()
    evals = root / "defog" / "sql-eval"
    evals.mkdir()
    for name in ("questions_gen_postgres.csv", IDK_FILE):
        shutil.copy(CORPORA / "defog" / "sql-eval" / name, evals / name)
    return root


def test_the_benchmark_runs_on_any_corpus_folder_and_reports_missing_pieces(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpora = _copy_corpus(tmp_path / "corpora")
    argv = ["--corpora", str(corpora), "--lenses", str(LENSES), "--format", "json", "--details"]
    code = accuracy.main(argv)
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    names = {(d["corpus"], d["database"], d["lens"]) for d in out["databases"]}
    assert names == {
        ("defog", "advising", "hand-written"),
        ("defog", "car_dealership", "hand-written"),
        ("cortex", "pipeline_model", "imported"),
    }
    skipped = "\n".join(out["skipped"])
    assert "instruct_basic_postgres.csv not found" in skipped
    assert "data/ghost/ghost.sql not found" in skipped
    assert "empty/ holds no semantic model" in skipped
    cortex = out["corpora"]["cortex"]["verified_queries"]
    assert sum(cortex.values()) == 18 and cortex["wrong"] == 0
    defog_files = out["corpora"]["defog"]
    assert sum(defog_files["questions_gen_postgres.csv"].values()) == 30 + 5
    assert defog_files[IDK_FILE]["wrong"] == 0
    for db in out["databases"]:
        counted = sum(sum(c.values()) for c in db["files"].values())
        assert len(db["questions"]) == counted > 0
        assert all(q["question"] and q["outcome"] in scores.OUTCOMES for q in db["questions"])
    assert accuracy.main(["--corpora", str(tmp_path / "nothing")]) == 2


def test_gold_variants_expand_alternatives_and_column_sets() -> None:
    got = defog.gold_variants("SELECT {a, b} FROM t GROUP BY {};SELECT c FROM t;")
    assert got == [
        "SELECT a FROM t GROUP BY a",
        "SELECT b FROM t GROUP BY b",
        "SELECT a, b FROM t GROUP BY a, b",
        "SELECT c FROM t",
    ]


def test_decline_reasons_count_each_unknown_word_and_elide_names() -> None:
    assert scores.reasons("unrecognised words: 'posted', 'ordered', 'posted'") == [
        "unknown word 'posted'",
        "unknown word 'ordered'",
    ]
    assert scores.reasons("'rating' is a fact of model 'reviews': say how") == [
        "'…' is a fact of model '…': say how"
    ]
    assert scores.reasons("") == ["no reason given"]


def test_a_question_matching_a_certified_answer_is_declined_not_correct(
    corpus: Path, tmp_path: Path
) -> None:
    """The benchmark measures the generator: a certified answer served is not generated."""
    picked, files = ("ewallet",), ("instruct_basic_postgres.csv",)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    before = defog.run_defog(corpus, tmp_path / "a", lenses=LENSES, databases=picked, files=files)
    outcomes = {o["question"]: o["outcome"] for o in before.scores[0].outcomes}
    question = next(q for q, outcome in outcomes.items() if outcome == "correct")
    rows = defog.question_sets(corpus, files, Report())[files[0]]
    gold = next(r["query"] for r in rows if r["question"] == question)
    lenses = tmp_path / "lenses"
    shutil.copytree(LENSES / "ewallet", lenses / "ewallet")
    answer = {
        "id": "held_out",
        "question": question,
        "sql": defog.gold_variants(gold)[0],
        "provenance": {"certified_by": "Dana Whitfield", "certified_at": "2025-01-15"},
    }
    (lenses / "ewallet" / "answers").mkdir()
    (lenses / "ewallet" / "answers" / "held_out.yaml").write_text(yaml.safe_dump(answer))
    after = defog.run_defog(corpus, tmp_path / "b", lenses=lenses, databases=picked, files=files)
    scored = {o["question"]: o for o in after.scores[0].outcomes}
    assert scored[question]["outcome"] == "declined", scored[question]
    assert "not generated: the lens's certified answer held_out" in scored[question]["detail"]
    assert {q: o["outcome"] for q, o in scored.items() if q != question} == {
        q: o for q, o in outcomes.items() if q != question
    }
