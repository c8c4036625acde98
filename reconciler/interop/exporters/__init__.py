"""Exporters: write a lens in another tool's semantic-layer format (pure).

An exporter takes a loaded :class:`~reconciler.lens.Lens` and returns the
other format's bytes with an :class:`ExportReport`; it never writes. Whatever
the target format cannot hold is listed in :attr:`ExportReport.unmapped` with
the reason, the same contract as :mod:`reconciler.interop.importers`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExportReport:
    """What an export produced and what it could not carry over.

    Attributes:
        lens: the lens exported.
        tables: logical tables written (one per model).
        facts: columns written as facts (with a default aggregation when a
            lens metric is exactly that aggregate).
        metrics: lens metrics written as table-level metrics.
        relationships: relationships written (one per join).
        verified_queries: verified queries written (one per active answer).
        unmapped: one line per lens item the target does not hold, with the reason.
    """

    lens: str
    tables: int
    facts: int
    metrics: int
    relationships: int
    verified_queries: int
    unmapped: tuple[str, ...]
