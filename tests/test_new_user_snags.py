"""The snags a new user hit between the quick start and CI, each pinned by a test.

Each test builds a repository with ``dst init`` (the user's own path), breaks or asks
one thing, and checks what dst says: the file, the line, the fix, and that the fix is
one the user can act on. The printed fix commands are checked in
``tests/test_printed_commands.py``; the lens-only repository's workflows in
``tests/test_lens_only_repo.py``; the unsent webhook wording in ``tests/test_notify.py``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import PROJECT, commit, git, invoke


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """``dst init --git --lens shop``: the example lens, seeded, committed."""
    repo = tmp_path / "shop"
    repo.mkdir()
    done = invoke(repo, "init", "--git", "--lens", "shop")
    assert done.code == 0, done.stderr
    assert invoke(repo, "seed").code == 0
    commit(repo, {}, "Add lens shop")
    return repo


def test_validate_checks_dst_yaml_and_names_the_misspelt_key(shop: Path) -> None:
    with (shop / "dst.yaml").open("a") as config:
        config.write("enviroments:\n  staging:\n    warehouse: duckdb:///.dst/staging.duckdb\n")
    line = (shop / "dst.yaml").read_text().splitlines().index("enviroments:") + 1
    commit(shop, {}, "staging, misspelt")  # plan reads the committed dst.yaml
    for args in (("validate",), ("validate", "dst.yaml"), ("validate", "--format", "json")):
        done = invoke(shop, *args)
        assert done.code == 2, (args, done.stdout, done.stderr)
        assert f"dst.yaml:{line}: unknown key 'enviroments'" in done.stderr
        assert "did you mean 'environments'?" in done.stderr
    configs = invoke(shop, "validate", "--format", "json").json()["configs"]
    assert configs == [
        {
            "path": "dst.yaml",
            "valid": False,
            "error": {
                "type": "LensLoadError",
                "path": "dst.yaml",
                "line": line,
                "message": f"dst.yaml:{line}: unknown key 'enviroments'",
                "fix": configs[0]["error"]["fix"],
            },
        }
    ]
    assert invoke(shop, "plan").code == 2  # what plan rejects, validate rejects
    (shop / "dst.yaml").write_text(
        (shop / "dst.yaml").read_text().replace("enviroments", "environments")
    )
    assert invoke(shop, "validate").code == 0


def test_the_pre_commit_hook_runs_on_dst_yaml() -> None:
    hooks = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())
    files = re.compile(next(h for h in hooks if h["id"] == "dst-validate")["files"])
    assert files.search("dst.yaml")
    assert files.search("lenses/shop/metrics/revenue.yaml")
    assert not files.search("docs/dst.yaml") and not files.search("notdst.yaml")


def test_a_misspelt_required_key_is_reported_at_its_own_line_with_a_suggestion(
    shop: Path,
) -> None:
    path = shop / "lenses/shop/metrics/revenue.yaml"
    text = path.read_text().replace("expression:", "expresion:")
    path.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.startswith("expresion:"))
    done = invoke(shop, "validate")
    assert done.code == 2
    assert f"revenue.yaml:{line}: unknown key 'expresion'" in done.stderr, done.stderr
    assert "did you mean 'expression'?" in done.stderr
    assert "missing required key" not in done.stderr


def test_a_postgres_scheme_is_not_blamed_on_a_driver(shop: Path) -> None:
    for args in (
        ("validate", "--warehouse", "postgres://analyst@127.0.0.1:5432/test"),
        ("seed", "--warehouse", "postgres://analyst@127.0.0.1:5432/test"),
    ):
        done = invoke(shop, *args)
        assert done.code == 2
        assert "postgres://" in done.stderr and "fix: write it as postgresql://" in done.stderr
        assert "driver installed" not in done.stderr


def test_a_missing_driver_names_the_package_and_the_extra(shop: Path) -> None:
    pytest.importorskip("sqlalchemy")
    try:
        import pg8000  # noqa: F401

        pytest.skip("pg8000 is installed here: no driver is missing")
    except ImportError:
        pass
    url = "postgresql+pg8000://analyst@127.0.0.1:5432/test"
    for args in (("validate", "--warehouse", url), ("seed", "--warehouse", url)):
        done = invoke(shop, *args)
        assert done.code == 2, done.stderr
        assert "no driver installed" in done.stderr
        assert "pip install psycopg2-binary" in done.stderr
        assert "pip install -e '.[postgres]'" in done.stderr
        assert "dst-reconciler[" not in done.stderr


def test_no_message_names_the_unpublished_package() -> None:
    """dst-reconciler is on no index: an install fix must name what pip can find."""
    offenders = [
        f"{path.relative_to(PROJECT)}:{n}"
        for path in sorted((PROJECT / "reconciler").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "pip install" in line and "dst-reconciler" in line
    ]
    assert not offenders, offenders


def test_apply_refuses_a_warehouse_that_is_no_url_even_when_nothing_is_stale(shop: Path) -> None:
    assert invoke(shop, "apply").code == 0
    done = invoke(shop, "apply", "--dry-run", "--warehouse", "notaurl")
    assert done.code == 2
    assert "--warehouse is not a SQLAlchemy URL" in done.stderr
    as_json = invoke(shop, "apply", "--dry-run", "--warehouse", "notaurl", "--format", "json")
    assert as_json.code == 2
    assert as_json.json()["error"]["message"] == "--warehouse is not a SQLAlchemy URL"


def test_seed_with_no_seed_files_says_so(shop: Path) -> None:
    commit(shop, {"lenses/shop/seeds": None}, "no seeds")
    done = invoke(shop, "seed")
    assert done.code == 0
    assert "no seed files found" in done.stderr and "nothing was loaded" in done.stderr
    with_seeds = invoke(shop, "seed", "--repo", str(shop))
    assert "no seed files found" in with_seeds.stderr  # still none: the same note


def test_seed_env_builds_that_environments_duckdb_file(shop: Path) -> None:
    config = shop / "dst.yaml"
    extra = "environments:\n  staging:\n    warehouse: duckdb:///.dst/staging.duckdb\n"
    commit(shop, {"dst.yaml": config.read_text() + extra}, "staging")
    done = invoke(shop, "seed", "--env", "staging")
    assert done.code == 0, done.stderr
    assert (shop / ".dst" / "staging.duckdb").is_file()
    assert "seeded shop.example_orders: 8 rows" in done.stdout
    unknown = invoke(shop, "seed", "--env", "qa")
    assert unknown.code == 2 and "environments: staging" in unknown.stderr


def test_certify_replace_offers_only_active_answers(shop: Path) -> None:
    certified = invoke(
        shop, "certify", "--lens", "shop", "--question", "Orders by region", "--yes", "--by", "Ana"
    )
    assert certified.code == 0, certified.stderr
    commit(shop, {}, "certify")
    done = invoke(shop, "certify", "--replace", "nosuch", "--lens", "shop", "--yes", "--by", "A")
    assert done.code == 2
    fix = next(line for line in done.stderr.splitlines() if "fix:" in line)
    assert "orders_by_region" in fix
    assert "example_revenue_by_region" not in fix  # the init example is a draft


def test_repo_on_a_missing_path_says_the_path_is_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = invoke(tmp_path, "status", "--repo", str(missing))
    assert done.code == 2
    assert f"{missing}: no such directory" in done.stderr
    assert "not inside a git repository" not in done.stderr


def test_no_styling_under_no_color(shop: Path) -> None:
    args = ("certify", "--lens", "shop", "--question", "Orders by region", "--dry-run")
    forced = invoke(shop, *args, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert forced.code == 0, forced.stderr
    assert "\x1b[" in forced.stdout  # styled when colour is wanted: the check can fail
    plain = invoke(shop, *args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert plain.code == 0
    assert "\x1b[" not in plain.stdout + plain.stderr
    assert "Orders by region" in plain.stdout


def test_ask_in_json_says_why_nothing_was_served_on_stderr(shop: Path) -> None:
    assert invoke(shop, "apply").code == 0
    done = invoke(shop, "ask", "what is the weather tomorrow", "--lens", "shop", "--format", "json")
    assert done.code == 1
    assert done.json()["route"] != "certified"
    assert done.stderr.startswith("dst ask: nothing served: ")


def test_init_writes_the_generator_schemas_the_readme_names(shop: Path) -> None:
    for name in ("request", "reply"):
        path = shop / "schemas" / "generator" / f"{name}.schema.json"
        assert path.is_file(), path
        assert path.read_bytes() == (PROJECT / "schemas/generator" / path.name).read_bytes()
    assert "schemas/generator/request.schema.json" in (PROJECT / "README.md").read_text()
    assert git(shop, "ls-files", "schemas/generator").splitlines() == [
        "schemas/generator/reply.schema.json",
        "schemas/generator/request.schema.json",
    ]


def test_watch_ignores_the_copy_sed_writes_and_sees_the_file(shop: Path) -> None:
    """A real ``sed -i`` under a real watcher: the edit counts, sed's temporary copy does not."""
    import shutil
    import threading

    from watchfiles import watch

    from reconciler.watch import WatchFilter

    sed = shutil.which("sed")
    if sed is None:
        pytest.skip("no sed on PATH")
    root = shop.resolve()
    target = root / "lenses/shop/metrics/revenue.yaml"
    seen: set[str] = set()
    unfiltered: set[str] = set()
    stop = threading.Event()
    filt = WatchFilter(root)

    def edit() -> None:
        threading.Event().wait(0.5)
        subprocess.run([sed, "-i", "s/label: Revenue/label: Sales/", str(target)], check=True)

    editor = threading.Thread(target=edit)
    editor.start()

    def record(change: object, path: str) -> bool:
        unfiltered.add(Path(path).name)
        return filt.is_lens_change(change, path)  # type: ignore[arg-type]

    for changes in watch(root / "lenses", watch_filter=record, stop_event=stop, rust_timeout=5000,
                         debounce=400, yield_on_timeout=True, force_polling=False):  # fmt: skip
        seen |= {Path(p).name for _, p in changes}
        if "revenue.yaml" in seen or not editor.is_alive():
            stop.set()
    editor.join()
    assert "label: Sales" in target.read_text()
    assert "revenue.yaml" in seen
    temporary = {n for n in unfiltered if re.fullmatch(r"sed[A-Za-z0-9]{6}", n)}
    assert temporary, unfiltered  # sed did write a copy the watcher saw: the test can fail
    assert not temporary & seen


def test_sync_after_gc_says_pruned_not_another_promoter(shop: Path, tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(shop, "remote", "add", "origin", origin.as_uri())
    certified = invoke(
        shop, "certify", "--lens", "shop", "--question", "Revenue by region", "--yes", "--by", "A"
    )
    assert certified.code == 0, certified.stderr
    commit(shop, {}, "certify")
    assert invoke(shop, "apply").code == 0
    rel = "lenses/shop/metrics/revenue.yaml"
    for factor in (2, 3, 4):
        text = re.sub(r"SUM\(amount\).*", f"SUM(amount) * {factor}", (shop / rel).read_text())
        commit(shop, {rel: text}, f"revenue x{factor}")
        assert invoke(shop, "apply").code == 1  # blocked: an attempt is recorded
    assert invoke(shop, "sync").code == 0
    assert invoke(shop, "gc", "--keep", "1").code == 0
    done = invoke(shop, "sync")
    out = done.stdout + done.stderr
    assert done.code == 0, out
    assert "pruned here by dst gc" in out
    assert "another promoter" not in out and "diverged" not in out
    assert "git push --force-with-lease=refs/dst/attempts/shop:" in out
    remote_attempts = git(origin, "rev-list", "--first-parent", "--count", "refs/dst/attempts/shop")
    assert int(remote_attempts) >= 3  # sync never overwrote the remote's longer chain


def test_the_retirement_warning_gives_the_newest_outcome(shop: Path) -> None:
    certified = invoke(
        shop, "certify", "--lens", "shop", "--question", "Revenue by region", "--yes", "--by", "A"
    )
    assert certified.code == 0, certified.stderr
    commit(shop, {}, "certify")
    assert invoke(shop, "apply").code == 0
    promoted_at = git(shop, "rev-parse", "HEAD")
    rel = "lenses/shop/metrics/revenue.yaml"
    doubled = (shop / rel).read_text().replace("SUM(amount)", "SUM(amount) * 2")
    broke = commit(shop, {rel: doubled}, "double revenue")
    assert invoke(shop, "apply").code == 1  # blocked: revenue_by_region is wrong there
    answer = "lenses/shop/answers/revenue_by_region.yaml"
    retired = (shop / answer).read_text().replace("status: active", "status: retired")
    commit(shop, {answer: retired}, "retire the answer")
    done = invoke(shop, "apply", "--dry-run", "--format", "json")
    (line,) = [m for m in done.lens("shop")["messages"] if "corpus shrinks" in m]
    assert f"revenue_by_region (wrong at {broke[:12]}, last correct at {promoted_at[:12]})" in line


def test_a_verification_never_moves_the_serving_ref_away_from_the_remotes(
    shop: Path, tmp_path: Path
) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(shop, "remote", "add", "origin", origin.as_uri())
    certified = invoke(
        shop, "certify", "--lens", "shop", "--question", "Revenue by region", "--yes", "--by", "A"
    )
    assert certified.code == 0, certified.stderr
    commit(shop, {}, "certify")
    assert invoke(shop, "apply").code == 0
    assert invoke(shop, "sync").code == 0
    assert invoke(shop, "test", "shop").code == 0  # what watch's schedule runs
    local = git(shop, "rev-parse", "refs/dst/serving/shop")
    assert local == git(origin, "rev-parse", "refs/dst/serving/shop")
