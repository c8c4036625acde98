"""The example lenses end to end: promote them, read their serving state, break a metric."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pygit2
import yaml

from tests.helpers import commit, git, invoke


def serving(repo: Path, lens: str) -> str | None:
    """The deployment serving ``lens`` (``refs/dst/serving/<lens>``), or ``None``."""
    ref = pygit2.Repository(str(repo)).references.get(f"refs/dst/serving/{lens}")
    return None if ref is None else str(ref.target)


def deployment_json(repo: Path, oid: str, path: str) -> dict:
    """The JSON file at ``path`` in deployment commit ``oid``."""
    return json.loads(git(repo, "show", f"{oid}:{path}"))


def promote_all(repo: Path) -> None:
    """``dst apply``: every lens must be promoted."""
    done = invoke(repo, "apply", "--format", "json")
    assert done.code == 0, done.stdout + done.stderr
    assert {x["action"] for x in done.json()["lenses"]} == {"promoted"}


def double_metric(repo: Path, metric: str, gate: str | None = None) -> str:
    """Commit the sales ``metric`` doubled (and ``eval_gate: gate``); returns the commit."""
    path = repo / "lenses" / "sales" / "metrics" / f"{metric}.yaml"
    data = yaml.safe_load(path.read_text())
    files = {
        str(path.relative_to(repo)): path.read_text().replace(
            f"expression: {data['expression']}", f"expression: ({data['expression']}) * 2"
        )
    }
    if gate is not None:
        lens_yaml = repo / "lenses" / "sales" / "lens.yaml"
        files["lenses/sales/lens.yaml"] = re.sub(
            r"eval_gate: \w+", f"eval_gate: {gate}", lens_yaml.read_text()
        )
    return commit(repo, files, f"double {metric}")


def answers_bound_to(repo: Path, lens: str, asset: str) -> set[str]:
    """Answers whose serving binding names ``asset``."""
    oid = serving(repo, lens)
    assert oid is not None
    bindings = deployment_json(repo, oid, "state/bindings.json")["answers"]
    return {a for a, b in bindings.items() if asset in b["assets"]}
