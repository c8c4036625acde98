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
one such object (unknown keys included), more than :data:`MAX_STREAM_BYTES` on
stdout or on stderr, or SQL the read-only guard refuses is an *error* generation
(the suite scores it ``error``). What the program printed is kept whole only in a
local log under ``.dst/logs/command/`` (:mod:`reconciler.generators.calllog`,
git-ignored); the reason and the record carry its exit status, the byte counts,
the log's path and the last lines of stderr redacted *by value*
(:mod:`reconciler.generators.redaction`): every value of the environment the program
received outside a short safe list, URL credentials and common token shapes.

Every program path is checked when the tier is resolved (:func:`resolve`): an
argument naming a file (relative to the lens directory) must be a regular file
inside the repository, reached without a symlink (:mod:`reconciler.files`);
the executable itself may be an installed program (a bare name on ``PATH`` or an
absolute path).

The program runs in a process group of its own, and that group is ended after
every reply, not only on a timeout, so a child it left behind does not outlive the
call. The program's environment carries :data:`CALL_MARK` (a fresh id per call);
on Linux every process that still carries it afterwards is ended too, which
reaches a daemon that left the group (a program that both leaves its session and
clears its environment is beyond this; run such a program in a container).

Every answer (SQL or decline) is cached (:mod:`reconciler.generators.cache`), keyed
by the request JSON, the argv, the hash of each file the argv names, the timeout,
the sample and the occurrence in the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import selectors
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from reconciler import files as repofiles, guard
from reconciler.assembly.request import GenerationRequest
from reconciler.errors import LensLoadError, UnsafeSqlError
from reconciler.generators import calllog
from reconciler.generators.cache import GenerationCache, payload_digest
from reconciler.generators.generation import Generation
from reconciler.generators.payload import TierReply, request_json
from reconciler.generators.redaction import Redactor, tail
from reconciler.lens import Lens

MAX_STREAM_BYTES = 8 * 1024 * 1024
"""What one call may print on stdout, and on stderr: beyond it the call is an error."""
CALL_MARK = "DST_GENERATION_CALL"
"""The variable, set to a fresh id per call, that marks every process a call started."""
EXIT_GRACE_S = 1.0
"""How long the pipes may stay open after the program exited (a child holding them)."""
_CHUNK = 64 * 1024
_POLL_S = 0.2


@dataclass(frozen=True)
class CommandSettings:
    """A resolved command tier.

    Attributes:
        run: the argv.
        cwd: the working directory (the lens directory in the working tree).
        timeout_s: seconds before the process group is killed.
        env: the environment the program runs with (also what is redacted).
        root: the repository's working tree, where ``.dst/logs/`` keeps what the
            program printed; ``None``: no log.
        max_stream_bytes: the cap on stdout, and on stderr (:data:`MAX_STREAM_BYTES`).
    """

    run: tuple[str, ...]
    cwd: Path
    timeout_s: float
    env: Mapping[str, str]
    root: Path | None = None
    max_stream_bytes: int = MAX_STREAM_BYTES

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


def resolve(
    lens: Lens, root: Path, env: Mapping[str, str], *, log: bool = True
) -> tuple[CommandSettings | None, str]:
    """The command tier's settings for ``lens`` in the working tree at ``root``, or ``(None, why)``.

    ``root`` is the repository's working tree; the program runs in ``root/<lens dir>``, and
    what it prints is kept under ``root/.dst/logs/`` unless ``log`` is false (a serving
    process that writes nothing).

    Raises:
        LensLoadError: an argument names a file outside the repository, through a
            symlink, or one that is not a regular file (:func:`check_program`).
    """
    cfg = lens.config.generator.command
    if cfg is None:
        return None, (
            f"{lens.root}/lens.yaml lists the command tier but has no "
            "`generator.command: {run: [program, ...]}` block"
        )
    check_program(cfg.run, root, lens.root)
    kept = root if log else None
    return CommandSettings(cfg.run, root / lens.root, cfg.timeout_s, dict(env), kept), ""


def check_program(run: tuple[str, ...], root: Path, lens_root: str) -> None:
    """Refuse an argv that would read a file from outside the repository.

    An element naming a path — relative to the lens directory, or absolute — must
    be written inside ``root``, with no symlink on the way, and be a regular file
    when it exists. Options (``-c``, ``--model=x``) are not paths. The executable
    (the first element) may be an installed program: a bare name that is not a
    file of the lens directory, or an absolute path outside the repository.

    Raises:
        LensLoadError: at ``<lens>/lens.yaml``, naming the element and why.
    """
    cwd = root / lens_root
    for i, arg in enumerate(run):
        if not arg or arg.startswith("-"):
            continue
        path = Path(arg)
        local = cwd / path
        names_file = os.path.lexists(local)
        if path.is_absolute():
            if repofiles.relative(root, path) is None:
                if i > 0 and os.path.lexists(path):
                    raise LensLoadError(
                        f"{lens_root}/lens.yaml",
                        f"generator.command.run names {arg!r}, a file outside the repository; "
                        "dst runs only generator programs committed in the repository",
                        fix="commit the program in the lens directory and name it relative to it",
                    )
                continue
        elif i == 0 and "/" not in arg and not names_file:
            continue  # a program on PATH
        elif "/" not in arg and not names_file:
            continue  # a plain word (a module name, a question), not a path
        try:
            rel = repofiles.check_path(root, local, shown=arg)
            if os.path.lexists(root / rel):
                repofiles.check_file(root, root / rel)
        except LensLoadError as exc:
            raise LensLoadError(
                f"{lens_root}/lens.yaml",
                f"generator.command.run names {arg!r}: {exc.message}",
                fix=exc.fix,
            ) from None


class CommandGenerator:
    """Runs the program once per generation (a cache hit runs nothing).

    Raises nothing to its caller: every failure is an error :class:`Generation`.
    """

    def __init__(self, settings: CommandSettings, cache: GenerationCache | None = None) -> None:
        self.settings = settings
        self.cache = cache
        self._programs: dict[str, str] | None = None
        self._redact = Redactor.of(settings.env)

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
        material = self.key_material(request_json(lens, request, None))
        return self.cache.peek("command", material, lens)

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
            got = _communicate(s, payload.encode("utf-8"))
        except OSError as exc:
            what = self._redact(f"could not start `{s.run[0]}`: {exc.strerror or exc}")
            return _failed(usage, what)
        usage["latency_s"] = round(time.perf_counter() - started, 3)
        if got.overflow is not None:
            what = (
                f"printed more than {s.max_stream_bytes} bytes on {got.overflow} "
                "(its process group was ended)"
            )
            return self._failed(usage, what, got, keep_stdout=True)
        if got.status is None:
            what = f"timed out after {s.timeout_s:g}s (process group killed)"
            return self._failed(usage, what, got)
        if got.status != 0:
            return self._failed(usage, f"exited with status {got.status}", got)
        try:
            reply = TierReply.model_validate(json.loads(got.stdout.decode("utf-8")))
        except (ValueError, ValidationError) as exc:
            what = f"unparseable output (want one JSON object: {_reply_problem(exc)})"
            return self._failed(usage, what, got, keep_stdout=True)
        usage.update(tokens=reply.tokens, cost_usd=reply.cost_usd)
        if got.stderr:
            log = self._log(got, keep_stdout=False, status=0)
            usage["stderr"] = {"bytes": len(got.stderr), "log": log}
        if reply.sql is None:
            declined = self._redact(str(reply.declined))
            return Generation("command", None, f"command tier declined: {declined}", usage)
        sql = reply.sql.strip().rstrip(";").strip()
        try:
            guard.check_read_only(
                sql, lens.config.dialect, allow_functions=lens.config.allow_functions
            )
        except UnsafeSqlError as exc:
            what = f"returned SQL the guard refuses: {exc.message}"
            return self._failed(usage, what, got)
        return Generation("command", sql, None, usage)

    def _log(self, got: Exchange, *, keep_stdout: bool, status: int | None) -> str | None:
        """Write what the program printed to the local log; its relative path, or ``None``."""
        s = self.settings
        facts = [
            f"program: {' '.join(s.run)}",
            f"directory: {s.cwd}",
            f"exit status: {'killed' if status is None else status}",
        ]
        streams = [("stderr", got.stderr)]
        if keep_stdout:
            streams.append(("stdout", got.stdout))
        return calllog.write(s.root, "command", facts, streams)

    def _failed(
        self, usage: dict[str, object], what: str, got: Exchange, *, keep_stdout: bool = False
    ) -> Generation:
        """An error generation for ``what``, with the stderr summary (module docstring)."""
        log = self._log(got, keep_stdout=keep_stdout, status=got.status)
        redacted = tail(got.stderr, self._redact)
        summary: dict[str, object] = {
            "exit_status": got.status,
            "bytes": len(got.stderr),
            "stdout_bytes": len(got.stdout),
            "log": log,
            "tail": redacted,
        }
        usage["stderr"] = summary
        kept = f"whole in {log}" if log else "not kept (the log could not be written)"
        shown = f"; stderr: {len(got.stderr)} bytes, {kept}"
        if redacted:
            shown += f"; tail: {redacted}"
        return _failed(usage, self._redact(what) + shown)


def _failed(usage: dict[str, object], what: str) -> Generation:
    return Generation("command", None, f"command tier failed: {what}", usage, error=True)


def _reply_problem(exc: ValueError | ValidationError) -> str:
    """What is wrong with a reply, without echoing any of its values."""
    if isinstance(exc, ValidationError):
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False, include_context=False)
        ]
        return "; ".join(problems[:3])
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return first[:200] or type(exc).__name__


@dataclass(frozen=True)
class Exchange:
    """What one run of the program gave back.

    Attributes:
        stdout: what it printed on stdout (at most the cap, plus one chunk).
        stderr: the same, for stderr.
        status: its exit status; ``None`` when dst ended it (a timeout, a stream
            over the cap).
        overflow: ``"stdout"`` or ``"stderr"``, the stream that went over the cap.
    """

    stdout: bytes
    stderr: bytes
    status: int | None
    overflow: str | None = None


def _communicate(s: CommandSettings, data: bytes) -> Exchange:
    """Run the program on ``data``; its group (and marked processes) are ended afterwards.

    Raises:
        OSError: the program could not be started.
        BaseException: an interrupt while waiting, after the program was ended.
    """
    marker = uuid.uuid4().hex
    proc = subprocess.Popen(
        list(s.run),
        cwd=s.cwd,
        env={**s.env, CALL_MARK: marker},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, ended after the reply
    )
    try:
        out, err, ended, overflow = _exchange(proc, data, s.timeout_s, s.max_stream_bytes)
    finally:
        # Always, on success too: whatever the program started must not outlive the
        # call (and on Ctrl-C go on calling a paid endpoint after dst stopped).
        _end(proc, marker)
    status = None if ended else proc.returncode
    return Exchange(bytes(out), bytes(err), status, overflow)


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the program has exited, without reaping it where the platform allows
    (its pid then stays its group's, so ending the group cannot hit another one)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # pragma: no cover - macOS: poll reaps, a pid reuse is remote
        return proc.poll() is not None
    try:
        return waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class _Pipes:
    """The program's three pipes, driven without blocking: stdin fed, stdout and stderr
    read into buffers until they close or one passes the cap."""

    def __init__(self, proc: subprocess.Popen[bytes], data: bytes, cap: int) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.stdin = proc.stdin
        self.out_fd, self.err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        self.buffers = {self.out_fd: bytearray(), self.err_fd: bytearray()}
        self.cap = cap
        self.overflow: str | None = None
        self.pending = memoryview(data)
        self.sel = selectors.DefaultSelector()
        for fd in self.buffers:
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ)
        if self.pending:
            os.set_blocking(self.stdin.fileno(), False)
            self.sel.register(self.stdin.fileno(), selectors.EVENT_WRITE)
        else:
            self.stdin.close()

    @property
    def open(self) -> bool:
        """Some pipe is still being fed or read."""
        return bool(self.sel.get_map())

    def step(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds and move what is ready; sets :attr:`overflow`."""
        for key, _events in self.sel.select(timeout):
            fd = int(key.fd)
            if fd in self.buffers:
                self._read(fd)
            else:
                self._write(fd)

    def _write(self, fd: int) -> None:
        try:
            self.pending = self.pending[os.write(fd, self.pending[:_CHUNK]) :]
        except BlockingIOError:
            return
        except OSError:  # it stopped reading (a broken pipe): what it read is its input
            self.pending = self.pending[:0]
        if not self.pending:
            self.sel.unregister(fd)
            with contextlib.suppress(OSError):
                self.stdin.close()

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self.sel.unregister(fd)
            return
        self.buffers[fd] += chunk
        if len(self.buffers[fd]) > self.cap:
            self.overflow = "stdout" if fd == self.out_fd else "stderr"

    def close(self) -> None:
        """Stop watching the pipes (the streams themselves are closed by :func:`_end`)."""
        self.sel.close()


def _exchange(
    proc: subprocess.Popen[bytes], data: bytes, timeout_s: float, cap: int
) -> tuple[bytearray, bytearray, bool, str | None]:
    """Feed stdin and read both streams, bounded in time and size.

    Returns:
        ``(stdout, stderr, ended by dst, stream over the cap)``; "ended" is true on a
        timeout or an overflow.
    """
    deadline = time.monotonic() + timeout_s
    pipes = _Pipes(proc, data, cap)
    ended = False
    try:
        exited_at: float | None = None
        while pipes.open and pipes.overflow is None:
            now = time.monotonic()
            if now >= deadline:
                ended = True
                break
            if exited_at is None and _exited(proc):
                exited_at = now
            if exited_at is not None and now - exited_at >= EXIT_GRACE_S:
                break  # the program replied and exited; a child holds its pipes open
            pipes.step(min(deadline - now, _POLL_S))
        while not ended and pipes.overflow is None and not _exited(proc):
            if time.monotonic() >= deadline:  # both streams closed, the program still runs
                ended = True
            time.sleep(0.02)
    finally:
        pipes.close()
    out, err = pipes.buffers[pipes.out_fd], pipes.buffers[pipes.err_fd]
    return out, err, ended or pipes.overflow is not None, pipes.overflow


def _end(proc: subprocess.Popen[bytes], marker: str) -> None:
    """End the program's process group and every process carrying ``marker``; reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    _end_marked(marker)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _end_marked(marker: str, rounds: int = 3) -> None:
    """SIGKILL every process whose environment holds ``CALL_MARK=marker`` (Linux ``/proc``).

    A few rounds, so a process that forked while it was being found is found next.
    """
    proc_dir = Path("/proc")
    if not (proc_dir / "self" / "environ").exists():
        return
    needle = f"\0{CALL_MARK}={marker}\0".encode()
    me = os.getpid()
    for _ in range(rounds):
        found = 0
        for entry in os.scandir(proc_dir):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                with open(os.path.join(entry.path, "environ"), "rb") as handle:
                    environ = b"\0" + handle.read()
            except OSError:
                continue
            if needle in environ + b"\0":
                found += 1
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
        if not found:
            return
