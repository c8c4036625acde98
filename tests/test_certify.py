"""``dst certify``: real seeded repositories, the real CLI, a real terminal (pty) for the prompt."""

from __future__ import annotations

import ast
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.git.trees import worktree_files
from reconciler.lens import load_lens
from tests.helpers import PROJECT, commit, git, invoke
from tests.helpers.terminal import on_terminal

QUESTION = "Net revenue by category in 2023"
NEW_ID = "net_revenue_by_category_in_2023"
ANSWERS = Path("lenses/sales/answers")


def answer_files(repo: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((repo / ANSWERS).iterdir())}


def test_certified_answer_loads_validates_and_apply_self_tests_it(lens_repo: Path) -> None:
    first = invoke(lens_repo, "apply", "--lens", "sales", "--format", "json")
    assert first.code == 0, first.stderr
    done = invoke(
        lens_repo, "certify", "--lens", "sales", "--question", QUESTION, "--yes", "--by", "Pat Lee"
    )
    assert done.code == 0, done.stderr
    rel = f"lenses/sales/answers/{NEW_ID}.yaml"
    assert f"certified {rel} by Pat Lee" in done.stdout
    # shown before writing: the generated SQL and its executed result
    assert "FROM orders" in done.stdout and "Furniture" in done.stdout
    raw = (lens_repo / rel).read_text()
    assert raw.startswith("# yaml-language-server: $schema=../../../schemas/answer.schema.json\n")
    lens = load_lens("sales", worktree_files(lens_repo, "sales"))
    answer = lens.answers[NEW_ID]
    assert (answer.question, answer.status) == (QUESTION, "active")
    assert answer.provenance.certified_by == "Pat Lee"
    at = datetime.strptime(answer.provenance.certified_at, "%Y-%m-%dT%H:%M:%SZ")
    age = datetime.now(timezone.utc).replace(tzinfo=None) - at
    assert 0 <= age.total_seconds() < 600
    assert re.fullmatch(
        r"dst certify \(generator tier fast; run \d{8}T\d{6}Z-[0-9a-f]{8}\)",
        answer.provenance.source,
    )
    assert invoke(lens_repo, "validate", "lenses/sales").code == 0
    commit(lens_repo, {}, "certify an answer")
    applied = invoke(lens_repo, "apply", "--lens", "sales", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    sales = applied.lens("sales")
    assert sales["action"] == "promoted"
    assert [(r["answer"], r["outcome"]) for r in sales["self_test"]] == [(NEW_ID, "correct")]


def test_declined_question_exits_1_and_writes_nothing(lens_repo: Path) -> None:
    before = answer_files(lens_repo)
    done = invoke(
        lens_repo,
        "certify",
        "--lens",
        "sales",
        "--question",
        "What is the weather like?",
        "--yes",
        "--by",
        "Pat Lee",
        "--format",
        "json",
    )
    assert done.code == 1, done.stderr
    obj = done.json()
    assert obj["status"] == "declined" and obj["path"] is None
    assert obj["candidate"]["declined"]
    assert "declined" in done.stderr
    assert answer_files(lens_repo) == before
    assert git(lens_repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("by", [None, "", "   "])
def test_yes_without_a_named_person_exits_2(lens_repo: Path, by: str | None) -> None:
    args = ["certify", "--lens", "sales", "--question", QUESTION, "--yes"]
    done = invoke(lens_repo, *args, *(["--by", by] if by is not None else []))
    assert done.code == 2
    assert "--yes needs --by NAME" in done.stderr and "fix:" in done.stderr
    assert not (lens_repo / ANSWERS / f"{NEW_ID}.yaml").exists()


def test_no_terminal_and_no_yes_exits_2_with_the_fix(lens_repo: Path) -> None:
    done = invoke(lens_repo, "certify", "--lens", "sales", "--question", QUESTION)
    assert done.code == 2
    assert "no terminal to confirm on" in done.stderr
    assert "--yes --by" in done.stderr and "--dry-run" in done.stderr
    assert not (lens_repo / ANSWERS / f"{NEW_ID}.yaml").exists()
    # --dry-run needs no terminal: it shows the SQL and the result, and writes nothing
    shown = invoke(lens_repo, "certify", "--lens", "sales", "--question", QUESTION, "--dry-run")
    assert shown.code == 0, shown.stderr
    assert "FROM orders" in shown.stdout and "6 rows, 2 columns" in shown.stdout
    assert not (lens_repo / ANSWERS / f"{NEW_ID}.yaml").exists()


def test_existing_answer_id_or_question_is_refused(lens_repo: Path) -> None:
    before = answer_files(lens_repo)
    by_id = invoke(
        lens_repo,
        "certify",
        "--lens",
        "sales",
        "--question",
        QUESTION,
        "--id",
        "net_revenue_2024",
        "--yes",
        "--by",
        "Pat Lee",
    )
    assert by_id.code == 2
    assert "lenses/sales/answers/net_revenue_2024.yaml already holds answer" in by_id.stderr
    # the question slugs to an existing id
    by_slug = invoke(
        lens_repo,
        "certify",
        "--lens",
        "sales",
        "--question",
        "Net revenue by region",
        "--yes",
        "--by",
        "Pat Lee",
    )
    assert by_slug.code == 2
    assert "lenses/sales/answers/net_revenue_by_region.yaml" in by_slug.stderr
    # the same question under another id would make the certified match ambiguous
    twin = invoke(
        lens_repo,
        "certify",
        "--lens",
        "sales",
        "--question",
        "net revenue by region?",
        "--id",
        "another",
        "--yes",
        "--by",
        "Pat Lee",
    )
    assert twin.code == 2
    assert "already certifies this question" in twin.stderr
    assert answer_files(lens_repo) == before


def test_hand_written_sql_is_executed_shown_and_recorded(lens_repo: Path, tmp_path: Path) -> None:
    sql = tmp_path / "orders.sql"
    sql.write_text("SELECT COUNT(*) AS orders FROM orders WHERE status = 'completed'\n")
    done = invoke(
        lens_repo,
        "certify",
        "--lens",
        "sales",
        "--question",
        "How many completed orders are there?",
        "--id",
        "completed_orders",
        "--sql",
        str(sql),
        "--yes",
        "--by",
        "Pat Lee",
        "--format",
        "json",
    )
    assert done.code == 0, done.stderr
    obj = done.json()
    assert obj["status"] == "certified"
    assert obj["path"] == "lenses/sales/answers/completed_orders.yaml"
    rows = obj["result"]["rows"]
    assert len(rows) == 1 and rows[0][0] > 0
    assert "hand-written SQL from orders.sql" in obj["provenance"]["source"]
    assert "hand-written SQL from orders.sql" in done.stderr  # the preview goes to stderr
    stored = yaml.safe_load((lens_repo / obj["path"]).read_text())
    assert stored["sql"].strip() == sql.read_text().strip()
    assert invoke(lens_repo, "validate", "lenses/sales").code == 0


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DELETE FROM orders", "sql:"),
        ("SELECT order_id FROM orders", "more than row_cap=1000 rows"),
    ],
)
def test_unsafe_or_over_cap_sql_is_refused(
    lens_repo: Path, tmp_path: Path, sql: str, message: str
) -> None:
    before = answer_files(lens_repo)
    path = tmp_path / "q.sql"
    path.write_text(sql)
    done = invoke(
        lens_repo,
        "certify",
        "--lens",
        "sales",
        "--question",
        "Every order id",
        "--sql",
        str(path),
        "--yes",
        "--by",
        "Pat Lee",
    )
    assert done.code == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert answer_files(lens_repo) == before


def _certify_file(repo: Path, path: Path) -> Any:
    return invoke(
        repo, "certify", "--lens", "sales", "--question", "How many orders are there?",
        "--sql", str(path), "--yes", "--by", "Pat Lee",
    )  # fmt: skip


def test_a_trailing_comment_after_one_statement_is_one_statement(
    lens_repo: Path, tmp_path: Path
) -> None:
    path = tmp_path / "count.sql"
    path.write_text("SELECT COUNT(*) AS orders FROM orders; -- note\n")
    done = _certify_file(lens_repo, path)
    assert done.code == 0, done.stdout + done.stderr
    assert invoke(lens_repo, "validate", "lenses/sales").code == 0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # over the file cap: refused from its size, before it is read
        ("SELECT 1 AS x\n" + "-- padding padding padding padding\n" * 8_000, "256 KiB"),
        # under the file cap, over what the guard validates: refused before parsing
        ("SELECT 1" + " + 1" * 40_000 + "\n", "the guard validates at most 32768"),
        ("SELECT " + "(" * 5_000 + "1" + ")" * 5_000 + "\n", "the guard validates at most 32"),
        # nesting without brackets reaches sqlglot's recursion limit: still exit 2
        ("SELECT " + "NOT " * 4_000 + "TRUE\n", "nested too deeply"),
    ],
    ids=["over_256_kib", "over_the_guard_length", "brackets_5000_deep", "not_4000_deep"],
)
def test_oversized_or_deep_sql_files_exit_2_at_the_file(
    lens_repo: Path, tmp_path: Path, text: str, words: str
) -> None:
    before = answer_files(lens_repo)
    path = tmp_path / "big.sql"
    path.write_text(text)
    started = time.monotonic()
    done = _certify_file(lens_repo, path)
    elapsed = time.monotonic() - started
    assert done.code == 2, done.stdout[-500:] + done.stderr[-2000:]
    assert f"{path}:" in done.stderr and words in done.stderr, done.stderr[-2000:]
    assert elapsed < 20, f"{elapsed:.1f} s to refuse"
    assert answer_files(lens_repo) == before


def test_on_a_terminal_the_person_confirms_and_git_user_name_is_recorded(lens_repo: Path) -> None:
    git(lens_repo, "config", "user.name", "Robin Analyst")
    args = ["certify", "--lens", "sales", "--question", QUESTION]
    code, out = on_terminal(lens_repo, args, [("Certify this SQL", "n")])
    assert code == 1, out
    assert "Furniture" in out and "not certified" in out
    assert not (lens_repo / ANSWERS / f"{NEW_ID}.yaml").exists()
    code, out = on_terminal(lens_repo, args, [("Certify this SQL", "y")])
    assert code == 0, out
    lens = load_lens("sales", worktree_files(lens_repo, "sales"))
    assert lens.answers[NEW_ID].provenance.certified_by == "Robin Analyst"


# --- "Only a human certifies": the package source holds no other writer of answers/ --------

_WRITER_ATTRS = {"write_bytes", "write_text", "rename", "symlink_to", "hardlink_to"}
_WRITER_MODULE_ATTRS = {
    "os": {"replace", "rename", "link", "symlink", "open", "fdopen"},
    "shutil": {"copy", "copy2", "copyfile", "copytree", "move"},
    "tempfile": {"mkstemp", "NamedTemporaryFile"},
}
# dst's own atomic writers, and the importers' writer (write_lens): their callers are checked.
_GENERIC_WRITERS = {"write_new_file", "replace_file", "write_lens"}
_ANSWERS_PATH = re.compile(r"(^|/)answers(/|$)")
# Who may call the generic writers and what they write.
_GENERIC_CALLERS = {
    "write_new_file": {"certify.py", "cli/init.py"},  # answers/<id>.yaml; init's scaffold
    # .gitignore; evals/cases.yaml; the .dst/profiles cache; the .dst/plan memo;
    # answers/<id>.yaml re-certified (dst certify --replace); the .dst/checked markers
    "replace_file": {
        "certify.py",
        "cli/init.py",
        "cli/evals.py",
        "assembly/profiles.py",
        "assets.py",
        "git/checked.py",
    },
}
# Modules that write files *and* build answers/ paths: certify alone.
_ANSWER_WRITERS = {"certify.py"}
# Writers whose answers/ constant is not a write target, each with the reason.
_NOT_ANSWER_WRITERS = {
    "schemas.py": "writes schemas/<kind>.schema.json; 'answers' maps the folder to its kind",
}


def _writes(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name in _GENERIC_WRITERS:
            found.add(str(name))
        if isinstance(func, ast.Name) and func.id == "open":
            mode = node.args[1] if len(node.args) > 1 else None
            mode = mode or next((k.value for k in node.keywords if k.arg == "mode"), None)
            if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+"):
                found.add("open")
        if isinstance(func, ast.Attribute):
            if func.attr in _WRITER_ATTRS:
                found.add(func.attr)
            owner = func.value.id if isinstance(func.value, ast.Name) else ""
            if func.attr in _WRITER_MODULE_ATTRS.get(owner, ()):
                found.add(f"{owner}.{func.attr}")
    return found


def _answer_paths(tree: ast.AST) -> set[str]:
    """String constants in code (docstrings excluded) naming an answers/ path."""
    docs = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in docs
        and _ANSWERS_PATH.search(n.value)
    }


def _package_modules() -> dict[str, ast.AST]:
    package = PROJECT / "reconciler"
    return {
        p.relative_to(package).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
        for p in sorted(package.rglob("*.py"))
    }


def test_the_scanner_sees_a_module_that_writes_an_answer() -> None:
    sneaky = ast.parse(
        'def f(root):\n    """Writes answers/."""\n'
        '    (root / "answers/x.yaml").write_text("id: x")\n'
    )
    assert _writes(sneaky) == {"write_text"} and _answer_paths(sneaky) == {"answers/x.yaml"}
    quiet = ast.parse('"""Mentions answers/ only in its docstring."""\nx = "a".replace("a", "b")\n')
    assert _writes(quiet) == set() and _answer_paths(quiet) == set()


def test_only_certify_and_the_importers_write_into_answers() -> None:
    modules = _package_modules()
    writers = {name: _writes(tree) for name, tree in modules.items()}
    answer_writers = {
        n
        for n, tree in modules.items()
        if writers[n] and _answer_paths(tree) and n not in _NOT_ANSWER_WRITERS
    }
    assert answer_writers <= _ANSWER_WRITERS, (
        f"{sorted(answer_writers - _ANSWER_WRITERS)} write files and build answers/ paths: "
        "only `dst certify` (a person) and the importers may write certified answers"
    )
    for writer, allowed in _GENERIC_CALLERS.items():
        callers = {name for name, found in writers.items() if writer in found}
        assert callers <= allowed, f"{writer} is called from {sorted(callers - allowed)}"
    # write_lens (the importers' one writer) is defined with the importers
    defined = {
        name
        for name, tree in modules.items()
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "write_lens"
    }
    assert defined == {"interop/importers/__init__.py"}
