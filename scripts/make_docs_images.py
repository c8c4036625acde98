"""Regenerate docs/log-plot.png and docs/report.png from the example lenses.

Builds a throwaway repository holding lenses/, then runs the real ``dst``:
promote; double the ``units_sold`` metric under ``eval_gate: warn`` (promoted
with wrong answers); ``dst test``; roll back; ``dst test`` again; plot that
history; then switch the gate back to ``block`` so the same change is blocked,
and screenshot ``dst report --html`` of that run in headless Chromium.

Usage: python3 scripts/make_docs_images.py [--out docs]
Needs: the package installed with the ``plot`` extra, and ``chromium`` on PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
IDENTITY = {
    "GIT_AUTHOR_NAME": "Docs",
    "GIT_AUTHOR_EMAIL": "docs@example.com",
    "GIT_COMMITTER_NAME": "Docs",
    "GIT_COMMITTER_EMAIL": "docs@example.com",
}


def run(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    env = {**os.environ, **IDENTITY}
    env.pop("DST_WAREHOUSE_URL", None)
    done = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True)
    if done.returncode not in ok:
        sys.exit(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def dst(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    return run(repo, sys.executable, "-m", "reconciler", *args, ok=ok)


def commit_all(repo: Path, message: str) -> None:
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-q", "-m", message)


def set_gate(repo: Path, gate: str) -> None:
    path = repo / "lenses/sales/lens.yaml"
    path.write_text(re.sub(r"eval_gate: \w+", f"eval_gate: {gate}", path.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PROJECT / "docs")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        run(repo, "git", "init", "-q", "-b", "main")
        shutil.copytree(PROJECT / "lenses", repo / "lenses")
        (repo / ".gitignore").write_text(".dst/\n")
        commit_all(repo, "example lenses")
        dst(repo, "seed")
        dst(repo, "apply", "--quiet")

        metric = repo / "lenses/sales/metrics/units_sold.yaml"
        metric.write_text(
            metric.read_text().replace("expression: SUM(quantity)", "expression: SUM(quantity) * 2")
        )
        set_gate(repo, "warn")
        commit_all(repo, "double units_sold (warn)")
        dst(repo, "apply", "--quiet")
        dst(repo, "test", "sales", "--quiet", ok=(0, 1))
        dst(repo, "rollback", "sales")
        dst(repo, "test", "sales", "--quiet")
        dst(repo, "log", "sales", "--plot", str(out / "log-plot.png"))

        set_gate(repo, "block")
        commit_all(repo, "same change under block")
        dst(repo, "apply", "--quiet", ok=(1,))
        html = Path(tmp) / "report.html"
        dst(repo, "report", "--html", str(html), "--lens", "sales")
        run(
            repo,
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={out / 'report.png'}",
            "--window-size=1100,1500",
            html.as_uri(),
        )
    for name in ("log-plot.png", "report.png"):
        print(f"{out / name}: {(out / name).stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
