"""The pre-push gate: real bare origin, real clone, real ``git push`` through the installed hook.

Every push case is driven twice over: through ``git push`` (git writes the ref
lines itself) and, where the exact bytes matter, by feeding those bytes to
``dst hook-impl pre-push origin URL`` directly.
"""

from __future__ import annotations

import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reconciler.git import hooks
from tests.helpers import PROJECT, commit, git, invoke
from tests.helpers.push import (
    ZERO,
    Done,
    PushPair,
    break_sales as _break_sales,
    copy_pair,
    push_env as _env,
    run as _run,
    touch_readme as _touch_readme,
    with_hook,
)

STDLIB_ONLY_BANNED = ("sqlalchemy", "sqlglot", "typer", "pydantic", "duckdb", "yaml", "rich")


@pytest.fixture
def bare_pair(_push_template: tuple[Path, Path], tmp_path: Path) -> PushPair:
    """Origin and clone (lenses promoted, warehouse seeded), no hook installed."""
    return copy_pair(_push_template, tmp_path)


@pytest.fixture
def pair(bare_pair: PushPair) -> PushPair:
    """Origin and clone with dst's pre-push hook installed in the clone."""
    return with_hook(bare_pair)


def _line(local_ref: str, local: str, remote_ref: str, remote: str) -> bytes:
    return f"{local_ref} {local} {remote_ref} {remote}\n".encode()


def _gated(done: Done) -> bool:
    return "dst pre-push: gating" in done.stderr


# --- through real `git push` ------------------------------------------------------------


def test_push_touching_no_lens_passes_without_gating(pair: PushPair) -> None:
    new = _touch_readme(pair.clone)
    done = pair.push("origin", "main")
    assert done.code == 0, done.stderr
    assert "refs/heads/main → refs/heads/main: no lens changed" in done.stderr
    assert not _gated(done)
    assert pair.remote("refs/heads/main") == new


def test_push_breaking_a_certified_answer_is_rejected_and_remote_stays(pair: PushPair) -> None:
    before = pair.remote("refs/heads/main")
    _break_sales(pair.clone)
    done = pair.push("origin", "main")
    assert done.code != 0
    assert "lens(es) changed: sales" in done.stderr
    assert "sales: BLOCKED" in done.stderr
    assert "✗ units_electronics_2024: wrong" in done.stderr
    # the compact report: the failure's line once (outcome, attempts, seconds), its
    # results once each, and plain progress without each answer's steps
    failure = re.compile(r"^  ✗ units_electronics_2024: wrong +2 attempts  \d+\.\d\ds$", re.M)
    assert len(failure.findall(done.stderr)) == 1
    assert done.stderr.count("sales: verifying units_electronics_2024") == 1
    assert "executing oracle" not in done.stderr and "\x1b[" not in done.stderr
    assert "push rejected" in done.stderr and "git push --no-verify" in done.stderr
    assert "finance" not in done.stderr.split("gating", 1)[1].splitlines()[0]
    assert pair.remote("refs/heads/main") == before


def test_formatting_only_lens_edit_is_gated_and_passes(pair: PushPair) -> None:
    path = pair.clone / "lenses" / "sales" / "metrics" / "units_sold.yaml"
    new = commit(
        pair.clone, {str(path.relative_to(pair.clone)): "# a comment\n" + path.read_text()}, "c"
    )
    done = pair.push("origin", "main")
    assert done.code == 0, done.stderr
    assert _gated(done)
    assert "sales: WOULD PROMOTE (dry run)" in done.stderr
    assert pair.remote("refs/heads/main") == new


def test_several_refs_in_one_push_any_failure_rejects_them_all(pair: PushPair) -> None:
    before = pair.remote("refs/heads/main")
    _touch_readme(pair.clone)
    git(pair.clone, "checkout", "-q", "-b", "feature")
    _break_sales(pair.clone)
    git(pair.clone, "checkout", "-q", "main")
    done = pair.push("origin", "main", "feature")
    assert done.code != 0
    assert "refs/heads/main → refs/heads/main: no lens changed" in done.stderr
    assert "refs/heads/feature → refs/heads/feature: lens(es) changed: sales" in done.stderr
    assert "sales: BLOCKED" in done.stderr
    assert pair.remote("refs/heads/main") == before
    assert pair.remote("refs/heads/feature") is None


def test_deleting_a_remote_branch_checks_nothing(pair: PushPair) -> None:
    git(pair.clone, "checkout", "-q", "-b", "broken")
    _break_sales(pair.clone)
    assert pair.push("--no-verify", "origin", "broken").code == 0
    git(pair.clone, "checkout", "-q", "main")
    done = pair.push("origin", "--delete", "broken")
    assert done.code == 0, done.stderr
    assert "(delete) → refs/heads/broken: deletion: nothing to check" in done.stderr
    assert not _gated(done)
    assert pair.remote("refs/heads/broken") is None


def test_new_branch_is_scoped_to_the_commits_new_to_the_remote(pair: PushPair) -> None:
    git(pair.clone, "branch", "same-as-main")
    done = pair.push("origin", "same-as-main")
    assert done.code == 0, done.stderr
    assert "no commit new to origin: nothing to check" in done.stderr
    assert not _gated(done)

    git(pair.clone, "checkout", "-q", "-b", "docs")
    _touch_readme(pair.clone)
    done = pair.push("origin", "docs")
    assert done.code == 0, done.stderr
    assert "no lens changed (1 commit(s) new to origin)" in done.stderr

    _break_sales(pair.clone)
    _touch_readme(pair.clone, "more notes\n")
    done = pair.push("origin", "HEAD:refs/heads/topic")
    assert done.code != 0
    assert "lens(es) changed: sales (2 commit(s) new to origin)" in done.stderr
    assert "sales: BLOCKED" in done.stderr
    assert pair.remote("refs/heads/topic") is None


def test_a_push_to_a_bare_url_checks_every_lens_the_pushed_commits_touch(
    pair: PushPair,
) -> None:
    url = str(pair.origin)  # no named remote, so no remote-tracking refs to go by
    git(pair.clone, "checkout", "-q", "-b", "feature")
    _touch_readme(pair.clone)
    done = pair.push(url, "feature")
    assert done.code == 0, done.stderr
    assert (
        f"no remote-tracking ref for {url}: checking every lens the pushed commits touch"
        in done.stderr
    )
    assert "gating finance, sales" in done.stderr

    _break_sales(pair.clone)
    done = pair.push(url, "HEAD:refs/heads/feature2")
    assert done.code != 0
    assert f"no remote-tracking ref for {url}" in done.stderr
    assert "sales: BLOCKED" in done.stderr


def test_new_history_is_checked_in_full(pair: PushPair) -> None:
    git(pair.clone, "checkout", "-q", "--orphan", "fresh")
    root = commit(pair.clone, {}, "a fresh start with the same lenses")
    done = pair.push("origin", "fresh")
    assert done.code == 0, done.stderr
    assert f"new history (root commit {root[:12]}) for origin" in done.stderr
    assert "finance: UNCHANGED" in done.stderr and "sales: UNCHANGED" in done.stderr


@pytest.mark.parametrize("annotated", [True, False], ids=["annotated", "lightweight"])
def test_tags_are_peeled_and_add_nothing_unless_their_commit_is_new(
    pair: PushPair, annotated: bool
) -> None:
    def tag(name: str) -> list[str]:
        return ["tag", "-a", "-m", name, name] if annotated else ["tag", name]

    git(pair.clone, *tag("v1"))
    done = pair.push("origin", "v1")
    assert done.code == 0, done.stderr
    assert "refs/tags/v1 → refs/tags/v1: no commit new to origin" in done.stderr
    assert not _gated(done)

    _break_sales(pair.clone)
    git(pair.clone, *tag("v2"))
    done = pair.push("origin", "v2")
    assert done.code != 0
    assert "refs/tags/v2 → refs/tags/v2: lens(es) changed: sales" in done.stderr
    assert f"gating sales at {pair.rev('HEAD')[:12]}" in done.stderr
    assert pair.remote("refs/tags/v2") is None


def test_force_push_over_history_this_clone_never_saw_checks_every_lens(
    pair: PushPair, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    subprocess.run(
        ["git", "clone", "-q", str(pair.origin), str(other)], check=True, env=_env(tmp_path)
    )
    unseen = _touch_readme(other, "someone else's\n")
    git(other, "push", "-q", "origin", "main")

    _touch_readme(pair.clone, "mine\n")
    done = pair.push("--force", "origin", "main")
    assert done.code == 0, done.stderr
    assert f"history rewritten: origin has refs/heads/main at {unseen[:12]}" in done.stderr
    assert "checking every lens in full" in done.stderr
    assert "gating finance, sales" in done.stderr
    assert "finance: UNCHANGED" in done.stderr and "sales: UNCHANGED" in done.stderr

    git(other, "push", "-q", "--force", "origin", f"{unseen}:refs/heads/main")
    _break_sales(pair.clone)
    done = pair.push("--force", "origin", "main")
    assert done.code != 0
    assert "history rewritten" in done.stderr and "sales: BLOCKED" in done.stderr
    assert pair.remote("refs/heads/main") == unseen


def test_force_push_over_known_history_diffs_against_the_remote_tip(pair: PushPair) -> None:
    pushed = _touch_readme(pair.clone)
    assert pair.push("origin", "main").code == 0
    git(pair.clone, "reset", "-q", "--hard", "HEAD~1")
    _break_sales(pair.clone)
    done = pair.push("--force", "origin", "main")
    assert done.code != 0
    assert f"sales (force push over {pushed[:12]}: history rewritten)" in done.stderr
    assert pair.remote("refs/heads/main") == pushed


@pytest.mark.parametrize("how", ["HEAD", "oid"])
def test_head_or_a_bare_oid_as_the_local_ref(pair: PushPair, how: str) -> None:
    broken = _break_sales(pair.clone)
    git(pair.clone, "checkout", "-q", "--detach")
    src = "HEAD" if how == "HEAD" else broken
    done = pair.push("origin", f"{src}:refs/heads/detached")
    assert done.code != 0
    assert f"{src} → refs/heads/detached: lens(es) changed: sales" in done.stderr
    assert "sales: BLOCKED" in done.stderr
    assert pair.remote("refs/heads/detached") is None


def test_pushing_serving_state_is_never_revalidated(pair: PushPair) -> None:
    _break_sales(pair.clone)  # whatever HEAD holds, refs/dst/* is pushed as recorded
    done = pair.push("origin", "refs/dst/*:refs/dst/*")
    assert done.code == 0, done.stderr
    assert "refs/dst/serving/sales → refs/dst/serving/sales: serving state" in done.stderr
    assert not _gated(done)
    serving = git(pair.clone, "rev-parse", "refs/dst/serving/sales")
    assert pair.remote("refs/dst/serving/sales") == serving


def test_dst_skip_bypasses_the_gate_and_says_so(pair: PushPair) -> None:
    broken = _break_sales(pair.clone)
    done = pair.push("origin", "main", env={"DST_SKIP": "1"})
    assert done.code == 0, done.stderr
    assert "DST_SKIP is set: the lens gate is SKIPPED for this push" in done.stderr
    assert pair.remote("refs/heads/main") == broken


def test_no_verify_skips_the_hook_natively(pair: PushPair) -> None:
    broken = _break_sales(pair.clone)
    done = pair.push("--no-verify", "origin", "main")
    assert done.code == 0, done.stderr
    assert "dst pre-push" not in done.stderr
    assert pair.remote("refs/heads/main") == broken


def test_a_lens_that_no_longer_loads_is_rejected_with_file_and_line(pair: PushPair) -> None:
    path = "lenses/sales/metrics/units_sold.yaml"
    text = (pair.clone / path).read_text()
    commit(pair.clone, {path: text + "not_a_field: 1\n"}, "typo")
    done = pair.push("origin", "main")
    assert done.code != 0
    assert re.search(r"error: lenses/sales/metrics/units_sold\.yaml:\d+: ", done.stderr)
    assert "push rejected" in done.stderr


def test_a_clone_without_a_warehouse_stands_down_and_blocks(pair: PushPair) -> None:
    shutil.rmtree(pair.clone / ".dst")
    _break_sales(pair.clone)
    done = pair.push("origin", "main")
    assert done.code != 0
    assert "sales: STOOD_DOWN" in done.stderr and "dst seed" in done.stderr


# --- exact stdin bytes, straight to `dst hook-impl pre-push` ------------------------------


def test_stdin_lines_each_decide_and_nothing_needs_the_gate(pair: PushPair) -> None:
    head = pair.rev("HEAD")
    serving = pair.rev("refs/dst/serving/sales")
    missing = "1234567" * 5 + "89abc"
    data = b"".join(
        [
            _line("refs/heads/main", head, "refs/heads/main", head),
            _line("(delete)", ZERO, "refs/heads/gone", missing),
            _line("refs/dst/serving/sales", serving, "refs/dst/serving/sales", ZERO),
            b"\n",
        ]
    )
    done = pair.hook(data)
    assert done.code == 0, done.stderr
    assert "refs/heads/main → refs/heads/main: no lens changed" in done.stderr
    assert "(delete) → refs/heads/gone: deletion: nothing to check" in done.stderr
    assert "not re-validated" in done.stderr
    assert not _gated(done)


def test_stdin_with_one_bad_ref_among_several_fails(pair: PushPair) -> None:
    base = pair.rev("HEAD")
    _touch_readme(pair.clone)
    docs = pair.rev("HEAD")
    broken = _break_sales(pair.clone)
    data = _line("refs/heads/docs", docs, "refs/heads/docs", base) + _line(
        "refs/heads/main", broken, "refs/heads/main", base
    )
    done = pair.hook(data)
    assert done.code == 1
    assert "refs/heads/docs → refs/heads/docs: no lens changed" in done.stderr
    assert "sales: BLOCKED" in done.stderr


def test_a_space_in_the_local_ref_as_typed_is_tolerated(pair: PushPair) -> None:
    head = pair.rev("HEAD")
    done = pair.hook(_line("HEAD@{1 day ago}", head, "refs/heads/main", head))
    assert done.code == 0, done.stderr
    assert "HEAD@{1 day ago} → refs/heads/main: no lens changed" in done.stderr


@pytest.mark.parametrize(
    "data",
    [b"refs/heads/main abc refs/heads/main\n", b"refs/heads/main xyz refs/heads/main " + b"0" * 40],
    ids=["three-fields", "not-hex"],
)
def test_malformed_stdin_fails_closed(pair: PushPair, data: bytes) -> None:
    done = pair.hook(data)
    assert done.code == 1
    assert "pre-push stdin line 1" in done.stderr and "--no-verify" in done.stderr


def test_a_local_oid_missing_from_the_repository_fails_closed(pair: PushPair) -> None:
    done = pair.hook(_line("refs/heads/main", "ab" * 20, "refs/heads/main", ZERO))
    assert done.code == 1
    assert "is not in this repository" in done.stderr


def test_empty_stdin_has_nothing_to_check(pair: PushPair) -> None:
    done = pair.hook(b"")
    assert done.code == 0
    assert "no refs pushed" in done.stderr


def test_unknown_mode_is_a_usage_error(pair: PushPair) -> None:
    done = _run(pair.clone, sys.executable, "-m", "reconciler", "hook-impl", "post-merge")
    assert done.code == 2
    assert "usage: dst hook-impl pre-push" in done.stderr


def test_a_terminal_on_stdin_is_not_read(pair: PushPair) -> None:
    script = hooks.hooks_dir(pair.clone) / "pre-push"
    for cmd in (
        [sys.executable, "-m", "reconciler", "hook-impl", "pre-push", "origin", "url"],
        [str(script), "origin", "url"],
    ):
        main_fd, tty_fd = pty.openpty()
        try:
            done = subprocess.run(
                cmd,
                cwd=pair.clone,
                env=_env(pair.clone),
                stdin=tty_fd,
                capture_output=True,
                timeout=60,
                check=False,
            )
        finally:
            os.close(tty_fd)
            os.close(main_fd)
        assert done.returncode == 0, done.stderr
        assert b"stdin is a terminal" in done.stderr


def test_a_no_op_run_imports_only_the_standard_library_and_pygit2(pair: PushPair) -> None:
    head = pair.rev("HEAD")
    program = f"""
import sys
from reconciler.cli.entry import main
try:
    main(["hook-impl", "pre-push", "origin", "url"])
except SystemExit as exc:
    code = exc.code
assert code == 0, code
loaded = {{m.split(".")[0] for m in sys.modules}}
banned = sorted(loaded & {set(STDLIB_ONLY_BANNED)!r})
assert not banned, banned
ours = sorted(m for m in sys.modules if m.startswith("reconciler."))
expected = [
    "reconciler.cli",
    "reconciler.cli.boundary",
    "reconciler.cli.entry",
    "reconciler.cli.hook",
    "reconciler.errors",
    "reconciler.git",
    "reconciler.git.push",
]
assert ours == expected, ours
"""
    done = _run(
        pair.clone,
        sys.executable,
        "-c",
        program,
        stdin=_line("refs/heads/main", head, "refs/heads/main", head),
    )
    assert done.code == 0, done.stderr


# --- the pre-commit framework ----------------------------------------------------------


def _framework(pair: PushPair, **env: str) -> Done:
    cmd = (sys.executable, "-m", "reconciler", "hook-impl", "pre-commit-framework")
    return _run(pair.clone, *cmd, env=env, stdin=None)


def test_pre_commit_framework_checks_the_range_it_is_given(pair: PushPair) -> None:
    base = pair.rev("HEAD")
    docs = _touch_readme(pair.clone)
    done = _framework(
        pair, PRE_COMMIT_FROM_REF=base, PRE_COMMIT_TO_REF=docs, PRE_COMMIT_REMOTE_NAME="origin"
    )
    assert done.code == 0, done.stderr
    assert "no lens changed" in done.stderr and not _gated(done)

    broken = _break_sales(pair.clone)
    done = _framework(pair, PRE_COMMIT_FROM_REF=docs, PRE_COMMIT_TO_REF=broken)
    assert done.code == 1
    assert "lens(es) changed: sales" in done.stderr and "sales: BLOCKED" in done.stderr

    done = _framework(pair, PRE_COMMIT_FROM_REF="cd" * 20, PRE_COMMIT_TO_REF=docs)
    assert done.code == 0, done.stderr
    assert "history rewritten" in done.stderr and "gating finance, sales" in done.stderr


def test_pre_commit_framework_without_a_range_checks_every_lens_at_head(pair: PushPair) -> None:
    done = _framework(pair)
    assert done.code == 0, done.stderr
    assert "no push range from pre-commit" in done.stderr
    assert "finance: UNCHANGED" in done.stderr and "sales: UNCHANGED" in done.stderr
    done = _framework(pair, DST_SKIP="1")
    assert done.code == 0 and "SKIPPED" in done.stderr


def test_pre_commit_hooks_manifest_declares_the_gate() -> None:
    manifest = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in manifest if h["id"] == "dst-gate"]
    assert hook["language"] == "python"
    assert hook["entry"] == "dst hook-impl pre-commit-framework"
    assert hook["stages"] == ["pre-push"]
    assert hook["pass_filenames"] is False and hook["always_run"] is True


# --- installing ------------------------------------------------------------------------


def _foreign_hook(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_a_legacy_hook_runs_first_on_the_identical_stdin(bare_pair: PushPair) -> None:
    hooks_dir = hooks.hooks_dir(bare_pair.clone)
    seen = bare_pair.clone.parent / "legacy-saw"
    _foreign_hook(hooks_dir / "pre-push", f'echo "$@" > "{seen}.args"; cat > "{seen}"')
    change = hooks.install(hooks_dir)
    assert change.action == "installed" and change.legacy == hooks_dir / "pre-push.legacy"

    old = bare_pair.rev("HEAD")
    new = _touch_readme(bare_pair.clone)
    git(bare_pair.clone, "tag", "v1")
    done = bare_pair.push("origin", "main", "v1")
    assert done.code == 0, done.stderr
    expected = _line("refs/heads/main", new, "refs/heads/main", old) + _line(
        "refs/tags/v1", new, "refs/tags/v1", ZERO
    )
    assert seen.read_bytes() == expected
    assert Path(f"{seen}.args").read_text() == f"origin {bare_pair.origin}\n"
    assert "refs/heads/main → refs/heads/main: no lens changed" in done.stderr


def test_the_script_feeds_the_same_bytes_to_the_legacy_hook_and_dst(tmp_path: Path) -> None:
    hooks_dir, fake_bin = tmp_path / "hooks", tmp_path / "bin"
    _foreign_hook(hooks_dir / "pre-push", f'cat > "{tmp_path}/legacy.in"')
    hooks.install(hooks_dir)
    _foreign_hook(fake_bin / "dst", f'echo "$@" > "{tmp_path}/dst.args"; cat > "{tmp_path}/dst.in"')
    data = b"refs/heads/a " + b"1" * 40 + b" refs/heads/a " + b"2" * 40 + b"\n" + bytes(range(1, 9))
    env = {"PATH": f"{fake_bin}{os.pathsep}/usr/bin{os.pathsep}/bin", "TMPDIR": str(tmp_path)}
    done = _run(tmp_path, str(hooks_dir / "pre-push"), "up", "ssh://x", env=env, stdin=data)
    assert done.code == 0, done.stderr
    assert (tmp_path / "legacy.in").read_bytes() == data
    assert (tmp_path / "dst.in").read_bytes() == data
    assert (tmp_path / "dst.args").read_text() == "hook-impl pre-push up ssh://x\n"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith("dst-pre-push.")]
    assert leftovers == []


def test_a_failing_legacy_hook_stops_the_push_before_dst_runs(tmp_path: Path) -> None:
    hooks_dir, fake_bin = tmp_path / "hooks", tmp_path / "bin"
    _foreign_hook(hooks_dir / "pre-push", "cat > /dev/null; echo legacy says no >&2; exit 7")
    hooks.install(hooks_dir)
    _foreign_hook(fake_bin / "dst", f'touch "{tmp_path}/dst-ran"')
    env = {"PATH": f"{fake_bin}{os.pathsep}/usr/bin{os.pathsep}/bin", "TMPDIR": str(tmp_path)}
    done = _run(tmp_path, str(hooks_dir / "pre-push"), "origin", "u", env=env, stdin=b"x\n")
    assert done.code == 7
    assert "legacy says no" in done.stderr
    assert not (tmp_path / "dst-ran").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("dst-pre-push.")] == []


def test_the_script_falls_back_to_python_when_dst_is_not_on_path(
    pair: PushPair, tmp_path: Path
) -> None:
    fake_bin = tmp_path / "pybin"
    fake_bin.mkdir()
    # A wrapper, not a symlink: a symlinked virtualenv interpreter does not find its
    # pyvenv.cfg, so it would not see the environment dst is installed in.
    python3 = fake_bin / "python3"
    python3.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python3.chmod(0o755)
    head = pair.rev("HEAD")
    env = {"PATH": f"{fake_bin}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    script = str(hooks.hooks_dir(pair.clone) / "pre-push")
    # a deletion is always handed over: the script's fast path never answers it
    data = _line("(delete)", ZERO, "refs/heads/gone", head)
    done = _run(pair.clone, script, "origin", str(pair.origin), env=env, stdin=data)
    assert done.code == 0, done.stderr
    assert "refs/heads/gone: deletion: nothing to check" in done.stderr


def test_install_is_idempotent_and_never_moves_its_own_script(tmp_path: Path) -> None:
    hooks_dir = tmp_path / "hooks"
    first = hooks.install(hooks_dir)
    assert first.action == "installed" and first.legacy is None
    hook = hooks_dir / "pre-push"
    assert hook.read_text() == hooks.PRE_PUSH_SCRIPT and os.access(hook, os.X_OK)
    again = hooks.install(hooks_dir)
    assert again.action == "unchanged"
    assert not (hooks_dir / "pre-push.legacy").exists()
    # an older dst script is replaced in place, still not kept as legacy
    hook.write_text(f"#!/bin/sh\n{hooks.MARKER} (an old version)\nexec dst hook-impl pre-push\n")
    assert hooks.install(hooks_dir).action == "updated"
    assert hook.read_text() == hooks.PRE_PUSH_SCRIPT
    assert sorted(p.name for p in hooks_dir.iterdir()) == ["pre-push"]


def test_reinstalling_over_a_kept_legacy_hook_keeps_it(tmp_path: Path) -> None:
    hooks_dir = tmp_path / "hooks"
    _foreign_hook(hooks_dir / "pre-push", "exit 0  # theirs")
    hooks.install(hooks_dir)
    again = hooks.install(hooks_dir)
    assert again.action == "unchanged" and again.legacy == hooks_dir / "pre-push.legacy"
    assert "theirs" in (hooks_dir / "pre-push.legacy").read_text()


def test_install_refuses_to_overwrite_an_existing_legacy_hook(tmp_path: Path) -> None:
    from reconciler.errors import UsageError

    hooks_dir = tmp_path / "hooks"
    _foreign_hook(hooks_dir / "pre-push", "exit 0  # new")
    _foreign_hook(hooks_dir / "pre-push.legacy", "exit 0  # old")
    with pytest.raises(UsageError, match="already exists"):
        hooks.install(hooks_dir)
    assert "new" in (hooks_dir / "pre-push").read_text()


def test_uninstall_removes_ours_and_restores_the_legacy_hook(tmp_path: Path) -> None:
    hooks_dir = tmp_path / "hooks"
    _foreign_hook(hooks_dir / "pre-push", "exit 0  # theirs")
    hooks.install(hooks_dir)
    removed = hooks.uninstall(hooks_dir)
    assert removed.action == "removed" and removed.legacy == hooks_dir / "pre-push.legacy"
    assert "theirs" in (hooks_dir / "pre-push").read_text()
    assert not (hooks_dir / "pre-push.legacy").exists()
    assert hooks.uninstall(hooks_dir).action == "foreign"
    assert "theirs" in (hooks_dir / "pre-push").read_text()
    (hooks_dir / "pre-push").unlink()
    assert hooks.uninstall(hooks_dir).action == "not_installed"


def test_hooks_dir_follows_core_hooks_path_and_worktrees(repo: Path, tmp_path: Path) -> None:
    assert hooks.hooks_dir(repo) == (repo / ".git" / "hooks").resolve()
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree))
    assert hooks.hooks_dir(worktree) == (repo / ".git" / "hooks").resolve()
    git(repo, "config", "core.hooksPath", "ci/hooks")
    assert hooks.hooks_dir(repo) == (repo / "ci" / "hooks").resolve()
    # git reads a relative core.hooksPath from where the hook runs: each worktree's root
    assert hooks.hooks_dir(worktree) == (worktree / "ci" / "hooks").resolve()
    hooks.install(hooks.hooks_dir(repo))
    assert hooks.is_ours(repo / "ci" / "hooks" / "pre-push")


def test_the_project_hook_script_is_the_installed_one() -> None:
    script = PROJECT / "hooks" / "pre-push"
    assert script.read_text() == hooks.PRE_PUSH_SCRIPT
    assert os.access(script, os.X_OK)
    assert hooks.MARKER in script.read_text().splitlines()[1]
    assert re.search(r"exec dst hook-impl pre-push \"\$@\"", hooks.PRE_PUSH_SCRIPT)
    assert shutil.which("sh") is not None
    assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0


def test_hooks_sub_app_installs_and_uninstalls(repo: Path) -> None:
    from typer.testing import CliRunner

    from reconciler.cli.hooks import hooks_app

    runner = CliRunner()
    done = runner.invoke(hooks_app, ["install", "--repo", str(repo), "--format", "json"])
    assert done.exit_code == 0, done.output
    assert '"action": "installed"' in done.output
    assert hooks.is_ours(repo / ".git" / "hooks" / "pre-push")
    done = runner.invoke(hooks_app, ["uninstall", "--repo", str(repo)])
    assert done.exit_code == 0, done.output
    assert "removed the dst pre-push hook" in done.output
    assert not (repo / ".git" / "hooks" / "pre-push").exists()


def test_dst_hooks_install_through_the_command_line(repo: Path) -> None:
    first = invoke(repo, "hooks", "install", "--format", "json")
    assert first.code == 0, first.stderr
    assert first.json()["action"] == "installed"
    again = invoke(repo, "hooks", "install")
    assert again.code == 0 and "already current" in again.stdout
    gone = invoke(repo, "hooks", "uninstall", "--format", "json")
    assert gone.code == 0 and gone.json()["action"] == "removed"
    outside = invoke(repo, "hooks", "install", "--repo", str(repo.parent / "nowhere"))
    assert outside.code == 2


def test_hook_without_dst_installed_fails_closed_with_a_fix(tmp_path: Path) -> None:
    bare_path = "/usr/bin:/bin"
    probe = subprocess.run(
        ["sh", "-c", 'python3 -c "import reconciler.cli.hook"'],
        env={"PATH": bare_path},
        capture_output=True,
        check=False,
    )
    if probe.returncode == 0:
        pytest.skip("the python3 on a bare PATH has dst installed; nothing to prove here")
    hook = tmp_path / "pre-push"
    hook.write_text(hooks.PRE_PUSH_SCRIPT)
    hook.chmod(0o755)
    done = subprocess.run(
        [str(hook), "origin", "url"],
        input=b"",
        env={"PATH": bare_path},
        capture_output=True,
        check=False,
    )
    assert done.returncode == 1
    assert b"dst is not installed here" in done.stderr
    assert b"Traceback" not in done.stderr
