"""Nothing outside the repository is read: seeds and lens folders in the working tree.

A lens read from a commit already refuses a symlink (``tests/fixtures/bad_input.yaml``,
through the loader and the command line). These cases are the working tree's:
``dst seed`` reads ``seeds/*.csv`` and ``lenses/<L>/seeds/*.csv`` from disk, and
``dst validate`` reads lens folders from disk. Each symlink — to a file or folder
outside the repository, or to another file inside it — is refused with exit 2 naming
the path, before anything is loaded; a FIFO is refused without blocking.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reconciler.warehouse.connection import EMBEDDED_DIR, EMBEDDED_FILE
from tests.helpers import commit, git, invoke

LENS = {
    "lenses/shop/lens.yaml": "name: shop\n",
    "lenses/shop/models/orders.yaml": "name: orders\ntable: orders\n",
    "lenses/shop/seeds/orders.csv": "order_id,amount\n1,10\n2,20\n",
}
CREDS = "account,secret\nprod,hunter2-outside-value\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "creds.csv").write_text(CREDS)
    return folder


def _seed_refused(repo: Path, where: str, words: str) -> None:
    done = invoke(repo, "seed")
    assert done.code == 2, (done.stdout, done.stderr)
    assert f"{where}: " in done.stderr and words in done.stderr, done.stderr
    assert "fix:" in done.stderr
    assert "hunter2-outside-value" not in done.stdout + done.stderr
    assert not (repo / EMBEDDED_DIR / EMBEDDED_FILE).exists(), "a warehouse was built"


@pytest.mark.parametrize(
    ("link", "target", "words"),
    [
        ("seeds/creds.csv", "creds.csv", "is a symlink outside the repository"),
        ("lenses/shop/seeds/creds.csv", "creds.csv", "is a symlink outside the repository"),
        ("lenses/shop/seeds", None, "is a symlink outside the repository"),
        ("seeds", None, "is a symlink outside the repository"),
    ],
)
def test_a_symlinked_seed_or_seed_folder_is_refused_by_dst_seed(
    repo: Path, outside: Path, link: str, target: str | None, words: str
) -> None:
    commit(repo, LENS, "shop lens")
    path = repo / link
    if path.is_dir():
        for f in path.iterdir():
            f.unlink()
        path.rmdir()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside / target if target else outside)
    _seed_refused(repo, link, words)


def test_a_seed_linked_to_another_repository_file_is_refused_naming_it(repo: Path) -> None:
    commit(repo, LENS, "shop lens")
    (repo / "seeds").mkdir()
    (repo / "seeds/orders.csv").symlink_to("../lenses/shop/seeds/orders.csv")
    _seed_refused(repo, "seeds/orders.csv", "is a symlink to lenses/shop/seeds/orders.csv")


def test_a_seed_that_is_not_a_regular_file_is_refused_without_blocking(repo: Path) -> None:
    commit(repo, LENS, "shop lens")
    os.mkfifo(repo / "lenses/shop/seeds/pipe.csv")  # opening it to read would wait forever
    _seed_refused(repo, "lenses/shop/seeds/pipe.csv", "is not a regular file")


def test_a_symlinked_lens_folder_or_model_is_refused_in_the_working_tree(
    repo: Path, outside: Path, tmp_path: Path
) -> None:
    commit(repo, LENS, "shop lens")
    (outside / "orders.yaml").write_text("name: orders\ntable: orders\n")
    model = repo / "lenses/shop/models/orders.yaml"
    model.unlink()
    model.symlink_to(outside / "orders.yaml")
    done = invoke(repo, "validate")
    assert done.code == 2, (done.stdout, done.stderr)
    assert "lenses/shop/models/orders.yaml" in done.stdout + done.stderr
    assert "symlink outside the repository" in done.stdout + done.stderr

    # the whole lens folder, a symlink to a copy outside
    model.unlink()
    elsewhere = tmp_path / "lens-copy"
    (repo / "lenses/shop").rename(elsewhere)
    (elsewhere / "models/orders.yaml").write_text("name: orders\ntable: orders\n")
    (repo / "lenses/shop").symlink_to(elsewhere)
    for command in (("validate",), ("seed",)):
        done = invoke(repo, *command)
        assert done.code == 2, (command, done.stdout, done.stderr)
        shown = done.stdout + done.stderr
        assert "lenses/shop: is a symlink outside the repository" in shown, (command, shown)
    assert git(repo, "for-each-ref", "refs/dst/") == ""
