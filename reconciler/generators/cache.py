"""The generation cache: one content-addressed file per external-tier call under ``.dst/cache/``.

A ``smart`` or ``command`` generation is stored under the SHA-256 of its *key*: the
tier, the exact payload sent (the chat messages, or the request JSON on stdin), the
model or program (with the hash of each program file it names), the call's
parameters (temperature, seed, timeout), the sample index (``samples: k`` asks each
answer ``k`` times, each sample in its own slot; the first keeps the key it had
before sampling existed) and the occurrence of that same key within the run (the
suite's second attempt is a call of its own). Re-running the same plan
therefore replays every call, in order, without making one, and gives the same
verdict; ``--no-cache`` makes every call again and refreshes the entries.

Only answers are stored — SQL or a decline — never a failure (a timeout, a crash, an
unreachable endpoint), which must be retried. An entry is written to a temporary
file beside it and renamed into place, so readers never see half an entry and
concurrent writers of one key (two CI jobs sharing the directory) write the same
bytes. Entries hold no credential: the key material is the payload, which never
carries one, and the API key is not part of it.

Layout: ``.dst/cache/<first two hex digits>/<sha256>.json``, each
``{"schema_version": 2, "key": <sha256>, "tier": ..., "generation": {"sql", "declined",
"usage"}, "digest": ...}`` (:class:`CacheEntry`).

**An entry is checked input, never trusted.** A CI cache restored from another run,
or a folder anyone can write, may hold anything, so every entry read is validated
against :class:`CacheEntry` (exactly one of ``sql`` and ``declined``, each a
non-empty string; no unknown key), its stored ``key`` must be the name it is
stored under, and its ``digest`` (SHA-256 over key, tier and generation) must match
its content. An entry that fails any of these is a *miss with a warning* naming
the file (the call is made again and the entry rewritten), never an error of the
command. The digest catches an entry edited by hand or damaged; it is not a
signature — whoever can write the folder can write a consistent entry. So the run
record names every answer scored from the cache (``from_cache`` in
``state/run.json``), and ``cache: verify`` in ``lens.yaml`` (or ``dst apply --cache
verify``) re-generates every cached answer on ``dst apply`` and compares: a
different answer is a warning, and the fresh generation is scored and stored.

A run may be given a :class:`Budget` (``DST_MAX_CALLS``, ``DST_MAX_COST_USD``, which
bound the whole run; without them a lens's ``max_calls`` / ``max_cost_usd`` in
``lens.yaml`` bound that lens's calls): once it is spent, every further call that the
cache cannot answer is an error generation ("generation budget spent"), so a CI gate
fails closed instead of running up a bill. Cache hits cost nothing and are always
served. The gate estimates a run's calls before making any
(:mod:`reconciler.generators.budget`) and stands down when they would not fit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from reconciler.errors import UsageError
from reconciler.generators.generation import Generation

if TYPE_CHECKING:
    from reconciler.lens import Lens

CACHE_SCHEMA_VERSION = 2
CacheUse = Literal["use", "lens", "verify"]
"""How a run treats a hit: ``use`` serves it, ``verify`` re-generates and compares,
``lens`` does what each lens's ``cache:`` says (``dst apply``)."""
ENV_MAX_CALLS = "DST_MAX_CALLS"
ENV_MAX_COST = "DST_MAX_COST_USD"
SAMPLE: ContextVar[int] = ContextVar("dst_generation_sample", default=1)
"""The sample of the answer being generated (1-based), set by the suite per sample."""


@dataclass
class Budget:
    """What one run may spend on external-tier calls (cache hits are free).

    Attributes:
        max_calls: calls allowed, or ``None`` for no limit.
        max_cost_usd: USD allowed (as the tiers report ``cost_usd``), or ``None``.
        calls: calls made so far.
        cost_usd: USD reported so far.
        names: how messages name the two limits (the variables, or lens.yaml's keys).
    """

    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0
    cost_usd: float = 0.0
    names: tuple[str, str] = (ENV_MAX_CALLS, ENV_MAX_COST)

    @property
    def limited(self) -> bool:
        """Either limit is set."""
        return self.max_calls is not None or self.max_cost_usd is not None

    @classmethod
    def of_lens(cls, lens: Lens) -> Budget:
        """``max_calls`` / ``max_cost_usd`` of ``lens.yaml`` (each ``None`` when unset)."""
        cfg = lens.config
        where = f"{lens.root}/lens.yaml"
        return cls(
            cfg.max_calls, cfg.max_cost_usd, names=(f"{where} max_calls", f"{where} max_cost_usd")
        )

    def fits(self, calls: int, cost_usd: float) -> str | None:
        """Why ``calls`` more calls costing ``cost_usd`` would exceed it, else ``None``."""
        if self.max_calls is not None and self.calls + calls > self.max_calls:
            return (
                f"the run needs an estimated {calls} uncached call(s), "
                f"{self.max_calls - self.calls} left ({self.names[0]}={self.max_calls})"
            )
        if self.max_cost_usd is not None and self.cost_usd + cost_usd > self.max_cost_usd:
            left = self.max_cost_usd - self.cost_usd
            return (
                f"the run needs an estimated ${cost_usd:g}, ${left:g} left "
                f"({self.names[1]}={self.max_cost_usd:g})"
            )
        return None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Budget:
        """``DST_MAX_CALLS`` (a whole number ≥ 0) and ``DST_MAX_COST_USD`` (≥ 0), when set.

        Raises:
            UsageError: a value that is not such a number.
        """
        calls, cost = env.get(ENV_MAX_CALLS, "").strip(), env.get(ENV_MAX_COST, "").strip()
        try:
            max_calls = int(calls) if calls else None
            max_cost = float(cost) if cost else None
        except ValueError:
            max_calls = max_cost = -1
        if max_cost is not None and not math.isfinite(max_cost):
            max_cost = -1  # nan and inf bound nothing: not a budget
        if (max_calls is not None and max_calls < 0) or (max_cost is not None and max_cost < 0):
            raise UsageError(
                f"{ENV_MAX_CALLS}={calls!r} / {ENV_MAX_COST}={cost!r} is not a budget",
                fix=f"set {ENV_MAX_CALLS} to a whole number and {ENV_MAX_COST} to a number, "
                "both 0 or more (or unset them)",
            )
        return cls(max_calls, max_cost)

    def spent(self) -> str | None:
        """Why no further call may be made, or ``None`` while the budget lasts."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"{self.calls} calls made ({self.names[0]}={self.max_calls})"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"${self.cost_usd:g} spent ({self.names[1]}={self.max_cost_usd:g})"
        return None

    def charge(self, generation: Generation) -> None:
        """Count one call and the cost it reported."""
        self.calls += 1
        cost = (generation.usage or {}).get("cost_usd")
        if isinstance(cost, (int, float)):
            self.cost_usd += float(cost)


def key_of(material: Mapping[str, object]) -> str:
    """SHA-256 hex digest of ``material`` as sorted, compact JSON."""
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def payload_digest(payload: str | object) -> str:
    """SHA-256 hex digest of what a tier was sent: a string's UTF-8 bytes (the command's
    stdin), anything else as sorted, compact JSON (the smart tier's messages)."""
    if isinstance(payload, str):
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()
    return key_of({"payload": payload})


class CachedGeneration(BaseModel):
    """The answer an entry holds: exactly one of ``sql`` and ``declined``, and its usage."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    sql: str | None = Field(min_length=1)
    declined: str | None = Field(min_length=1)
    usage: dict[str, JsonValue]

    @model_validator(mode="after")
    def _one_of(self) -> CachedGeneration:
        if (self.sql is None) == (self.declined is None):
            raise ValueError('give exactly one of "sql" and "declined"')
        return self


class CacheEntry(BaseModel):
    """One cache file (module docstring).

    Attributes:
        schema_version: this format's version (:data:`CACHE_SCHEMA_VERSION`).
        key: the entry's key: the SHA-256 its file is named after.
        tier: ``smart`` or ``command``.
        generation: the answer.
        digest: :func:`entry_digest` of the three above.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    schema_version: Literal[2]
    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    tier: Literal["smart", "command"]
    generation: CachedGeneration
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")


def entry_digest(key: str, tier: str, generation: Mapping[str, object]) -> str:
    """SHA-256 over an entry's key, tier and generation (sorted, compact JSON)."""
    return key_of({"key": key, "tier": tier, "generation": generation})


def _schema_problem(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or "entry"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"fails its schema: {where}: {first['msg']}{more}"


class GenerationCache:
    """The cache directory of one run (module docstring).

    Args:
        directory: the cache root (``<repository>/.dst/cache``).
        read: ``False`` for ``--no-cache``: every lookup misses, stores still refresh.
        budget: what the run may spend on calls the cache cannot answer.
        use: how a hit is treated (:data:`CacheUse`).
        warn: receives each warning line (an entry treated as a miss, a verified
            entry that differs); once per entry and run.
        shown: how messages name ``directory`` (repository-relative).

    Attributes:
        hits: lookups answered from the cache in this run.
        warnings: the warnings given, in order.
    """

    def __init__(
        self,
        directory: Path,
        *,
        read: bool = True,
        write: bool = True,
        budget: Budget | None = None,
        use: CacheUse = "use",
        warn: Callable[[str], None] | None = None,
        shown: str = ".dst/cache",
    ) -> None:
        self.directory = directory
        self.read = read
        self.write = write
        self.budget = budget or Budget()
        self.use = use
        self.hits = 0
        self.warnings: list[str] = []
        self._warn = warn
        self._shown = shown
        self._warned: set[str] = set()
        self._seen: dict[str, int] = {}
        self._lens_budgets: dict[str, Budget] = {}
        self._lock = threading.Lock()

    def budget_for(self, lens: Lens | None) -> Budget:
        """The budget a call for ``lens`` spends: the run's when a variable sets one, else the
        lens's own (``max_calls`` / ``max_cost_usd``, one per lens and run)."""
        if lens is None or self.budget.limited:
            return self.budget
        with self._lock:
            if lens.name not in self._lens_budgets:
                self._lens_budgets[lens.name] = Budget.of_lens(lens)
            return self._lens_budgets[lens.name]

    @staticmethod
    def _base(material: Mapping[str, object], sample: int) -> str:
        return key_of(material if sample <= 1 else {**material, "sample": sample})

    def key(self, material: Mapping[str, object]) -> str:
        """The entry key for the next call with ``material`` in the current :data:`SAMPLE`
        (its occurrence counted)."""
        base = self._base(material, SAMPLE.get())
        with self._lock:
            occurrence = self._seen.get(base, 0) + 1
            self._seen[base] = occurrence
        return key_of({"call": base, "occurrence": occurrence})

    def verifies(self, lens: Lens | None) -> bool:
        """Whether a hit for ``lens`` is re-generated and compared (:data:`CacheUse`)."""
        if self.use == "lens":
            return lens is not None and lens.config.cache == "verify"
        return self.use == "verify"

    def _warning(self, rel: str, line: str) -> None:
        with self._lock:
            if rel in self._warned:
                return
            self._warned.add(rel)
            self.warnings.append(line)
        if self._warn is not None:
            self._warn(line)

    def peek(
        self, tier: str, material: Mapping[str, object], lens: Lens | None = None
    ) -> Generation | None:
        """What the next call with ``material`` in the current :data:`SAMPLE` would be served
        from the cache, without counting it as a call or a hit; ``None`` when it would call
        (a hit that :meth:`verifies` re-generates is a call)."""
        if self.verifies(lens):
            return None
        base = self._base(material, SAMPLE.get())
        with self._lock:
            occurrence = self._seen.get(base, 0) + 1
        hits = self.hits
        found = self.lookup(key_of({"call": base, "occurrence": occurrence}), tier)
        with self._lock:
            self.hits = hits
        return found

    def through(
        self,
        tier: str,
        material: Mapping[str, object],
        call: Callable[[], Generation],
        lens: Lens | None = None,
    ) -> Generation:
        """The cached generation for ``material``; else ``call()`` within the budget, stored.

        Args:
            tier: ``smart`` or ``command``.
            material: the call's key material (module docstring).
            call: makes the call; it never raises (failures are error generations).
            lens: the lens the call is for, whose own budget applies (:meth:`budget_for`).
        """
        key = self.key(material)
        found = self.lookup(key, tier)
        verify = found is not None and self.verifies(lens)
        if found is not None and not verify:
            return found
        budget = self.budget_for(lens)
        with self._lock:
            why = budget.spent()
            if why is None:
                budget.calls += 1  # reserved now, so parallel answers cannot overspend
        if why is not None:
            return Generation(tier, None, f"generation budget spent: {why}", {}, error=True)
        generation = call()
        with self._lock:
            budget.calls -= 1
            budget.charge(generation)
        if verify and found is not None:
            generation = self._verified(key, found, generation)
        self.store(key, generation)
        return generation

    def _verified(self, key: str, cached: Generation, fresh: Generation) -> Generation:
        """``fresh``, marked with how it compared with the ``cached`` entry it re-made."""
        same = not fresh.error and (fresh.sql, fresh.declined) == (cached.sql, cached.declined)
        if not same:
            rel = self._rel(key)
            got = "failed" if fresh.error else "answered differently"
            self._warning(
                rel,
                f"warning: {rel}: a fresh {fresh.tier} generation {got} than the cached entry "
                "(cache: verify); the fresh one is scored and stored",
            )
        usage = {**(fresh.usage or {}), "cache": "verified" if same else "replaced"}
        return Generation(fresh.tier, fresh.sql, fresh.declined, usage, fresh.error, fresh.exemplar)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def _rel(self, key: str) -> str:
        return f"{self._shown}/{key[:2]}/{key}.json"

    def lookup(self, key: str, tier: str) -> Generation | None:
        """The stored generation for ``key``, marked ``cached``; ``None`` on a miss.

        An entry that cannot be read, fails :class:`CacheEntry`, is stored under
        another key's name, does not match its digest or belongs to another tier is a
        miss with a warning (module docstring); the next store overwrites it.
        """
        if not self.read:
            return None
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._miss(key, f"cannot be read ({exc.strerror or exc})")
        try:
            doc = json.loads(raw)
        except ValueError:
            return self._miss(key, "is not JSON")
        if isinstance(doc, dict) and doc.get("schema_version") != CACHE_SCHEMA_VERSION:
            version = doc.get("schema_version")
            return self._miss(key, f"has schema_version {version!r}, not {CACHE_SCHEMA_VERSION}")
        try:
            entry = CacheEntry.model_validate(doc)
        except ValidationError as exc:
            return self._miss(key, _schema_problem(exc))
        if entry.key != key:
            return self._miss(key, f"holds key {entry.key[:12]}…, not the one it is named after")
        gen = entry.generation.model_dump(mode="json")
        if entry.digest != entry_digest(key, entry.tier, gen):
            return self._miss(key, "does not match its digest (edited or damaged)")
        if entry.tier != tier:
            return self._miss(key, f"is a {entry.tier} entry, read for the {tier} tier")
        usage = {**entry.generation.usage, "cached": True}
        found = Generation(tier, entry.generation.sql, entry.generation.declined, usage)
        with self._lock:
            self.hits += 1
        return found

    def _miss(self, key: str, problem: str) -> Generation | None:
        rel = self._rel(key)
        self._warning(rel, f"warning: {rel} {problem}; treated as a miss (generated again)")
        return None

    def store(self, key: str, generation: Generation) -> None:
        """Write ``generation`` under ``key`` atomically; failures are never stored.

        A cache that cannot be written (read-only checkout, full disk) is skipped:
        it costs a call next time, never a verdict; one opened with ``write=False`` (a
        serving process that writes nothing, ``dst mcp``) stores nothing.
        """
        if generation.error or not self.write:
            return
        gen = {
            "sql": generation.sql,
            "declined": generation.declined,
            "usage": {k: v for k, v in (generation.usage or {}).items() if k != "cache"},
        }
        gen = json.loads(json.dumps(gen, default=str))  # the exact JSON the digest covers
        entry = {
            "schema_version": CACHE_SCHEMA_VERSION,
            "key": key,
            "tier": generation.tier,
            "generation": gen,
            "digest": entry_digest(key, generation.tier, gen),
        }
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(entry, out, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            return
