"""``dst mcp``: the serving path for agents, driven by the official MCP SDK's own client.

Every test spawns the real server (``python -m reconciler mcp`` with this checkout
first on ``PYTHONPATH``) in a real repository holding the example lenses, seeded and
promoted by ``dst apply``, and talks to it through the SDK's ``ClientSession`` over
stdio (``stdio_client``) or, once, over streamable HTTP (``streamable_http_client``).
What it serves is checked against the repository itself: the answer files, the
serving refs, and ``dst ask``'s own output for the same question.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
import yaml

mcp = pytest.importorskip("mcp", reason="dst mcp needs the mcp extra")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from tests.helpers import PROJECT, command_env, commit, dst, git, invoke  # noqa: E402

CERTIFIED_Q = "average order value by quarter in 2023"
REFUSED_Q = "What is the average employee salary?"
NEW_ID = "orders_q1_2024"
NEW_Q = "How many orders were placed in Q1 2024?"
NEW_ANSWER = f"""\
id: {NEW_ID}
question: {NEW_Q}
sql: |
  SELECT COUNT(*) AS order_count
  FROM orders
  WHERE order_date BETWEEN DATE '2024-01-01' AND DATE '2024-03-31'
status: active
provenance:
  certified_by: Dana Whitfield
  certified_at: "2025-01-15"
  source: manual
"""
TOOLS = {"list_lenses", "describe_lens", "ask", "list_answers", "explain"}


@pytest.fixture(scope="module")
def served(_promoted_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example lenses, all promoted (dst mcp writes nothing, so tests share it)."""
    path = tmp_path_factory.mktemp("mcp") / "repo"
    shutil.copytree(_promoted_template, path, symlinks=True)
    return path


def server_env(repo: Path) -> dict[str, str]:
    """The server's environment: hermetic git, and this checkout's ``reconciler`` first."""
    env = command_env(repo)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), env.get("PYTHONPATH")]))
    return env


@contextlib.asynccontextmanager
async def session(repo: Path, *args: str) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with ``dst mcp ARGS`` spawned in ``repo``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "reconciler", "mcp", *args],
        cwd=str(repo),
        env=server_env(repo),
    )
    with (repo.parent / "mcp-stderr.log").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


def run(script: Callable[[], Awaitable[None]]) -> None:
    """Run one async test body to its end."""
    anyio.run(script)


async def call(client: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """``tool``'s structured result, checked against the output schema it publishes."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    listed = await client.list_tools()
    schema = next(t.output_schema for t in listed.tools if t.name == tool)
    jsonschema.validate(result.structured_content, schema)
    return result.structured_content


async def refused_call(client: ClientSession, tool: str, **arguments: Any) -> str:
    """The error text of a tool call that must fail."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)


def serving(repo: Path, lens: str) -> str:
    return git(repo, "rev-parse", f"refs/dst/serving/{lens}")


def files_state(repo: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``repo`` (``.git`` and ``.dst`` included) with its size and mtime."""
    return {
        str(p.relative_to(repo)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(repo.rglob("*"))
        if p.is_file() and p.name != "mcp-stderr.log"
    }


def answer_files(repo: Path, lens: str) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted((repo / "lenses" / lens / "answers").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        out[data["id"]] = data
    return out


def test_each_tool_publishes_its_schemas_and_returns_its_shape(served: Path) -> None:
    # with no profile cache and no load markers, a write would have something to write
    for memo in ("profiles", "checked"):
        shutil.rmtree(served / ".dst" / memo, ignore_errors=True)
    before = files_state(served)
    answers = answer_files(served, "sales")
    metric_files = (served / "lenses" / "sales" / "metrics").glob("*.yaml")
    metrics = {yaml.safe_load(p.read_text())["name"] for p in metric_files}

    async def script() -> None:
        async with session(served) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema is not None and tool.output_schema["type"] == "object"
                assert tool.annotations is not None and tool.annotations.read_only_hint is True
            assert set(tools["ask"].input_schema["required"]) == {"question", "lens"}

            listed = await call(client, "list_lenses")
            by_lens = {x["lens"]: x for x in listed["lenses"]}
            assert set(by_lens) == {"finance", "sales"}
            sales = by_lens["sales"]
            assert sales["deployment"] == serving(served, "sales")
            assert (sales["gate"], sales["action"], sales["environment"]) == (
                "block",
                "promote",
                None,
            )
            assert sales["certified_answers"] == len(answers)
            assert sales["score"]["total"] == len(answers)
            assert sales["score"]["correct"] == len(answers)

            described = await call(client, "describe_lens", lens="sales")
            assert described["deployment"] == sales["deployment"]
            assert {m["name"] for m in described["metrics"]} == metrics
            revenue = next(m for m in described["metrics"] if m["name"] == "net_revenue")
            assert "revenue" in revenue["synonyms"] and revenue["model"] == "orders"
            orders = next(m for m in described["models"] if m["name"] == "orders")
            assert orders["time_dimensions"] and "customers" in orders["joins"]
            assert described["exclusions"] == ["salary", "employee", "payroll"]
            assert {c["term"] for c in described["clarify"]} == {"performance", "best"}

            listed_answers = await call(client, "list_answers", lens="sales")
            got = {a["answer"]: a for a in listed_answers["answers"]}
            assert set(got) == set(answers)
            assert got["orders_q3_2024"]["question"] == answers["orders_q3_2024"]["question"]
            assert all(a["verified"] for a in got.values())
            everything = await call(client, "list_answers")
            assert {a["lens"] for a in everything["answers"]} == {"finance", "sales"}

            explained = await call(client, "explain", answer="orders_q3_2024")
            source = answers["orders_q3_2024"]
            assert (explained["lens"], explained["sql"]) == ("sales", source["sql"])
            assert explained["certified_by"] == source["provenance"]["certified_by"]
            assert "metrics/order_count" in explained["assets"]
            assert explained["request"]["question"] == source["question"]
            assert explained["request"]["certified_matching"] is False
            assert explained["request"]["excluded_answer"] == "orders_q3_2024"

            generated = await call(client, "ask", question=NEW_Q, lens="sales")
            assert (generated["route"], generated["trust_state"]) == ("generated", "grounded")
            assert generated["rows"] and all(g["passed"] for g in generated["gates"])

            missing = await refused_call(client, "ask", question="anything", lens="nosuch")
            assert "no lens 'nosuch'" in missing and "serving: finance, sales" in missing
            unknown = await refused_call(client, "explain", answer="no_such_answer")
            assert "no certified answer 'no_such_answer'" in unknown
            bad_env = await refused_call(client, "list_lenses", env="nosuch")
            assert "dst.yaml has no environment of that name" in bad_env

    run(script)
    assert files_state(served) == before, "dst mcp wrote to the repository"


def test_a_certified_answer_is_served_certified_and_an_excluded_question_refused(
    served: Path,
) -> None:
    one_shot = invoke(served, "ask", CERTIFIED_Q, "--lens", "sales", "--format", "json")
    assert one_shot.code == 0, one_shot.stderr

    async def script() -> None:
        async with session(served) as client:
            out = await call(client, "ask", question=CERTIFIED_Q, lens="sales")
            assert (out["route"], out["trust_state"]) == ("certified_answer", "certified")
            assert out["answer"] == "aov_by_quarter_2023" and out["served"] is True
            assert out["deployment"] == serving(served, "sales")
            assert out["columns"] == one_shot.json()["columns"]
            assert out["rows"] == one_shot.json()["rows"] and out["row_count"] == 4
            assert out["sql"] == one_shot.json()["sql"]

            refused = await call(client, "ask", question=REFUSED_Q, lens="sales")
            assert (refused["route"], refused["trust_state"]) == ("refuse", "not_applicable")
            assert refused["served"] is False and refused["rows"] == []
            assert refused["sql"] is None and refused["term"] in ("salary", "employee")
            assert refused["reason"].startswith("refused: this lens does not answer")

    run(script)


def test_it_serves_the_serving_version_and_picks_up_a_moved_ref_without_restart(
    served: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(served, repo, symlinks=True)
    first = serving(repo, "sales")

    async def script() -> None:
        async with session(repo) as client:
            before = await call(client, "ask", question=NEW_Q, lens="sales")
            assert before["route"] == "generated" and before["deployment"] == first

            # committed, never applied: the serving version still has no such answer
            commit(repo, {f"lenses/sales/answers/{NEW_ID}.yaml": NEW_ANSWER}, "certify q1")
            unapplied = await call(client, "ask", question=NEW_Q, lens="sales")
            assert unapplied["route"] == "generated" and unapplied["answer"] is None
            assert unapplied["deployment"] == first
            listed = await call(client, "list_answers", lens="sales")
            assert NEW_ID not in {a["answer"] for a in listed["answers"]}

            applied = invoke(repo, "apply", "--lens", "sales", "--format", "json")
            assert applied.code == 0, applied.stdout + applied.stderr
            assert applied.lens("sales")["action"] == "promoted"
            moved = serving(repo, "sales")
            assert moved != first

            after = await call(client, "ask", question=NEW_Q, lens="sales")
            assert (after["route"], after["trust_state"]) == ("certified_answer", "certified")
            assert after["answer"] == NEW_ID and after["deployment"] == moved
            assert after["rows"] == before["rows"]  # the generated SQL was right all along
            lenses = {x["lens"]: x for x in (await call(client, "list_lenses"))["lenses"]}
            assert lenses["sales"]["deployment"] == moved

            # the same proof as dst ask: a serving ref at a branch commit is refused …
            git(repo, "update-ref", "refs/dst/serving/sales", "HEAD")
            unproven = await refused_call(client, "ask", question=CERTIFIED_Q, lens="sales")
            assert "dst serves only a deployment whose recorded gate passed" in unproven
            # … and the next call after the ref is put back serves again
            git(repo, "update-ref", "refs/dst/serving/sales", moved)
            again = await call(client, "ask", question=CERTIFIED_Q, lens="sales")
            assert again["trust_state"] == "certified" and again["deployment"] == moved

            # dst seed replaces the embedded warehouse: the next answer reads the new data
            orders = repo / "lenses" / "sales" / "seeds" / "orders.csv"
            lines = orders.read_text().splitlines(keepends=True)
            orders.write_text("".join(lines[:1] + lines[1::2]))
            assert invoke(repo, "seed").code == 0
            reseeded = await call(client, "ask", question=NEW_Q, lens="sales")
            one_shot = invoke(repo, "ask", NEW_Q, "--lens", "sales", "--format", "json")
            assert reseeded["rows"] == one_shot.json()["rows"] != after["rows"]

    run(script)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_streamable_http_serves_the_same_tools_and_stops_cleanly(served: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "mcp", "--http", f"127.0.0.1:{port}"],
        cwd=served,
        env=server_env(served),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "dst mcp --http never listened"
            time.sleep(0.1)

        async def script() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = {t.name for t in (await client.list_tools()).tools}
                assert tools == TOOLS
                out = await call(client, "ask", question=CERTIFIED_Q, lens="sales")
                assert (out["route"], out["trust_state"]) == ("certified_answer", "certified")
                assert out["deployment"] == serving(served, "sales")

        run(script)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert f"at http://127.0.0.1:{port}/mcp" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_exit_codes_clean_shutdown_0_and_bad_input_2(served: Path) -> None:
    closed = dst(served, "mcp")  # stdin at end of file: the client hung up at once
    assert closed.code == 0, closed.stderr
    assert closed.stdout == "" and "serving the default environment over stdio" in closed.stderr

    env = invoke(served, "mcp", "--env", "nosuch")
    assert env.code == 2 and "--env nosuch: dst.yaml has no environment" in env.stderr
    for address in ("127.0.0.1:0", "127.0.0.1:http", "127.0.0.1:70000"):
        bad = invoke(served, "mcp", "--http", address)
        assert bad.code == 2 and "not HOST:PORT" in bad.stderr, bad.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = invoke(served, "mcp", "--http", f"127.0.0.1:{port}")
    assert busy.code == 2 and "cannot listen there" in busy.stderr, busy.stderr
    nowhere = invoke(served.parent, "mcp")
    assert nowhere.code == 2, nowhere.stderr


def test_the_warm_ratio_benchmark_runs(tmp_path: Path) -> None:
    from tests.benchmarks import run as bench
    from tests.benchmarks.mcp import bench_mcp

    row = bench_mcp(tmp_path, runs=1, calls=2)  # tiny: it runs; the figure is the full run's
    assert row.measured_s is not None and row.measured_s >= 0
    assert row.baseline_s is not None and row.baseline_s > 0
    assert row.met in ("met", "MISSED") and "route certified_answer" in row.note
    assert bench.render([row]).count("\n") == 3
