"""Each command imports only what it uses: ``python -X importtime`` of a real ``dst`` process.

Start-up is most of what a read-only command costs, so the heavy engines stay out
of the commands that do not touch them: no SQLAlchemy, DuckDB or HTTP client for
``dst status`` or ``dst plan`` (a plan runs nothing), no rich for them either
(rich draws help, tables and progress bars on a terminal only), and ``dst --help``
loads none of the reconcile, the suite, pygit2 or sqlglot. These spawn
``dst``: what a fresh process imports cannot be seen from inside this one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from tests.helpers import commit, dst

ENGINES = (
    "sqlalchemy",
    "duckdb",
    "openai",
    "sentence_transformers",
    "reconciler.warehouse",
    "reconciler.generators.smart",
)
RICH = ("rich", "typer.rich_utils")
SQLALCHEMY = ("sqlalchemy", "duckdb_engine", "psycopg", "psycopg2")
SCORING = ("reconciler.suite", "reconciler.generators", "reconciler.compare")
RECONCILE = ("reconciler.context", "reconciler.suite", "reconciler.reconcile", "pygit2", "sqlglot")


def imported(repo: Path, *args: str) -> set[str]:
    """Top-level-qualified names of every module ``dst ARGS`` imported in ``repo``."""
    done = dst(repo, *args, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.code in (0, 1), done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                names.add(name)
    assert "reconciler.cli.entry" in names, done.stderr[-2000:]
    return names


def heavy(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    """The modules in ``names`` that are, or sit under, one of ``prefixes``."""
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


def test_status_imports_no_engine_and_no_rich(promoted_repo: Path) -> None:
    names = imported(promoted_repo, "status")
    assert heavy(names, ENGINES + RICH) == []


@pytest.mark.parametrize("args", [("status",), ("log", "sales")])
def test_status_and_log_load_neither_the_suite_nor_sqlglot(
    promoted_repo: Path, args: tuple[str, ...]
) -> None:
    # they read refs and deployment metadata: no run report (which imports the suite,
    # the gate and the generators) and no SQL parser (lens.yaml is not read)
    names = imported(promoted_repo, *args)
    assert "reconciler.history" in names  # it did read the serving state
    assert heavy(names, (*SCORING, "reconciler.results", "sqlglot")) == []


def test_status_loads_no_lens(promoted_repo: Path) -> None:
    # status reads the serving refs and their deployment records; no lens file is
    # parsed, so neither the lens model nor what it validates with is imported
    names = imported(promoted_repo, "status")
    assert "reconciler.git.serving" in names  # it did read the refs
    assert heavy(names, ("reconciler.lens", "reconciler.provenance", "reconciler.assembly")) == []


# What validating a file or a record loads, and the engines a read of refs never needs.
MODELS_AND_ENGINES = (
    "pydantic",
    "pydantic_core",
    "yaml",
    "sqlglot",
    "duckdb",
    "sqlalchemy",
    "reconciler.state",
    "reconciler.loader",
    "reconciler.lensfiles",
    "reconciler.lens",
)


@pytest.mark.parametrize("args", [("status",), ("status", "--format", "json")])
def test_status_reads_the_state_records_without_their_models(
    promoted_repo: Path, args: tuple[str, ...]
) -> None:
    # the serving refs' state/meta.json are read as plain values (reconciler.git.records);
    # the pydantic models stay with the writers, and nothing parses SQL or YAML
    names = imported(promoted_repo, *args)
    assert {"reconciler.git.serving", "reconciler.git.records"} <= names  # it read the refs
    assert heavy(names, MODELS_AND_ENGINES) == []


def test_status_of_a_record_the_plain_reader_cannot_take_asks_the_model(
    promoted_repo: Path,
) -> None:
    # the guard above must be able to fail: a meta the plain check refuses (here a
    # number as text, which the model coerces) is read by the model, and shown the same
    repo = pygit2.Repository(str(promoted_repo))
    ref = repo.references["refs/dst/serving/sales"]
    before = dst(promoted_repo, "status", "--format", "json")
    commit_ = repo[ref.target].peel(pygit2.Commit)
    meta = json.loads(commit_.tree["state/meta.json"].data)
    meta["recorded_at"] = str(meta["recorded_at"])
    state = repo.TreeBuilder(commit_.tree["state"].peel(pygit2.Tree))
    raw = (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode()
    state.insert("meta.json", repo.create_blob(raw), pygit2.GIT_FILEMODE_BLOB)
    root = repo.TreeBuilder(commit_.tree)
    root.insert("state", state.write(), pygit2.GIT_FILEMODE_TREE)
    oid = repo.create_commit(
        None, commit_.author, commit_.committer, commit_.message, root.write(), commit_.parent_ids
    )
    ref.set_target(oid)
    after = dst(promoted_repo, "status", "--format", "json")
    assert after.code == 0, after.stderr
    shown = [{**r, "serving": None} for r in after.json()["lenses"]]
    assert shown == [{**r, "serving": None} for r in before.json()["lenses"]]
    assert {"pydantic", "reconciler.state"} <= imported(promoted_repo, "status")


# What reading dst.yaml loads: the file models (pydantic's, for every lens file) and YAML.
REPO_CONFIG = ("reconciler.lensfiles", "reconciler.loader", "yaml")


@pytest.mark.parametrize("args", [("status",), ("status", "--format", "json")])
def test_status_without_a_dst_yaml_loads_neither_yaml_nor_the_file_models(
    promoted_repo: Path, args: tuple[str, ...]
) -> None:
    # no dst.yaml is committed: there are no environments to name, nothing to validate
    assert not (promoted_repo / "dst.yaml").exists()
    names = imported(promoted_repo, *args)
    assert "reconciler.git.serving" in names  # it did read the refs
    assert heavy(names, REPO_CONFIG) == []


def test_status_with_a_committed_dst_yaml_still_reads_it(promoted_repo: Path) -> None:
    # the guard above must be able to fail: a committed dst.yaml is validated (a broken
    # one is exit 2), and it names the environments status lists
    commit(promoted_repo, {"dst.yaml": "environments:\n  staging: {}\n"}, "environments")
    done = dst(promoted_repo, "status")
    assert done.code == 0, done.stderr
    assert "environment staging:" in done.stdout
    assert {"reconciler.lensfiles", "yaml"} <= imported(promoted_repo, "status")
    commit(promoted_repo, {"dst.yaml": "enviroments: {}\n"}, "a typo")
    assert dst(promoted_repo, "status").code == 2


def test_plan_of_serving_trees_imports_no_engine_and_no_rich(promoted_repo: Path) -> None:
    names = imported(promoted_repo, "plan")
    assert heavy(names, ENGINES + RICH) == []
    # a plan runs nothing: the run report, the gate and the renderers name the suite's
    # results only in annotations
    assert heavy(names, (*SCORING, "reconciler.cases", "reconciler.ask")) == []


def test_plan_of_a_change_imports_no_engine_and_no_rich(promoted_repo: Path) -> None:
    skill = next((promoted_repo / "lenses" / "sales" / "skills").glob("*.md"))
    edited = skill.read_text() + "\n- One more convention.\n"
    commit(promoted_repo, {skill.relative_to(promoted_repo).as_posix(): edited}, "skill")
    names = imported(promoted_repo, "plan", "--format", "json")
    assert "reconciler.assets" in names  # it did plan the change
    assert heavy(names, ENGINES + RICH) == []
    assert heavy(names, (*SCORING, "reconciler.cases", "reconciler.ask")) == []


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        # the top-level help is printed from the command table, before typer loads
        (("--help",), ENGINES + RECONCILE + ("pydantic", "typer", "rich")),
        # a command's own help builds its parameters, which loads typer's pydantic adapter
        (("plan", "--help"), ENGINES + RECONCILE),
    ],
)
def test_help_imports_neither_engines_nor_the_reconcile(
    repo: Path, args: tuple[str, ...], absent: tuple[str, ...]
) -> None:
    assert heavy(imported(repo, *args), absent) == []


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("Average order value by quarter in 2023", "certified_answer"),
        ("total revenue by region", "generated"),
    ],
)
def test_ask_on_the_embedded_warehouse_opens_duckdb_without_sqlalchemy(
    promoted_repo: Path, question: str, route: str
) -> None:
    args = ("ask", question, "--lens", "sales", "--format", "json")
    assert f'"route": "{route}"' in dst(promoted_repo, *args).stdout
    names = imported(promoted_repo, *args)
    assert "duckdb" in names  # it did run the query
    assert heavy(names, SQLALCHEMY + RICH + ("openai",)) == []


# What building a command through typer loads; the top-level help needs none of it either.
TYPER = ("typer", "click", "rich")


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("status", "--format", "json"),
        ("ask", "Average order value by quarter in 2023", "--lens", "sales", "--format", "json"),
        ("ask", "total revenue by region", "--lens=sales"),
    ],
)
def test_status_and_ask_of_a_plain_shape_run_before_typer(
    promoted_repo: Path, args: tuple[str, ...]
) -> None:
    # reconciler.cli.lean runs them: their own work costs less than typer's command building
    names = imported(promoted_repo, *args)
    assert "reconciler.cli.lean" in names
    # it ran the command there: status reads every lens's state, ask its serving lens
    ran = "reconciler.history" if args[0] == "status" else "reconciler.candidate"
    assert ran in names
    assert heavy(names, TYPER) == []


def test_status_with_an_option_typer_must_word_still_loads_typer(promoted_repo: Path) -> None:
    # the guard above must be able to fail: an unknown option is typer's to report
    done = dst(promoted_repo, "status", "--no-such-flag", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.code == 2
    assert "| typer" in done.stderr


def test_the_runtime_loads_no_suite_generators_or_warehouse_edge() -> None:
    # reconciler.context is what every command holding a repository imports first.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import reconciler.context"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "reconciler.context" in names
    assert heavy(names, SCORING + ENGINES + ("reconciler.assembly",)) == []


# The generation route's own modules: the assembly of a request and the tiers.
GENERATION = (
    "reconciler.generators",
    "reconciler.suite",
    "reconciler.assembly.request",
    "reconciler.assembly.exemplars",
    "reconciler.assembly.retrieval",
    "reconciler.assembly.profiles",
)


def test_a_certified_ask_loads_neither_the_generators_nor_the_suite(promoted_repo: Path) -> None:
    # the certified SQL runs through the read-only guard (sqlglot) on the warehouse
    # (duckdb) and is gated; nothing is generated, so nothing that generates loads
    args = ("ask", "Average order value by quarter in 2023", "--lens", "sales", "--format", "json")
    names = imported(promoted_repo, *args)
    assert '"route": "certified_answer"' in dst(promoted_repo, *args).stdout
    assert {"duckdb", "reconciler.trust"} <= names  # it did run and gate the SQL
    assert heavy(names, GENERATION + SQLALCHEMY + RICH) == []
    # it reads the serving lens and plans nothing: neither the plan nor the run report,
    # nor every lens's serving state (reconciler.history words a lens that does not serve)
    assert heavy(names, ("reconciler.plan", "reconciler.results", "reconciler.history")) == []


def test_a_generated_ask_still_loads_the_generation_route(promoted_repo: Path) -> None:
    # the guard above must be able to fail: the same names appear when generating
    args = ("ask", "total revenue by region", "--lens", "sales", "--format", "json")
    names = imported(promoted_repo, *args)
    assert {"reconciler.generators", "reconciler.assembly.request"} <= names


def test_a_generated_ask_scores_nothing_so_loads_no_suite(promoted_repo: Path) -> None:
    # it generates, runs and gates one question: the value index (reconciler.assembly.values)
    # loads, the suite that scores certified answers does not, nor the plan or run report
    args = ("ask", "total revenue by region", "--lens", "sales", "--format", "json")
    names = imported(promoted_repo, *args)
    assert {"reconciler.generators", "reconciler.assembly.values"} <= names
    assert heavy(names, ("reconciler.suite", "reconciler.plan", "reconciler.results")) == []
