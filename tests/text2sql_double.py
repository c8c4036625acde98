"""A local HTTP server standing in for a team's text-to-SQL service (a JSON POST).

It answers every ``POST`` with the JSON object a test's ``answer`` function builds
from the request body, with ``status``, and records each body and its headers.
Bound to 127.0.0.1 on a free port; stopped by the context manager.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Service:
    """A running double: its URL and what it was sent."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


@contextmanager
def serve(answer: Answer, *, status: int = 200) -> Iterator[Service]:
    """Run the double until the ``with`` block ends."""
    service = Service("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            service.requests.append(body)
            service.headers.append(dict(self.headers))
            payload = answer(body) if status == 200 else {"message": "double told to fail"}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.url = f"http://127.0.0.1:{server.server_address[1]}/v1/sql"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
