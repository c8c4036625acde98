"""Shared by the crash and race tests: a two-lens shop repository and a warm dst launcher.

The lenses are the small shop lens of ``tests/shop.py`` with one metric and one
certified answer whose ``certified_at`` day is the *variant*. Each variant is a
new lens tree, so a commit of a new variant is a candidate that promotes, and
because only provenance differs no answer goes stale: an apply between variants
writes deployments and moves refs without running the suite, which keeps each
of the hundreds of commands these tests run cheap. ``dst test`` still runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reconciler.git.crash import CRASH_ENV
from reconciler.git.locks import LOCK_WAIT_ENV
from tests.helpers import GIT_ENV, commit, git
from tests.shop import CUSTOMERS, LENS, ORDERS

LAUNCHER = Path(__file__).with_name("warm_launcher.py")
STRESS_ENV = "DST_STRESS"
"""``DST_STRESS=full`` runs the stress tests (marked ``slow``) at their full size."""
LENSES = ("depot", "shop")  # depot reads the tables shop seeds (seeds_from: [shop])

METRIC = b"""\
name: order_count
label: Number of orders
synonyms: ["orders"]
model: orders
expression: COUNT(*)
"""
ANSWER = """\
id: orders_total
question: How many orders are there?
sql: SELECT COUNT(*) AS order_count FROM orders
status: active
provenance:
  certified_by: Test Author
  certified_at: "2025-01-{day:02d}"
  source: manual
"""
ORDERS_CSV = b"order_id,order_date,customer_id,amount\n1,2024-01-02,1,10.5\n2,2024-02-03,2,20\n"
CUSTOMERS_CSV = b"customer_id,segment\n1,retail\n2,wholesale\n"


def stress_size(variable: str, *, small: int, full: int) -> int:
    """A stress test's size: ``$variable`` if set, else ``full`` under ``DST_STRESS=full``.

    By default the crash harness and the racing promoters run ``small``: the same
    properties are asserted over fewer kills or rounds. CI (``.ci/run``) runs them at
    full size after the README's test command.
    """
    chosen = os.environ.get(variable)
    if chosen:
        return int(chosen)
    return full if os.environ.get(STRESS_ENV) == "full" else small


def lens_files(name: str, variant: int) -> dict[str, str | bytes | None]:
    """The files of lens ``name`` at ``variant`` (1–28; only ``shop`` carries seeds)."""
    base = f"lenses/{name}/"
    files: dict[str, str | bytes | None] = {
        base + "lens.yaml": LENS.replace(b"name: shop", f"name: {name}".encode())
        + (b"" if name == "shop" else b"seeds_from: [shop]\n"),
        base + "models/orders.yaml": ORDERS,
        base + "models/customers.yaml": CUSTOMERS,
        base + "metrics/order_count.yaml": METRIC,
        base + "answers/orders_total.yaml": ANSWER.format(day=variant),
    }
    if name == "shop":
        files[base + "seeds/orders.csv"] = ORDERS_CSV
        files[base + "seeds/customers.csv"] = CUSTOMERS_CSV
    return files


def commit_variant(repo: Path, variant: int, lenses: Sequence[str] = LENSES) -> str:
    """Commit ``variant`` of ``lenses``; returns the commit."""
    files: dict[str, str | bytes | None] = {}
    for name in lenses:
        files.update(lens_files(name, variant))
    return commit(repo, files, f"lenses at {variant}")


def new_repo(path: Path) -> Path:
    """An empty repository at ``path`` that ignores ``.dst/``."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    commit(path, {".gitignore": ".dst/\n"}, "init")
    return path


@dataclass(frozen=True)
class Finished:
    """A command the launcher ran: exit status (``-9`` = SIGKILL) and output."""

    status: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def killed(self) -> bool:
        """The process died of SIGKILL."""
        return self.status == -signal.SIGKILL


class Launcher:
    """Runs ``dst`` commands as forks of one warm process (see ``tests/warm_launcher.py``).

    One command at a time; use one launcher per concurrent stream of commands.
    """

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, str(LAUNCHER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def env(self, repo: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment ``tests.conftest.dst`` gives a command in ``repo``, plus ``extra``."""
        env = {**os.environ, **GIT_ENV, "HOME": str(repo)}
        for inherited in ("DST_WAREHOUSE_URL", CRASH_ENV, LOCK_WAIT_ENV):
            env.pop(inherited, None)
        env.update(extra or {})
        return env

    def run(
        self,
        repo: Path,
        *argv: str,
        env: Mapping[str, str] | None = None,
        kill_after: float | None = None,
    ) -> Finished:
        """Run ``dst ARGV`` in ``repo``; SIGKILL it after ``kill_after`` s if still running."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        out, err = self.scratch / "stdout", self.scratch / "stderr"
        request = {
            "argv": list(argv),
            "cwd": str(repo),
            "env": self.env(repo, env),
            "out": str(out),
            "err": str(err),
            "kill_after": kill_after,
        }
        started = time.monotonic()
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        pid = json.loads(self.proc.stdout.readline())["pid"]
        done = json.loads(self.proc.stdout.readline())
        assert done["pid"] == pid
        return Finished(
            int(done["status"]), out.read_text(), err.read_text(), time.monotonic() - started
        )

    def close(self) -> None:
        """Stop the launcher."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
