"""``dst ci`` in the checkouts GitHub Actions really makes: depth 1, odd event payloads.

``actions/checkout`` defaults to ``fetch-depth: 1``: HEAD's parents are grafted
away, so the commit serving now looks unrelated to HEAD. ``dst ci apply`` must
deepen until it can tell, never refuse a real change as a rewind.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import commit, git, invoke
from tests.helpers.examples import double_metric


def _no_github(**extra: str) -> dict[str, str]:
    return {"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": "", "GITHUB_STEP_SUMMARY": "", **extra}


def _reformat(repo: Path) -> str:
    path = repo / "lenses" / "sales" / "metrics" / "units_sold.yaml"
    text = "# a comment\n" + path.read_text()
    return commit(repo, {"lenses/sales/metrics/units_sold.yaml": text}, "comment units_sold")


def _depth_one(origin: Path, where: Path) -> Path:
    """``git clone --depth 1`` of main, with the serving state and the warehouse (a CI cache)."""
    git(
        where.parent, "clone", "-q", "--depth", "1", "--branch", "main", origin.as_uri(), str(where)
    )
    git(where, "fetch", "-q", "--no-tags", "origin", "refs/dst/*:refs/dst/*")
    shutil.copytree(origin / ".dst", where / ".dst")
    assert git(where, "rev-parse", "--is-shallow-repository") == "true"
    return where


@pytest.fixture
def served(lens_repo: Path) -> Path:
    """The example lenses promoted, then main moves on by a few commits nobody lens-touches."""
    done = invoke(lens_repo, "apply", "--format", "json", env=_no_github())
    assert done.code == 0, done.stdout + done.stderr
    for i in range(3):
        commit(lens_repo, {f"docs/{i}.md": f"{i}\n"}, f"docs {i}")
    return lens_repo


def test_a_depth_one_apply_of_a_good_change_promotes(served: Path, tmp_path: Path) -> None:
    head = _reformat(served)
    clone = _depth_one(served, tmp_path / "ci")
    done = invoke(clone, "ci", "apply", "--format", "json", env=_no_github())
    assert done.code == 0, done.stdout + done.stderr
    assert "rewind refused" not in done.stdout + done.stderr
    sales = {x["lens"]: x for x in done.json()["lenses"]}["sales"]
    assert sales["action"] == "promoted"
    assert sales["candidate"] == head
    assert "deepened the shallow clone" in done.stderr


def test_the_shipped_apply_flow_works_in_a_depth_one_checkout(served: Path, tmp_path: Path) -> None:
    """What lens-apply.yml runs: sync --fetch, ci apply --format github, sync --push."""
    head = _reformat(served)
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "main", served.as_uri(), str(clone))
    shutil.copytree(served / ".dst", clone / ".dst")
    fetched = invoke(clone, "sync", "--fetch", "--format", "text", env=_no_github())
    assert fetched.code == 0, fetched.stdout + fetched.stderr
    done = invoke(clone, "ci", "apply", "--format", "github", env=_no_github())
    assert done.code == 0, done.stdout + done.stderr
    assert "::notice title=dst sales%3A promoted::" in done.stdout
    pushed = invoke(clone, "sync", "--push", env=_no_github())
    assert pushed.code == 0, pushed.stdout + pushed.stderr
    served_now = git(served, "rev-parse", "refs/dst/serving/sales")
    assert git(served, "rev-parse", f"{served_now}^2") == head


def test_a_depth_one_apply_of_a_broken_change_blocks(served: Path, tmp_path: Path) -> None:
    double_metric(served, "units_sold")
    clone = _depth_one(served, tmp_path / "ci")
    before = git(clone, "rev-parse", "refs/dst/serving/sales")
    done = invoke(clone, "ci", "apply", "--format", "json", env=_no_github())
    assert done.code == 1, done.stdout + done.stderr
    assert "rewind refused" not in done.stdout + done.stderr
    sales = {x["lens"]: x for x in done.json()["lenses"]}["sales"]
    assert sales["action"] == "blocked"
    assert git(clone, "rev-parse", "refs/dst/serving/sales") == before


def test_a_shallow_clone_that_cannot_reach_the_serving_commit_says_so(
    served: Path, tmp_path: Path
) -> None:
    _reformat(served)
    clone = _depth_one(served, tmp_path / "ci")
    done = invoke(clone, "ci", "apply", "--max-deepen", "0", "--format", "json", env=_no_github())
    assert done.code == 2, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["message"].startswith("cannot tell: shallow clone")
    assert "rewind refused" not in done.stdout + done.stderr
    assert "fetch-depth: 0" in error["fix"]


def test_a_depth_one_check_of_a_good_change_passes(served: Path, tmp_path: Path) -> None:
    base = git(served, "rev-parse", "HEAD")
    _reformat(served)
    clone = _depth_one(served, tmp_path / "ci")
    done = invoke(clone, "ci", "check", "--base", base, "--format", "json", env=_no_github())
    assert done.code == 0, done.stdout + done.stderr
    assert "rewind" not in done.stdout + done.stderr


def test_a_shallow_check_that_cannot_reach_the_serving_commit_warns_and_still_gates(
    served: Path, tmp_path: Path
) -> None:
    base = git(served, "rev-parse", "HEAD")
    double_metric(served, "units_sold")
    clone = _depth_one(served, tmp_path / "ci")
    args = ("ci", "check", "--base", base, "--max-deepen", "0", "--format", "json")
    done = invoke(clone, *args, env=_no_github())
    assert done.code == 1, done.stdout + done.stderr  # the gate's verdict, not exit 2
    assert "rewind refused" not in done.stdout + done.stderr
    assert "cannot tell: shallow clone" in done.stderr
    sales = {x["lens"]: x for x in done.json()["lenses"]}["sales"]
    assert sales["action"] == "blocked"
    assert any("cannot tell: shallow clone" in m for m in sales["messages"])


# ------------------------------------------------------------------ event payloads


@pytest.mark.parametrize(
    ("payload", "key"),
    [
        ("{not json", None),
        ("[1, 2]", None),
        ('"a string"', None),
        ('{"pull_request": "7"}', "pull_request"),
        ('{"pull_request": {"base": {"sha": 7}}}', "pull_request.base.sha"),
        ('{"pull_request": {"head": []}}', "pull_request.head"),
        ('{"repository": {"default_branch": false}}', "repository.default_branch"),
        ('{"before": 12}', "before"),
    ],
    ids=["not-json", "array", "string", "pr", "base-sha", "head", "default-branch", "before"],
)
@pytest.mark.parametrize("command", ["check", "apply"])
def test_a_malformed_event_payload_is_exit_2_naming_file_and_key(
    repo: Path, tmp_path: Path, payload: str, key: str | None, command: str
) -> None:
    path = tmp_path / "event.json"
    path.write_text(payload)
    env = _no_github(GITHUB_EVENT_NAME="push", GITHUB_EVENT_PATH=str(path))
    for fmt in ("json", "github"):
        done = invoke(repo, "ci", command, "--format", fmt, env=env)
        assert done.code == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        text = done.stdout + done.stderr
        if fmt == "json":
            text = json.dumps(done.json()["error"])
        assert str(path) in text
        if key is not None:
            assert repr(key) in text
