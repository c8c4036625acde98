"""Bad input: exit 2, a message naming the file and the line, nothing promoted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from tests.conftest import GIT_ENV, commit, dst, git
from tests.figures import record

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


# --- the bad-input corpus: every kind of bad input, through the real CLI ------------------
#
# One case = a few files written over a promoted one-lens repository; the apply must exit 2
# naming the file (and the line, where the problem has one: a symlink or a directory name
# has none), and leave every ref under refs/dst/ as it was.

SYMLINK = "symlink:"  # a file value starting with this is written as a symlink to the rest


def _deep_block(levels: int) -> bytes:
    return b"name: orders\ntable: o\ndescription:\n" + b"".join(
        b"  " * i + b"k:\n" for i in range(1, levels + 1)
    )


def _bomb() -> bytes:
    lines = [b"name: orders", b"table: o", b"a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 7):
        lines.append(b"a%d: &a%d [" % (i, i) + b", ".join([b"*a%d" % (i - 1)] * 10) + b"]")
    return b"\n".join(lines) + b"\n"


_M = "lenses/shop/models/orders.yaml"
_L = "lenses/shop/lens.yaml"
_S = "lenses/shop/skills/notes.md"
_PAD_LINES = 1_000_000 // len(b"# padding\n") + 10

CORPUS: dict[str, tuple[dict[str, bytes | str | None], str, str]] = {
    # id: (files to write, "path:line" (or "path") expected, words expected)
    # YAML syntax
    "unclosed_quote": ({_M: 'name: orders\ntable: "orders\n'}, f"{_M}:3", "syntax"),
    "bad_indentation": ({_M: "name: orders\n  table: o\n"}, f"{_M}:2", "syntax"),
    "tab_indent": ({_M: "name: orders\n\ttable: o\n"}, f"{_M}:2", "indent with spaces"),
    "two_documents": ({_M: "name: orders\n---\nname: again\n"}, f"{_M}:2", "single document"),
    "nested_duplicate": (
        {_M: "name: orders\ntable: o\ndimensions:\n  - name: a\n    name: b\n"},
        f"{_M}:5",
        "duplicate key 'name' (first on line 4)",
    ),
    "complex_key": ({_M: "name: orders\n? [a, b]\n: c\n"}, f"{_M}:2", "plain strings"),
    "top_level_list": ({_M: "- name: orders\n"}, f"{_M}:1", "valid dictionary"),
    "merge_key": (
        {_M: "base: &b {table: o}\nname: orders\n<<: *b\n"},
        f"{_M}:1",
        "merge keys",
    ),
    # YAML 1.1 implicit typing
    "octal_trap": ({_L: "name: shop\ndescription: 012\n"}, f"{_L}:2", "quote it"),
    "sexagesimal_trap": ({_L: "name: shop\ndescription: 12:30\n"}, f"{_L}:2", "quote it"),
    "date_trap": ({_L: "name: shop\ndescription: 2024-01-31\n"}, f"{_L}:2", "as a date"),
    "null_trap": ({_M: "name: ~\ntable: o\n"}, f"{_M}:1", "as null"),
    "yes_trap": (
        {_M: "name: orders\ntable: o\ndimensions:\n  - name: d\n    sample_values: [yes]\n"},
        f"{_M}:5",
        "as a boolean",
    ),
    "infinity_trap": ({_L: "name: shop\ndescription: .inf\n"}, f"{_L}:2", "as a number"),
    # tags
    "binary_tag": ({_M: "name: orders\ntable: !!binary b3JkZXJz\n"}, f"{_M}:2", "YAML tag"),
    "custom_tag": ({_M: "name: orders\ntable: !Ref orders\n"}, f"{_M}:2", "YAML tag"),
    # anchors, aliases, nesting and size bounds
    "alias_bomb": ({_M: _bomb()}, f"{_M}:3", "alias expansion bomb"),
    "recursive_alias": ({_M: "name: orders\ntable: o\nx: &a [*a]\n"}, f"{_M}:3", "contains itself"),
    "deep_block_nesting": ({_M: _deep_block(70)}, f"{_M}:68", "nesting deeper than 64"),
    "deep_flow_nesting": (
        {_M: b"name: orders\ntable: o\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n"},
        f"{_M}:3",
        "nesting deeper than 64",
    ),
    "oversized_file": (
        {_M: b"name: orders\ntable: o\n" + b"# padding\n" * _PAD_LINES},
        f"{_M}:100000",
        "over the 1000000-byte bound",
    ),
    # encodings and binary files
    "latin1": ({_M: b"name: orders\ntable: o\ndescription: caf\xe9\n"}, f"{_M}:3", "not UTF-8"),
    "utf16": ({_M: "name: orders\ntable: o\n".encode("utf-16")}, f"{_M}:1", "UTF-16"),
    "bom_keeps_lines": (
        {_M: b"\xef\xbb\xbfname: orders\ntable: a\ntable: b\n"},
        f"{_M}:3",
        "duplicate key 'table'",
    ),
    "png_as_yaml": ({_M: b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"}, f"{_M}:1", "not UTF-8"),
    "nul_in_yaml": ({_M: b"name: orders\ntable: o\x00\n"}, f"{_M}:2", "control character"),
    "binary_skill": ({_S: b"# Notes\n\nok\n\x00\x01\x02"}, f"{_S}:4", "binary file"),
    "latin1_skill": ({_S: b"# Notes\nna\xefve\n"}, f"{_S}:2", "not UTF-8"),
    # lens names: not a valid ref component, collisions
    "uppercase_lens": ({"lenses/Shop2/lens.yaml": "name: Shop2\n"}, "lenses/Shop2", "lens name"),
    "space_in_lens": ({"lenses/my lens/lens.yaml": "name: x\n"}, "lenses/my lens", "lens name"),
    "dotted_lens": ({"lenses/a.lock/lens.yaml": "name: x\n"}, "lenses/a.lock", "lens name"),
    "control_char_lens": ({"lenses/a\x01b/lens.yaml": "name: x\n"}, "lenses/a\\x01b", "lens name"),
    "long_lens": ({f"lenses/{'a' * 64}/lens.yaml": "name: x\n"}, f"lenses/{'a' * 64}", "lens name"),
    "case_collision_lens": ({"lenses/SHOP/lens.yaml": "name: shop\n"}, "lenses/SHOP", "lens name"),
    "case_collision_model": (
        {"lenses/shop/models/Orders.yaml": "name: orders\ntable: o2\n"},
        "lenses/shop/models/orders.yaml:1",
        "already declared in lenses/shop/models/Orders.yaml",
    ),
    "lens_yaml_name_differs": ({_L: "name: other\n"}, f"{_L}:1", "differs from the directory"),
    # symlinks
    "symlink_outside_absolute": (
        {"lenses/shop/models/evil.yaml": SYMLINK + "/etc/hostname"},
        "lenses/shop/models/evil.yaml",
        "outside the repository",
    ),
    "symlink_outside_relative": (
        {"lenses/shop/models/evil.yaml": SYMLINK + "../../../../secret.yaml"},
        "lenses/shop/models/evil.yaml",
        "outside the repository",
    ),
    "symlink_directory": (
        {"lenses/shop/metrics": SYMLINK + "/tmp"},
        "lenses/shop/metrics",
        "outside the repository",
    ),
    "symlink_inside": (
        {"lenses/shop/models/copy.yaml": SYMLINK + "orders.yaml"},
        "lenses/shop/models/copy.yaml",
        "to lenses/shop/models/orders.yaml",
    ),
    # references and values
    "unknown_join": (
        {_M: "name: orders\ntable: o\njoins:\n  - to: nowhere\n    on: {a: b}\n"},
        f"{_M}:4",
        "joins unknown model 'nowhere'",
    ),
    "unknown_time_dimension": (
        {_M: "name: orders\ntable: o\ndefault_time_dimension: day\n"},
        f"{_M}:3",
        "default_time_dimension 'day'",
    ),
    "unknown_model_of_metric": (
        {"lenses/shop/metrics/m.yaml": "name: m\nmodel: ghost\nexpression: SUM(x)\n"},
        "lenses/shop/metrics/m.yaml:2",
        "unknown model 'ghost'",
    ),
    "row_cap_over_bound": ({_L: "name: shop\nrow_cap: 5000\n"}, f"{_L}:2", "less than or equal"),
    "bad_case_expect": (
        {"lenses/shop/evals/cases.yaml": "cases:\n  - question: hi\n    expect: maybe\n"},
        "lenses/shop/evals/cases.yaml:3",
        "expect",
    ),
    "answer_without_provenance": (
        {"lenses/shop/answers/a.yaml": "id: a\nquestion: How many?\nsql: SELECT 1\n"},
        "lenses/shop/answers/a.yaml:1",
        "missing required key 'provenance'",
    ),
    "dst_yaml_unknown_key": (
        {"dst.yaml": "warehouse: duckdb:///x.duckdb\ncolor: 1\n"},
        "dst.yaml:2",
        "unknown key",
    ),
    "dst_yaml_not_a_url": (
        {"dst.yaml": "warehouse: my-warehouse\n"},
        "dst.yaml:1",
        "SQLAlchemy URL",
    ),
}


def _dst_refs(repo: Path) -> dict[str, str]:
    r = pygit2.Repository(str(repo))
    return {name: str(r.references[name].target) for name in r.references if "/dst/" in name}


@pytest.fixture(scope="module")
def _promoted_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, {".gitignore": ".dst/\n", _L: GOOD_LENS, _M: GOOD_MODEL}, "good lens")
    assert dst(path, "apply").code == 0
    return path


def _write(repo: Path, files: dict[str, bytes | str | None]) -> None:
    for rel, content in files.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str) and content.startswith(SYMLINK):
            os.symlink(content[len(SYMLINK) :], target)
        elif isinstance(content, bytes):
            target.write_bytes(content)
        elif content is not None:
            target.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bad input")


def _cli(repo: Path, *args: str) -> tuple[int, str, str]:
    """The real ``dst`` command line, in process (the corpus is large)."""
    from typer.testing import CliRunner

    from reconciler.cli.app import app

    env = {**GIT_ENV, "HOME": str(repo), "DST_WAREHOUSE_URL": ""}
    done = CliRunner().invoke(app, [*args, "--repo", str(repo)], env=env)
    return done.exit_code, done.stdout, done.stderr


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_bad_input_corpus(_promoted_shop: Path, tmp_path: Path, case: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(_promoted_shop, repo, symlinks=True)
    before = _dst_refs(repo)
    files, where, words = CORPUS[case]
    _write(repo, files)
    code, out, err = _cli(repo, "apply", "--format", "json")
    assert code == 2, (out, err)
    error = json.loads(out)["error"]
    shown = f"{error['message']}\n  fix: {error['fix']}"
    assert error["message"].startswith(f"{where}: "), shown
    assert words in shown, shown
    assert error["fix"], shown
    assert f"{where}: " in err
    assert _dst_refs(repo) == before
    record_case(case)


_TRIED: list[str] = []


def record_case(case: str) -> None:
    _TRIED.append(case)
    if len(_TRIED) == len(CORPUS):
        record(
            f"bad inputs: {len(CORPUS)} corpus cases + {len(CASES)} table cases tried, "
            f"each exit 2 naming its file, refs/dst unchanged"
        )
