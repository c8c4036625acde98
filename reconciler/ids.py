"""The identifiers every layer passes around, as distinct types (``typing.NewType``).

They cost nothing at run time (each is its ``str``) but let mypy tell a lens name
from an answer id from a git object id.
"""

from __future__ import annotations

import re
from typing import NewType

LensName = NewType("LensName", str)
"""A lens's directory name under ``lenses/`` (``sales``)."""

LENS_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
"""What a lens (or environment) name must match: it becomes a ref path component (DESIGN §2)."""

AnswerId = NewType("AnswerId", str)
"""A certified answer's ``id`` (``net_revenue_2024``)."""

AssetId = NewType("AssetId", str)
"""``<kind>/<declared name>`` (``metrics/net_revenue``); skills use their path."""

Oid = NewType("Oid", str)
"""A git object id, 40 (SHA-1) or 64 (SHA-256) lowercase hex digits."""
