"""The warehouse edge: everything that touches SQLAlchemy, DuckDB or a database driver.

URL resolution and read-only connections with statement timeouts
(:mod:`.connection`, :mod:`.timeouts`), the per-dialect session lock-down
(:mod:`.readonly`), what a login could write (:mod:`.privilege`) and loading seeds
(:mod:`.seed`). Results leave this package
as plain :class:`reconciler.resultset.ResultSet` values.
"""
