"""POSTing lens events to webhooks, within one wall-clock deadline per event (standard library).

A webhook's URL comes from the environment variable its ``dst.yaml`` entry
names; the URL never appears in output, since chat webhook URLs are
credentials. Each event at each webhook has one deadline (the entry's
``deadline_s``, :data:`DEADLINE_S` = 30 s by default and at most) that covers
everything: resolving and connecting, sending the body, reading the answer, every
retry and every wait between them. A receiver that answers one byte at a time
cannot stretch it: the POST runs in a worker thread, and at the deadline its
socket is shut, whatever it was waiting for. A try that fails with a connection
error, a timeout, HTTP 408, 429 or 5xx is retried after :data:`BACKOFF_S`,
doubling each time, up to the entry's ``retries``, while the deadline allows;
any other HTTP error is final. A redirect (3xx) is never followed: it is a failed
delivery naming its ``Location`` (a POST body re-sent as a GET, or to a host the
URL did not name, would lose the event or leak it). Once one event missed its
deadline at a webhook, the later events of the same command skip that webhook,
so a dead receiver delays an apply by one deadline, not one per lens.

``http_proxy`` / ``https_proxy`` / ``no_proxy`` are honoured as the standard
library reads them (:func:`urllib.request.getproxies`). Nothing here raises: a
failure is returned (and the caller prints a warning), never a changed verdict.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler import __version__
from reconciler.lens import Webhook
from reconciler.notify.events import LensEvent

BACKOFF_S = 0.5
"""Wait before the first retry, in seconds; it doubles before each later one."""

DEADLINE_S = 30.0
"""The default (and largest) wall-clock bound of one event at one webhook, in seconds."""

_RETRIED = {408, 429}
_GRACE_S = 0.5  # how long an aborted POST's thread is given to notice its socket closed


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
        seconds: wall-clock time the delivery took, tries and waits included.
        deadline_s: the deadline it had, in seconds.
        location: the ``Location`` of a redirect that was not followed.
        missed_deadline: the deadline passed before the receiver answered.
    """

    url_env: str
    lens: str
    event: str
    tries: int
    status: int | None
    error: str | None
    seconds: float = 0.0
    deadline_s: float = DEADLINE_S
    location: str | None = None
    missed_deadline: bool = False

    @property
    def ok(self) -> bool:
        """The receiver answered 2xx."""
        return self.error is None

    def warning(self) -> str:
        """The stderr line for a failed delivery (names the variable, never the URL)."""
        if self.tries == 0:  # never sent: the variable is unset, not a URL, or out of time
            return (
                f"warning: notification {self.event} for lens {self.lens} to ${self.url_env} "
                f"not sent: {self.error}; the verdict and exit code stand"
            )
        return (
            f"warning: notification {self.event} for lens {self.lens} to ${self.url_env} "
            f"failed after {self.tries} tr{'y' if self.tries == 1 else 'ies'}: {self.error}; "
            f"the verdict and exit code stand"
        )

    def record(self) -> dict[str, Any]:
        """JSON-ready: what the command's report keeps of this delivery (never the URL)."""
        return {
            "url_env": self.url_env,
            "event": self.event,
            "delivered": self.ok,
            "tries": self.tries,
            "status": self.status,
            "error": self.error,
            "location": self.location,
            "seconds": round(self.seconds, 3),
            "deadline_s": self.deadline_s,
        }


@dataclass(frozen=True)
class _Answer:
    status: int
    location: str | None


class _Missed(Exception):
    """The deadline passed before the receiver answered."""


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection for ``url`` (through the configured proxy, if any) and the request target.

    Raises:
        ValueError: ``url`` has no host.
    """
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        raise ValueError("no host in the URL")
    https = parts.scheme.lower() == "https"
    port = parts.port or (443 if https else 80)
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    proxy = urllib.request.getproxies().get(parts.scheme.lower())
    if proxy and not urllib.request.proxy_bypass(parts.hostname):
        via = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        proxy_host, proxy_port = via.hostname or "", via.port or 8080
        if https:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                proxy_host, proxy_port, timeout=timeout
            )
            conn.set_tunnel(parts.hostname, port)
            return conn, target
        # a plain-HTTP proxy takes the absolute URL as the request target
        return http.client.HTTPConnection(proxy_host, proxy_port, timeout=timeout), url
    cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
    return cls(parts.hostname, port, timeout=timeout), target


def _post(url: str, body: bytes, deadline: float) -> _Answer:
    """POST ``body`` and read the status line and headers, all before ``deadline``.

    Raises:
        _Missed: the deadline passed first (the connection is shut).
        OSError, http.client.HTTPException, ValueError: the try failed.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Missed
    conn, target = _connection(url, left)
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            conn.request(
                "POST",
                target,
                body=body,
                headers={"Content-Type": "application/json", "User-Agent": f"dst/{__version__}"},
            )
            response = conn.getresponse()
            done["answer"] = _Answer(response.status, response.getheader("Location"))
        except BaseException as exc:  # handed to the caller's thread as it is
            done["error"] = exc

    worker = threading.Thread(target=run, name="dst-webhook", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        # Wake the worker from whatever it blocks in; a lookup or connect still in
        # progress is left to its own timeout in a daemon thread that nothing waits for.
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        worker.join(_GRACE_S)
        conn.close()
        raise _Missed
    conn.close()
    if "error" in done:
        raise done["error"]
    answer: _Answer = done["answer"]
    return answer


def deliver(
    hooks: Sequence[Webhook],
    env: Mapping[str, str],
    events: Sequence[LensEvent],
    *,
    sleep: Callable[[float], None] = time.sleep,
    deadline_s: float | None = None,
) -> list[Delivery]:
    """Send each event to each webhook subscribed to it.

    Args:
        hooks: ``notify:`` of ``dst.yaml``.
        env: the environment the URLs are read from.
        events: the command's lens events, in report order.
        sleep: waits between tries (seconds).
        deadline_s: the wall-clock bound of each event at each webhook, in seconds;
            ``None`` takes each entry's ``deadline_s`` (default :data:`DEADLINE_S`).

    Returns:
        One :class:`Delivery` per (webhook, event) pair sent or attempted.
    """
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
        bound = hook.deadline_s if deadline_s is None else deadline_s
        missed = False
        for event in wanted:
            if problem is not None:
                out.append(Delivery(hook.url_env, event.lens, event.event, 0, None, problem))
            elif missed:
                why = "the webhook missed its deadline for an earlier event"
                out.append(Delivery(hook.url_env, event.lens, event.event, 0, None, why))
            else:
                sent = _send(hook, url, event, bound, sleep)
                missed = sent.missed_deadline
                out.append(sent)
    return out


def _send(
    hook: Webhook, url: str, event: LensEvent, bound: float, sleep: Callable[[float], None]
) -> Delivery:
    body = json.dumps(event.payload(), sort_keys=True, default=str).encode("utf-8")
    start = time.monotonic()
    deadline = start + bound
    status: int | None = None
    error: str | None = f"no answer within the {bound:g} s deadline"
    location: str | None = None
    tries = 0
    missed = False

    def result() -> Delivery:
        took = time.monotonic() - start
        return Delivery(
            hook.url_env,
            event.lens,
            event.event,
            tries,
            status,
            error,
            took,
            bound,
            location,
            missed,
        )

    for attempt in range(hook.retries + 1):
        if deadline - time.monotonic() <= 0:
            break
        tries += 1
        try:
            answer = _post(url, body, deadline)
        except _Missed:
            status, error, missed = None, f"no answer within the {bound:g} s deadline", True
            break
        except (http.client.HTTPException, OSError, ValueError) as exc:
            status, error = None, _reason(exc)
        else:
            status = answer.status
            if 200 <= status < 300:
                error = None
                return result()
            if 300 <= status < 400:
                location = _shown(answer.location)
                error = f"HTTP {status} redirect to {location or 'no Location'} not followed"
                break
            error = f"HTTP {status}"
            if status < 500 and status not in _RETRIED:
                break
        wait = BACKOFF_S * 2**attempt
        if attempt == hook.retries or time.monotonic() + wait >= deadline:
            break
        sleep(wait)
    return result()


def _shown(location: str | None) -> str | None:
    """A redirect's ``Location`` as a warning may show it: no user, password or query."""
    if not location:
        return None
    parts = urllib.parse.urlsplit(location.strip())
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    query = "?…" if parts.query else ""
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")) + query


def _reason(exc: Exception) -> str:
    """A short cause without the URL (``connection refused``, ``timed out``)."""
    if isinstance(exc, TimeoutError) or "timed out" in str(exc):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer ({type(exc).__name__})"
    return type(exc).__name__
