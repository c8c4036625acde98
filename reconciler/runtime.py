"""What one command invocation works with: the repository, warehouses, progress.

Warehouses are opened lazily, once per resolved URL, and only when a suite
actually has to run — ``dst plan`` and an apply with nothing stale never
connect.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from reconciler import gitstate
from reconciler.generators import DimensionValues
from reconciler.lens import Lens, RepoConfig
from reconciler.loader import load_yaml, validate
from reconciler.suite import Executor, ValueCache


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Runtime:
    """Per-invocation context.

    Attributes:
        repo: the git repository.
        warehouse_url: ``--warehouse`` (highest precedence), or ``None``.
        env: the environment (``DST_WAREHOUSE_URL`` …).
        progress: sink for progress lines (stderr by default).
    """

    repo: pygit2.Repository
    warehouse_url: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    progress: Callable[[str], None] = _stderr
    _warehouses: dict[str, Executor] = field(default_factory=dict)
    _values: dict[str, ValueCache] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        """The working tree root."""
        return gitstate.repo_root(self.repo)

    def repo_config_url(self) -> str | None:
        """``warehouse:`` from ``dst.yaml`` at the repository root, if any.

        Raises:
            LensLoadError: ``dst.yaml`` does not validate (unknown key, not a URL …).
        """
        path = self.root / "dst.yaml"
        if not path.is_file():
            return None
        return validate(RepoConfig, load_yaml("dst.yaml", path.read_bytes())).warehouse

    def resolve_url(self, lens: Lens | None) -> tuple[str, str]:
        """``(url, where it came from)`` by DESIGN §7 precedence."""
        from reconciler.warehouse import resolve_url

        return resolve_url(
            self.warehouse_url,
            self.env,
            lens.config.warehouse if lens else None,
            self.repo_config_url(),
            self.root,
        )

    def warehouse_for(self, lens: Lens) -> Executor:
        """The read-only warehouse for ``lens``, opened once per URL.

        Raises:
            WarehouseError: it cannot be reached (the gate stands down with this).
        """
        from reconciler.warehouse import Warehouse

        url, _ = self.resolve_url(lens)
        if url not in self._warehouses:
            self._warehouses[url] = Warehouse.open(url)
        return self._warehouses[url]

    def values_for(self, lens: Lens, executor: Executor) -> DimensionValues:
        """Distinct dimension values for the generator, read once per lens version."""
        key = str(id(executor))
        if key not in self._values:
            self._values[key] = ValueCache(executor, lens.config.statement_timeout_s)
        return self._values[key].for_lens(lens)

    def close(self) -> None:
        """Close every warehouse opened."""
        for wh in self._warehouses.values():
            close = getattr(wh, "close", None)
            if close is not None:
                close()
        self._warehouses.clear()
