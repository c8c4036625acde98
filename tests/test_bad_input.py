"""Bad input: an input error (exit 2) naming the file and the line, nothing promoted.

The cases are data, ``tests/fixtures/bad_input.yaml``: files written over a good
one-lens repository. Each runs in-process along the path a candidate takes in
``dst plan``/``apply``: a git tree built with pygit2, read by
:mod:`reconciler.git.trees` and loaded by :func:`reconciler.lens.load_lens`
(``dst.yaml`` through the same loader and its model). Cases marked ``cli`` also run
through the real command line in this process, which must leave ``refs/dst/`` as it
was; one runs through a spawned ``dst`` for ``plan``, ``apply`` and ``apply --dry-run``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest
import yaml

from reconciler.errors import InputError, LensLoadError
from reconciler.git import trees as gitstate
from reconciler.ids import Oid
from reconciler.lens import RepoConfig
from reconciler.loader import load_yaml, validate
from tests.figures import record
from tests.helpers import FIXTURES, GIT_ENV, commit, dst, git, invoke

GOOD_LENS = "name: shop\n"
ANSWER = """\
id: total
question: How many orders are there?
sql: {sql}
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""


@dataclass(frozen=True)
class Symlink:
    """A symlink to ``target`` (a git tree entry of mode 120000)."""

    target: str


Content = bytes | Symlink


def _content(spec: Any) -> Content:
    """One file of the fixture as bytes (see the fixture's header for the forms)."""
    if isinstance(spec, str):
        return spec.encode()
    (kind,) = spec
    if kind == "latin1":
        return str(spec["latin1"]).encode("latin-1")
    if kind == "utf16":
        return str(spec["utf16"]).encode("utf-16")
    if kind == "symlink":
        return Symlink(str(spec["symlink"]))
    assert kind == "parts", spec
    out = []
    for part in spec["parts"]:
        if isinstance(part, str):
            out.append(part)
        elif "repeat" in part:
            out.append(part["repeat"] * part["times"])
        else:
            out.extend("  " * i + part["staircase"] + "\n" for i in range(1, part["steps"] + 1))
    return "".join(out).encode()


@dataclass(frozen=True)
class Case:
    """One bad input: files over the base, where the message points, words it holds."""

    id: str
    files: Mapping[str, Content]
    where: str
    words: str
    cli: bool


_DATA = yaml.safe_load((FIXTURES / "bad_input.yaml").read_text(encoding="utf-8"))
BASE = {path: _content(spec) for path, spec in _DATA["base"].items()}
CASES = {
    c["id"]: Case(
        c["id"],
        {path: _content(spec) for path, spec in c["files"].items()},
        c["where"],
        c["words"],
        bool(c.get("cli")),
    )
    for c in _DATA["cases"]
}
CLI_CASES = sorted(c.id for c in CASES.values() if c.cli)


def _tree(repo: pygit2.Repository, files: Mapping[str, Content]) -> str:
    """Write ``files`` (repository-relative paths) as a git tree; returns its oid."""
    nested: dict[str, Any] = {}
    for path, content in files.items():
        *dirs, name = path.split("/")
        node = nested
        for part in dirs:
            node = node.setdefault(part, {})
        node[name] = content

    def build(node: Mapping[str, Any]) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        for name, value in sorted(node.items()):
            if isinstance(value, dict):
                builder.insert(name, build(value), pygit2.GIT_FILEMODE_TREE)
            elif isinstance(value, Symlink):
                blob = repo.create_blob(value.target.encode())
                builder.insert(name, blob, pygit2.GIT_FILEMODE_LINK)
            else:
                builder.insert(name, repo.create_blob(value), pygit2.GIT_FILEMODE_BLOB)
        return builder.write()

    return str(build(nested))


def _load_candidate(repo: pygit2.Repository, files: Mapping[str, Content]) -> None:
    """Load every lens of a candidate tree (and ``dst.yaml``) as ``dst plan`` does."""
    config = files.get("dst.yaml")
    if isinstance(config, bytes):
        validate(RepoConfig, load_yaml("dst.yaml", config))
    tree = _tree(repo, files)
    for _name, lens_tree in sorted(gitstate.lens_trees(repo, Oid(tree)).items()):
        gitstate.load_lens_at(repo, lens_tree)


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    """A bare repository to hold the cases' trees."""
    return pygit2.init_repository(str(tmp_path_factory.mktemp("objects") / "o.git"), bare=True)


_TRIED: dict[str, set[str]] = {"loader": set(), "cli": set()}


def _tried(kind: str, case: str) -> None:
    _TRIED[kind].add(case)
    if len(_TRIED["loader"]) == len(CASES) and len(_TRIED["cli"]) == len(CLI_CASES):
        record(
            f"bad inputs: {len(CASES)} cases, each an input error (exit 2) naming its file "
            f"(and line) at load; {len(CLI_CASES)} of them through the command line too, "
            f"refs/dst unchanged"
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_an_input_error_naming_file_and_line(
    objects: pygit2.Repository, case: str
) -> None:
    bad = CASES[case]
    with pytest.raises(InputError) as info:
        _load_candidate(objects, {**BASE, **bad.files})
    error = info.value
    shown = error.render()
    assert isinstance(error, LensLoadError), shown
    assert error.exit_code == 2
    assert error.message.startswith(f"{bad.where}: "), shown
    assert bad.words in shown, shown
    assert error.fix and "\n  fix: " in shown, shown
    _tried("loader", case)


def _dst_refs(repo: Path) -> dict[str, str]:
    r = pygit2.Repository(str(repo))
    return {name: str(r.references[name].target) for name in r.references if "/dst/" in name}


def _write(repo: Path, files: Mapping[str, Content]) -> None:
    for rel, content in files.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Symlink):
            os.symlink(content.target, target)
        else:
            target.write_bytes(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bad input")


@pytest.fixture(scope="module")
def _promoted_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    _write(path, {".gitignore": b".dst/\n", **BASE})
    promoted = invoke(path, "apply")
    assert promoted.code == 0, promoted.stderr
    return path


@pytest.mark.parametrize("case", CLI_CASES)
def test_bad_input_through_the_command_line_exits_2_and_moves_no_ref(
    _promoted_shop: Path, tmp_path: Path, case: str
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(_promoted_shop, repo, symlinks=True)
    before = _dst_refs(repo)
    bad = CASES[case]
    _write(repo, bad.files)
    done = invoke(repo, "apply", "--format", "json")
    assert done.code == 2, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    shown = f"{error['message']}\n  fix: {error['fix']}"
    assert error["message"].startswith(f"{bad.where}: "), shown
    assert bad.words in shown, shown
    assert error["fix"], shown
    assert f"{bad.where}: " in done.stderr
    assert _dst_refs(repo) == before
    _tried("cli", case)


def test_bad_input_through_a_spawned_dst_exits_2_for_plan_and_apply(
    _promoted_shop: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(_promoted_shop, repo, symlinks=True)
    before = _dst_refs(repo)
    bad = CASES["malformed_yaml"]
    _write(repo, bad.files)
    for command in (["plan"], ["apply"], ["apply", "--dry-run"]):
        done = dst(repo, *command)
        assert done.code == 2, (command, done.stdout, done.stderr)
        assert bad.where in done.stderr, done.stderr
        assert bad.words in done.stderr, done.stderr
        assert "fix:" in done.stderr
    assert _dst_refs(repo) == before
    assert pygit2.Repository(str(repo)).references.get("refs/dst/attempts/shop") is None


def test_unknown_revision_and_lens_are_usage_errors(repo: Path) -> None:
    commit(repo, {"lenses/shop/lens.yaml": GOOD_LENS}, "lens")
    assert invoke(repo, "plan", "--to", "no-such-branch").code == 2
    missing = invoke(repo, "apply", "--lens", "nope", "--format", "json")
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
    done = invoke(repo, "plan")
    assert done.code == 2
    assert "lenses/shop/answers/total.yaml:2" in done.stderr
    assert "as_of" in done.stderr


def test_new_answer_whose_sql_does_not_run_blocks_naming_its_file(promoted_repo: Path) -> None:
    before = pygit2.Repository(str(promoted_repo)).references["refs/dst/serving/sales"].target
    answer = ANSWER.format(sql="SELECT SUM(quantity) FROM no_such_table")
    commit(promoted_repo, {"lenses/sales/answers/broken.yaml": answer}, "broken oracle")
    done = invoke(promoted_repo, "apply")
    assert done.code == 1, done.stdout + done.stderr
    assert "certified SQL does not run: lenses/sales/answers/broken.yaml" in done.stdout
    after = pygit2.Repository(str(promoted_repo)).references["refs/dst/serving/sales"].target
    assert after == before


def test_a_foreign_intent_ref_is_a_state_error_not_a_crash(repo: Path) -> None:
    commit(repo, {"lenses/shop/lens.yaml": GOOD_LENS}, "lens")
    git(repo, "update-ref", "refs/dst/applying", "HEAD")
    done = invoke(repo, "apply")
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
