"""``dst status`` and ``dst ask`` before typer: only plain shapes are parsed there.

Every other shape must reach typer untouched (``parse`` returns ``None``), so that
typer's help, checks and error wording stay the only ones; and a plain shape run
before typer prints and exits as the typer command does.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from reconciler.cli.app import COMMANDS
from reconciler.cli.formats import Format
from reconciler.cli.lean import SPECS, parse
from tests.helpers import command_env, dst

Q = "total revenue by region"


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (["status"], {}),
        (["status", "--format", "json"], {"fmt": Format.json}),
        (["status", "--format=json", "--env=prod"], {"fmt": Format.json, "env": "prod"}),
        (["status", "--repo", "x"], {"repo": Path("x")}),
        (["ask", Q, "--lens", "sales"], {"question": Q, "lens": "sales"}),
        (["ask", "--lens=sales", Q], {"question": Q, "lens": "sales"}),
        (
            ["ask", Q, "--lens", "s", "--max-repairs", "0", "--no-cache", "--show-request"],
            {"question": Q, "lens": "s", "max_repairs": 0, "no_cache": True, "show_request": True},
        ),
        (["ask", "", "--lens", "s"], {"question": "", "lens": "s"}),
    ],
)
def test_plain_shapes_are_parsed(args: list[str], kwargs: dict[str, object]) -> None:
    parsed = parse(args)
    assert parsed is not None
    assert parsed[1] == kwargs


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--help"],
        ["status", "-h"],
        ["status", "--format", "yaml"],
        ["status", "--format"],
        ["status", "--format", "json", "--format", "text"],
        ["status", "--env", ""],
        ["status", "--env", "--format"],
        ["status", "extra"],
        ["status", "--"],
        ["status", "--version"],
        ["ask", Q],
        ["ask", "--lens", "sales"],
        ["ask", Q, "again", "--lens", "sales"],
        ["ask", Q, "--lens", "sales", "--max-repairs", "6"],
        ["ask", Q, "--lens", "sales", "--max-repairs", "-1"],
        ["ask", Q, "--lens", "sales", "--max-repairs", "two"],
        ["ask", Q, "--lens", "sales", "--no-cache", "--no-cache"],
        ["ask", Q, "--lens", "sales", "--no-cache=1"],
        ["ask", Q, "--lens", "sales", "--warehouse", "duckdb:///x.duckdb"],
        ["ask", "-5 orders", "--lens", "sales"],
        ["plan"],
        [],
    ],
)
def test_every_other_shape_is_left_to_typer(args: list[str]) -> None:
    assert parse(args) is None


def _through_typer(repo: Path, *args: str) -> tuple[int, str, str]:
    program = (
        "import sys\nfrom reconciler.cli.app import app\napp(args=sys.argv[1:], prog_name='dst')"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=repo,
        env=command_env(repo, None),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("status", "--format", "json", "--env", "nowhere"),
        ("ask", "Average order value by quarter in 2023", "--lens", "sales", "--format", "json"),
        ("ask", Q, "--lens=sales", "--max-repairs", "0"),
        ("ask", Q, "--lens", "no_such_lens"),
    ],
)
def test_a_plain_shape_prints_what_typer_prints(promoted_repo: Path, args: tuple[str, ...]) -> None:
    lean = dst(promoted_repo, *args)
    assert (lean.code, lean.stdout, lean.stderr) == _through_typer(promoted_repo, *args)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_plain_shape_names_the_typer_commands_options_and_defaults(name: str) -> None:
    # a drift guard: what lean.parse accepts is the typer command's, and the body's
    # defaults are the command's, so an argument left out means the same either way
    module, attribute = dict(COMMANDS)[name].split(":")
    command_fn = getattr(importlib.import_module(module), attribute)
    spec = SPECS[name]
    body_module, body_attribute = spec.target.split(":")
    body = getattr(importlib.import_module(body_module), body_attribute)
    single = typer.Typer()
    single.command()(command_fn)
    params = {p.name: p for p in typer.main.get_command(single).params}
    options = {opt: p.name for p in params.values() for opt in p.opts if opt.startswith("--")}
    for opt, (keyword, _) in spec.valued.items():
        assert options[opt] == keyword, opt
    for opt, keyword in spec.flags.items():
        assert options[opt] == keyword, opt
    assert list(inspect.signature(body).parameters) == list(
        inspect.signature(command_fn).parameters
    )
    for keyword, parameter in inspect.signature(body).parameters.items():
        if keyword not in spec.positional and keyword not in spec.required:
            assert parameter.default == params[keyword].default, keyword
