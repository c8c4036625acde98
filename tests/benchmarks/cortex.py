"""The Cortex Analyst part of the accuracy benchmark: every semantic model found, imported.

Layout read: ``<corpus>/<folder>/*.yaml`` — every YAML file whose top level has
``name`` and a ``tables`` list is a semantic model; its data is the one sub-folder of
``<folder>`` holding CSV files. Each model is imported with ``dst import cortex``
(its seeds included) into one fresh repository, and ``dst apply``'s self-test of its
verified queries gives one outcome per question. A model without data or one that
does not import is reported and skipped.

Before the commit, the lens author's additions that name the lens
(:mod:`tests.benchmarks.additions`, ``tests/fixtures/cortex_additions/`` unless
another folder is given) are written into it; each one is listed in the report's
``additions``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

from tests.benchmarks.additions import additions_for, apply_additions
from tests.benchmarks.scores import OUTCOMES, Report, Score

QUESTION_FILE = "verified_queries"
ADDITIONS = Path(__file__).resolve().parents[1] / "fixtures" / "cortex_additions"


def discover(corpus: Path, report: Report) -> list[tuple[str, Path, Path]]:
    """``(lens name, model YAML, data folder)`` for every semantic model under ``corpus``."""
    found = []
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        models = [p for p in sorted(folder.glob("*.yaml")) if _is_semantic_model(p)]
        if not models:
            report.skipped.append(f"cortex: {folder.name}/ holds no semantic model YAML")
            continue
        data = [d for d in sorted(folder.iterdir()) if d.is_dir() and any(d.glob("*.csv"))]
        if len(data) != 1:
            report.skipped.append(
                f"cortex: {folder.name}/ has {len(data)} data folders with CSV files "
                "(one expected); its models skipped"
            )
            continue
        for model in models:
            found.append((_lens_name(model.stem), model, data[0]))
    return found


def _is_semantic_model(path: Path) -> bool:
    try:
        doc = yaml.safe_load(path.read_text("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        return False
    return isinstance(doc, dict) and "name" in doc and isinstance(doc.get("tables"), list)


def _lens_name(stem: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", stem.lower()).strip("_")[:63] or "model"


def run_cortex(corpus: Path, work: Path, additions: Path | None = ADDITIONS) -> Report:
    """Import each model into a fresh repository, write the lens author's ``additions``
    (a folder; ``None``: none) into it, and score its verified queries."""
    report = Report()
    models = discover(corpus, report)
    if not models:
        return report
    repo = work / "cortex"
    repo.mkdir()
    _run(repo, "git", "init", "-q", "-b", "main")
    imported = []
    for lens, model, data in models:
        done = _run(repo, sys.executable, "-m", "reconciler", "import", "cortex", str(model),
                    "--lens", lens, "--data", str(data), check=False)  # fmt: skip
        if done.returncode != 0:
            report.skipped.append(
                f"cortex: {model.parent.name}/{model.name} did not import: "
                f"{done.stderr.strip().splitlines()[-1:]}"
            )
            continue
        imported.append(lens)
        for extra in additions_for(additions, lens) if additions else ():
            for line in apply_additions(repo / "lenses" / lens, extra):
                report.additions.append(f"{lens}: {line}")
    if not imported:
        return report
    (repo / ".gitignore").write_text(".dst/\n")
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "-c", "user.name=bench", "-c", "user.email=bench@example.com",
         "commit", "-q", "-m", "import")  # fmt: skip
    seeded = _run(repo, sys.executable, "-m", "reconciler", "seed", check=False)
    if seeded.returncode != 0:
        report.skipped.append(f"cortex: dst seed failed: {seeded.stderr.strip()[-300:]}")
        return report
    applied = _run(repo, sys.executable, "-m", "reconciler", "apply", "--format", "json",
                   check=False)  # fmt: skip
    for obj in json.loads(applied.stdout)["lenses"]:
        score = Score("cortex", obj["lens"], lens="imported")
        score.files[QUESTION_FILE] = Counter()
        for r in obj["self_test"]:
            outcome = r["outcome"] if r["outcome"] in OUTCOMES else "error"
            detail = str(r.get("detail") or "")
            if outcome != "declined":
                detail = f"{r.get('answer')}: {detail}"
            reason = detail.split("generator declined: ")[-1]
            score.count(QUESTION_FILE, outcome, reason, str(r.get("question") or r.get("answer")))
        report.scores.append(score)
    return report


def _run(cwd: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:5])} failed: {done.stderr[-2000:]}")
    return done
