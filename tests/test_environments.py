"""Environments (DESIGN §3): ``staging`` and ``prod`` in ``dst.yaml``, each with its own
warehouse and refs under ``refs/dst/env/<E>/``, ``prod`` promoting from ``staging``.

Real parts throughout: the example lenses in a real git repository, two real DuckDB
files built by ``dst seed --warehouse`` from the same seeds, the in-process CLI, a
real bare origin for ``dst sync``, a real SIGKILL (``DST_CRASH_AT``) for the intent
record, and a real local HTTP server receiving the notifications.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from reconciler.context import Runtime
from reconciler.git import refs as refstore
from reconciler.lens import load_lens
from tests.helpers import command_env, commit, git, invoke
from tests.helpers.webhook import Receiver, receiving

ENVS_YAML = """\
environments:
  staging:
    warehouse: duckdb:///.dst/staging.duckdb
  prod:
    warehouse: duckdb:///.dst/prod.duckdb
    promote_from: staging
"""
HOOK_ENV = "DST_TEST_ENV_WEBHOOK"


def ref(repo: Path, name: str) -> str | None:
    """The oid ``name`` holds in ``repo``, or ``None``."""
    return refstore.ref_target(pygit2.Repository(str(repo)), name)


def lens_tree(repo: Path, name: str) -> str:
    """The ``lens/`` tree id of the deployment ``name`` points at."""
    return git(repo, "rev-parse", f"{name}:lens")


def dst_refs(repo: Path) -> dict[str, str]:
    """Every ref under ``refs/dst/`` with its value."""
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/dst/")
    return dict(line.split(" ", 1) for line in out.splitlines())


def seed_environments(repo: Path, extra: str = "") -> None:
    """Seed ``.dst/staging.duckdb`` and ``.dst/prod.duckdb`` and commit ``dst.yaml``."""
    for env in ("staging", "prod"):
        seeded = invoke(repo, "seed", "--warehouse", f"duckdb:///{repo}/.dst/{env}.duckdb")
        assert seeded.code == 0, seeded.stderr
    commit(repo, {"dst.yaml": ENVS_YAML + extra}, "environments staging and prod")


def edit_skill(repo: Path, lens: str, note: str) -> str:
    """Commit a line added to one skill of ``lens`` (a new lens tree that still passes)."""
    path = (
        f"lenses/{lens}/skills/"
        + sorted(p.name for p in (repo / "lenses" / lens / "skills").iterdir())[0]
    )
    return commit(repo, {path: (repo / path).read_text() + f"\n{note}\n"}, note)


@pytest.fixture(scope="module")
def _staged_template(tmp_path_factory: pytest.TempPathFactory, _seeded_template: Path) -> Path:
    """Both lenses promoted to staging and prod (v1), then sales v2 promoted to staging."""
    path = tmp_path_factory.mktemp("envs") / "repo"
    shutil.copytree(_seeded_template, path, symlinks=True)
    seed_environments(path)
    for env in ("staging", "prod"):
        done = invoke(path, "apply", "--env", env, "--format", "json")
        assert done.code == 0, done.stdout + done.stderr
        assert {x["action"] for x in done.json()["lenses"]} == {"promoted"}
    edit_skill(path, "sales", "Fiscal weeks start on Monday.")
    done = invoke(path, "apply", "--env", "staging", "--lens", "sales")
    assert done.code == 0, done.stdout + done.stderr
    return path


@pytest.fixture
def staged(_staged_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "staged"
    shutil.copytree(_staged_template, path, symlinks=True)
    return path


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as r:
        yield r


def test_prod_refuses_what_staging_does_not_serve_then_takes_it(
    lens_repo: Path, receiver: Receiver
) -> None:
    notify = f"notify:\n  - url_env: {HOOK_ENV}\n    events: [promoted, blocked, recovered]\n"
    seed_environments(lens_repo, notify)
    hook = {HOOK_ENV: receiver.url}

    refused = invoke(lens_repo, "apply", "--env", "prod", "--lens", "sales", env=hook)
    assert refused.code == 1, refused.stdout + refused.stderr
    assert "promote through staging first" in refused.stdout
    assert ref(lens_repo, "refs/dst/env/prod/serving/sales") is None
    assert ref(lens_repo, "refs/dst/env/prod/attempts/sales") is not None  # why, for status
    assert [(c["lens"], c["action"], c["environment"]) for c in receiver.calls] == [
        ("sales", "blocked", "prod")
    ]

    # the exact command it prints promotes to staging
    first = re.search(r"run `dst ([^`]+)` first", refused.stdout)
    assert first is not None, refused.stdout
    staging = invoke(lens_repo, *first.group(1).split(), env=hook)
    assert staging.code == 0, staging.stdout + staging.stderr
    assert "environment staging (refs/dst/env/staging/)" in staging.stdout
    on_staging = ref(lens_repo, "refs/dst/env/staging/serving/sales")
    assert on_staging is not None

    promoted = invoke(lens_repo, "apply", "--env", "prod", "--lens", "sales", env=hook)
    assert promoted.code == 0, promoted.stdout + promoted.stderr
    on_prod = ref(lens_repo, "refs/dst/env/prod/serving/sales")
    assert on_prod is not None and on_prod != on_staging
    assert lens_tree(lens_repo, on_prod) == lens_tree(lens_repo, on_staging)
    assert [(c["action"], c["environment"]) for c in receiver.calls[1:]] == [
        ("promoted", "staging"),
        ("recovered", "prod"),  # prod's last attempt was the refusal
    ]

    # the default environment saw none of it, and still works as it always did
    assert not any(
        r.startswith(("refs/dst/serving/", "refs/dst/attempts/")) for r in dst_refs(lens_repo)
    )
    assert "refs/dst/applying" not in dst_refs(lens_repo)
    default = invoke(lens_repo, "apply", "--lens", "sales", "--format", "json", env=hook)
    assert default.code == 0, default.stdout + default.stderr
    assert default.lens("sales")["action"] == "promoted"
    assert receiver.calls[-1]["environment"] is None
    assert ref(lens_repo, "refs/dst/env/prod/serving/sales") == on_prod


def test_status_lists_every_environment(staged: Path) -> None:
    text = invoke(staged, "status")
    assert text.code == 0, text.stderr
    out = text.stdout
    assert out.index("default environment:") < out.index("environment staging:")
    assert out.index("environment staging:") < out.index("environment prod:")
    staging_part = out[out.index("environment staging:") : out.index("environment prod:")]
    prod_part = out[out.index("environment prod:") :]
    staging_sales = ref(staged, "refs/dst/env/staging/serving/sales")
    prod_sales = ref(staged, "refs/dst/env/prod/serving/sales")
    assert staging_sales and prod_sales
    assert f"sales: serving {staging_sales[:12]}" in staging_part
    assert f"sales: serving {prod_sales[:12]}" in prod_part
    default_part = out[: out.index("environment staging:")]
    assert "sales: nothing serving" in default_part

    body = invoke(staged, "status", "--format", "json").json()
    assert all(x["serving"] is None and x["environment"] is None for x in body["lenses"])
    by_env = {e["environment"]: {x["lens"]: x for x in e["lenses"]} for e in body["environments"]}
    assert list(by_env) == ["staging", "prod"]
    assert by_env["staging"]["sales"]["serving"] == staging_sales
    assert by_env["prod"]["sales"]["serving"] == prod_sales
    assert by_env["prod"]["finance"]["environment"] == "prod"

    one = invoke(staged, "status", "--env", "prod", "--format", "json").json()
    assert one["environment"] == "prod" and "environments" not in one
    assert {x["lens"]: x["serving"] for x in one["lenses"]}["sales"] == prod_sales


def test_rollback_in_staging_leaves_prod_alone(staged: Path) -> None:
    before = dst_refs(staged)
    v2 = before["refs/dst/env/staging/serving/sales"]
    log = invoke(staged, "log", "sales", "--env", "staging", "--format", "json").json()
    assert log["environment"] == "staging"
    v1 = log["deployments"][1]["deployment"]
    assert [d["action"] for d in log["deployments"]] == ["promote", "promote"]

    done = invoke(staged, "rollback", "sales", "--env", "staging")
    assert done.code == 0, done.stdout + done.stderr
    after = dst_refs(staged)
    rolled = after["refs/dst/env/staging/serving/sales"]
    assert git(staged, "rev-parse", f"{rolled}^1") == v2
    assert lens_tree(staged, rolled) == lens_tree(staged, v1)
    assert {k: v for k, v in after.items() if k != "refs/dst/env/staging/serving/sales"} == {
        k: v for k, v in before.items() if k != "refs/dst/env/staging/serving/sales"
    }
    prod_log = invoke(staged, "log", "sales", "--env", "prod")
    assert prod_log.code == 0 and prod_log.stdout.startswith("environment prod\n")
    assert prod_log.stdout.count("● ") == 1


def test_test_and_plan_take_env(staged: Path) -> None:
    prod_before = ref(staged, "refs/dst/env/prod/serving/finance")
    staging_before = ref(staged, "refs/dst/env/staging/serving/finance")
    tested = invoke(staged, "test", "finance", "--env", "staging", "--format", "json")
    assert tested.code == 0, tested.stdout + tested.stderr
    assert tested.json()["environment"] == "staging"
    assert ref(staged, "refs/dst/env/staging/serving/finance") == staging_before
    verified = ref(staged, "refs/dst/env/staging/verify/finance")
    assert git(staged, "log", "-1", "--format=%s", str(verified)).startswith("verify finance")
    assert ref(staged, "refs/dst/env/prod/serving/finance") == prod_before
    assert ref(staged, "refs/dst/env/prod/verify/finance") is None
    assert ref(staged, "refs/dst/verify/finance") is None

    plan = invoke(staged, "plan", "--env", "prod", "--format", "json")
    assert plan.code == 0, plan.stderr
    assert plan.json()["environment"] == "prod"
    assert invoke(staged, "plan", "--format", "json").json()["environment"] is None
    actions = {x["lens"]: x["action"] for x in plan.json()["lenses"]}
    assert actions == {"finance": "unchanged", "sales": "planned"}  # v2 is only on staging
    assert not any("promote through" in m for m in plan.lens("sales")["messages"])
    edit_skill(staged, "finance", "Amounts are in euros.")
    ahead = invoke(staged, "plan", "--env", "prod", "--lens", "finance", "--format", "json")
    assert ahead.code == 0, ahead.stderr
    warned = [m for m in ahead.lens("finance")["messages"] if "promote through" in m]
    assert warned and warned[0].startswith("WARNING promote through staging first")
    assert (
        invoke(staged, "plan", "--env", "staging", "--format", "json").lens("sales")["action"]
        == "unchanged"
    )


def test_sync_carries_every_environment_to_a_second_clone(staged: Path, tmp_path: Path) -> None:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(staged, "remote", "add", "origin", str(bare))
    git(staged, "push", "-q", "origin", "main")
    pushed = invoke(staged, "sync", "--push")
    assert pushed.code == 0, pushed.stdout + pushed.stderr
    wanted = {k: v for k, v in dst_refs(staged).items() if "/env/" in k}
    assert {k for k in wanted if "/serving/" in k} == {
        f"refs/dst/env/{e}/serving/{lens}"
        for e in ("staging", "prod")
        for lens in ("finance", "sales")
    }
    assert {k: v for k, v in dst_refs(bare).items() if "/env/" in k} == wanted

    git(tmp_path, "clone", "-q", str(bare), "second")
    second = tmp_path / "second"
    fetched = invoke(second, "sync", "--fetch")
    assert fetched.code == 0, fetched.stdout + fetched.stderr
    assert "lens sales (env prod): serving fetched" in fetched.stdout
    assert dst_refs(second) == dst_refs(staged)
    status = invoke(second, "status", "--env", "staging")
    assert f"sales: serving {wanted['refs/dst/env/staging/serving/sales'][:12]}" in status.stdout


def test_a_crash_left_intent_in_staging_does_not_disturb_prod(staged: Path) -> None:
    edit_skill(staged, "sales", "Revenue is net of returns.")
    edit_skill(staged, "finance", "Amounts are in euros.")
    before = dst_refs(staged)
    crashed = subprocess.run(
        [sys.executable, "-m", "reconciler", "apply", "--env", "staging"],
        cwd=staged,
        env={**command_env(staged), "DST_CRASH_AT": "intent-written"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    intent = ref(staged, "refs/dst/env/staging/applying")
    assert intent is not None
    assert "refs/dst/applying" not in dst_refs(staged)
    assert {k: v for k, v in dst_refs(staged).items() if "/applying" not in k} == before

    # prod goes about its business: it neither rolls staging forward nor waits for it
    prod = invoke(
        staged,
        "rollback",
        "sales",
        "--env",
        "prod",
        "--to",
        before["refs/dst/env/prod/serving/sales"],
    )
    assert prod.code == 2 and "same lens content" in prod.stderr  # an ordinary refusal
    tested = invoke(staged, "test", "finance", "--env", "prod")
    assert tested.code == 0, tested.stdout + tested.stderr
    assert ref(staged, "refs/dst/env/staging/applying") == intent
    assert (
        ref(staged, "refs/dst/env/staging/serving/sales")
        == before["refs/dst/env/staging/serving/sales"]
    )
    refused = invoke(staged, "apply", "--env", "prod", "--lens", "sales")
    assert refused.code == 1 and "promote through staging first" in refused.stdout
    assert ref(staged, "refs/dst/env/staging/applying") == intent

    # staging's next command rolls its own apply forward
    rolled = invoke(staged, "apply", "--env", "staging", "--format", "json")
    assert rolled.code == 0, rolled.stdout + rolled.stderr
    assert any(
        m.startswith("rolled forward refs/dst/env/staging/serving/")
        for m in rolled.json()["messages"]
    )
    assert ref(staged, "refs/dst/env/staging/applying") is None
    assert {x["action"] for x in rolled.json()["lenses"]} == {"unchanged"}


@pytest.mark.parametrize(
    ("config", "line", "words"),
    [
        (
            "environments:\n  prod:\n    warehouse: duckdb:///p.duckdb\n    promote_from: stagin\n",
            4,
            "promotes from 'stagin', which is not an environment",
        ),
        ("environments:\n  prod:\n    promote_from: prod\n", 3, "promotes from itself"),
        (
            "environments:\n  a:\n    promote_from: b\n  b:\n    promote_from: c\n"
            "  c:\n    promote_from: a\n",
            3,
            "cycle: a → b → c → a",
        ),
        ("environments:\n  Prod Env:\n    warehouse: duckdb:///p.duckdb\n", 2, "environment name"),
        ("environments:\n  prod:\n    warehose: duckdb:///p.duckdb\n", 3, "unknown key 'warehose'"),
    ],
    ids=["unknown", "self", "cycle", "bad-name", "unknown-key"],
)
def test_bad_environments_are_exit_2_at_their_line(
    repo: Path, config: str, line: int, words: str
) -> None:
    commit(repo, {"dst.yaml": config}, "environments")
    for args in (("status",), ("plan",), ("apply", "--env", "prod")):
        done = invoke(repo, *args)
        assert done.code == 2, (args, done.stdout, done.stderr)
        assert f"dst.yaml:{line}: " in done.stderr and words in done.stderr, done.stderr
    assert not dst_refs(repo)


def test_an_unknown_env_is_exit_2_naming_the_known_ones(repo: Path) -> None:
    commit(repo, {"dst.yaml": ENVS_YAML}, "environments")
    for args in (("apply", "--env", "qa"), ("status", "--env", "qa"), ("log", "x", "--env", "qa")):
        done = invoke(repo, *args)
        assert done.code == 2, (args, done.stdout, done.stderr)
        assert "--env qa: dst.yaml has no environment of that name" in done.stderr
        assert "(environments: prod, staging)" in done.stderr


def test_the_environment_warehouse_sits_between_the_variable_and_the_lens(repo: Path) -> None:
    commit(repo, {"dst.yaml": "warehouse: duckdb:///top.duckdb\n" + ENVS_YAML}, "environments")
    lens = load_lens(
        "tiny",
        {"lens.yaml": b"name: tiny\ndescription: one lens\nwarehouse: duckdb:///lens.duckdb\n"},
    )
    rt = Runtime(pygit2.Repository(str(repo)), env={})
    assert rt.resolve_url(None) == (f"duckdb:///{repo}/top.duckdb", "dst.yaml warehouse:")
    assert rt.resolve_url(lens) == (f"duckdb:///{repo}/lens.duckdb", "lens warehouse:")
    rt.environment = "prod"
    prod = (f"duckdb:///{repo}/.dst/prod.duckdb", "environment prod warehouse:")
    assert rt.resolve_url(None) == prod
    assert rt.resolve_url(lens) == prod
    rt.env = {"DST_WAREHOUSE_URL": "duckdb:///var.duckdb"}
    assert rt.resolve_url(lens) == ("duckdb:///var.duckdb", "DST_WAREHOUSE_URL")
    rt.warehouse_url = "duckdb:///flag.duckdb"
    assert rt.resolve_url(lens) == ("duckdb:///flag.duckdb", "--warehouse")


def test_ci_apply_env_promotes_what_staging_serves_and_refuses_the_rest(staged: Path) -> None:
    hidden = {"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": "", "GITHUB_STEP_SUMMARY": ""}
    staging_sales = ref(staged, "refs/dst/env/staging/serving/sales")
    done = invoke(staged, "ci", "apply", "--env", "prod", "--format", "json", env=hidden)
    assert done.code == 0, done.stdout + done.stderr
    assert {x["lens"]: x["action"] for x in done.json()["lenses"]} == {
        "finance": "unchanged",
        "sales": "promoted",
    }
    prod_sales = ref(staged, "refs/dst/env/prod/serving/sales")
    assert prod_sales and lens_tree(staged, prod_sales) == lens_tree(staged, str(staging_sales))
    assert "(env prod)" in git(staged, "log", "-1", "--format=%s", prod_sales)

    edit_skill(staged, "finance", "Quarters follow the calendar year.")
    refused = invoke(staged, "ci", "apply", "--env", "prod", "--format", "github", env=hidden)
    assert refused.code == 1, refused.stdout + refused.stderr
    assert "promote through staging first" in refused.stdout
    assert ref(staged, "refs/dst/env/prod/serving/sales") == prod_sales


def test_a_retirement_in_staging_syncs_without_touching_prod(staged: Path, tmp_path: Path) -> None:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(staged, "remote", "add", "origin", str(bare))
    git(staged, "push", "-q", "origin", "main")
    assert invoke(staged, "sync", "--push").code == 0
    git(tmp_path, "clone", "-q", str(bare), "other")
    other = tmp_path / "other"
    assert invoke(other, "sync", "--fetch").code == 0
    prod_finance = ref(other, "refs/dst/env/prod/serving/finance")
    assert prod_finance is not None

    commit(staged, {"lenses/finance": None}, "drop the finance lens")
    retired = invoke(staged, "apply", "--env", "staging", "--format", "json")
    assert retired.code == 0, retired.stdout + retired.stderr
    assert retired.lens("finance")["action"] == "retired"
    assert ref(staged, "refs/dst/env/staging/serving/finance") is None
    git(staged, "push", "-q", "origin", "main")
    pushed = invoke(staged, "sync", "--push")
    assert pushed.code == 0, pushed.stdout + pushed.stderr
    on_origin = dst_refs(bare)
    assert "refs/dst/env/staging/serving/finance" not in on_origin
    assert "refs/dst/env/staging/retired/finance" in on_origin
    assert on_origin["refs/dst/env/prod/serving/finance"] == prod_finance

    fetched = invoke(other, "sync", "--fetch", "--format", "json")
    assert fetched.code == 0, fetched.stdout + fetched.stderr
    assert ref(other, "refs/dst/env/staging/serving/finance") is None
    assert ref(other, "refs/dst/env/prod/serving/finance") == prod_finance
    assert dst_refs(other) == dst_refs(staged)


def test_gc_env_prunes_that_environments_attempts_only(staged: Path) -> None:
    for note in ("Quarters follow the calendar year.", "Amounts are in euros."):
        edit_skill(staged, "finance", note)
        refused = invoke(staged, "apply", "--env", "prod", "--lens", "finance")
        assert refused.code == 1 and "promote through staging first" in refused.stdout
    chain = git(staged, "rev-list", "--first-parent", "refs/dst/env/prod/attempts/finance")
    assert len(chain.split()) == 3  # two attempts and the history root
    staging_before = {k: v for k, v in dst_refs(staged).items() if "/staging/" in k}

    pruned = invoke(staged, "gc", "--keep", "1", "--env", "prod", "--format", "json")
    assert pruned.code == 0, pruned.stdout + pruned.stderr
    body = pruned.json()["lenses"]
    assert [(p["lens"], p["ref"], p["dropped"]) for p in body] == [
        ("finance", "refs/dst/env/prod/attempts/finance", 1)
    ]
    assert {k: v for k, v in dst_refs(staged).items() if "/staging/" in k} == staging_before
    assert invoke(staged, "gc", "--env", "prod", "sales").code == 2  # prod has no sales attempts


def test_a_dry_run_in_prod_only_warns(staged: Path) -> None:
    edit_skill(staged, "finance", "Amounts are in euros.")
    before = dst_refs(staged)
    done = invoke(staged, "apply", "--env", "prod", "--lens", "finance", "--dry-run")
    assert done.code == 0, done.stdout + done.stderr
    assert "WARNING promote through staging first" in done.stdout
    assert dst_refs(staged) == before


def test_a_lock_left_in_staging_does_not_hold_prod_up(staged: Path) -> None:
    lock = staged / ".git" / "refs" / "dst" / "env" / "staging" / "serving" / "sales.lock"
    lock.write_text("left by a killed process\n")
    quick = {"DST_LOCK_WAIT_S": "0.2"}
    held = invoke(staged, "rollback", "sales", "--env", "staging", env=quick)
    assert held.code != 0 and "sales.lock" in held.stderr, held.stderr
    tested = invoke(staged, "test", "finance", "--env", "prod", env=quick)
    assert tested.code == 0, tested.stdout + tested.stderr
    assert lock.is_file()  # never deleted by dst


def test_ask_takes_env_and_answers_from_that_environments_serving_version(staged: Path) -> None:
    question = "net revenue by region"
    refs = dst_refs(staged)
    for env in ("staging", "prod"):
        done = invoke(staged, "ask", question, "--lens", "sales", "--env", env, "--format", "json")
        assert done.code == 0, done.stdout + done.stderr
        out = done.json()
        assert out["environment"] == env
        assert out["deployment"] == refs[f"refs/dst/env/{env}/serving/sales"]
    # staging serves sales v2, prod still v1: two different deployments answered
    assert refs["refs/dst/env/staging/serving/sales"] != refs["refs/dst/env/prod/serving/sales"]
    unknown = invoke(staged, "ask", question, "--lens", "sales", "--env", "qa")
    assert unknown.code == 2 and "--env qa: dst.yaml has no environment" in unknown.stderr


def test_ask_in_an_environment_that_does_not_serve_the_lens_names_the_env(
    lens_repo: Path,
) -> None:
    commit(lens_repo, {"dst.yaml": ENVS_YAML}, "environments")
    done = invoke(lens_repo, "ask", "how many orders", "--lens", "sales", "--env", "staging")
    assert done.code == 2, done.stdout + done.stderr
    assert "in environment staging" in done.stderr
    assert "dst apply --lens sales --env staging" in done.stderr


def test_environments_and_webhooks_come_from_the_committed_dst_yaml(
    staged: Path, receiver: Receiver
) -> None:
    # staging serves sales v2, prod v1: prod must refuse v2 whatever the working tree says
    before = ref(staged, "refs/dst/env/prod/serving/sales")
    loose = ENVS_YAML.replace("    promote_from: staging\n", "")
    notify = f"notify:\n  - url_env: {HOOK_ENV}\n    events: [promoted, blocked]\n"
    edit_skill(staged, "sales", "Quarters are calendar quarters.")
    (staged / "dst.yaml").write_text(loose + notify)  # uncommitted
    done = invoke(staged, "apply", "--env", "prod", "--lens", "sales", env={HOOK_ENV: receiver.url})
    assert done.code == 1, done.stdout + done.stderr
    assert "promote through staging first" in done.stdout
    assert "dst.yaml in the working tree differs from the one committed" in done.stdout
    assert ref(staged, "refs/dst/env/prod/serving/sales") == before
    assert receiver.calls == []  # the uncommitted webhook is not one

    # committed, the same file takes effect: prod promotes from nowhere, the hook hears it
    commit(staged, {"dst.yaml": loose + notify}, "prod promotes on its own")
    done = invoke(staged, "apply", "--env", "prod", "--lens", "sales", env={HOOK_ENV: receiver.url})
    assert done.code == 0, done.stdout + done.stderr
    assert ref(staged, "refs/dst/env/prod/serving/sales") != before
    # after the refusal above, the promotion is a recovery
    assert [(c["lens"], c["action"]) for c in receiver.calls] == [("sales", "recovered")]
