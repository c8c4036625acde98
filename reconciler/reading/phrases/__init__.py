"""Phrases the ``fast`` tier's question shapes share (pure).

A period (``in Q3 2024``), a comparison on a fact (``amount more than 100``), an
ordering (``sorted by price``), a value named (``the vendor named 'Acme'``), days of
the week, month names, the grammar words outside lens phrases
(:mod:`~reconciler.reading.phrases.words`) …: read here once, used by several shapes.
"""
