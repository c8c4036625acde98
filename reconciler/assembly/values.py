"""The distinct values of a lens's string dimensions, read once per run (generator input).

Kept apart from :mod:`reconciler.suite` (which re-exports it), so that ``dst ask``,
which generates but scores nothing, does not load the suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reconciler.assembly.profiles import ProfileStore, gather_facts
from reconciler.errors import DstError
from reconciler.resultset import Executor

if TYPE_CHECKING:
    from reconciler.assembly.lexicon import DimensionValues
    from reconciler.lens import Lens

VALUES_PER_DIMENSION = 200


@dataclass
class ValueCache:
    """Distinct values of a lens's string dimensions, read once per run (generator input),
    with the join-key facts of the join-grain gate
    (:func:`~reconciler.assembly.profiles.gather_facts`).

    With ``profiles`` (a :class:`reconciler.assembly.profiles.ProfileStore`) each
    column's profile comes from the on-disk cache when its content hash matches,
    and is read from the warehouse and cached otherwise; without it every run
    reads the warehouse. ``dialect`` is the warehouse's (for the count query).
    """

    executor: Executor
    timeout_s: float
    profiles: ProfileStore | None = None
    dialect: str = "duckdb"
    _cache: dict[str, DimensionValues] = field(default_factory=dict)

    def for_lens(self, lens: Lens) -> DimensionValues:
        """``{(model, dimension): values}`` for every string dimension of ``lens``, as a
        :class:`~reconciler.assembly.grain.WarehouseFacts` carrying its join-key facts."""
        key = f"{lens.name}:{id(lens)}"
        if key not in self._cache:
            values: dict[tuple[str, str], tuple[str, ...]] = {}
            for model in lens.models.values():
                for col in model.dimensions:
                    if col.data_type.lower() not in ("string", "text", "varchar"):
                        continue
                    try:
                        values[(model.name, col.name)] = self._values(model.table, col.sql)
                    except DstError:
                        values[(model.name, col.name)] = ()
            self._cache[key] = gather_facts(
                lens,
                values,
                self.executor,
                self.profiles,
                timeout_s=self.timeout_s,
                dialect=self.dialect,
            )
        return self._cache[key]

    def _values(self, table: str, column_sql: str) -> tuple[str, ...]:
        if self.profiles is None:
            return self.executor.distinct_values(
                table, column_sql, limit=VALUES_PER_DIMENSION, timeout_s=self.timeout_s
            )
        return self.profiles.profile(
            self.executor,
            table,
            column_sql,
            limit=VALUES_PER_DIMENSION,
            timeout_s=self.timeout_s,
            dialect=self.dialect,
        ).values
