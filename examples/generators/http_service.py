#!/usr/bin/env python3
"""A dst ``command`` generator that wraps a text-to-SQL service the team already runs.

Reads dst's generation request (JSON) on stdin, POSTs the question and the context
to the service, and maps the service's answer to dst's reply. The service contract
assumed here (change :func:`to_service` and :func:`from_service` to match yours):

    POST $TEXT2SQL_URL  {"question", "dialect", "as_of", "tables": [...], "metrics": [...],
                         "examples": [{"question", "sql"}]}
    200  {"query": "SELECT ...", "confidence": 0.93}   or   {"error": "why not"}

Environment:
    TEXT2SQL_URL             the service endpoint
    TEXT2SQL_TOKEN           sent as a bearer token when set
    TEXT2SQL_MIN_CONFIDENCE  answers below it are declined (default 0.5)
    TEXT2SQL_TIMEOUT_S       seconds to wait for the service (default 30)

A service that cannot be reached or answers non-200 exits 1 with the reason on
stderr: dst scores it ``error``. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any


def to_service(request: dict[str, Any]) -> dict[str, Any]:
    """dst's request as the service's input."""
    return {
        "question": request["question"],
        "dialect": request["dialect"],
        "as_of": request.get("as_of"),
        "tables": [
            {
                "name": m["table"],
                "columns": [
                    c["name"]
                    for kind in ("dimensions", "time_dimensions", "facts")
                    for c in m.get(kind, [])
                ],
            }
            for m in request["models"]
        ],
        "metrics": [
            {"name": m["name"], "sql": m["expression"], "model": m["model"]}
            for m in request["metrics"]
        ],
        "examples": [{"question": e["question"], "sql": e["sql"]} for e in request["exemplars"]],
    }


def from_service(answer: dict[str, Any], min_confidence: float) -> dict[str, Any]:
    """The service's answer as dst's reply."""
    if answer.get("error"):
        return {"declined": str(answer["error"])}
    confidence = float(answer.get("confidence", 1.0))
    if confidence < min_confidence:
        return {"declined": f"the service's confidence {confidence:g} is below {min_confidence:g}"}
    return {"sql": answer["query"]}


def main() -> int:
    request = json.load(sys.stdin)
    headers = {"Content-Type": "application/json"}
    if token := os.environ.get("TEXT2SQL_TOKEN"):
        headers["Authorization"] = f"Bearer {token}"
    call = urllib.request.Request(
        os.environ["TEXT2SQL_URL"], json.dumps(to_service(request)).encode(), headers, method="POST"
    )
    timeout = float(os.environ.get("TEXT2SQL_TIMEOUT_S", "30"))
    try:
        with urllib.request.urlopen(call, timeout=timeout) as response:
            answer = json.load(response)
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        print(f"text-to-SQL service failed: {exc}", file=sys.stderr)
        return 1
    min_confidence = float(os.environ.get("TEXT2SQL_MIN_CONFIDENCE", "0.5"))
    print(json.dumps(from_service(answer, min_confidence)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
