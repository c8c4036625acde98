"""Comparing an oracle's result with a generated one: multisets, cells, ordering, ties (pure).

DESIGN §4's rules: EXCEPT ALL semantics, columns by name or position, a 1e-9
relative tolerance on floats, order only where the oracle's top-level query has
ORDER BY, and an ambiguous oracle's tied rows (``ties``).
"""
