"""``dst status`` and ``dst ask``, run before typer loads when their arguments are plain.

Building a command through typer (its parameter adapters, the vendored click
core) costs more than these one-shot commands' own work. So :func:`parse` reads
an argument list of their exact common shape itself: known long options each
once, as ``--name value`` or ``--name=value``, their values already valid, and
(for ``ask``) the one question. Anything else returns ``None`` and goes to typer
unchanged, which then parses, checks and words every error and every help as it
always does: ``--help``, an unknown or repeated option, a missing ``--lens``, a
value out of range or starting with ``-``, ``--``, ``--warehouse`` (checked by a
callback when parsed), an empty value, a second question.

:func:`run` calls the body the typer command calls (:mod:`reconciler.cli.oneshot`)
inside the same error boundary (:func:`reconciler.cli.boundary.guard`), so the
output and exit code are typer's. Neither body raises typer's own control flow
(``Exit``, a usage error); a prompt's Abort on Ctrl-C is an interrupt, as there.
This module imports only the standard library, the boundary and the formats;
the body's module is imported when it runs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.cli.boundary import Invocation, guard
from reconciler.cli.formats import Format


@dataclass(frozen=True)
class Spec:
    """One command's plain shape: its options (flag or valued) and its positional names.

    Attributes:
        target: ``"module:function"``, the typer-free body the typer command calls.
        valued: ``--option`` → (keyword, converter of its text; raises ``ValueError``).
        flags: ``--flag`` → keyword (set to ``True``).
        positional: keywords of the positional arguments, in order, all required.
        required: keywords that must be given.
    """

    target: str
    valued: dict[str, tuple[str, Callable[[str], Any]]]
    flags: dict[str, str] = field(default_factory=dict)
    positional: tuple[str, ...] = ()
    required: tuple[str, ...] = ()


def _repairs(text: str) -> int:
    value = int(text)  # as typer converts it
    if not 0 <= value <= 5:  # --max-repairs' range
        raise ValueError(text)
    return value


_COMMON: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--env": ("env", str),
    "--repo": ("repo", Path),
    "--format": ("fmt", Format),  # a value it does not name is ValueError
}

SPECS: dict[str, Spec] = {
    "status": Spec("reconciler.cli.oneshot:status", dict(_COMMON)),
    "ask": Spec(
        "reconciler.cli.oneshot:ask",
        {**_COMMON, "--lens": ("lens", str), "--max-repairs": ("max_repairs", _repairs)},
        flags={"--show-request": "show_request", "--no-cache": "no_cache"},
        positional=("question",),
        required=("lens",),
    ),
}


def parse(args: list[str]) -> tuple[Spec, dict[str, Any]] | None:
    """The command and its keyword arguments when ``args`` has the plain shape, else ``None``.

    ``args`` starts with the command's name (``["status", "--format", "json"]``).
    """
    spec = SPECS.get(args[0]) if args else None
    if spec is None:
        return None
    kwargs: dict[str, Any] = {}
    seen: set[str] = set()
    given: list[str] = []
    rest = iter(args[1:])
    for token in rest:
        if not token.startswith("-"):
            given.append(token)
            continue
        name, eq, inline = token.partition("=")
        if name in spec.flags and not eq and name not in seen:
            seen.add(name)
            kwargs[spec.flags[name]] = True
            continue
        if name not in spec.valued or name in seen:
            return None  # --help, an unknown or repeated option, `--`, `-x`: typer words it
        seen.add(name)
        value = inline if eq else next(rest, None)
        if not value or value.startswith("-"):
            return None
        keyword, convert = spec.valued[name]
        try:
            kwargs[keyword] = convert(value)
        except ValueError:
            return None
    if len(given) != len(spec.positional):
        return None
    kwargs.update(zip(spec.positional, given, strict=True))
    if any(k not in kwargs for k in spec.required):
        return None
    return spec, kwargs


def run(command: str, spec: Spec, kwargs: dict[str, Any]) -> int:
    """Run ``spec``'s function with ``kwargs`` inside the error boundary; its exit code."""
    fmt = kwargs.get("fmt")
    invocation = Invocation(command, "text" if fmt is None else str(fmt.value))

    def body() -> int:
        module, attribute = spec.target.split(":")
        try:
            code = getattr(importlib.import_module(module), attribute)(**kwargs)
        except Exception as exc:
            if _aborted_prompt(exc):  # as reconciler.cli.app.DstGroup.invoke says
                raise KeyboardInterrupt from None
            raise
        return code if isinstance(code, int) else 0

    return guard(body, lambda: invocation)


def _aborted_prompt(exc: Exception) -> bool:
    """``exc`` is typer's Abort of a prompt that Ctrl-C ended (typer then already loaded)."""
    typer = sys.modules.get("typer")
    return (
        typer is not None
        and isinstance(exc, typer.Abort)
        and isinstance(exc.__context__, KeyboardInterrupt)
    )


def main(args: list[str]) -> None:
    """Run ``args`` here when plain; return (doing nothing) when typer must parse them.

    Raises:
        SystemExit: the command ran, with its exit code.
    """
    parsed = parse(args)
    if parsed is not None:
        sys.exit(run(args[0], *parsed))
