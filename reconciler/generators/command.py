"""The command generator tier: any program a team already runs, behind a JSON pipe.

``generator: {tiers: [fast, command], command: {run: [python3, gen.py], timeout_s: 30}}``
in ``lens.yaml`` runs ``run`` (an argv, no shell) with the lens directory of the
working tree as its working directory — so a relative program path such as
``gen.py`` is the lens's own file — and the process environment. The program gets
the generation request (:class:`~reconciler.generators.payload.TierRequest`, one
JSON object) on stdin and prints one JSON object on stdout
(:class:`~reconciler.generators.payload.TierReply`): ``{"sql": "…"}`` or
``{"declined": "reason"}``, optionally with ``"tokens"`` and ``"cost_usd"``.

A non-zero exit, a timeout (the whole process group is killed), output that is not
one such object, or SQL the read-only guard refuses is an *error* generation (the
suite scores it ``error``), whose reason carries the last lines of the program's
stderr with secrets redacted: the value of every environment variable whose name
looks like a secret's (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASS*``,
``*CREDENTIAL*``) and the user-info of any URL become ``***``.

Every answer (SQL or decline) is cached (:mod:`reconciler.generators.cache`), keyed
by the request JSON, the argv, the hash of each file the argv names, the timeout,
the sample and the occurrence in the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from reconciler import guard
from reconciler.assembly.request import GenerationRequest
from reconciler.errors import UnsafeSqlError
from reconciler.generators.cache import GenerationCache, payload_digest
from reconciler.generators.generation import Generation
from reconciler.generators.payload import TierReply, request_json
from reconciler.lens import Lens

STDERR_TAIL_LINES = 20
STDERR_TAIL_CHARS = 2000
_SECRET_NAME = re.compile(r"pass|secret|token|key|credential", re.IGNORECASE)
_URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)


def redact(text: str, env: Mapping[str, str]) -> str:
    """``text`` with secret-looking environment values and URL user-info as ``***``."""
    secrets = sorted(
        (v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 4),
        key=len,
        reverse=True,
    )
    for value in secrets:
        text = text.replace(value, "***")
    return _URL_USERINFO.sub(r"\1***@", text)


def stderr_tail(raw: bytes, env: Mapping[str, str]) -> str:
    """The last :data:`STDERR_TAIL_LINES` lines of ``raw`` (at most
    :data:`STDERR_TAIL_CHARS` characters), redacted; ``""`` when it is empty."""
    lines = raw.decode("utf-8", "replace").strip().splitlines()[-STDERR_TAIL_LINES:]
    return redact("\n".join(lines)[-STDERR_TAIL_CHARS:], env)


@dataclass(frozen=True)
class CommandSettings:
    """A resolved command tier.

    Attributes:
        run: the argv.
        cwd: the working directory (the lens directory in the working tree).
        timeout_s: seconds before the process group is killed.
        env: the environment the program runs with (also what is redacted).
    """

    run: tuple[str, ...]
    cwd: Path
    timeout_s: float
    env: Mapping[str, str]

    def program_hashes(self) -> dict[str, str]:
        """``{argv element: sha256}`` of each element that names a file (relative to ``cwd``)."""
        out: dict[str, str] = {}
        for arg in self.run:
            path = self.cwd / arg
            try:
                if path.is_file():
                    out[arg] = hashlib.sha256(path.read_bytes()).hexdigest()
            except (OSError, ValueError):
                continue
        return out


def resolve(lens: Lens, root: Path, env: Mapping[str, str]) -> tuple[CommandSettings | None, str]:
    """The command tier's settings for ``lens`` in the working tree at ``root``, or ``(None, why)``.

    ``root`` is the repository's working tree; the program runs in ``root/<lens dir>``.
    """
    cfg = lens.config.generator.command
    if cfg is None:
        return None, (
            f"{lens.root}/lens.yaml lists the command tier but has no "
            "`generator.command: {run: [program, ...]}` block"
        )
    return CommandSettings(cfg.run, root / lens.root, cfg.timeout_s, dict(env)), ""


class CommandGenerator:
    """Runs the program once per generation (a cache hit runs nothing).

    Raises nothing to its caller: every failure is an error :class:`Generation`.
    """

    def __init__(self, settings: CommandSettings, cache: GenerationCache | None = None) -> None:
        self.settings = settings
        self.cache = cache
        self._programs: dict[str, str] | None = None

    def key_material(self, payload: str) -> dict[str, object]:
        """What the cache key of one call is made of (module docstring)."""
        s = self.settings
        if self._programs is None:  # read once per run: the files do not change under it
            self._programs = s.program_hashes()
        return {
            "tier": "command",
            "request": payload,
            "run": list(s.run),
            "programs": self._programs,
            "timeout_s": s.timeout_s,
        }

    def __call__(
        self, lens: Lens, request: GenerationRequest, hint: str | None = None
    ) -> Generation:
        """Generate for ``request``: from the cache, else by running the program."""
        payload = request_json(lens, request, hint)
        if self.cache is None:
            return self.run(lens, payload, hint)
        material = self.key_material(payload)
        return self.cache.through("command", material, lambda: self.run(lens, payload, hint), lens)

    def peek(self, lens: Lens, request: GenerationRequest) -> Generation | None:
        """The cached answer the next call for ``request`` would get, else ``None`` (no call)."""
        if self.cache is None:
            return None
        return self.cache.peek("command", self.key_material(request_json(lens, request, None)))

    def run(self, lens: Lens, payload: str, hint: str | None) -> Generation:
        """Run the program on ``payload`` and read its reply (module docstring)."""
        s = self.settings
        usage: dict[str, object] = {
            "program": " ".join(s.run),
            "hint": hint,
            "request_sha256": payload_digest(payload),
        }
        started = time.perf_counter()
        try:
            out, err, code = _communicate(s, payload.encode("utf-8"))
        except OSError as exc:
            return _failed(usage, f"could not start `{s.run[0]}`: {exc.strerror or exc}", "")
        usage["latency_s"] = round(time.perf_counter() - started, 3)
        tail = stderr_tail(err, s.env)
        if code is None:
            return _failed(usage, f"timed out after {s.timeout_s:g}s (process group killed)", tail)
        if code != 0:
            return _failed(usage, f"exited with status {code}", tail)
        try:
            reply = TierReply.model_validate(json.loads(out.decode("utf-8")))
        except (ValueError, ValidationError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return _failed(usage, f"unparseable output (want one JSON object: {first})", tail)
        usage.update(tokens=reply.tokens, cost_usd=reply.cost_usd)
        if reply.sql is None:
            return Generation("command", None, f"command tier declined: {reply.declined}", usage)
        sql = reply.sql.strip().rstrip(";").strip()
        try:
            guard.check_read_only(
                sql, lens.config.dialect, allow_functions=lens.config.allow_functions
            )
        except UnsafeSqlError as exc:
            return _failed(usage, f"returned SQL the guard refuses: {exc.message}", tail)
        return Generation("command", sql, None, usage)


def _failed(usage: dict[str, object], what: str, tail: str) -> Generation:
    usage["stderr"] = tail
    reason = f"command tier failed: {what}" + (f"; stderr: {tail}" if tail else "")
    return Generation("command", None, reason, usage, error=True)


def _communicate(s: CommandSettings, data: bytes) -> tuple[bytes, bytes, int | None]:
    """``(stdout, stderr, exit status)``; status ``None`` when it timed out and was killed."""
    proc = subprocess.Popen(
        list(s.run),
        cwd=s.cwd,
        env=dict(s.env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, so a timeout kills its children too
    )
    try:
        out, err = proc.communicate(data, timeout=s.timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # it exited between the two calls
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return out, err, None
    except BaseException:
        # Ctrl-C, SIGTERM or any failure while waiting: the program (and whatever it
        # started) must not go on calling a paid endpoint after dst stopped.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()  # reaps it and closes its pipes
        raise
    return out, err, proc.returncode
