"""The generation cache: one content-addressed file per external-tier call under ``.dst/cache/``.

A ``smart`` or ``command`` generation is stored under the SHA-256 of its *key*: the
tier, the exact payload sent (the chat messages, or the request JSON on stdin), the
model or program (with the hash of each program file it names), the call's
parameters (temperature, seed, timeout) and the occurrence of that same key within
the run (the suite's second attempt is a call of its own). Re-running the same plan
therefore replays every call, in order, without making one, and gives the same
verdict; ``--no-cache`` makes every call again and refreshes the entries.

Only answers are stored — SQL or a decline — never a failure (a timeout, a crash, an
unreachable endpoint), which must be retried. An entry is written to a temporary
file beside it and renamed into place, so readers never see half an entry and
concurrent writers of one key (two CI jobs sharing the directory) write the same
bytes. Entries hold no credential: the key material is the payload, which never
carries one, and the API key is not part of it.

Layout: ``.dst/cache/<first two hex digits>/<sha256>.json``, each
``{"schema_version": 1, "tier": ..., "generation": {"sql", "declined", "usage"}}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from reconciler.generators.generation import Generation

CACHE_SCHEMA_VERSION = 1


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


class GenerationCache:
    """The cache directory of one run (module docstring).

    Args:
        directory: the cache root (``<repository>/.dst/cache``).
        read: ``False`` for ``--no-cache``: every lookup misses, stores still refresh.

    Attributes:
        hits: lookups answered from the cache in this run.
    """

    def __init__(self, directory: Path, *, read: bool = True) -> None:
        self.directory = directory
        self.read = read
        self.hits = 0
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def key(self, material: Mapping[str, object]) -> str:
        """The entry key for the next call with ``material`` (its occurrence counted)."""
        base = key_of(material)
        with self._lock:
            occurrence = self._seen.get(base, 0) + 1
            self._seen[base] = occurrence
        return key_of({"call": base, "occurrence": occurrence})

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def lookup(self, key: str, tier: str) -> Generation | None:
        """The stored generation for ``key``, marked ``cached``; ``None`` on a miss.

        An unreadable or foreign entry is a miss (it is overwritten by the next store).
        """
        if not self.read:
            return None
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
            gen = entry["generation"]
            if entry.get("schema_version") != CACHE_SCHEMA_VERSION or entry.get("tier") != tier:
                return None
            usage = {**gen.get("usage", {}), "cached": True}
            found = Generation(tier, gen["sql"], gen["declined"], usage)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        with self._lock:
            self.hits += 1
        return found

    def store(self, key: str, generation: Generation) -> None:
        """Write ``generation`` under ``key`` atomically; failures are never stored.

        A cache that cannot be written (read-only checkout, full disk) is skipped:
        it costs a call next time, never a verdict.
        """
        if generation.error:
            return
        entry = {
            "schema_version": CACHE_SCHEMA_VERSION,
            "tier": generation.tier,
            "generation": {
                "sql": generation.sql,
                "declined": generation.declined,
                "usage": dict(generation.usage or {}),
            },
        }
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(entry, out, sort_keys=True, default=str)
            os.replace(tmp, path)
        except OSError:
            return
