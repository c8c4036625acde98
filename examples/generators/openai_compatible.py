#!/usr/bin/env python3
"""A dst ``command`` generator that asks any OpenAI-compatible chat-completions endpoint.

Reads dst's generation request (JSON) on stdin, sends one chat completion built from
the models, metrics, exemplars and skills it carries, and prints ``{"sql": ...}`` or
``{"declined": ...}`` with the tokens spent. Standard library only (``urllib``).

Environment:
    GENERATOR_BASE_URL  the endpoint's base URL, e.g. ``https://api.example.com/v1``
    GENERATOR_MODEL     the model name
    GENERATOR_API_KEY   sent as a bearer token when set
    GENERATOR_TIMEOUT_S seconds to wait for the endpoint (default 60)

A failed call exits 1 with the reason on stderr: dst scores it ``error``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.request
from typing import Any

FENCE = re.compile(r"```(?:sql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
DECLINE = re.compile(r"^\s*DECLINE\s*:?\s*(.*)$", re.IGNORECASE | re.DOTALL)


def context(request: dict[str, Any]) -> str:
    """The request's assets as plain text, the question last."""
    parts = []
    for model in request["models"]:
        columns = [
            f"  - {c['name']}"
            + (f" = {c['expr']}" if c.get("expr") else "")
            + f" ({c['data_type']})"
            for kind in ("dimensions", "time_dimensions", "facts")
            for c in model.get(kind, [])
        ]
        joins = [f"  join {j['to']} on {j['on']}" for j in model.get("joins", [])]
        parts.append(
            f"table {model['table']} (model {model['name']})\n" + "\n".join(columns + joins)
        )
    for metric in request["metrics"]:
        where = f" where {' and '.join(metric['filters'])}" if metric.get("filters") else ""
        parts.append(f"metric {metric['name']} on {metric['model']}: {metric['expression']}{where}")
    for example in request["exemplars"]:
        parts.append(f"example question: {example['question']}\nexample SQL: {example['sql']}")
    for skill in request["skills"]:
        parts.append(f"skill {skill['path']}:\n{skill['text']}")
    if request.get("as_of"):
        parts.append(f"today is {request['as_of']}")
    if request.get("hint"):
        parts.append(f"the previous answer was rejected: {request['hint']}")
    return "\n\n".join(parts) + f"\n\nquestion: {request['question']}"


def main() -> int:
    request = json.load(sys.stdin)
    base_url = os.environ["GENERATOR_BASE_URL"].rstrip("/")
    system = (
        f"Write exactly one read-only SQL query in the {request['dialect']} dialect that "
        "answers the question from the context. Reply with a ```sql block, or with "
        "'DECLINE: <reason>' when the context cannot answer it."
    )
    body = {
        "model": os.environ["GENERATOR_MODEL"],
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": context(request)},
        ],
        "temperature": 0,
        "seed": 0,
    }
    headers = {"Content-Type": "application/json"}
    if key := os.environ.get("GENERATOR_API_KEY"):
        headers["Authorization"] = f"Bearer {key}"
    call = urllib.request.Request(
        f"{base_url}/chat/completions", json.dumps(body).encode(), headers, method="POST"
    )
    timeout = float(os.environ.get("GENERATOR_TIMEOUT_S", "60"))
    try:
        with urllib.request.urlopen(call, timeout=timeout) as response:
            reply = json.load(response)
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        print(f"chat completion failed: {exc}", file=sys.stderr)
        return 1
    text = reply["choices"][0]["message"]["content"] or ""
    tokens = (reply.get("usage") or {}).get("total_tokens")
    declined = DECLINE.match(text)
    if declined:
        out: dict[str, Any] = {"declined": declined.group(1).strip() or "no reason given"}
    else:
        fenced = FENCE.search(text)
        sql = (fenced.group(1) if fenced else text).strip().rstrip(";").strip()
        out = {"sql": sql} if sql else {"declined": "the model returned no SQL"}
    if tokens is not None:
        out["tokens"] = tokens
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
