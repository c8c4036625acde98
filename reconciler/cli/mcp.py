"""``dst mcp [--env E] [--http HOST:PORT]``: the serving path for AI agents (MCP).

The command parses its options and runs :func:`reconciler.mcp.serve`: the Model
Context Protocol server whose tools (``list_lenses``, ``describe_lens``, ``ask``,
``list_answers``, ``explain``) answer from the serving version of the environment,
warm across calls, writing nothing. stdio by default (the agent host spawns it);
``--http`` serves streamable HTTP at ``http://HOST:PORT/mcp``, on 127.0.0.1 unless
another host is named.

Exit codes (DESIGN §6): 0 on a clean shutdown (stdin closed; over HTTP, a signal);
2 on bad input (no repository, an ``--env`` that ``dst.yaml`` does not name, an
``--http`` address that does not parse or cannot be listened on, the ``mcp`` extra
missing).
"""

from __future__ import annotations

from typing import Annotated

import typer

from reconciler.cli.options import EnvOpt, RepoOpt, WarehouseOpt


def mcp(
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at HOST:PORT/mcp instead of stdio (PORT alone: 127.0.0.1).",
        ),
    ] = None,
    env: EnvOpt = None,
    repo: RepoOpt = None,
    warehouse: WarehouseOpt = None,
) -> int:
    """Serve the lenses to AI agents over MCP (stdio, or --http): warm, read-only."""
    # lazy: the MCP SDK and the serving path, only when the server runs
    from reconciler.mcp import serve

    return serve(repo, env, warehouse, http)
