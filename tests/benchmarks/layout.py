"""The fast tier's layout in three figures: files per package, import depth, modules run.

    python -m tests.benchmarks.layout [--question "top 5 products by net revenue last quarter"]

* **files per package** — the ``.py`` files of ``reconciler/reading/`` (and each of
  its sub-packages) and of ``reconciler/generators/``;
* **longest import chain** — the longest chain of imports between modules of the fast
  tier (``reconciler.reading`` and ``reconciler.generators.fast``), read from the
  import graph :mod:`grimp` builds (the one import-linter checks), as a list of module
  names;
* **modules run** — the modules of ``reconciler.reading`` and
  ``reconciler.generators`` whose code runs while the fast tier reads one question on
  the example ``sales`` lens (a :func:`sys.setprofile` hook records each function's
  module; the question is asked once before, so caches hold and only the reading is
  counted).

Prints a JSON object; no figure is a target, each is compared before and after a change.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import grimp

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "top 5 products by net revenue last quarter"
FAST = ("reconciler.reading", "reconciler.generators.fast")


def files_per_package() -> dict[str, int]:
    """``{package path: .py files under it}`` for the fast tier's packages."""
    counts: dict[str, int] = {}
    for top in ("reconciler/reading", "reconciler/generators"):
        base = ROOT / top
        counts[top] = sum(1 for _ in base.rglob("*.py"))
        for sub in sorted(p for p in base.iterdir() if p.is_dir() and p.name != "__pycache__"):
            counts[f"{top}/{sub.name}"] = sum(1 for _ in sub.rglob("*.py"))
    return counts


def longest_chain() -> list[str]:
    """The longest import chain inside the fast tier, first importer first."""
    graph = grimp.build_graph("reconciler")
    inside = sorted(m for m in graph.modules if m.startswith(FAST))
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & set(inside)) for m in inside}

    @functools.cache
    def deepest(module: str) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for target in edges[module]:
            chain = deepest(target)
            if len(chain) > len(best):
                best = chain
        return (module, *best)

    sys.setrecursionlimit(10_000)
    return list(max((deepest(m) for m in inside), key=len, default=()))


def modules_run(question: str) -> list[str]:
    """The reading and generator modules whose code runs for ``question`` (sorted)."""
    from reconciler.assembly.request import assemble
    from reconciler.generators import generate
    from reconciler.lens import load_lens
    from tests.benchmarks.defog import read_lens_dir

    lens = load_lens("sales", read_lens_dir(ROOT / "lenses" / "sales"), root="lenses/sales")
    request = assemble(lens, question)
    generate(lens, request, {})  # warm: lexicon and parse caches
    seen: set[str] = set()

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith(("reconciler.reading", "reconciler.generators")):
                seen.add(name)

    sys.setprofile(hook)
    try:
        generate(lens, assemble(lens, question), {})
    finally:
        sys.setprofile(None)
    return sorted(seen)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.layout")
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args(argv)
    chain = longest_chain()
    run = modules_run(args.question)
    figures = {
        "files_per_package": files_per_package(),
        "longest_import_chain": {"modules": len(chain), "chain": chain},
        "modules_run": {"question": args.question, "count": len(run), "modules": run},
    }
    print(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
