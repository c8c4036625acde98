"""``dst init``: scaffolds that validate, in new and existing git repositories; no overwrites."""

from __future__ import annotations

from pathlib import Path

import yaml

from reconciler.git.trees import worktree_files
from reconciler.lens import RepoConfig, load_lens
from reconciler.loader import load_yaml, validate
from reconciler.schemas import kind_of, schema_comment
from tests.helpers import commit, git, invoke


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def test_init_in_an_existing_repo_validates_and_refuses_a_second_run(repo: Path) -> None:
    done = invoke(repo, "init", "--lens", "shop", "--format", "json")
    assert done.code == 0, done.stderr
    obj = done.json()
    assert (obj["lens"], obj["git_initialized"]) == ("shop", False)
    assert "lenses/shop/lens.yaml" in obj["written"] and "dst.yaml" in obj["written"]
    assert ".gitignore" not in obj["written"]  # the fixture's .gitignore already has .dst/
    assert (repo / ".gitignore").read_text().splitlines().count(".dst/") == 1
    assert [cmd.split()[1] for cmd in obj["next"] if cmd.startswith("dst ")] == [
        "seed",
        "validate",
        "hooks",
        "apply",
        "certify",
    ]
    lens_dir = repo / "lenses" / "shop"
    for path in sorted(lens_dir.rglob("*.yaml")):
        rel = path.relative_to(lens_dir).as_posix()
        kind = kind_of(rel)
        assert kind is not None
        assert path.read_text().startswith(schema_comment(kind, rel)), rel
        target = path.parent / schema_comment(kind, rel).split("$schema=")[1].strip()
        assert target.resolve().is_file(), f"{rel}: modeline points at a missing schema"
    lens = load_lens("shop", worktree_files(repo, "shop"))
    assert set(lens.models) == {"example_orders"}
    assert set(lens.metrics) == {"order_count", "revenue"}
    # an example answer, never a certified one: only a person certifies
    assert lens.answers and {a.status for a in lens.answers.values()} == {"draft"}
    assert lens.active_answers() == []
    assert validate(RepoConfig, load_yaml("dst.yaml", (repo / "dst.yaml").read_bytes()))
    checked = invoke(repo, "validate")
    assert checked.code == 0, checked.stderr
    assert "lenses/shop: ok" in checked.stdout

    before = tree_bytes(repo)
    again = invoke(repo, "init", "--lens", "shop")
    assert again.code == 2
    assert "lenses/shop/lens.yaml already exists" in again.stderr and "fix:" in again.stderr
    assert tree_bytes(repo) == before


def test_init_outside_git_needs_git_flag_then_creates_the_repo(tmp_path: Path) -> None:
    target = tmp_path / "Sales Data"
    target.mkdir()
    refused = invoke(target, "init")
    assert refused.code == 2
    assert "not inside a git repository" in refused.stderr and "--git" in refused.stderr
    assert list(target.iterdir()) == []
    done = invoke(target, "init", "--git")
    assert done.code == 0, done.stderr
    assert "initialized lens sales-data" in done.stdout and "new git repository" in done.stdout
    assert (target / ".git").is_dir()
    assert (target / ".gitignore").read_text() == ".dst/\n"
    for step in ("dst seed", "dst validate", "dst hooks install", "dst apply"):
        assert step in done.stdout
    assert invoke(target, "validate").code == 0


def test_init_refuses_a_subdirectory_of_a_repo_and_bad_input(repo: Path) -> None:
    sub = repo / "sub"
    sub.mkdir()
    inside = invoke(repo, "init", str(sub))
    assert inside.code == 2
    assert "dst reads lenses/ at the repository root" in inside.stderr
    bad_name = invoke(repo, "init", "--lens", "Bad Name")
    assert bad_name.code == 2 and "not a valid lens name" in bad_name.stderr
    secret = invoke(repo, "init", "--warehouse", "postgresql://me:hunter2@db/analytics")
    assert secret.code == 2
    assert "password" in secret.stderr and "hunter2" not in secret.stderr
    assert not (repo / "lenses").exists() and not (repo / "dst.yaml").exists()


def test_init_with_a_warehouse_url_writes_dst_yaml_and_the_dialect(repo: Path) -> None:
    url = "postgresql://analyst:${PGPASSWORD}@db.example.com:5432/analytics"
    done = invoke(repo, "init", "--lens", "pg", "--warehouse", url)
    assert done.code == 0, done.stderr
    config = validate(RepoConfig, load_yaml("dst.yaml", (repo / "dst.yaml").read_bytes()))
    assert config.warehouse == url
    lens_yaml = yaml.safe_load((repo / "lenses/pg/lens.yaml").read_text())
    assert lens_yaml["dialect"] == "postgres"
    # a second lens keeps dst.yaml and the schemas; a new --warehouse would overwrite it
    second = invoke(repo, "init", "--lens", "other", "--format", "json")
    assert second.code == 0, second.stderr
    assert "dst.yaml" in second.json()["kept"]
    clash = invoke(repo, "init", "--lens", "third", "--warehouse", "duckdb:///x.duckdb")
    assert clash.code == 2 and "dst.yaml already exists" in clash.stderr


def test_init_seed_apply_then_certify_the_first_answer(repo: Path) -> None:
    assert invoke(repo, "init", "--lens", "shop").code == 0
    args = ["certify", "--lens", "shop", "--question", "Revenue by region", "--yes"]
    unseeded = invoke(repo, *args, "--by", "Pat Lee")
    assert unseeded.code == 2 and "dst seed" in unseeded.stderr
    assert invoke(repo, "seed").code == 0
    commit(repo, {}, "add lens shop")
    first = invoke(repo, "apply", "--format", "json")
    assert first.code == 0, first.stdout + first.stderr
    shop = first.lens("shop")
    assert shop["action"] == "promoted"
    assert any("gate SKIPPED" in m for m in shop["messages"])
    certified = invoke(repo, *args, "--by", "Pat Lee")
    assert certified.code == 0, certified.stderr
    commit(repo, {}, "certify revenue by region")
    second = invoke(repo, "apply", "--format", "json")
    assert second.code == 0, second.stdout + second.stderr
    shop = second.lens("shop")
    assert shop["action"] == "promoted"
    assert [(r["answer"], r["outcome"]) for r in shop["self_test"]] == [
        ("revenue_by_region", "correct")
    ]
    assert git(repo, "status", "--porcelain") == ""
