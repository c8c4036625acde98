"""The MCP server of ``dst mcp``: the five tools on the official SDK's ``MCPServer``.

The only module that imports the ``mcp`` SDK (an import-linter contract). Each tool
is a thin function over :class:`reconciler.mcp.tools.Catalogue`: its arguments
become the tool's input schema, its return type (:mod:`reconciler.mcp.shapes`) the
output schema, and a :class:`~reconciler.errors.DstError` becomes a tool error whose
text carries dst's message and fix. Every tool is marked read-only and idempotent
(MCP tool annotations): none writes anything.

Transports: stdio (the default: the agent host spawns ``dst mcp`` and speaks
JSON-RPC on its stdin and stdout; stdout carries nothing else) and streamable HTTP
(``--http HOST:PORT``, the endpoint ``/mcp``), whose host-header and origin checks
the SDK turns on for a loopback address.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable
from types import FrameType
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from reconciler import __version__
from reconciler.errors import DstError
from reconciler.mcp.shapes import Answered, AnswerList, Explanation, LensDescription, LensList
from reconciler.mcp.tools import Catalogue

T = TypeVar("T")

PATH = "/mcp"
"""The streamable HTTP endpoint."""

INSTRUCTIONS = """\
dst serves governed answers from the promoted (serving) version of each lens.
Start with list_lenses, then describe_lens for the metrics, dimensions and synonyms
a question may use. ask answers one question: a question equal to a certified one
(list_answers) is served from its certified SQL with trust_state "certified"; any
other is generated, executed read-only and checked by gates ("grounded" when they
pass). Nothing is served on the refuse and clarify routes: relay the message.
Quote the deployment with a number, so it can be traced to what served it."""

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

Env = Annotated[
    str | None,
    Field(description="a dst.yaml environment (default: the one dst mcp was started with)"),
]
LensArg = Annotated[str, Field(description="the lens name (list_lenses shows them)")]
SomeLens = Annotated[str | None, Field(description="one lens (default: every serving lens)")]
Question = Annotated[str, Field(description="the question, in plain words")]
AnswerArg = Annotated[str, Field(description="a certified answer id (list_answers shows them)")]


def _tool(call: Callable[[], T]) -> T:
    """Run one tool call; a dst error becomes a tool error with its fix."""
    try:
        return call()
    except DstError as exc:
        raise ToolError(exc.render()) from None


def build(catalogue: Catalogue) -> MCPServer[Any]:
    """The MCP server with the five tools, answering from ``catalogue``."""
    app: MCPServer[Any] = MCPServer(
        "dst",
        title="dst: governed text-to-SQL",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    def list_lenses(env: Env = None) -> LensList:
        """The lenses serving in an environment: description, serving deployment, gate
        mode, last score and reach, and how many certified answers each serves."""
        return _tool(lambda: catalogue.list_lenses(env))

    def describe_lens(lens: LensArg, env: Env = None) -> LensDescription:
        """The serving version of one lens: its models (tables, dimensions, time
        dimensions, joins), metrics with labels and synonyms, vocabulary, the topics it
        refuses and the terms it asks back about: the words a question can use."""
        return _tool(lambda: catalogue.describe_lens(lens, env))

    def ask(question: Question, lens: LensArg, env: Env = None) -> Answered:
        """Answer a question from the lens's serving version, as `dst ask` does:
        certified match, else refuse/clarify pre-checks, else generation, read-only
        execution and gates. Returns route, trust state, SQL, columns, rows (at most
        the lens's row cap), message, notes and the deployment that answered."""
        return _tool(lambda: catalogue.ask(question, lens, env))

    def list_answers(lens: SomeLens = None, env: Env = None) -> AnswerList:
        """The certified questions (active answers) of the serving versions: asked
        verbatim, each is served from its certified SQL with trust "certified"."""
        return _tool(lambda: catalogue.list_answers(lens, env))

    def explain(answer: AnswerArg, lens: SomeLens = None, env: Env = None) -> Explanation:
        """One certified answer of a serving version: its question and certified SQL,
        who certified it and when, the assets its verification depends on, its last
        outcome, and what the suite sends the generator to re-ask it."""
        return _tool(lambda: catalogue.explain(answer, lens, env))

    for fn in (list_lenses, describe_lens, ask, list_answers, explain):
        app.add_tool(fn, annotations=READ_ONLY, structured_output=True)
    return app


class Stopped(Exception):
    """SIGINT or SIGTERM stopped the HTTP server (after its graceful shutdown)."""


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def run(catalogue: Catalogue, http: tuple[str, int] | None) -> None:
    """Serve until the client hangs up (stdio: stdin closes) or, over HTTP, a signal.

    Over HTTP, SIGINT and SIGTERM are a clean shutdown: the web server (uvicorn,
    under the SDK) drains its connections, then re-raises the signal it caught to
    the handler it found, which is :func:`_stop` here, so the command returns
    (exit 0) instead of dying by the signal.

    Args:
        catalogue: what the tools answer from.
        http: ``(host, port)`` for streamable HTTP, ``None`` for stdio.
    """
    app = build(catalogue)
    if http is None:
        anyio.run(app.run_stdio_async)
        return
    host, port = http
    serve = functools.partial(
        app.run_streamable_http_async, host=host, port=port, streamable_http_path=PATH
    )
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, _stop) for sig in handled}
    try:
        anyio.run(serve)
    except Stopped:
        return
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
