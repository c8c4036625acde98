"""The function allow-lists break nothing dst writes or ships, and ship with the package.

Every function the example lenses, the fixture lenses and the fast tier's golden cases
call must be on the allow-list of their dialect — and, since a lens's SQL is carried to
PostgreSQL and MySQL / MariaDB warehouses by sqlglot, on those dialects' lists once
transpiled. The lists are package data: a wheel built from the source tree holds them.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from reconciler import guard
from reconciler.errors import UnsafeSqlError
from reconciler.guard import denied
from reconciler.guard.allowlist import LISTS, allowed_functions
from reconciler.lens import Lens, load_lens
from tests import mariadb, pg, servers
from tests.figures import record
from tests.helpers import FIXTURES, PROJECT
from tests.helpers.grammar import GoldenFile, ask, dimension_values
from tests.helpers.interop import read_lens_dir

ALLOWED_DIR = PROJECT / "reconciler" / "guard" / "allowed"
# What only the allow-list says (other refusals are other checks' business).
ALLOW_LIST_REFUSAL = re.compile(
    r"allow-list of pure functions|a quoted name keeps its case|in schema"
)
TARGETS = ("postgres", "mysql")
LENS_DIRS = sorted(
    [p for p in (PROJECT / "lenses").iterdir() if (p / "lens.yaml").is_file()]
    + [p.parent for p in FIXTURES.glob("*_lenses/*/lens.yaml")]
)
GOLDEN = sorted(
    p.name for p in FIXTURES.glob("fast_tier_*.yaml") if p.name != "fast_tier_cases.yaml"
)


SERVERS_OFF = os.environ.get(servers.SWITCH, "").strip().lower() in ("0", "false", "no", "off")
# sqlglot carries some DuckDB functions to a target as names that target lacks (DuckDB's
# make_date → DATE_FROM_PARTS on MySQL): the query would fail there whatever the guard
# says, so such a name is a transpile gap, counted, and not the allow-list's to fix.
GAPS: dict[str, set[str]] = {t: set() for t in TARGETS}


@functools.cache
def _postgres_catalogue() -> frozenset[str] | None:
    if SERVERS_OFF:
        return None
    try:
        engine = pg.engine(pg.admin_url())
        with engine.connect() as conn:
            names = conn.exec_driver_sql("SELECT DISTINCT proname FROM pg_proc").scalars().all()
        engine.dispose()
    except sa.exc.OperationalError:
        return None
    return frozenset(names)


@functools.cache
def _mysql_engine() -> sa.Engine | None:
    if SERVERS_OFF:
        return None
    engine = mariadb.engine(mariadb.admin_url())
    try:
        with engine.connect():
            return engine
    except (sa.exc.OperationalError, ImportError):
        return None


@functools.cache
def _engine_has(target: str, name: str) -> bool | None:
    """Whether ``target``'s server knows function ``name``; ``None`` when none answers."""
    if target == "postgres":
        catalogue = _postgres_catalogue()
        return None if catalogue is None else name in catalogue
    engine = _mysql_engine()
    if engine is None:
        return None
    # MySQL and MariaDB say 1305 "FUNCTION … does not exist" for an unknown name only.
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT {name}()")
    except sa.exc.DBAPIError as exc:
        return not (exc.orig is not None and exc.orig.args[0] == 1305)
    return True


def _refusal(sql: str, dialect: str, allow: tuple[str, ...] = ()) -> str | None:
    """The allow-list's refusal of ``sql`` in ``dialect``, else ``None``."""
    try:
        guard.check_read_only(sql, dialect, allow_functions=allow)
    except UnsafeSqlError as exc:
        if ALLOW_LIST_REFUSAL.search(exc.message):
            return exc.message
    return None


def _everywhere(sql: str, source: str, allow: tuple[str, ...] = ()) -> list[str]:
    """Allow-list refusals of ``sql`` in its dialect and transpiled to every target."""
    problems = [f"{source}: {r}" for r in [_refusal(sql, source, allow)] if r]
    if not problems and guard.reads_current_date(sql, source):
        # the clock-pinned text is what runs, and it is checked again before it does
        pinned = guard.pin_current_date(sql, "2024-06-30", source)
        problems += [f"{source} pinned: {r}\n    {pinned}" for r in [_refusal(pinned, source)] if r]
    for target in TARGETS:
        if target == source:
            continue
        try:
            carried = guard.transpile(sql, source, target)
        except UnsafeSqlError:
            continue  # what sqlglot cannot carry over is reported by the transpile step
        problem = _refusal(carried, target, allow)
        called = re.search(r"calls (?:[\w.]+\.)?(\w+)\(\)", problem or "")
        if problem and called and _engine_has(target, called.group(1)) is False:
            GAPS[target].add(called.group(1))
        elif problem:
            problems.append(f"{target}: {problem}\n    {carried}")
    return problems


def _statements(lens: Lens) -> Iterator[str]:
    for answer in lens.answers.values():
        yield answer.sql
    for exemplar in lens.exemplars.values():
        yield exemplar.sql


@pytest.fixture(scope="module", autouse=True)
def _gaps() -> Iterator[None]:
    yield
    for target, names in GAPS.items():
        if names:
            record(f"transpile gaps to {target} (names it lacks): {', '.join(sorted(names))}")


def test_every_list_is_there_and_disjoint_from_the_deny_list() -> None:
    sizes = {}
    for dialect in LISTS:
        names = allowed_functions(dialect)
        assert names is not None and len(names) > 100, dialect
        assert all(re.fullmatch(r"[a-z_][a-z0-9_]*", n) for n in names), dialect
        denied_here = {
            n
            for n in names
            if n in denied.FORBIDDEN_FUNCTIONS
            or n.startswith(denied.FORBIDDEN_PREFIXES)
            or n.endswith(denied.FORBIDDEN_SUFFIXES)
        }
        assert not denied_here, f"{dialect} allows denied functions: {sorted(denied_here)}"
        sizes[dialect] = len(names)
    record("function allow-lists: " + ", ".join(f"{d} {n}" for d, n in sorted(sizes.items())))
    assert allowed_functions("snowflake") is None


@pytest.mark.parametrize("root", LENS_DIRS, ids=[f"{p.parent.name}/{p.name}" for p in LENS_DIRS])
def test_lens_sql_calls_only_listed_functions(root: Path) -> None:
    # loading runs the guard over every metric, filter, oracle and exemplar
    lens = load_lens(root.name, read_lens_dir(root), root=root.relative_to(PROJECT).as_posix())
    allow = lens.config.allow_functions
    problems = [
        p for sql in _statements(lens) for p in _everywhere(sql, lens.config.dialect, allow)
    ]
    assert not problems, "\n".join(problems)


def _golden_cases() -> list[tuple[str, int]]:
    return [
        (name, i)
        for name in GOLDEN
        for i, case in enumerate(GoldenFile.read(name).cases)
        if "oracle" in case
    ]


@pytest.fixture(scope="module")
def golden_warehouses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    return {
        name: GoldenFile.read(name).warehouses(tmp_path_factory.mktemp(name.removesuffix(".yaml")))
        for name in GOLDEN
    }


@pytest.mark.parametrize("name", GOLDEN)
def test_fast_tier_golden_sql_calls_only_listed_functions(
    name: str, golden_warehouses: dict[str, dict[str, Path]]
) -> None:
    import duckdb

    golden = GoldenFile.read(name)
    problems: list[str] = []
    emitted = 0
    for case in golden.cases:
        if "oracle" not in case:
            continue
        lens_name = case.get("lens") or next(iter(golden.files))
        lens = golden.lens(lens_name)
        con = duckdb.connect(str(golden_warehouses[name][lens_name]), read_only=True)
        try:
            result = ask(lens, case["question"], dimension_values(con, lens))
        finally:
            con.close()
        for sql in (result.sql, case["oracle"]):
            if sql:
                emitted += 1
                problems += [
                    f"{case.get('id', case['question'])}: {p}" for p in _everywhere(sql, "duckdb")
                ]
    assert emitted, "the golden file generated no SQL to check"
    assert not problems, "\n".join(problems)


def test_the_lists_ship_with_the_package(tmp_path: Path) -> None:
    # Build a wheel from a copy of the source tree and look inside: package data that
    # setuptools leaves out would make every load fail on an installed dst.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (PROJECT / name).is_file():
            shutil.copy(PROJECT / name, src / name)
    shutil.copytree(
        PROJECT / "reconciler", src / "reconciler", ignore=shutil.ignore_patterns("__pycache__")
    )
    # build_py copies modules and package data exactly as a wheel would take them
    out = tmp_path / "build"
    done = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
         "--build-lib", str(out)],
        cwd=src, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "reconciler" / "guard" / "__init__.py").is_file()
    shipped = {p.name: p.read_text("utf-8") for p in (out / "reconciler/guard/allowed").glob("*")}
    on_disk = {p.name: p.read_text("utf-8") for p in ALLOWED_DIR.glob("*.txt")}
    assert set(on_disk) == {f"{d}.txt" for d in LISTS}
    assert shipped == on_disk


def test_the_lists_are_what_the_script_writes() -> None:
    # The script's rules are the review; a hand edit of a list shows up here.
    sys.path.insert(0, str(PROJECT / "scripts"))
    try:
        import make_function_allowlists as script
    finally:
        sys.path.remove(str(PROJECT / "scripts"))
    for dialect, names in (
        ("mysql", script.mysql_functions()),
        ("sqlite", script.sqlite_functions()),
    ):
        expected = set(names) | set(script.SYNTAX[dialect])
        assert allowed_functions(dialect) == expected, dialect
    header = (ALLOWED_DIR / "duckdb.txt").read_text("utf-8").splitlines()[1]
    assert "scripts/make_function_allowlists.py" in header


def test_every_golden_file_is_read() -> None:
    assert len(GOLDEN) >= 10
    for name in GOLDEN:
        assert yaml.safe_load((FIXTURES / name).read_text("utf-8"))["cases"], name
