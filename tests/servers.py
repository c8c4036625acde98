"""What every test that needs a database server shares: the name prefix and the off-switch.

Tests that reach PostgreSQL (:mod:`tests.pg`) or MariaDB/MySQL (:mod:`tests.mariadb`)
create and drop only databases, users and roles whose names begin with
:data:`PREFIX`, so a developer's own databases on the same server are never
touched. ``DST_TEST_SERVERS=0`` turns every such test off: each skips, naming the
variable, without connecting.
"""

from __future__ import annotations

import os
import secrets

import pytest  # the benchmarks import PREFIX too; they run where pytest is installed

PREFIX = "dst_test_"
SWITCH = "DST_TEST_SERVERS"


def skip_when_off(server: str) -> None:
    """``pytest.skip`` when ``DST_TEST_SERVERS`` is ``0`` (or ``false``/``no``/``off``)."""
    if os.environ.get(SWITCH, "").strip().lower() in ("0", "false", "no", "off"):
        pytest.skip(f"{server} tests are off ({SWITCH}={os.environ[SWITCH]})")


def scratch_name(label: str) -> str:
    """``dst_test_<label>_<random>``: a fresh name for a database, user or role."""
    name = f"{PREFIX}{label}_{secrets.token_hex(4)}"
    if not name.replace("_", "").isalnum() or not name.isascii():
        raise ValueError(f"scratch names are letters, digits and underscores: {name!r}")
    return name
