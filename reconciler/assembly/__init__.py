"""Assembly: from a question and a lens to one recorded generation request.

Lexical retrieval over metrics, models, exemplars and skills, join paths between
models, exemplar folding by similarity (optionally by embeddings), per-column
value profiles, and values memoized once per lens version.
"""
