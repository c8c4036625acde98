"""A synthetic lens repository for the benchmarks: N lenses x M assets x K answers.

Every lens is a realistic, loadable lens: models with dimensions, facts and a
join to a shared dimension model, metrics over them, skills, exemplars and
certified answers whose SQL reads the models' tables. The repository is
written with one ``git fast-import`` stream (blobs are deduplicated by git, a
500 x 200 x 50 repository is ~125k files), and has a short history:

    init ── A (every lens) ── edits to a few lenses ── S ── B

``refs/dst/serving/<lens>`` holds a deployment of commit ``S`` for every lens
(empty bindings: every answer is "never verified" until it runs), and ``B``
(``main``) modifies one metric of one lens, so ``dst plan`` at ``B`` has exactly
one changed lens. Repositories are cached by size under ``cache_dir()``; a
half-written one (no ``.complete`` marker) is rebuilt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Bump when the generated content changes, so stale caches are not reused.
SYNTH_VERSION = 1
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench Author",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench Author",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
REGIONS = ("North", "East", "South", "West", "Central")
STATUSES = ("completed", "returned", "cancelled")


@dataclass(frozen=True)
class Size:
    """How big a synthetic repository is.

    Attributes:
        lenses: lens directories under ``lenses/``.
        assets: shared assets per lens (models + metrics + skills + exemplars).
        answers: certified answers per lens.
    """

    lenses: int
    assets: int
    answers: int

    @property
    def key(self) -> str:
        """The cache directory name."""
        return f"v{SYNTH_VERSION}-{self.lenses}x{self.assets}x{self.answers}"

    def split(self) -> tuple[int, int, int, int]:
        """``(models, metrics, skills, exemplars)`` adding up to ``assets`` (at least 4)."""
        total = max(4, self.assets)
        skills = max(1, total // 20)
        exemplars = max(1, total // 10)
        models = max(1, (total - skills - exemplars) * 2 // 5)
        metrics = total - skills - exemplars - models
        return models, metrics, skills, exemplars


@dataclass(frozen=True)
class SynthRepo:
    """A generated repository.

    Attributes:
        path: the working tree (checked out at ``main`` = ``changed``).
        size: its size.
        base: commit ``S``, the one every lens serves.
        changed: commit ``B`` (``main``), which modifies one metric of ``changed_lens``.
        changed_lens: the lens ``B`` touches.
    """

    path: Path
    size: Size
    base: str
    changed: str
    changed_lens: str


def cache_dir() -> Path:
    """``$DST_BENCH_CACHE``, else ``$XDG_CACHE_HOME/dst-bench`` (``~/.cache/dst-bench``)."""
    explicit = os.environ.get("DST_BENCH_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "dst-bench"


def lens_name(i: int) -> str:
    """The name of lens number ``i``."""
    return f"lens_{i:04d}"


def _model(i: int, k: int) -> str:
    hub = k == 0
    lines = [
        f"name: m{k:03d}",
        f"description: Fact table {k} of lens {i}; one row per event, with amounts in USD.",
        f"table: l{i}_t{k:03d}",
        "primary_key: [id]",
    ]
    if not hub:
        lines.append("default_time_dimension: event_date")
    lines += [
        "dimensions:",
        "  - name: region",
        "    description: Sales region of the event.",
        '    synonyms: ["area", "territory"]',
        f"    sample_values: [{', '.join(REGIONS[:3])}]",
        "  - name: status",
        f"    description: Status of event {k}.",
        "    sample_values: [completed, returned, cancelled]",
    ]
    if not hub:
        lines += [
            "time_dimensions:",
            "  - name: event_date",
            "    data_type: date",
            "    description: Day the event happened.",
            "facts:",
            "  - name: amount",
            "    data_type: decimal",
            "    description: Amount of the event in USD.",
            "  - name: quantity",
            "    data_type: integer",
            "    description: Units on the event.",
            "joins:",
            "  - to: m000",
            "    relationship: many_to_one",
            "    on: {hub_id: id}",
        ]
    return "\n".join(lines) + "\n"


def _metric(i: int, k: int, models: int, version: int = 0) -> str:
    model = 1 + k % max(1, models - 1) if models > 1 else 0
    fact = "amount" if k % 2 == 0 else "quantity"
    scale = f" * {version + 1}" if version else ""
    return (
        f"name: x{k:03d}\n"
        f"label: Measure {k}\n"
        f"description: >-\n  Sum of {fact} over completed events of model m{model:03d}"
        f" (lens {i}).\n"
        f'synonyms: ["measure {k} total", "m{k} sum"]\n'
        f"model: m{model:03d}\n"
        f"expression: SUM({fact}){scale}\n"
        "filters:\n  - status = 'completed'\n"
    )


def _skill(i: int, k: int) -> str:
    return (
        f"# Conventions {k} of lens {i}\n\n"
        "- Bucket time with `CAST(DATE_TRUNC('month', event_date) AS DATE)` and name the\n"
        "  column after the grain; sort time series by the bucket.\n"
        "- Filter periods with half-open ranges on `event_date`.\n"
        f"- Regions are {', '.join(REGIONS)}.\n"
    )


def _exemplar(i: int, k: int, models: int) -> str:
    table = f"l{i}_t{1 + k % max(1, models - 1):03d}" if models > 1 else f"l{i}_t000"
    return (
        f"name: e{k:03d}\n"
        f"description: Example {k}, a regional total.\n"
        f"question: What is the total amount by region for example {k}?\n"
        "sql: |\n"
        f"  SELECT region, SUM(amount) AS total\n  FROM {table}\n"
        "  WHERE status = 'completed'\n  GROUP BY region\n  ORDER BY region\n"
    )


def _answer(i: int, k: int, models: int) -> str:
    model = 1 + k % max(1, models - 1) if models > 1 else 0
    table = f"l{i}_t{model:03d}"
    region = REGIONS[k % len(REGIONS)]
    return (
        f"id: a{k:03d}\n"
        f"question: Total amount of model {model} in the {region} region in 2024\n"
        "sql: |\n"
        f"  SELECT SUM(amount) AS total\n  FROM {table}\n"
        f"  WHERE status = 'completed' AND region = '{region}'\n"
        "    AND event_date >= DATE '2024-01-01' AND event_date < DATE '2025-01-01'\n"
        "status: active\n"
        "provenance:\n"
        "  certified_by: Bench Reviewer\n"
        '  certified_at: "2025-01-15"\n'
        "  source: manual\n"
    )


def lens_files(i: int, size: Size) -> dict[str, bytes]:
    """Every file of lens ``i``, ``{path under the lens directory: bytes}``."""
    models, metrics, skills, exemplars = size.split()
    files = {
        "lens.yaml": (
            f"name: {lens_name(i)}\n"
            f"description: Synthetic lens {i} for the benchmarks.\n"
            "eval_gate: block\n"
            'as_of: "2024-12-31"\n'
            "generator:\n  tiers: [fast]\n"
        ).encode()
    }
    for k in range(models):
        files[f"models/m{k:03d}.yaml"] = _model(i, k).encode()
    for k in range(metrics):
        files[f"metrics/x{k:03d}.yaml"] = _metric(i, k, models).encode()
    for k in range(skills):
        files[f"skills/s{k:03d}.md"] = _skill(i, k).encode()
    for k in range(exemplars):
        files[f"exemplars/e{k:03d}.yaml"] = _exemplar(i, k, models).encode()
    for k in range(size.answers):
        files[f"answers/a{k:03d}.yaml"] = _answer(i, k, models).encode()
    return files


class _Stream:
    """Writes a ``git fast-import`` stream (git-fast-import(1), "Input Format")."""

    def __init__(self, out: object) -> None:
        self._out = out
        self._mark = 0
        self._time = 1_700_000_000

    def _w(self, data: bytes) -> None:
        self._out.write(data)  # type: ignore[attr-defined]

    def commit(
        self, message: str, files: dict[str, bytes], parent: int | None, *, delete_all: bool = False
    ) -> int:
        """One commit on ``refs/heads/main`` with inline file contents; returns its mark."""
        self._mark += 1
        self._time += 3600
        msg = message.encode()
        who = f"{GIT_ENV['GIT_AUTHOR_NAME']} <{GIT_ENV['GIT_AUTHOR_EMAIL']}> {self._time} +0000"
        self._w(b"commit refs/heads/main\n")
        self._w(f"mark :{self._mark}\n".encode())
        self._w(f"author {who}\ncommitter {who}\n".encode())
        self._w(f"data {len(msg)}\n".encode() + msg + b"\n")
        if parent is not None:
            self._w(f"from :{parent}\n".encode())
        if delete_all:
            self._w(b"deleteall\n")
        for path, data in files.items():
            self._w(f"M 100644 inline {path}\n".encode())
            self._w(f"data {len(data)}\n".encode() + data + b"\n")
        self._w(b"\n")
        return self._mark


def _git(path: Path, *args: str, stdin: bytes | None = None) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(path)}
    done = subprocess.run(
        ["git", *args], cwd=path, env=env, input=stdin, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def _serve_everything(path: Path, commit: str) -> None:
    """Point ``refs/dst/serving/<lens>`` at a deployment of ``commit`` for every lens."""
    import pygit2

    from reconciler.bindings import Bindings
    from reconciler.git import refs as refstore, trees as gitstate

    repo = pygit2.Repository(str(path))
    updates = []
    for name, tree in sorted(gitstate.lens_trees(repo, gitstate.Oid(commit)).items()):
        meta = {
            "action": "promote",
            "lens": name,
            "source": commit,
            "previous": None,
            "score": {"correct": 0, "total": 0},
            "previous_score": None,
            "gate": "block",
            "reason": "synthetic serving state",
        }
        oid = refstore.write_deployment(
            repo,
            lens_tree=tree.tree,
            bindings=Bindings(),
            run={"schema_version": 1, "results": []},
            meta=meta,
            parents=[refstore.history_root(repo, name), commit],
            message=f"promote {name} {commit[:12]} score 0/0",
        )
        updates.append(f"create {refstore.serving_ref(name)} {oid}\n")
    _git(path, "update-ref", "--stdin", stdin="".join(updates).encode())


def build(path: Path, size: Size) -> SynthRepo:
    """Write a synthetic repository of ``size`` at ``path`` (which must not exist).

    Returns:
        The repository, checked out at ``main``.
    """
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    changed_lens = size.lenses // 2
    models, _, _, _ = size.split()
    with tempfile.TemporaryFile() as stream_file:
        stream = _Stream(stream_file)
        mark = stream.commit("init", {".gitignore": b".dst/\n"}, None)
        everything: dict[str, bytes] = {}
        for i in range(size.lenses):
            for rel, data in lens_files(i, size).items():
                everything[f"lenses/{lens_name(i)}/{rel}"] = data
        mark = stream.commit(f"{size.lenses} lenses", everything, mark)
        del everything
        for step in range(3):  # a little history: skill edits in a few lenses
            i = (step * 7) % size.lenses
            text = _skill(i, 0) + f"- History note {step}.\n"
            mark = stream.commit(
                f"lens {i}: skill note {step}",
                {f"lenses/{lens_name(i)}/skills/s000.md": text.encode()},
                mark,
            )
        base_mark = mark
        metric = _metric(changed_lens, 0, models, version=1)
        stream.commit(
            f"lens {changed_lens}: change measure 0",
            {f"lenses/{lens_name(changed_lens)}/metrics/x000.yaml": metric.encode()},
            mark,
        )
        stream_file.write(b"done\n")
        stream_file.seek(0)
        env = {**os.environ, **GIT_ENV}
        subprocess.run(
            ["git", "fast-import", "--quiet", "--done"],
            cwd=path,
            env=env,
            stdin=stream_file,
            check=True,
        )
    base = _git(path, "rev-parse", "main~1")
    changed = _git(path, "rev-parse", "main")
    assert base_mark  # the serving commit is main~1 by construction
    _git(path, "checkout", "-q", "-f", "main")
    _serve_everything(path, base)
    return SynthRepo(path, size, base, changed, lens_name(changed_lens))


def ensure(size: Size, root: Path | None = None) -> SynthRepo:
    """The cached repository of ``size`` under ``root`` (default :func:`cache_dir`), built once.

    A directory without its ``.complete`` marker (an interrupted build) is rebuilt.
    """
    base = (root or cache_dir()) / size.key
    marker = base / ".complete"
    repo_path = base / "repo"
    if marker.is_file():
        lines = marker.read_text().split()
        return SynthRepo(repo_path, size, lines[0], lines[1], lines[2])
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    built = build(repo_path, size)
    marker.write_text(f"{built.base} {built.changed} {built.changed_lens}\n")
    return built
