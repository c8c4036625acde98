"""POSTing lens events to webhooks, with bounded retries (standard library HTTP).

A webhook's URL comes from the environment variable its ``dst.yaml`` entry
names; the URL never appears in output, since chat webhook URLs are
credentials. A try that fails with a connection error, a timeout, HTTP 408, 429
or 5xx is retried after :data:`BACKOFF_S`, doubling each time, up to the
entry's ``retries``; any other HTTP error is final. All deliveries of one
command share :data:`TOTAL_S`, so a dead receiver delays an apply by at most
that long. Nothing here raises: a failure is returned (and the caller prints
a warning), never a changed verdict.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reconciler import __version__
from reconciler.lens import Webhook
from reconciler.notify.events import LensEvent

BACKOFF_S = 0.5
"""Wait before the first retry, in seconds; it doubles before each later one."""

TIMEOUT_S = 5.0
"""Per try, in seconds."""

TOTAL_S = 30.0
"""All deliveries of one command, retries and waits included, in seconds."""

_RETRIED = {408, 429}


@dataclass(frozen=True)
class Delivery:
    """The fate of one event at one webhook.

    Attributes:
        url_env: the variable naming the webhook's URL (what messages show).
        lens: the event's lens.
        event: the event name.
        tries: POSTs made (0 when the URL was missing or invalid).
        status: the last HTTP status received, ``None`` when none was.
        error: why it failed, ``None`` when the receiver answered 2xx.
    """

    url_env: str
    lens: str
    event: str
    tries: int
    status: int | None
    error: str | None

    @property
    def ok(self) -> bool:
        """The receiver answered 2xx."""
        return self.error is None

    def warning(self) -> str:
        """The stderr line for a failed delivery (names the variable, never the URL)."""
        return (
            f"warning: notification {self.event} for lens {self.lens} to ${self.url_env} "
            f"failed after {self.tries} tr{'y' if self.tries == 1 else 'ies'}: {self.error}; "
            f"the verdict and exit code stand"
        )


def _post(url: str, body: bytes, timeout: float) -> int:
    """POST ``body``; the HTTP status (an HTTP error's status is returned, not raised)."""
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": f"dst/{__version__}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def deliver(
    hooks: Sequence[Webhook],
    env: Mapping[str, str],
    events: Sequence[LensEvent],
    *,
    sleep: Callable[[float], None] = time.sleep,
    total_s: float = TOTAL_S,
) -> list[Delivery]:
    """Send each event to each webhook subscribed to it.

    Args:
        hooks: ``notify:`` of ``dst.yaml``.
        env: the environment the URLs are read from.
        events: the command's lens events, in report order.
        sleep: waits between tries (seconds).
        total_s: the time budget of every delivery together, in seconds.

    Returns:
        One :class:`Delivery` per (webhook, event) pair sent or attempted.
    """
    deadline = time.monotonic() + total_s
    out: list[Delivery] = []
    for hook in hooks:
        wanted = [e for e in events if e.wanted_by(hook.events)]
        if not wanted:
            continue
        url = env.get(hook.url_env, "").strip()
        problem = None
        if not url:
            problem = "the variable is not set"
        elif not url.lower().startswith(("http://", "https://")):
            problem = "its value is not an http(s) URL"
        for event in wanted:
            if problem is not None:
                out.append(Delivery(hook.url_env, event.lens, event.event, 0, None, problem))
            else:
                out.append(_send(hook, url, event, deadline, sleep))
    return out


def _send(
    hook: Webhook, url: str, event: LensEvent, deadline: float, sleep: Callable[[float], None]
) -> Delivery:
    body = json.dumps(event.payload(), sort_keys=True, default=str).encode("utf-8")
    status: int | None = None
    error = "no time left for notifications"
    tries = 0
    for attempt in range(hook.retries + 1):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        tries += 1
        try:
            status = _post(url, body, min(TIMEOUT_S, left))
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            status, error = None, _reason(exc)
        else:
            if 200 <= status < 300:
                return Delivery(hook.url_env, event.lens, event.event, tries, status, None)
            error = f"HTTP {status}"
            if status < 500 and status not in _RETRIED:
                break
        wait = BACKOFF_S * 2**attempt
        if attempt == hook.retries or time.monotonic() + wait >= deadline:
            break
        sleep(wait)
    return Delivery(hook.url_env, event.lens, event.event, tries, status, error)


def _reason(exc: Exception) -> str:
    """A short cause without the URL (``connection refused``, ``timed out``)."""
    cause = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror.lower()
    if isinstance(cause, TimeoutError) or "timed out" in str(cause):
        return "timed out"
    if isinstance(cause, http.client.HTTPException):
        return f"not an HTTP answer ({type(cause).__name__})"
    return type(cause).__name__ if not isinstance(cause, str) else cause
