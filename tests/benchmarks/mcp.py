"""The warm serving path: a certified ``ask`` through one ``dst mcp`` session against a
one-shot ``dst ask`` process, as a ratio (target ≤ 0.1).

Run from the project root::

    python3 -m tests.benchmarks.mcp                # 7 paired samples of 50 calls each
    python3 -m tests.benchmarks.run --only mcp     # the same row in the main table

Both sides are CPU seconds (user + system), so a busy machine's waits do not count.
The one-shot side is a whole ``python -m reconciler ask … --format json`` process
(:func:`tests.benchmarks.run.process_usage`). The session side is the server
process's own CPU time over a batch of ``calls`` certified asks, read from
``/proc/<pid>/stat`` before and after, divided by ``calls`` (a batch, because one
call is below the clock-tick resolution); the client's own work is not counted, as
it is the agent host's. The two alternate (one-shot, batch, one-shot …), after one
warm-up of each, and the row reports the medians; wall milliseconds per call are in
the note.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks import run

QUESTION = run.ASK_CERTIFIED
PROTOCOL = "2025-06-18"


class Session:
    """A spawned ``dst mcp`` spoken to in newline-delimited JSON-RPC on its pipes (the
    stdio transport), so its process id, and so its CPU time, is at hand."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "reconciler", "mcp"],
            cwd=repo,
            env=run._env(repo),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "dst-bench", "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its ``result`` (notifications in between are skipped).

        Raises:
            RuntimeError: the server answered with an error, or hung up.
        """
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if message.get("id") != self._id:
                continue
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return dict(message["result"])
        raise RuntimeError(f"dst mcp exited {self.proc.wait()} during {method}")

    def ask(self, question: str, lens: str) -> dict[str, Any]:
        """The ``ask`` tool's structured result."""
        result = self.request(
            "tools/call", {"name": "ask", "arguments": {"question": question, "lens": lens}}
        )
        if result.get("isError"):
            raise RuntimeError(f"ask: {result.get('content')}")
        return dict(result["structuredContent"])

    def cpu_s(self) -> float:
        """The server's CPU seconds so far (all its threads)."""
        return run._cpu_seconds(self.proc.pid)

    def close(self) -> int:
        """Hang up (stdin closes: a clean shutdown) and return the exit code."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=60)
        finally:
            self.proc.stdout.close()


def bench_mcp(work: Path, runs: int, calls: int = 50) -> run.Row:
    """A certified ``ask`` through one warm session vs a one-shot ``dst ask`` (≤ 0.1×)."""
    repo = run._example_repo(work, "mcp", 21)
    applied = subprocess.run(
        [sys.executable, "-m", "reconciler", "apply"], cwd=repo, env=run._env(repo),
        capture_output=True,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    one_shot = run.dst_process(repo, "ask", QUESTION, "--lens", "sales", "--format", "json")
    session = Session(repo)
    try:
        first = session.ask(QUESTION, "sales")  # loads the lens, opens the warehouse
        assert (first["route"], first["trust_state"]) == ("certified_answer", "certified"), first

        def batch() -> tuple[float, float]:
            cpu, wall = session.cpu_s(), time.perf_counter()
            for _ in range(calls):
                session.ask(QUESTION, "sales")
            return (session.cpu_s() - cpu) / calls, (time.perf_counter() - wall) / calls

        if runs >= 3:  # warm-up of each, as run.paired does
            one_shot.run()
            batch()
        processes: list[float] = []
        warm: list[tuple[float, float]] = []
        for _ in range(runs):
            processes.append(one_shot.run().cpu_s)
            warm.append(batch())
    finally:
        code = session.close()
    assert code == 0, f"dst mcp exited {code} on a clean shutdown"
    wall_ms = statistics.median(w for _, w in warm) * 1000
    return run.Row(
        "ask (certified) in one dst mcp session vs a one-shot dst ask",
        statistics.median(c for c, _ in warm),
        statistics.median(processes),
        0.1,
        f"server CPU per call over {calls} calls; {wall_ms:.1f} ms wall per call; "
        f"route {first['route']}, trust {first['trust_state']}",
    )


def main(argv: list[str] | None = None) -> run.Row:
    """Run the row and print it as the main table does."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="paired samples (median)")
    parser.add_argument("--calls", type=int, default=50, help="session calls per sample")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dst-bench-mcp-") as tmp:
        row = bench_mcp(Path(tmp), args.runs, args.calls)
    print(run.render([row]), flush=True)
    return row


if __name__ == "__main__":
    main()
