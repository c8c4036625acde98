"""``dst --help`` is drawn from the command table without typer; the table must match the commands.

The top-level help (:mod:`reconciler.cli.commands`) is plain text printed before
the command-line framework loads. Its summaries are written down, so these tests
hold them to the commands themselves: the first paragraph of each command's
docstring (or its typer app's ``help``), and the order and set of commands the
typer group resolves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.cli import app as cli_app
from reconciler.cli.commands import TABLE, is_top_level_help, top_level_help
from tests.helpers import dst, invoke


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())


@pytest.mark.parametrize("entry", TABLE, ids=[c.name for c in TABLE])
def test_each_summary_is_the_first_paragraph_of_its_commands_help(entry: object) -> None:
    name, target, summary = entry  # type: ignore[misc]
    command = cli_app.load_command(name, target)
    assert command.name == name
    assert summary == _first_paragraph(command.help)


def test_the_table_lists_every_command_the_group_resolves(tmp_path: Path) -> None:
    group = cli_app.typer.main.get_group(cli_app.app)
    ctx = group.make_context("dst", ["status"], resilient_parsing=True)
    assert group.list_commands(ctx) == [c.name for c in TABLE]
    for c in TABLE:
        assert group.get_command(ctx, c.name) is not None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], True),
        (["--help"], True),
        (["status"], False),
        (["plan", "--help"], False),
        (["--version"], False),
    ],
)
def test_only_the_bare_program_or_its_help_flag_is_the_top_level_help(
    args: list[str], expected: bool
) -> None:
    assert is_top_level_help(args) is expected


@pytest.mark.parametrize("width", [40, 80, 132])
def test_the_help_lists_every_command_once_within_the_width(width: int) -> None:
    text = top_level_help(width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), [ln for ln in lines if len(ln) > width]
    starts = [line.split()[0] for line in lines[lines.index("Commands:") + 1 :] if line[2:3] != " "]
    assert starts == [c.name for c in TABLE]
    # every word of every summary is printed, in order
    body = " ".join(" ".join(lines[lines.index("Commands:") + 1 :]).split())
    for c in TABLE:
        assert f"{c.name} {c.summary}" in body


def test_dst_help_prints_the_table_and_exits_0_and_bare_dst_exits_2(tmp_path: Path) -> None:
    helped = dst(tmp_path, "--help")
    assert helped.code == 0, helped.stderr
    assert helped.stdout.startswith("Usage: dst [OPTIONS] COMMAND [ARGS]...")
    assert all(f"  {c.name} " in helped.stdout for c in TABLE)
    bare = invoke(tmp_path)
    assert bare.code == 2
    assert bare.stdout == helped.stdout


def test_a_commands_own_help_is_still_typers(tmp_path: Path) -> None:
    done = invoke(tmp_path, "plan", "--help")
    assert done.code == 0
    assert "--format" in done.stdout
    assert "Show the plan" in done.stdout
