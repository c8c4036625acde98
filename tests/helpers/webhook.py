"""A local webhook receiver (a real HTTP server on 127.0.0.1): records each POSTed body."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """Records each POSTed JSON body in :attr:`calls` and answers 200; :attr:`url` is its URL."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        calls = self.calls

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                calls.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A running :class:`Receiver`, shut down afterwards."""
    r = Receiver()
    r.thread.start()
    try:
        yield r
    finally:
        r.server.shutdown()
        r.server.server_close()
