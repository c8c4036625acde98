"""A repository that holds only ``lenses/`` and ``dst.yaml``, on GitHub Actions.

``dst init --ci github`` writes the three workflows; actionlint lints them; then
:mod:`tests.helpers.actions` runs their steps in order, each job in its own shallow
clone (``git clone --depth 1 file://…``) of a bare origin, with the payload of a real
``push``, ``pull_request`` or ``workflow_dispatch`` event, the composite action's
steps included (``github.action_path`` is this checkout's ``.github/actions/dst``).

The one step not run is the action's ``pip install``: it needs the network and would
replace this machine's dst. The test checks instead that what it would install is this
checkout with extras the package declares; ``dst`` on ``PATH`` runs this checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml needs tomli on 3.10")

from tests.helpers import GIT_ENV, PROJECT, commit, git, invoke
from tests.helpers.actions import Job, Runner, evaluate, interpolate
from tests.helpers.webhook import Receiver, receiving

WORKFLOWS = ".github/workflows"
HOOK = "DST_SLACK_WEBHOOK"
INSTALL_STEP = "Install dst from this action's repository"
ENVIRONMENTS = f"""\
notify:
  - url_env: {HOOK}
    events: [promoted, blocked]
environments:
  staging:
    warehouse: duckdb:///.dst/staging.duckdb
  prod:
    warehouse: postgresql://dst_reader@prod-db/analytics
    promote_from: staging
"""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as r:
        yield r


def _install_is_this_checkout(name: str, env: Mapping[str, str]) -> str | None:
    """The runner's ``skip``: check the pip install step's target instead of running it."""
    if not name.endswith(INSTALL_STEP):
        return None
    root = Path(env["DST_ACTION_ROOT"]).resolve()
    assert root == PROJECT, f"the action installs {root}, not the dst beside it"
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["name"] == "dst-reconciler"
    declared = set(project["optional-dependencies"])
    wanted = {e for e in env["DST_EXTRAS"].split(",") if e}
    assert wanted <= declared, f"extras the package does not declare: {wanted - declared}"
    return (
        "not run: pip needs the network and would replace this machine's dst; it would "
        f"install {root.name}[{env['DST_EXTRAS']}], and dst on PATH runs that checkout"
    )


@pytest.fixture
def lens_only(tmp_path: Path) -> tuple[Path, Path]:
    """``(dev, origin)``: a lens-only repository with one certified answer, and its bare origin."""
    dev = tmp_path / "dev"
    dev.mkdir()
    done = invoke(dev, "init", "--git", "--lens", "shop")
    assert done.code == 0, done.stderr
    git(dev, "checkout", "-q", "-B", "main")
    with (dev / "dst.yaml").open("a") as config:
        config.write(ENVIRONMENTS)
    assert invoke(dev, "seed").code == 0
    certified = invoke(
        dev, "certify", "--lens", "shop", "--question", "Revenue by region", "--yes",
        "--by", "Ana Analyst",
    )  # fmt: skip
    assert certified.code == 0, certified.stderr
    commit(dev, {}, "Add lens shop")
    done = invoke(dev, "init", "--ci", "github", "--action", "acme/dst@v0.1.0")
    assert done.code == 0, done.stderr
    commit(dev, {}, "Add dst workflows")
    tracked = set(git(dev, "ls-files").splitlines())
    assert {p.split("/")[0] for p in tracked} == {
        ".github",
        ".gitignore",
        "dst.yaml",
        "lenses",
        "schemas",
    }
    assert not (dev / "pyproject.toml").exists() and not (dev / ".github/actions").exists()
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(dev, "remote", "add", "origin", origin.as_uri())
    git(dev, "push", "-q", "origin", "main")
    return dev, origin


@pytest.fixture
def runner(tmp_path: Path, lens_only: tuple[Path, Path], receiver: Receiver) -> Runner:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "dst"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m reconciler "$@"\n')
    wrapper.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    base = {
        "PATH": str(Path(shutil.which("git") or "/usr/bin/git").parent) + ":/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROJECT),
        **{k: v for k, v in GIT_ENV.items() if k != "HOME"},
    }
    return Runner(
        origin=lens_only[1],
        action_root=PROJECT,
        workdir=tmp_path / "runner",
        path_prefix=[bin_dir],
        base_env=base,
        secrets={HOOK: receiver.url},
        skip=_install_is_this_checkout,
    )


def _repository() -> dict[str, Any]:
    return {"full_name": "acme/shop-lenses", "default_branch": "main"}


def _push(runner: Runner, dev: Path, before: str) -> Job:
    sha = git(dev, "rev-parse", "main")
    event = {
        "ref": "refs/heads/main",
        "before": before,
        "after": sha,
        "repository": _repository(),
        "head_commit": {"id": sha},
    }
    path = dev / WORKFLOWS / "lens-apply.yml"
    return runner.run(path, "apply", event_name="push", event=event, ref="refs/heads/main", sha=sha)


def _step_named(job: Job, suffix: str) -> Any:
    return next(s for s in job.steps if s.name.endswith(suffix))


def test_init_writes_three_workflows_that_lint(lens_only: tuple[Path, Path]) -> None:
    dev, _ = lens_only
    written = sorted(p.name for p in (dev / WORKFLOWS).iterdir())
    assert written == ["lens-apply.yml", "lens-check.yml", "lens-promote.yml"]
    for name in written:
        spec = yaml.safe_load((dev / WORKFLOWS / name).read_text())
        assert spec["permissions"] == {"contents": "read" if "check" in name else "write"}
        for job in spec["jobs"].values():
            uses = [s["uses"] for s in job["steps"] if "dst" in str(s.get("uses", ""))]
            assert uses == ["acme/dst/.github/actions/dst@v0.1.0"]
            if "check" not in name:
                assert job["env"][HOOK] == f"${{{{ secrets.{HOOK} }}}}"
    binary = shutil.which("actionlint")
    if binary is None:
        pytest.skip("actionlint is not on PATH (the dev extra installs it)")
    done = subprocess.run(
        [binary, "-no-color", *(f"{WORKFLOWS}/{n}" for n in written)],
        cwd=dev,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_push_to_main_seeds_applies_notifies_and_publishes(
    lens_only: tuple[Path, Path], runner: Runner, receiver: Receiver
) -> None:
    dev, origin = lens_only
    job = _push(runner, dev, before="0" * 40)
    assert job.ran and not job.failed, job.log()
    seeded = _step_named(job, "Build the warehouse from the seeds")
    assert "seeded shop.example_orders: 8 rows" in seeded.stdout
    assert _step_named(job, INSTALL_STEP).why_not_run.startswith("not run: pip")
    applied = _step_named(job, "dst ci apply / dst ci apply")
    assert "::notice title=dst shop%3A promoted::" in applied.stdout, job.log()
    assert "## dst lens apply" in applied.summary
    serving = git(origin, "for-each-ref", "--format=%(refname)", "refs/dst/serving/")
    assert serving == "refs/dst/serving/shop"
    assert [(c["lens"], c["action"], c["environment"]) for c in receiver.calls] == [
        ("shop", "promoted", None)
    ]


def test_a_pull_request_that_breaks_an_answer_is_checked_in_a_shallow_clone(
    lens_only: tuple[Path, Path], runner: Runner, receiver: Receiver
) -> None:
    dev, origin = lens_only
    assert not _push(runner, dev, before="0" * 40).failed
    served = git(origin, "rev-parse", "refs/dst/serving/shop")
    base = git(dev, "rev-parse", "main")
    git(dev, "checkout", "-q", "-b", "feature")
    rel = "lenses/shop/metrics/revenue.yaml"
    doubled = (dev / rel).read_text().replace("SUM(amount)", "SUM(amount) * 2")
    head = commit(dev, {rel: doubled}, "Double revenue")
    git(dev, "checkout", "-q", "--detach", "main")
    git(dev, "merge", "-q", "--no-ff", "-m", "Merge feature into main", "feature")
    merge = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", "feature", "HEAD:refs/pull/7/merge")
    git(dev, "checkout", "-q", "main")
    event = {
        "action": "opened",
        "number": 7,
        "pull_request": {
            "number": 7,
            "base": {"ref": "main", "sha": base},
            "head": {"ref": "feature", "sha": head},
        },
        "repository": _repository(),
    }
    path = dev / WORKFLOWS / "lens-check.yml"
    job = runner.run(
        path, "check", event_name="pull_request", event=event, ref="refs/pull/7/merge", sha=merge
    )
    checked = _step_named(job, "dst ci check / dst ci check")
    assert checked.code == 1, job.log()
    assert "::error" in checked.stdout and "revenue_by_region" in checked.stdout
    assert "insufficient history" not in checked.stdout + checked.stderr
    kept = _step_named(job, "Keep the JUnit report")
    assert kept.code == 0 and "dst-junit.xml: found" in kept.stdout  # if: !cancelled()
    assert git(origin, "rev-parse", "refs/dst/serving/shop") == served  # a check never moves it
    assert [c["action"] for c in receiver.calls] == ["promoted"]  # from the push; none from it


def test_promote_to_staging_seeds_its_warehouse_and_publishes_its_refs(
    lens_only: tuple[Path, Path], runner: Runner, receiver: Receiver
) -> None:
    dev, origin = lens_only
    sha = git(dev, "rev-parse", "main")
    event = {"inputs": {"env": "staging"}, "ref": "refs/heads/main", "repository": _repository()}
    path = dev / WORKFLOWS / "lens-promote.yml"
    job = runner.run(
        path, "promote", event_name="workflow_dispatch", event=event, ref="refs/heads/main", sha=sha
    )
    assert not job.failed, job.log()
    seeded = _step_named(job, "Build the warehouse from the seeds")
    assert "staging.duckdb" in seeded.stdout and "8 rows" in seeded.stdout
    applied = _step_named(job, "dst ci apply --env / dst ci apply")
    assert "promoted" in applied.stdout and "stood down" not in applied.stdout, job.log()
    refs = git(origin, "for-each-ref", "--format=%(refname)", "refs/dst/")
    assert "refs/dst/env/staging/serving/shop" in refs.splitlines()
    assert "refs/dst/env/prod/serving/shop" not in refs
    assert [(c["action"], c["environment"]) for c in receiver.calls] == [("promoted", "staging")]

    # prod reaches its server through the environment secret; it is never seeded
    event = {"inputs": {"env": "prod"}, "ref": "refs/heads/main", "repository": _repository()}
    ctx = {"inputs": event["inputs"], "github": {}, "secrets": {}}
    spec = yaml.safe_load(path.read_text())["jobs"]["promote"]
    action = next(s for s in spec["steps"] if "dst" in str(s.get("uses", "")))
    assert interpolate(action["with"]["seed"], ctx) == "false"
    assert interpolate(spec["environment"], ctx) == "prod"


def test_the_expression_reader_reads_what_the_workflows_use() -> None:
    ctx = {
        "github": {"ref_name": "main", "event": {"repository": {"default_branch": "main"}}},
        "inputs": {"env": "staging", "seed": "true"},
        "secrets": {},
        "__status__": "failure",
    }
    assert evaluate("github.ref_name == github.event.repository.default_branch", ctx) is True
    assert evaluate("inputs.env == 'staging' || inputs.env == 'qa'", ctx) is True
    assert evaluate("inputs.env == 'prod'", ctx) is False
    assert evaluate("!cancelled()", ctx) is True and evaluate("success()", ctx) is False
    assert interpolate("lens-promote-${{ inputs.env }}", ctx) == "lens-promote-staging"
    assert interpolate("${{ secrets.NOPE }}", ctx) == ""
    with pytest.raises(Exception, match=r"cannot read|unknown context"):
        evaluate("format('{0}', inputs.env)", ctx)


def test_init_ci_needs_a_pinned_action_and_never_overwrites(tmp_path: Path) -> None:
    repo = tmp_path / "lenses-only"
    repo.mkdir()
    missing = invoke(repo, "init", "--git", "--ci", "github")
    assert missing.code == 2
    assert "--action OWNER/REPO@REF" in missing.stderr and not (repo / "lenses").exists()
    unpinned = invoke(repo, "init", "--git", "--ci", "github", "--action", "acme/dst")
    assert unpinned.code == 2 and "'acme/dst'" in unpinned.stderr
    done = invoke(repo, "init", "--git", "--ci", "github", "--action", "acme/dst@v0.1.0")
    assert done.code == 0, done.stderr
    assert (repo / "lenses/lenses-only/lens.yaml").is_file()  # no lens yet: the example too
    assert sorted(p.name for p in (repo / WORKFLOWS).iterdir()) == [
        "lens-apply.yml",
        "lens-check.yml",
    ]
    assert "names no environments:, so lens-promote.yml was not written" in done.stderr
    check = repo / WORKFLOWS / "lens-check.yml"
    check.write_text(check.read_text() + "# edited by hand\n")
    again = invoke(
        repo, "init", "--ci", "github", "--action", "acme/dst@v0.2.0", "--format", "json"
    )
    assert again.code == 0, again.stderr
    report = again.json()
    assert report["lens"] is None and report["written"] == []
    assert report["kept"] == [f"{WORKFLOWS}/lens-check.yml", f"{WORKFLOWS}/lens-apply.yml"]
    assert check.read_text().endswith("# edited by hand\n")


def test_a_server_default_warehouse_is_reached_not_seeded() -> None:
    from reconciler.scaffold import CiSettings, ci_files

    embedded = ci_files(CiSettings("acme/dst@v1", ("HOOK",), {}, seed_default=True))
    server = ci_files(CiSettings("acme/dst@v1", ("HOOK",), {}, seed_default=False))
    for files, seeded in ((embedded, True), (server, False)):
        apply = yaml.safe_load(files[f"{WORKFLOWS}/lens-apply.yml"])["jobs"]["apply"]
        action = next(s for s in apply["steps"] if "dst" in str(s.get("uses", "")))
        assert action["with"]["seed"] == str(seeded).lower()
        assert ("DST_WAREHOUSE_URL" in apply["env"]) is not seeded
        assert apply["env"]["HOOK"] == "${{ secrets.HOOK }}"
        assert f"{WORKFLOWS}/lens-promote.yml" not in files  # no environments
