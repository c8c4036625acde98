"""Shared assets: identity, canonical form, hashes and dependency sets (pure).

An asset's identity is its declared name (``metrics/net_revenue``), never its
file path, so a pure move makes nothing stale. Its hash is taken over the
*canonical* form: the validated model dumped as sorted JSON with every SQL
string replaced by sqlglot's normalized output (comments dropped, literals kept
byte-exact). Re-indenting, reordering keys, adding comments or renaming the file
therefore leave the hash unchanged (DESIGN §2 "Hashing, identity, staleness").

Every hash carries the scheme version (``h1:…``); changing the canonical form
means bumping :data:`HASH_SCHEME` and migrating stored bindings explicitly.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler import __version__
from reconciler.errors import UnsafeSqlError
from reconciler.files import replace_file
from reconciler.ids import AnswerId, AssetId

if TYPE_CHECKING:
    from reconciler.lens import Answer, Lens, Metric, Model

HASH_SCHEME = 1


@dataclass(frozen=True)
class Asset:
    """One shared asset of a lens version.

    Attributes:
        id: ``<kind>/<declared name>``; skills use their lens-relative path.
        kind: ``lens``, ``models``, ``metrics``, ``skills`` or ``exemplars``.
        path: lens-relative file path it was read from.
        hash: ``h<scheme>:`` + 32 hex digits of SHA-256 over the canonical form.
    """

    id: AssetId
    kind: str
    path: str
    hash: str


# Pure in its arguments, and a plan normalizes the same strings once per answer
# and lens version: memoized.
@functools.lru_cache(maxsize=4096)
def normalize_sql(sql: str, dialect: str) -> str:
    """sqlglot's normalized rendering: one line, comments dropped, literals byte-exact.

    Falls back to whitespace-collapsed text for SQL sqlglot cannot parse (that
    SQL is rejected at load anyway; this keeps hashing total).
    """
    # lazy: reading serving state (`dst status`) needs HASH_SCHEME here, not the SQL parser
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError:
        return " ".join(sql.split())
    return tree.sql(dialect=dialect, comments=False)


def digest(canonical: object) -> str:
    """Hash a JSON-ready value: ``h1:`` + 32 hex digits of SHA-256 over sorted JSON."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"h{HASH_SCHEME}:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _model_canonical(model: Model, dialect: str) -> dict[str, object]:
    data = model.model_dump(mode="json")
    for group in ("dimensions", "time_dimensions", "facts"):
        for col in data[group]:
            col["expr"] = normalize_sql(col["expr"] or col["name"], dialect)
    return data


def _metric_canonical(metric: Metric, dialect: str) -> dict[str, object]:
    data = metric.model_dump(mode="json")
    data["expression"] = normalize_sql(metric.expression, dialect)
    data["filters"] = [normalize_sql(f, dialect) for f in metric.filters]
    return data


def lens_assets(lens: Lens) -> dict[AssetId, Asset]:
    """Every shared asset of ``lens`` with its canonical hash, by asset id."""
    dialect = lens.config.dialect
    out: dict[AssetId, Asset] = {}

    def add(asset_id: str, kind: str, canonical: object) -> None:
        aid = AssetId(asset_id)
        out[aid] = Asset(aid, kind, lens.sources.get(asset_id, ""), digest(canonical))

    add(f"lens/{lens.name}", "lens", lens.config.generation_part())
    for model in lens.models.values():
        add(f"models/{model.name}", "models", _model_canonical(model, dialect))
    for metric in lens.metrics.values():
        add(f"metrics/{metric.name}", "metrics", _metric_canonical(metric, dialect))
    for path, skill in lens.skills.items():
        text = "\n".join(line.rstrip() for line in skill.text.strip().splitlines())
        add(path, "skills", text)
    for ex in lens.exemplars.values():
        data = ex.model_dump(mode="json")
        data["sql"] = normalize_sql(ex.sql, dialect)
        add(f"exemplars/{ex.name}", "exemplars", data)
    return out


# {id(lens): (lens, hashes)}; holding the lens keeps its id from being reused.
_HASHES: dict[int, tuple[Lens, Mapping[AssetId, str]]] = {}
_HASHES_KEPT = 16
_HASHES_LOCK = threading.Lock()


def asset_hashes(lens: Lens) -> Mapping[AssetId, str]:
    """``{asset id: canonical hash}`` of every shared asset of ``lens``.

    Computed once per lens version (object) and kept for the last
    :data:`_HASHES_KEPT` versions, so a suite that records every generation
    request with its asset hashes (:meth:`GenerationRequest.record`) hashes each
    asset once, not once per answer. Safe to call from the suite's worker threads.
    """
    key = id(lens)
    with _HASHES_LOCK:
        hit = _HASHES.get(key)
    if hit is not None and hit[0] is lens:
        return hit[1]
    hashes = {aid: asset.hash for aid, asset in lens_assets(lens).items()}
    with _HASHES_LOCK:
        if len(_HASHES) >= _HASHES_KEPT:
            _HASHES.pop(next(iter(_HASHES)))
        _HASHES[key] = (lens, hashes)
    return hashes


def oracle_hash(answer: Answer, dialect: str) -> str:
    """Hash of an answer's normalized oracle SQL and question (not its provenance/status).

    A change here means the answer was re-authored, which puts it in the self-test.
    """
    return digest(
        {"question": " ".join(answer.question.split()), "sql": normalize_sql(answer.sql, dialect)}
    )


def oracle_models(lens: Lens, answer: Answer) -> list[AssetId]:
    """Model assets of the physical tables the oracle SQL reads (sqlglot), sorted."""
    # lazy: the read-only guard loads the SQL parser; reading serving state does not need it
    from reconciler import guard

    try:
        tables = guard.tables_read(answer.sql, lens.config.dialect)
    except UnsafeSqlError:
        return []
    return sorted({AssetId(f"models/{m.name}") for t in tables for m in lens.models_for_table(t)})


def dependency_edges(lens: Lens) -> dict[AssetId, tuple[AssetId, ...]]:
    """Direct edges of the staleness graph: metric → its model, model → models it joins."""
    edges: dict[AssetId, tuple[AssetId, ...]] = {}
    for metric in lens.metrics.values():
        edges[AssetId(f"metrics/{metric.name}")] = (AssetId(f"models/{metric.model}"),)
    for model in lens.models.values():
        edges[AssetId(f"models/{model.name}")] = tuple(
            AssetId(f"models/{j.to}") for j in model.joins
        )
    return edges


def closure(
    roots: Iterable[AssetId], edges: Mapping[AssetId, tuple[AssetId, ...]]
) -> dict[AssetId, tuple[AssetId, ...]]:
    """Transitive closure from ``roots``: ``{asset: chain from a root to it}``.

    The chain is the shortest path (breadth-first), so ``dst plan --explain``
    can print ``metrics/net_revenue → models/orders → models/customers``.
    """
    chains: dict[AssetId, tuple[AssetId, ...]] = {}
    frontier: list[tuple[AssetId, tuple[AssetId, ...]]] = [(r, (r,)) for r in sorted(set(roots))]
    while frontier:
        nxt: list[tuple[AssetId, tuple[AssetId, ...]]] = []
        for node, chain in frontier:
            if node in chains:
                continue
            chains[node] = chain
            nxt.extend((child, (*chain, child)) for child in edges.get(node, ()))
        frontier = nxt
    return chains


def dependency_set(lens: Lens, answer: Answer) -> dict[AssetId, tuple[AssetId, ...]]:
    """An answer's dependency set on ``lens``, each asset with the chain that pulls it in.

    Global assets (the lens's generation part, every skill) ∪ the assets the
    assembly used for its question (with the answer excluded from its own
    exemplars) ∪ model assets of the tables its oracle reads — closed over
    metric → model → joined models (DESIGN §1, §2).
    """
    # lazy: the assembly loads the lens models and the SQL parser; serving state does not
    from reconciler.assembly.request import assemble

    request = assemble(lens, answer.question, exclude_answer=AnswerId(answer.id))
    roots: list[AssetId] = [AssetId(f"lens/{lens.name}"), *map(AssetId, lens.skills)]
    roots += sorted(request.used_assets())
    if lens.config.generator.retrieval == "embedding":
        # What an embedder folds or ranks is not knowable without the model, and a
        # plan never loads one: depend on every exemplar, and on every metric and
        # model when lexical retrieval named none (what the embedder ranks from).
        roots += [AssetId(f"exemplars/{name}") for name in sorted(lens.exemplars)]
        if not request.metrics and not request.models:
            roots += [AssetId(f"metrics/{name}") for name in sorted(lens.metrics)]
            roots += [AssetId(f"models/{name}") for name in sorted(lens.models)]
    roots += oracle_models(lens, answer)
    return closure(roots, dependency_edges(lens))


# -- the plan memo ------------------------------------------------------------------------

MEMO_SCHEMA = 1
MEMO_KEPT = 1024  # lens versions kept under .dst/plan/; the least recently used go first
DepSet = dict[AssetId, tuple[AssetId, ...]]


def answer_key(answer: Answer, dialect: str) -> str:
    """The content key of one answer's memo entries (hex SHA-256).

    It covers everything an answer's oracle hash and dependency set read from
    the answer itself: its id, question, SQL and the lens dialect. The rest of
    the lens is covered by the lens tree id the entry file is named by.
    """
    ident = [answer.id, answer.question, answer.sql, dialect]
    return hashlib.sha256(json.dumps(ident).encode("utf-8")).hexdigest()


@dataclass
class _Version:
    """The memo of one lens version: asset hashes, oracle hashes, dependency sets."""

    assets: dict[AssetId, Asset]
    oracles: dict[str, str]
    deps: dict[str, DepSet]
    path: Path | None
    dirty: bool = False


class PlanMemo:
    """Canonical hashes and dependency sets of lens versions, kept under ``.dst/plan/``.

    A lens tree id names the tree's content exactly, so what a plan derives from
    a version (its asset hashes, each answer's oracle hash and dependency set)
    is stored once per tree id and read back by every later plan of that tree:
    a re-plan of the same trees normalizes no SQL and assembles nothing for a
    dependency set (loading the lens still runs the read-only check over its
    SQL). One JSON file per version, named
    by the SHA-256 of ``(memo schema, tool version, hash scheme, lens name, tree
    id, dialect)``; inside, answers are keyed by :func:`answer_key`, so an entry is only
    ever used for the exact answer text it was computed from. Files are written
    atomically; an unreadable, corrupt or foreign file counts as a miss and is
    rewritten. Without a directory (or a tree id: the working tree) it memoizes
    in memory only.

    Attributes:
        directory: ``<repository>/.dst/plan``, or ``None``.
        hits, misses: versions read from disk, and versions computed.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.hits = 0
        self.misses = 0
        self._versions: dict[tuple[str, str | None, int], _Version] = {}

    def _file(self, lens: Lens, tree: str | None) -> Path | None:
        if self.directory is None or tree is None:
            return None
        ident = [MEMO_SCHEMA, __version__, HASH_SCHEME, lens.name, tree, lens.config.dialect]
        name = hashlib.sha256(json.dumps(ident).encode("utf-8")).hexdigest()
        return self.directory / f"{name}.json"

    def _version(self, lens: Lens, tree: str | None) -> _Version:
        key = (lens.name, tree, id(lens) if tree is None else 0)
        found = self._versions.get(key)
        if found is None:
            path = self._file(lens, tree)
            found = _read_version(path) if path is not None else None
            if found is None:
                self.misses += 1
                found = _Version(lens_assets(lens), {}, {}, path, dirty=True)
            elif path is not None:
                self.hits += 1
                with contextlib.suppress(OSError):
                    os.utime(path)  # recently used: kept longest (see _prune)
            self._versions[key] = found
        return found

    def assets(self, lens: Lens, tree: str | None) -> dict[AssetId, Asset]:
        """:func:`lens_assets` of ``lens``, the version at lens tree ``tree``."""
        return self._version(lens, tree).assets

    def oracle_hash(self, lens: Lens, tree: str | None, answer: Answer) -> str:
        """:func:`oracle_hash` of ``answer`` in ``lens`` (the version at ``tree``)."""
        version = self._version(lens, tree)
        key = answer_key(answer, lens.config.dialect)
        if key not in version.oracles:
            version.oracles[key] = oracle_hash(answer, lens.config.dialect)
            version.dirty = True
        return version.oracles[key]

    def dependency_set(self, lens: Lens, tree: str | None, answer: Answer) -> DepSet:
        """:func:`dependency_set` of ``answer`` in ``lens`` (the version at ``tree``)."""
        version = self._version(lens, tree)
        key = answer_key(answer, lens.config.dialect)
        if key not in version.deps:
            version.deps[key] = dependency_set(lens, answer)
            version.dirty = True
        return dict(version.deps[key])

    def flush(self) -> None:
        """Write every version computed or extended since it was read (best effort)."""
        for version in self._versions.values():
            if version.path is None or not version.dirty:
                continue
            entry = {
                "schema_version": MEMO_SCHEMA,
                "tool_version": __version__,
                "hash_scheme": HASH_SCHEME,
                "assets": {a.id: [a.kind, a.path, a.hash] for a in version.assets.values()},
                "oracles": version.oracles,
                "deps": {k: {a: list(c) for a, c in d.items()} for k, d in version.deps.items()},
            }
            try:
                replace_file(version.path, json.dumps(entry, separators=(",", ":")).encode())
            except OSError:
                continue  # a read-only checkout plans as fast as before, just not faster
            version.dirty = False
            self._prune()

    def _prune(self) -> None:
        """Keep the :data:`MEMO_KEPT` most recently used versions (best effort)."""
        if self.directory is None:
            return
        try:
            entries = list(os.scandir(self.directory))
            if len(entries) <= MEMO_KEPT:
                return
            entries.sort(key=lambda e: e.stat().st_mtime_ns)
            for old in entries[: len(entries) - MEMO_KEPT]:
                os.unlink(old.path)
        except OSError:
            return


def _read_version(path: Path) -> _Version | None:
    """The version stored at ``path``; ``None`` when absent, corrupt or of another scheme."""
    try:
        entry = json.loads(path.read_bytes())
        if (entry["schema_version"], entry["tool_version"], entry["hash_scheme"]) != (
            MEMO_SCHEMA,
            __version__,
            HASH_SCHEME,
        ):
            return None
        assets = {
            AssetId(aid): Asset(AssetId(aid), str(kind), str(where), str(h))
            for aid, (kind, where, h) in entry["assets"].items()
        }
        oracles = {str(k): str(v) for k, v in entry["oracles"].items()}
        deps = {
            str(k): {AssetId(a): tuple(AssetId(c) for c in chain) for a, chain in d.items()}
            for k, d in entry["deps"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return _Version(assets, oracles, deps, path)
