"""A local HTTP server speaking the OpenAI chat-completions protocol (the LLM endpoint's double).

It answers ``POST /v1/chat/completions`` (and ``/chat/completions``) with a
``chat.completion`` object whose content a test's ``reply`` function chooses from
the request's messages, and records every request body and header for assertions.
Bound to 127.0.0.1 on a free port; stopped by the context manager.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[list[dict[str, str]]], str]


@dataclass
class Endpoint:
    """A running double: its base URL and what it was sent."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # time.monotonic() of each request

    def prompts(self) -> list[str]:
        """Every request's user message, in order."""
        return [m["content"] for r in self.requests for m in r["messages"] if m["role"] == "user"]


@contextmanager
def serve(reply: Reply, *, status: int = 200, fail_first: int | None = None) -> Iterator[Endpoint]:
    """Run the double until the ``with`` block ends.

    ``status`` other than 200 answers every request with that error, or only the
    first ``fail_first`` requests when it is given (then the double answers normally).
    """
    endpoint = Endpoint("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            endpoint.requests.append(body)
            endpoint.headers.append(dict(self.headers))
            endpoint.times.append(time.monotonic())
            if not self.path.rstrip("/").endswith("chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            if status != 200 and (fail_first is None or len(endpoint.requests) <= fail_first):
                self._send(status, {"error": {"message": "double told to fail"}})
                return
            content = reply(body["messages"])
            prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
            self._send(
                200,
                {
                    "id": f"chatcmpl-{len(endpoint.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "system_fingerprint": "fp_double_1",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": len(content.split()),
                        "total_tokens": prompt_tokens + len(content.split()),
                    },
                },
            )

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
