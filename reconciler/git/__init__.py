"""The git edge: everything that touches pygit2 or runs the ``git`` executable.

Reading lenses out of commits and the working tree (:mod:`.trees`), serving
refs and deployment commits with compare-and-swap (:mod:`.refs`, :mod:`.locks`,
:mod:`.crash`), the base of a pull request or push (:mod:`.base`), sharing
``refs/dst/*`` with a remote and carrying retirements (:mod:`.sync`,
:mod:`.sync_report`, :mod:`.retire`), installing the pre-push hook
(:mod:`.hooks`) and scratch clones (:mod:`.scratch`). No other package imports
pygit2 (an import-linter contract in ``pyproject.toml``).
"""
