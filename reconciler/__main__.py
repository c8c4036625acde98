"""``python -m reconciler`` runs the ``dst`` command line."""

from __future__ import annotations

from reconciler.cli.entry import main

if __name__ == "__main__":
    main()
