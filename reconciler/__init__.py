"""dst: a git-native GitOps reconciler for governed text-to-SQL lenses."""

from __future__ import annotations

__version__ = "0.1.0"
