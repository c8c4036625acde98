"""``dst mcp``: the serving path for AI agents, over the Model Context Protocol.

An agent host (an IDE, a chat client, an agent framework) starts ``dst mcp`` and
calls five tools — ``list_lenses``, ``describe_lens``, ``ask``, ``list_answers``,
``explain`` — each with a JSON input schema and a structured result. Every answer
comes from the serving version of an environment (the ref ``dst apply`` moved),
proven as ``dst ask`` proves it, never from the working tree; a promotion is seen by
the next call; nothing is written. Lenses, parsed SQL and warehouse connections stay
warm across calls, so a certified answer costs a fraction of a one-shot ``dst ask``.

* :mod:`reconciler.mcp.tools` — the tools over the serving versions (no SDK);
* :mod:`reconciler.mcp.shapes` — their results, published as output schemas;
* :mod:`reconciler.mcp.server` — the official ``mcp`` SDK: stdio and streamable HTTP.

Here: :func:`serve` (what the command calls) and :func:`listen_address`.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import socket
import sys
from pathlib import Path

from reconciler.errors import UsageError

LOOPBACK = "127.0.0.1"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def listen_address(text: str) -> tuple[str, int]:
    """``--http``'s ``HOST:PORT`` (or ``PORT`` alone, on 127.0.0.1) as ``(host, port)``.

    An IPv6 host is written in brackets (``[::1]:8765``).

    Raises:
        UsageError: not ``HOST:PORT``, or the port is not 1–65535 (exit 2).
    """
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = LOOPBACK, text
    host = host.strip() or LOOPBACK
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        number = int(port)
    except ValueError:
        number = 0
    if not 1 <= number <= 65535 or any(c in host for c in " /[]"):
        raise UsageError(
            f"--http {text}: not HOST:PORT with a port from 1 to 65535",
            fix=f"pass e.g. --http {LOOPBACK}:8765 (loopback only, unless you name another host)",
        )
    return host, number


def _bindable(host: str, port: int) -> None:
    """Refuse an address the server could not listen on, before the SDK starts."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET  # a host name: resolved by bind
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise UsageError(
            f"--http {host}:{port}: cannot listen there ({exc.strerror or exc})",
            fix="pick a free port, or a host name or address of this machine",
        ) from None


def serve(
    repo: Path | None,
    environment: str | None,
    warehouse: str | None,
    http: str | None,
) -> int:
    """Run the MCP server until a clean shutdown; returns 0.

    Args:
        repo: ``--repo`` (default: the current directory).
        environment: ``--env``: the environment calls read by default.
        warehouse: ``--warehouse``: a URL overriding every configured warehouse.
        http: ``--http HOST:PORT`` for streamable HTTP; ``None`` for stdio.

    Raises:
        UsageError: the ``mcp`` extra is not installed, no repository, an unknown
            environment, or an ``--http`` address that does not parse or bind (exit 2).
    """
    if importlib.util.find_spec("mcp") is None:
        raise UsageError(
            "dst mcp needs the Model Context Protocol SDK, which is not installed",
            fix="pip install 'dst-reconciler[mcp]' (from a clone: pip install -e '.[mcp]')",
        )
    # lazy: the SDK and the serving path load only when the server starts
    from reconciler.mcp.server import PATH, run
    from reconciler.mcp.tools import Catalogue

    address = listen_address(http) if http is not None else None
    if address is not None:
        _bindable(*address)
    catalogue = Catalogue(repo, environment, warehouse, _stderr)
    where = f"environment {environment}" if environment else "the default environment"
    if address is None:
        _stderr(f"dst mcp: serving {where} over stdio")
    else:
        host, port = address
        shown = f"[{host}]" if ":" in host else host
        _stderr(f"dst mcp: serving {where} at http://{shown}:{port}{PATH}")
    try:
        run(catalogue, address)
    finally:
        catalogue.close()
    return 0
