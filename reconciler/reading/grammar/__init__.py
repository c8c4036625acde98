"""Question shapes of the ``fast`` tier: one module per construct (pure).

Each module reads one shape of question (a listing, rows kept by related rows, a
ratio of two measures, a count of entities, an output list …) and none imports
another's internals beyond what ``pyproject.toml``'s independence contract allows.
"""
