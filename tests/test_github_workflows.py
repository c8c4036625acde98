"""The GitHub workflows and the composite action: actionlint, plus structural checks.

actionlint runs when its binary is on PATH (it skips, saying so, otherwise); the
structural checks always run: every file loads as YAML, every ``uses:`` is pinned,
every input the composite action reads is declared, and no ``run:`` script
interpolates an expression (script injection).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import PROJECT

GITHUB = PROJECT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))
ACTION = GITHUB / "actions" / "dst" / "action.yml"
# owner/repo[/path]@ref with ref a major version tag or a full commit id
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+|[0-9a-f]{40})$")


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path.name}: not a mapping"
    return data


def _triggers(workflow: dict[str, Any]) -> Any:
    # YAML 1.1 reads a bare `on` key as the boolean True
    return workflow.get("on", workflow.get(True))


def _steps(path: Path) -> list[tuple[str, dict[str, Any]]]:
    data = _load(path)
    if "jobs" in data:
        return [
            (f"{path.name}:{job}", step)
            for job, spec in data["jobs"].items()
            for step in spec.get("steps", [])
        ]
    return [(path.name, step) for step in data["runs"]["steps"]]


def test_the_expected_files_exist() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "lens-check.yml", "lens-apply.yml"}
    assert ACTION.is_file()


def test_actionlint_finds_nothing() -> None:
    binary = shutil.which("actionlint")
    if binary is None:
        pytest.skip("actionlint is not on PATH; the structural checks below still ran")
    done = subprocess.run(
        [binary, "-no-color", *[str(p.relative_to(PROJECT)) for p in WORKFLOWS]],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", [*WORKFLOWS, ACTION], ids=lambda p: p.name)
def test_every_uses_is_pinned_and_no_run_interpolates(path: Path) -> None:
    for where, step in _steps(path):
        uses = step.get("uses")
        if uses is not None:
            assert uses.startswith("./") or PINNED.match(uses), f"{where}: unpinned {uses!r}"
        script = step.get("run")
        if script is not None:
            assert "${{" not in script, f"{where}: pass expressions through env:, not into run:"


def test_the_composite_action_declares_what_it_reads() -> None:
    action = _load(ACTION)
    assert action["runs"]["using"] == "composite"
    declared = set(action["inputs"])
    assert declared == {"command", "python-version", "base", "junit", "env", "seed", "extras"}
    used = set(re.findall(r"\binputs\.([\w-]+)", ACTION.read_text()))
    assert used <= declared, used - declared
    assert used == declared, f"declared but never read: {declared - used}"
    for _, step in _steps(ACTION):
        if "run" in step:
            assert step.get("shell") == "bash"  # composite run steps must name a shell
    for path in WORKFLOWS:
        for where, step in _steps(path):
            if step.get("uses") == "./.github/actions/dst":
                assert set(step.get("with", {})) <= declared, where


def test_lens_workflows_do_what_the_design_says() -> None:
    check = _load(GITHUB / "workflows" / "lens-check.yml")
    assert set(_triggers(check)) == {"pull_request"}
    assert check["permissions"] == {"contents": "read"}  # fork PRs: no secrets, read-only
    steps = [s for _, s in _steps(GITHUB / "workflows" / "lens-check.yml")]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 1  # proves the shallow handling
    action = next(s for s in steps if s.get("uses") == "./.github/actions/dst")
    assert action["with"]["command"] == "check"
    assert "secrets." not in (GITHUB / "workflows" / "lens-check.yml").read_text()
    action_text = (GITHUB / "actions" / "dst" / "action.yml").read_text()
    # the action fetches the serving state itself (sync records the fetch, so a gate never
    # mistakes "not fetched" for "nothing serves")
    assert "dst sync --fetch" in action_text

    apply_path = GITHUB / "workflows" / "lens-apply.yml"
    apply = _load(apply_path)
    assert set(_triggers(apply)) == {"push"}
    assert apply["permissions"] == {"contents": "write"}
    steps = [s for _, s in _steps(apply_path)]
    action = next(s for s in steps if s.get("uses") == "./.github/actions/dst")
    assert action["with"]["command"] == "apply"
    runs = [str(s.get("run", "")) for s in steps]
    assert runs[-1] == "dst sync --push"  # fast-forward only, never forced
    text = apply_path.read_text()
    assert "--force" not in text and "'+refs" not in text

    ci = _load(GITHUB / "workflows" / "ci.yml")
    runs = [s.get("run") for _, s in _steps(GITHUB / "workflows" / "ci.yml")]
    assert "bash .ci/run" in runs
    assert ci["permissions"] == {"contents": "read"}


def test_the_lens_workflows_are_what_dst_init_writes() -> None:
    """dst's own lens workflows are `dst init --ci github`'s, with the action beside them."""
    from reconciler.scaffold import CiSettings, ci_files

    expected = ci_files(CiSettings("./", (), {"staging": True, "prod": False}))
    assert set(expected) == {
        f".github/workflows/lens-{k}.yml" for k in ("check", "apply", "promote")
    }
    for rel, data in expected.items():
        assert (PROJECT / rel).read_bytes() == data, f"{rel}: regenerate it from ci_files"
