"""``dst mutate``: meaning-changing mutants and formatting-only edits of a lens, each run
through the gate in a scratch clone (driver, operators, formatting probe).
"""
