"""Every ``dst`` command dst prints as a fix is accepted by dst's own parser, as printed.

Two sources of printed commands:

* the package's own text: every string literal and f-string under ``reconciler/``
  (docstrings aside), its placeholders filled with a sample word (or nothing, for a
  placeholder that adds an optional suffix such as `` --env E``), from which the
  commands are taken where dst shows one: inside backticks, in parentheses, after
  "run ", "then " or ": ", and a whole ``fix=`` text that starts with ``dst``;
* real flows that print them: a blocked apply (text, JSON reasons, the webhook payload
  and its Slack text), ``dst ci check --format github`` (annotations, job summary).

Each command is split as a shell would (``shlex``) and handed to the typer app's click
command: the group resolves each sub-command and ``make_context`` parses its options,
so an unknown option, a missing required one (``dst certify --replace ID`` without
``--lens``) or a stray argument fails here, as it would for the user.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

import pytest
from typer._click import ClickException  # typer's own click: the one dst's app runs on
from typer.core import TyperGroup
from typer.main import get_command

from reconciler.cli.app import COMMANDS, app
from tests.helpers import PROJECT, commit, git, invoke
from tests.helpers.examples import double_metric
from tests.helpers.webhook import receiving

PACKAGE = PROJECT / "reconciler"
HOOK = "DST_TEST_WEBHOOK"
# placeholders that add an optional suffix (" --env E", a merge hint) render as nothing
_SUFFIXES = {"where", "merge", "suffix", "flag", "flags", "extra"}
_QUOTED = re.compile(r"`(dst [^`]+)`|\((dst [a-z][^)]*)\)")
_INLINE = re.compile(r"(?:^|run |then |: )(dst [a-z][^`]*)")
_STOP = re.compile(
    r"\)|;|,| — | \(|\. | \| | > | (?:first|again|and|to|inside|then|when|for|or|on|with|in|is|"
    r"if|as|loads|retires|of|pushes|rolls|self-tests)\b"
)
_NAMES = {name for name, _ in COMMANDS} | {"plan|apply|test", "plan|test"}
PLACEHOLDER = "V1"  # a placeholder's sample value: no English word, so prose never hides it


def _render(node: ast.JoinedStr) -> str:
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
            continue
        assert isinstance(part, ast.FormattedValue)
        expr = part.value
        called = expr.func if isinstance(expr, ast.Call) else expr
        name = ast.unparse(called).split(".")[-1].split("[")[0]
        suffix = isinstance(expr, ast.IfExp) or name in _SUFFIXES or name.endswith("flag")
        out.append("" if suffix else PLACEHOLDER)
    return "".join(out)


def _texts(path: Path) -> Iterable[tuple[str, str, bool]]:
    """``(where, text, is_fix)`` of every string in one module that dst may print.

    Docstrings and reflog messages (``reason=``) are left out; ``is_fix`` marks a
    ``fix=`` text, the line dst prints under an error.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    fixes: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
        if isinstance(node, ast.keyword) and node.arg == "fix":
            fixes.add(id(node.value))
        if isinstance(node, ast.keyword) and node.arg == "reason":
            skip.add(id(node.value))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            text = _render(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        yield f"{path.relative_to(PROJECT)}:{node.lineno}", text, id(node) in fixes


def commands_in(text: str, *, prose: bool = True, whole: bool = False) -> list[str]:
    """The ``dst`` commands one printed text shows (see the module docstring).

    A quoted or parenthesised command always counts, except a provenance line's
    ("written by `dst import dbt`"); ``prose`` also takes one written inline
    ("…: dst X", "run dst X") up to the first word that reads as prose again;
    ``whole`` takes a text that is itself a command (a ``fix=`` line).
    """
    unsigned = re.sub(r"(by|from) `dst [^`]*`", "", text)
    found = [q or p for q, p in _QUOTED.findall(unsigned) if (q or p).split()[1] in _NAMES]
    if prose:
        found += [_STOP.split(m.split("\n")[0], maxsplit=1)[0] for m in _INLINE.findall(text)]
    if whole and text.startswith("dst "):
        found += [c.strip() for c in text.split(" | ")]
    out: list[str] = []
    for command in found:
        command = command.split(" > ")[0].strip().rstrip(".:")  # a shell redirection
        head, _, rest = command.partition(" --")
        if re.fullmatch(r"dst [a-z-]+(\|[a-z-]+)+", head):  # `dst plan|apply|test --format json`
            out += [f"dst {w}" + (f" --{rest}" if rest else "") for w in head[4:].split("|")]
        elif not re.match(r"dst [\w-]+( [a-z-]+)*:", command):  # "dst ask: …" is a label
            out.append(command)
    return out


def parse(command: str) -> None:
    """Parse ``command`` (``dst …``) as dst's CLI would; raises click's error when refused."""
    argv = shlex.split(command)
    assert argv[0] == "dst", command
    group = get_command(app)
    if len(argv) == 1:
        return  # "run dst inside a git repository": the program named, no command line
    ctx = group.make_context("dst", argv[1:])
    cmd = group
    args = [*ctx._protected_args, *ctx.args]
    while isinstance(cmd, TyperGroup):
        name, sub, rest = cmd.resolve_command(ctx, args)
        assert sub is not None and name is not None
        if isinstance(sub, TyperGroup) and not rest:
            return  # "run dst hooks inside a repository": the group named, no command line
        ctx = sub.make_context(name, rest, parent=ctx)
        cmd = sub
        args = [*ctx._protected_args, *ctx.args] if isinstance(sub, TyperGroup) else []


def _parses(command: str) -> str | None:
    try:
        parse(command)
    except (ClickException, ValueError) as exc:
        return f"{command!r}: {exc}"
    return None


def test_the_parser_refuses_what_the_user_would_be_refused() -> None:
    assert _parses("dst certify --replace revenue_by_region --lens sales") is None
    assert "lens" in str(_parses("dst certify --replace revenue_by_region"))
    assert _parses("dst apply --no-such-option") is not None
    assert _parses("dst nosuch") is not None
    assert _parses("dst sync --fetch --remote origin") is None
    assert commands_in("fix the definition (dst certify --replace a --lens s) or retire it") == [
        "dst certify --replace a --lens s"
    ]
    assert commands_in("run `dst plan|test --format json`") == [
        "dst plan --format json",
        "dst test --format json",
    ]


def test_every_command_in_the_package_text_parses() -> None:
    seen: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for where, text, is_fix in _texts(path):
            for command in commands_in(text, prose=is_fix, whole=is_fix):
                seen.setdefault(command, where)
    assert len(seen) >= 30, sorted(seen)  # the scan finds the fixes dst prints
    assert any(c.startswith("dst certify --replace") for c in seen), sorted(seen)
    refused = [f"{seen[c]}: {why}" for c in seen if (why := _parses(c)) is not None]
    assert not refused, "\n".join(refused)


@pytest.fixture
def broken(promoted_repo: Path) -> Path:
    """The promoted examples with dst.yaml's webhook, then a change that breaks an answer."""
    notify = f"notify:\n  - url_env: {HOOK}\n    events: [blocked]\n"
    commit(promoted_repo, {"dst.yaml": notify}, "notify")
    git(promoted_repo, "checkout", "-q", "-b", "feature")
    double_metric(promoted_repo, "units_sold")
    return promoted_repo


def test_every_command_a_blocked_apply_prints_parses(broken: Path, tmp_path: Path) -> None:
    printed: list[tuple[str, str]] = []
    with receiving() as receiver:
        text = invoke(broken, "apply", env={HOOK: receiver.url})
        assert text.code == 1, text.stdout + text.stderr
        printed += [("apply text", text.stdout + text.stderr)]
        assert receiver.calls, text.stderr
        for call in receiver.calls:
            printed += [("webhook text", call["text"])]
            printed += [("webhook failing", str(f)) for f in call.get("failing", [])]
    as_json = invoke(broken, "apply", "--dry-run", "--format", "json")
    assert as_json.code == 1
    for lens in as_json.json()["lenses"]:
        printed += [("json detail", r["detail"] or "") for r in lens["results"]]
        printed += [("json message", m) for m in lens["messages"]]
    summary = tmp_path / "summary.md"
    env = {"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": "", "GITHUB_STEP_SUMMARY": str(summary)}
    github = invoke(broken, "ci", "check", "--base", "main", "--format", "github", env=env)
    assert github.code == 1
    printed += [("annotations", github.stdout), ("job summary", summary.read_text())]
    # GitHub's workflow-command encoding of a line break inside an annotation
    commands: dict[str, set[str]] = {}
    for where, text in printed:
        for line in text.replace("%0A", "\n").splitlines():
            for c in commands_in(line):
                commands.setdefault(c, set()).add(where)
    where_replace = set().union(
        *(w for c, w in commands.items() if c.startswith("dst certify --replace"))
    )
    assert {"apply text", "webhook text", "json detail", "annotations"} <= where_replace, commands
    refused = [f"{sorted(w)}: {y}" for c, w in commands.items() if (y := _parses(c)) is not None]
    assert not refused, "\n".join(refused)
