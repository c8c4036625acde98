"""Bad input: exit 2, a message naming the file and the line, nothing promoted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from tests.conftest import GIT_ENV, commit, dst, git

GOOD_LENS = "name: shop\n"
GOOD_MODEL = "name: orders\ntable: orders\n"
ANSWER = """\
id: total
question: How many orders are there?
sql: {sql}
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""

CASES = {
    # id: (relative path, content, line expected in the message, words expected)
    "malformed_yaml": ("models/orders.yaml", "name: orders\ntable: [orders\n", 3, "syntax"),
    "duplicate_key": (
        "models/orders.yaml",
        "name: orders\ntable: a\ntable: b\n",
        3,
        "duplicate key 'table'",
    ),
    "unknown_key": (
        "models/orders.yaml",
        "name: orders\ntable: orders\ncolour: red\n",
        3,
        "unknown key 'colour'",
    ),
    "no_trap": (
        "models/orders.yaml",
        "name: orders\ntable: orders\ndimensions:\n  - name: flag\n    synonyms: [NO]\n",
        5,
        "quote it",
    ),
    "version_trap": ("lens.yaml", "name: shop\ndescription: 1.10\n", 2, "quote it"),
    "unknown_model": (
        "metrics/m.yaml",
        "name: m\nmodel: nope\nexpression: COUNT(*)\n",
        2,
        "unknown model 'nope'",
    ),
    "delete": ("answers/total.yaml", ANSWER.format(sql="DELETE FROM orders"), 3, "DELETE"),
    "insert_select": (
        "answers/total.yaml",
        ANSWER.format(sql="INSERT INTO orders SELECT * FROM orders"),
        3,
        "INSERT",
    ),
    "create_table_as": (
        "answers/total.yaml",
        ANSWER.format(sql="CREATE TABLE x AS SELECT 1"),
        3,
        "CREATE",
    ),
    "copy_to": ("answers/total.yaml", ANSWER.format(sql="COPY orders TO 'out.csv'"), 3, "COPY"),
    "attach": ("answers/total.yaml", ANSWER.format(sql="ATTACH 'other.duckdb'"), 3, "ATTACH"),
    "control_character": (
        "models/orders.yaml",
        "name: orders\ntable: a\x00b\n",
        2,
        "control character #x0000",
    ),
    "yaml_tag": (
        "models/orders.yaml",
        "name: !!python/object:os.system orders\ntable: o\n",
        1,
        "YAML tag",
    ),
    "unknown_dialect": ("lens.yaml", "name: shop\ndialect: nosuch\n", 2, "unknown SQL dialect"),
    "row_cap_as_text": ("lens.yaml", 'name: shop\nrow_cap: "500"\n', 2, "valid integer"),
    "row_cap_as_yes": ("lens.yaml", "name: shop\nrow_cap: yes\n", 2, "valid integer"),
    "impossible_as_of": (
        "lens.yaml",
        'name: shop\nas_of: "2024-02-30"\n',
        2,
        "not a calendar date",
    ),
    "unquoted_off": ("lens.yaml", "name: shop\neval_gate: off\n", 2, 'eval_gate: "off"'),
    "warehouse_not_a_url": ("lens.yaml", "name: shop\nwarehouse: garbage\n", 2, "SQLAlchemy URL"),
    "table_is_sql": (
        "models/orders.yaml",
        "name: orders\ntable: \"read_csv('x')\"\n",
        2,
        "a table name",
    ),
    "list_item_trap": (
        "models/orders.yaml",
        "name: orders\ntable: o\ndimensions:\n  - name: f\n    synonyms: [a, NO]\n",
        5,
        'quote it: "NO"',
    ),
    "two_statements": (
        "answers/total.yaml",
        ANSWER.format(sql='"SELECT 1; SELECT 2"'),
        3,
        "exactly one statement",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_naming_file_and_line(repo: Path, case: str) -> None:
    base = {"lenses/shop/lens.yaml": GOOD_LENS, "lenses/shop/models/orders.yaml": GOOD_MODEL}
    commit(repo, base, "good lens")
    promoted = dst(repo, "apply")
    assert promoted.code == 0, promoted.stderr
    before = pygit2.Repository(str(repo)).references["refs/dst/serving/shop"].target

    rel, content, line, words = CASES[case]
    commit(repo, {f"lenses/shop/{rel}": content}, f"bad input: {case}")
    for command in (["plan"], ["apply"], ["apply", "--dry-run"]):
        done = dst(repo, *command)
        assert done.code == 2, (command, done.stdout, done.stderr)
        assert f"lenses/shop/{rel}:{line}" in done.stderr, done.stderr
        assert words in done.stderr, done.stderr
        assert "fix:" in done.stderr
    after = pygit2.Repository(str(repo)).references["refs/dst/serving/shop"].target
    assert after == before
    assert pygit2.Repository(str(repo)).references.get("refs/dst/attempts/shop") is None


def test_unknown_revision_and_lens_are_usage_errors(repo: Path) -> None:
    commit(repo, {"lenses/shop/lens.yaml": GOOD_LENS}, "lens")
    assert dst(repo, "plan", "--to", "no-such-branch").code == 2
    missing = dst(repo, "apply", "--lens", "nope", "--format", "json")
    assert missing.code == 2
    assert missing.json()["error"]["type"] == "UsageError"


def test_relative_date_question_without_as_of_is_rejected(repo: Path) -> None:
    answer = ANSWER.replace("How many orders are there?", "How many orders last month?")
    commit(
        repo,
        {
            "lenses/shop/lens.yaml": GOOD_LENS,
            "lenses/shop/answers/total.yaml": answer.format(sql="SELECT 1"),
        },
        "relative",
    )
    done = dst(repo, "plan")
    assert done.code == 2
    assert "lenses/shop/answers/total.yaml:2" in done.stderr
    assert "as_of" in done.stderr


def test_new_answer_whose_sql_does_not_run_blocks_naming_its_file(lens_repo: Path) -> None:
    assert dst(lens_repo, "apply").code == 0
    before = pygit2.Repository(str(lens_repo)).references["refs/dst/serving/sales"].target
    answer = ANSWER.format(sql="SELECT SUM(quantity) FROM no_such_table")
    commit(lens_repo, {"lenses/sales/answers/broken.yaml": answer}, "broken oracle")
    done = dst(lens_repo, "apply")
    assert done.code == 1, done.stdout + done.stderr
    assert "certified SQL does not run: lenses/sales/answers/broken.yaml" in done.stdout
    after = pygit2.Repository(str(lens_repo)).references["refs/dst/serving/sales"].target
    assert after == before


def test_a_foreign_intent_ref_is_a_state_error_not_a_crash(repo: Path) -> None:
    commit(repo, {"lenses/shop/lens.yaml": GOOD_LENS}, "lens")
    git(repo, "update-ref", "refs/dst/applying", "HEAD")
    done = dst(repo, "apply")
    assert done.code == 2, done.stderr
    assert "not a dst intent record" in done.stderr and "update-ref -d" in done.stderr


def test_closed_stdout_is_not_an_unexpected_error(repo: Path) -> None:
    commit(repo, {"lenses/shop/lens.yaml": GOOD_LENS}, "lens")
    env = {**os.environ, **GIT_ENV, "HOME": str(repo)}
    for args in (["apply"], ["status"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "reconciler", *args],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        proc.stdout.close()  # the reader goes away before dst writes
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert b"unexpected" not in err
