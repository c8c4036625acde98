"""dst's performance targets as ratios, median of several runs, printed as one table.

Run from the project root::

    python3 -m tests.benchmarks.run            # the stated sizes (500 x 200 x 50, 200 answers …)
    python3 -m tests.benchmarks.run --quick    # tiny sizes: exercises every benchmark in seconds

Each row compares dst with a baseline measured on the same machine in the same
run, so the ratio, not the absolute time, is the target. Rows of whole processes
(plan, status, help, the pre-push hook) are paired: the command and its baseline
run alternately, one warm-up each, then the median of at least seven runs of
each, in CPU seconds (user + system, waited-for children included: ``wait4(2)``),
so a busy machine's waits do not count; the memory row is the median peak RSS.
Synthetic repositories are cached (``tests/benchmarks/synth.py``); PostgreSQL
rows skip with a reason when ``DST_BENCH_PG`` (default
``postgresql://postgres@127.0.0.1:5432/test``) does not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.benchmarks import synth

PROJECT = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get("DST_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


@dataclass
class Row:
    """One target: ``measured / baseline`` against ``target`` (``≤``).

    ``measured_s`` and ``baseline_s`` are seconds (CPU seconds for whole
    processes), or KiB of peak resident memory when ``unit`` is ``"KiB"``.
    """

    name: str
    measured_s: float | None
    baseline_s: float | None
    target: float
    note: str = ""
    unit: str = "s"

    @property
    def ratio(self) -> float | None:
        if self.measured_s is None or not self.baseline_s:
            return None
        return self.measured_s / self.baseline_s

    @property
    def met(self) -> str:
        r = self.ratio
        return "skipped" if r is None else ("met" if r <= self.target else "MISSED")


def median(fn: Callable[[], float], runs: int) -> float:
    """Median of ``runs`` calls of ``fn`` (each returns seconds)."""
    return statistics.median(fn() for _ in range(runs))


def _env(cwd: Path) -> dict[str, str]:
    env = {**os.environ, **synth.GIT_ENV, "HOME": str(cwd)}
    env.pop("DST_WAREHOUSE_URL", None)
    return env


def timed_process(args: list[str], cwd: Path, stdin: bytes | None = None) -> float:
    """Wall seconds of one process; raises if it fails (exit ≥ 2)."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=_env(cwd), input=stdin, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode >= 2:
        raise RuntimeError(f"{args} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return took


@dataclass(frozen=True)
class Usage:
    """What one whole process used: CPU seconds (user + system, its children included)
    and peak resident memory in KiB."""

    cpu_s: float
    peak_kib: int


def process_usage(args: list[str], cwd: Path, stdin: bytes | None = None) -> Usage:
    """Run one process to its end and read its resource usage (``wait4(2)``).

    CPU time, not wall time: on a machine shared with other work, the time a
    process waits for a core is not its cost. A child's usage includes the
    processes it waited for (``git status`` under ``dst plan``).

    Raises:
        RuntimeError: the process exited 2 or more.
    """
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=_env(cwd),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        if stdin is not None and proc.stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode >= 2 or proc.returncode < 0:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace")[-2000:]
            raise RuntimeError(f"{args} exited {proc.returncode}: {tail}")
    return Usage(usage.ru_utime + usage.ru_stime, int(usage.ru_maxrss))


@dataclass(frozen=True)
class Process:
    """One command line to measure: arguments, working directory, stdin, and what to
    do before each run (not measured)."""

    args: list[str]
    cwd: Path
    stdin: bytes | None = None
    prepare: Callable[[], None] | None = None

    def run(self) -> Usage:
        if self.prepare is not None:
            self.prepare()
        return process_usage(self.args, self.cwd, self.stdin)


def paired(a: Process, b: Process, runs: int) -> tuple[Usage, Usage]:
    """Medians of ``a`` and ``b`` run alternately (a, b, a, b …) ``runs`` times each.

    One discarded warm-up run of each first (file cache, ``.dst/`` memos) when
    ``runs`` is 3 or more. Alternating
    puts both under the same load drifts, so their ratio holds where absolute times
    do not. Returns the median CPU seconds and median peak KiB of each.
    """
    if runs >= 3:  # a smoke run (tests/test_bench_smoke.py) skips the warm-up
        a.run()
        b.run()
    first: list[Usage] = []
    second: list[Usage] = []
    for _ in range(runs):
        first.append(a.run())
        second.append(b.run())

    def med(xs: list[Usage]) -> Usage:
        return Usage(
            statistics.median(x.cpu_s for x in xs), int(statistics.median(x.peak_kib for x in xs))
        )

    return med(first), med(second)


def python(code: str, cwd: Path) -> Process:
    """``python -c CODE`` in ``cwd``: an import floor."""
    return Process([sys.executable, "-c", code], cwd)


def dst_process(cwd: Path, *args: str, stdin: bytes | None = None) -> Process:
    """``python -m reconciler ARGS`` in ``cwd``."""
    return Process([sys.executable, "-m", "reconciler", *args], cwd, stdin)


PLAN_FLOOR = "import pygit2, yaml, pydantic, sqlglot"


# -- plan ---------------------------------------------------------------------------


def bench_plan(sizes: list[synth.Size], runs: int) -> list[Row]:
    """``dst plan`` with one lens changed against the import floor, its growth with
    unchanged lenses, a plan with a cold memo, and its peak memory."""
    rows = []
    repos = []
    usage: tuple[Usage, Usage] | None = None
    for size in sizes:
        started = time.perf_counter()
        repo = synth.ensure(size)
        repos.append(repo)
        print(f"  synthetic {size.key}: ready in {time.perf_counter() - started:.1f} s", flush=True)
        plan = dst_process(repo.path, "plan", "--format", "json")
        usage = t_plan, t_floor = paired(plan, python(PLAN_FLOOR, repo.path), runs)
        rows.append(
            Row(
                f"plan, 1 lens changed, {size.lenses}x{size.assets}x{size.answers}",
                t_plan.cpu_s,
                t_floor.cpu_s,
                1.5,
                f"vs python -c '{PLAN_FLOOR}'; CPU time; .dst/plan memo warm (a re-plan)",
            )
        )
    small, large = repos[0], repos[-1]
    if small.size != large.size:
        big, little = paired(
            dst_process(large.path, "plan", "--format", "json"),
            dst_process(small.path, "plan", "--format", "json"),
            runs,
        )
        rows.append(
            Row(
                f"plan growth {small.size.lenses} -> {large.size.lenses} unchanged lenses",
                big.cpu_s,
                little.cpu_s,
                1.1,
            )
        )
    memo = large.path / ".dst" / "plan"
    plan = dst_process(large.path, "plan", "--format", "json")
    cold = Process(plan.args, plan.cwd, prepare=lambda: shutil.rmtree(memo, ignore_errors=True))
    t_cold, t_floor = paired(cold, python(PLAN_FLOOR, large.path), runs)
    rows.append(
        Row(
            f"plan, 1 lens changed, {large.size.lenses} lenses, cold memo",
            t_cold.cpu_s,
            t_floor.cpu_s,
            1.5,
            "the memo under .dst/plan/ deleted before each run",
        )
    )
    assert usage is not None  # the largest size was measured last
    t_plan, t_floor = usage
    rows.append(
        Row(
            f"plan peak memory, {large.size.lenses} lenses, vs the import floor",
            float(t_plan.peak_kib),
            float(t_floor.peak_kib),
            1.5,
            unit="KiB",
        )
    )
    return rows


# -- start-up: status and help ----------------------------------------------------------


def bench_startup(runs: int) -> list[Row]:
    """``dst status`` of two lenses vs ``import pygit2``; ``dst --help`` vs ``import typer``."""
    repo = synth.ensure(synth.Size(2, 8, 3)).path
    status, floor = paired(dst_process(repo, "status"), python("import pygit2", repo), runs)
    helped, typer_floor = paired(dst_process(repo, "--help"), python("import typer", repo), runs)
    return [
        Row("status, 2 lenses, vs import pygit2", status.cpu_s, floor.cpu_s, 1.5),
        Row("--help vs import typer", helped.cpu_s, typer_floor.cpu_s, 1.5),
    ]


# -- pre-push with no lens touched ----------------------------------------------------


def bench_noop_prepush(work: Path, runs: int) -> Row:
    """The pre-push hook on a push that touches no lens vs a bare ``import pygit2``."""
    repo = work / "prepush"
    shutil.copytree(PROJECT / "lenses", repo / "lenses")
    env = _env(repo)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "lenses")
    old = git("rev-parse", "HEAD")
    (repo / "README.md").write_text("notes\n")
    git("add", "-A")
    git("commit", "-q", "-m", "readme")
    new = git("rev-parse", "HEAD")
    line = f"refs/heads/main {new} refs/heads/main {old}\n".encode()
    hook = dst_process(repo, "hook-impl", "pre-push", "origin", "url", stdin=line)
    t_hook, floor = paired(hook, python("import pygit2", repo), runs)
    return Row("no-op pre-push vs import pygit2", t_hook.cpu_s, floor.cpu_s, 1.2)


# -- the suite on DuckDB, and its overhead over the bare statements --------------------


def _example_repo(work: Path, name: str, answers: int) -> Path:
    """A seeded copy of the example lenses whose sales lens holds ``answers`` answers."""
    repo = work / name
    shutil.copytree(PROJECT / "lenses", repo / "lenses")
    sales = repo / "lenses" / "sales" / "answers"
    originals = sorted(sales.glob("*.yaml"))
    for n in range(answers - len(originals)):
        src = originals[n % len(originals)]
        text = src.read_text()
        stem = src.stem
        copy = text.replace(f"id: {stem}\n", f"id: {stem}_copy{n}\n", 1)
        (sales / f"{stem}_copy{n}.yaml").write_text(copy)
    env = {**os.environ, **synth.GIT_ENV, "HOME": str(repo)}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "lenses"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    seeded = subprocess.run(
        [sys.executable, "-m", "reconciler", "seed"], cwd=repo, env=env, capture_output=True
    )
    assert seeded.returncode == 0, seeded.stderr
    return repo


def bench_suite(work: Path, answers: int, runs: int) -> Row:
    """The scoped suite for ``answers`` stale answers vs the same statements run directly.

    In one process, alternating (suite, statements, suite …) after one warm-up of
    each, median of ``runs`` of each, in this process's CPU seconds. The measured
    suites run the same lens version again, so they reuse what the warm-up kept
    (guard verdicts, fast-tier generations); the note gives the warm-up's own time.
    """
    import duckdb
    import pygit2

    from reconciler.context import Runtime
    from reconciler.reconcile import gate_lens, plan_all

    repo = _example_repo(work, f"suite{answers}", answers)
    rt = Runtime(pygit2.Repository(str(repo)), env={}, progress=lambda _m: None, jobs=1)
    last: list[Any] = []
    db: Any = None
    try:
        _, planned = plan_all(rt, "HEAD", "sales")
        plan, candidate, _ = planned[0]

        def suite() -> float:
            start = time.process_time()
            last[:] = [gate_lens(rt, plan, candidate, None)]
            return time.process_time() - start

        def direct() -> float:
            start = time.process_time()
            for sql in statements:
                db.execute(sql).fetchmany(1001)
            return time.process_time() - start

        cold = suite()  # the warm-up: the first suite of this lens version in the process
        statements = _statements_of(last[0], candidate)
        db = _same_database(rt.warehouse_for(candidate), duckdb)
        db.execute("SET search_path = 'sales,main'")  # seeds are per lens: its schema first
        direct()
        t_suite, t_direct = [], []
        for _ in range(runs):
            t_suite.append(suite())
            t_direct.append(direct())
    finally:
        if db is not None:
            db.close()
        rt.close()
    run = last[0]
    outcomes = sorted({r.outcome.value for r in [*run.results, *run.self_test]})
    return Row(
        f"suite, {answers} stale answers, DuckDB fast tier",
        statistics.median(t_suite),
        statistics.median(t_direct),
        1.3,
        f"{len(statements)} statements, in-process CPU, first run {cold * 1000:.0f}ms; "
        f"outcomes {outcomes}",
    )


def _same_database(warehouse: Any, duckdb: Any) -> Any:
    """A plain DuckDB connection to the database ``warehouse`` holds open.

    One process opens a file with one configuration only, so the baseline
    connects through the warehouse's own database instance (direct DuckDB, or
    the SQLAlchemy pool's driver connection of earlier versions).
    """
    warehouse = getattr(warehouse, "_warehouse", warehouse)  # through a LensExecutor
    base = getattr(warehouse, "_base", None)
    if base is not None:
        return base.cursor()
    raw = warehouse._engine.raw_connection()
    driver = getattr(raw, "driver_connection", raw)
    return driver.cursor() if isinstance(driver, duckdb.DuckDBPyConnection) else driver


def _statements(repo: Path) -> list[str]:
    """The SQL a scoped suite of the sales lens runs in ``repo``: answers' and generations'."""
    import pygit2

    from reconciler.context import Runtime
    from reconciler.reconcile import gate_lens, plan_all

    rt = Runtime(pygit2.Repository(str(repo)), env={}, progress=lambda _m: None, jobs=1)
    try:
        _, planned = plan_all(rt, "HEAD", "sales")
        plan, candidate, _ = planned[0]
        return _statements_of(gate_lens(rt, plan, candidate, None), candidate)
    finally:
        rt.close()


def _statements_of(run: Any, candidate: Any) -> list[str]:
    """Each answer's SQL and each generation's, of one gate ``run`` of ``candidate``."""
    statements = []
    for result in [*run.results, *run.self_test]:
        statements.append(candidate.answers[result.answer].sql)
        for attempt in result.attempts:
            sql = attempt.get("generation", {}).get("sql")
            if sql:
                statements.append(sql)
    return statements


def _duckdb_script(repo: Path, statements: list[str]) -> Process:
    """One process that imports duckdb and runs ``statements`` on the seeded file (a floor)."""
    listing = repo.parent / f"{repo.name}-statements.json"
    listing.write_text(json.dumps(statements))
    code = (
        "import duckdb, json\n"
        f"db = duckdb.connect({str(repo / '.dst' / 'warehouse.duckdb')!r}, read_only=True)\n"
        "db.execute(\"SET search_path = 'sales,main'\")\n"
        f"for sql in json.load(open({str(listing)!r})):\n"
        "    db.execute(sql).fetchmany(1001)\n"
    )
    return python(code, repo)


def bench_apply(work: Path, runs: int) -> Row:
    """``dst apply --dry-run`` of the example lenses (21 stale answers) vs their SQL in one
    DuckDB process."""
    repo = _example_repo(work, "apply", 21)
    statements = _statements(repo)
    dry, floor = paired(
        dst_process(repo, "apply", "--dry-run"), _duckdb_script(repo, statements), runs
    )
    return Row(
        "apply --dry-run, 21 stale answers, vs their SQL in one DuckDB process",
        dry.cpu_s,
        floor.cpu_s,
        2.0,
        f"{len(statements)} statements",
    )


ASK_CERTIFIED = "Average order value by quarter in 2023"
ASK_GENERATED = "total revenue by region"


def bench_ask(work: Path, runs: int) -> list[Row]:
    """``dst ask`` (a certified answer, a fast-tier generation) vs a script that imports
    duckdb and runs the SQL the answer served."""
    repo = _example_repo(work, "ask", 21)
    applied = subprocess.run(
        [sys.executable, "-m", "reconciler", "apply"], cwd=repo, env=_env(repo), capture_output=True
    )
    assert applied.returncode == 0, applied.stderr
    rows = []
    for kind, question in (("certified", ASK_CERTIFIED), ("generated", ASK_GENERATED)):
        args = ("ask", question, "--lens", "sales", "--format", "json")
        shown = subprocess.run(
            [sys.executable, "-m", "reconciler", *args], cwd=repo, env=_env(repo),
            capture_output=True,
        )  # fmt: skip
        answer = json.loads(shown.stdout)
        sql = answer.get("sql") or ""
        asked, floor = paired(dst_process(repo, *args), _duckdb_script(repo, [sql]), runs)
        rows.append(
            Row(
                f"ask ({kind}) vs a duckdb script running its SQL",
                asked.cpu_s,
                floor.cpu_s,
                2.0,
                f"route {answer.get('route')}",
            )
        )
    return rows


# -- concurrency against PostgreSQL with per-query latency ------------------------------


def bench_parallel(answers: int, latency_s: float, jobs: int, runs: int) -> Row:
    """Suite throughput with ``jobs`` workers vs one, each query sleeping ``latency_s``."""
    name = f"suite throughput jobs={jobs} / jobs=1, PostgreSQL +{latency_s * 1000:.0f} ms/query"
    try:
        import sqlalchemy as sa

        engine = sa.create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg2://"))
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP VIEW IF EXISTS dst_bench_slow")
            conn.exec_driver_sql("DROP TABLE IF EXISTS dst_bench_events")
            conn.exec_driver_sql(
                "CREATE TABLE dst_bench_events AS SELECT g AS id, "
                "(ARRAY['North','East','South','West','Central'])[1 + mod(g, 5)] AS region, "
                "'completed' AS status, mod(g, 97)::numeric AS amount, mod(g, 7) AS quantity, "
                "DATE '2024-01-01' + mod(g, 365) AS event_date, 1 AS hub_id "
                "FROM generate_series(1, 2000) AS g"
            )
            # Benchmark-only: a view that adds latency_s to every query reading it.
            conn.exec_driver_sql(
                "CREATE VIEW dst_bench_slow AS WITH latency AS MATERIALIZED "
                f"(SELECT pg_sleep({latency_s})) "
                "SELECT e.* FROM dst_bench_events AS e CROSS JOIN latency"
            )
        engine.dispose()
    except Exception as exc:
        return Row(name, None, None, 1 / 5, f"skipped: PostgreSQL not usable ({exc})"[:160])
    from reconciler.lens import load_lens
    from reconciler.suite import Scoring, run_answers
    from reconciler.warehouse.connection import Warehouse

    size = synth.Size(1, 4, answers)
    files = synth.lens_files(0, size)
    files["lens.yaml"] = files["lens.yaml"].replace(b"as_of", b"dialect: postgres\nas_of")
    files = {
        k: v.replace(b"l0_t001", b"dst_bench_slow").replace(b"l0_t000", b"dst_bench_slow")
        for k, v in files.items()
    }
    lens = load_lens("lens_0000", files)
    wh = Warehouse.open(PG_URL, pool_size=jobs)
    times = {}
    try:
        for j in (1, jobs):

            def once(j: int = j) -> float:
                start = time.perf_counter()
                run_answers(lens, lens.active_answers(), Scoring(executor=wh, jobs=j))
                return time.perf_counter() - start

            times[j] = median(once, runs)
    finally:
        wh.close()
    # Throughput ratio ≥ 5 is the same as time(jobs) / time(1) ≤ 1/5.
    return Row(name, times[jobs], times[1], 1 / 5, f"{answers} answers; ratio = 1/speed-up")


# -- comparison -------------------------------------------------------------------------


def bench_compare(rows: int, cols: int, runs: int) -> Row:
    """Comparing two ``rows`` x ``cols`` results (reconciler.compare.diff) against 10 ms."""
    from datetime import date, timedelta

    from reconciler.compare.diff import compare
    from reconciler.resultset import ResultSet

    def cell(r: int, c: int) -> Any:
        kind = c % 5
        if kind == 0:
            return r * 31 + c
        if kind == 1:
            return (r * 0.1) / (c + 1)
        if kind == 2:
            return f"name-{r}-{c}"
        if kind == 3:
            return date(2024, 1, 1) + timedelta(days=r % 366)
        return Decimal(r * 7 + c) / Decimal(100)

    columns = tuple(f"c{c}" for c in range(cols))
    data = tuple(tuple(cell(r, c) for c in range(cols)) for r in range(rows))
    oracle = ResultSet(columns, data)
    generated = ResultSet(columns, tuple(reversed(data)))

    def once() -> float:
        start = time.perf_counter()
        compare(oracle, generated, order=None)
        return time.perf_counter() - start

    t = median(once, max(runs, 10))
    return Row(f"compare {rows}x{cols} results (vs 10 ms)", t, 0.010, 1.0)


# -- watch ----------------------------------------------------------------------------


def bench_watch(work: Path, idle_s: float, runs: int) -> list[Row]:
    """Save → verdict for a one-answer scope, and ``dst watch``'s CPU while idle."""
    import pygit2

    from reconciler.context import Runtime
    from reconciler.reconcile import reconcile
    from reconciler.watch import Verdict, WatchSettings, watch

    repo = _example_repo(work, "watch", 0)
    rt = Runtime(pygit2.Repository(str(repo)), env={}, progress=lambda _m: None)
    assert reconcile(rt).exit_code == 0
    rt.close()
    verdicts: list[tuple[float, Verdict]] = []
    cond = threading.Condition()

    def record(v: Verdict) -> None:
        with cond:
            verdicts.append((time.perf_counter(), v))
            cond.notify_all()

    stop = threading.Event()
    loop_rt = Runtime(pygit2.Repository(str(repo)), env={}, progress=lambda _m: None)
    debounce_ms = 100
    thread = threading.Thread(
        target=watch,
        kwargs={
            "rt": loop_rt,
            "settings": WatchSettings(interval_hours=0, debounce_ms=debounce_ms),
            "on_verdict": record,
            "stop": stop,
        },
        daemon=True,
    )
    thread.start()
    src = repo / "lenses/sales/answers/net_revenue_2024.yaml"
    latencies = []
    try:
        with cond:
            cond.wait_for(lambda: len(verdicts) >= 1, 120)
        for n in range(runs):
            seen = len(verdicts)
            target = src.with_name(f"bench_new_{n}.yaml")
            text = src.read_text().replace("id: net_revenue_2024", f"id: bench_new_{n}")
            time.sleep(0.3)
            start = time.perf_counter()
            tmp = target.with_suffix(".tmp")
            tmp.write_text(text)
            os.replace(tmp, target)
            with cond:
                cond.wait_for(lambda seen=seen: len(verdicts) > seen, 60)
            latencies.append(verdicts[-1][0] - start)
            target.unlink()
            with cond:
                cond.wait_for(lambda seen=seen: len(verdicts) > seen + 1, 60)
    finally:
        stop.set()
        thread.join(60)
        loop_rt.close()
    rows = [
        Row(
            "watch save -> verdict, one-answer scope (vs 1 s)",
            statistics.median(latencies),
            1.0,
            1.0,
            f"debounce {debounce_ms} ms included",
        )
    ]
    env = {**os.environ, **synth.GIT_ENV, "HOME": str(repo), "DST_EVAL_INTERVAL_HOURS": "0"}
    env.pop("DST_WAREHOUSE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "watch"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # the start verdict: the loop is idle from here
        time.sleep(1.0)
        before = _cpu_seconds(proc.pid)
        time.sleep(idle_s)
        used = _cpu_seconds(proc.pid) - before
    finally:
        proc.terminate()
        proc.wait(30)
    rows.append(
        Row(f"watch idle CPU over {idle_s:.0f} s (vs 1 %)", used / idle_s, 0.01, 1.0, "fraction")
    )
    return rows


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


# -- the table --------------------------------------------------------------------------


def render(rows: list[Row]) -> str:
    """The printed table: target, measured, baseline, ratio, verdict."""
    lines = [
        f"{'target':<62} {'measured':>10} {'baseline':>10} {'ratio':>7} {'<=':>5}  result",
        "-" * 108,
    ]
    for r in rows:
        m, b = _amount(r.measured_s, r.unit), _amount(r.baseline_s, r.unit)
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else "-"
        lines.append(f"{r.name:<62} {m:>10} {b:>10} {ratio:>7} {r.target:>5.2f}  {r.met}")
        if r.note:
            lines.append(f"    {r.note}")
    return "\n".join(lines)


def _amount(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value / 1024:.1f}MiB" if unit == "KiB" else f"{value * 1000:.1f}ms"


def main(argv: list[str] | None = None) -> list[Row]:
    """Run every benchmark and print the table; returns the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--runs", type=int, default=7, help="runs per median (>= 7)")
    parser.add_argument(
        "--only",
        default="",
        help="comma list: plan,startup,prepush,suite,apply,ask,mcp,pg,compare,watch",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    runs = max(args.runs, 7) if not quick else min(args.runs, 3)
    only = set(filter(None, args.only.split(",")))

    def wanted(name: str) -> bool:
        return not only or name in only

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dst-bench-") as tmp:
        work = Path(tmp)
        if wanted("plan"):
            print("plan …", flush=True)
            sizes = (
                [synth.Size(2, 8, 3), synth.Size(6, 8, 3)]
                if quick
                else [synth.Size(50, 200, 50), synth.Size(500, 200, 50)]
            )
            if quick:
                os.environ.setdefault("DST_BENCH_CACHE", str(work / "cache"))
            rows += bench_plan(sizes, runs)
        if wanted("startup"):
            print("start-up …", flush=True)
            rows += bench_startup(runs)
        if wanted("prepush"):
            print("pre-push …", flush=True)
            rows.append(bench_noop_prepush(work, runs))
        if wanted("suite"):
            print("suite …", flush=True)
            rows.append(bench_suite(work, 30 if quick else 200, runs))
        if wanted("apply"):
            print("apply --dry-run …", flush=True)
            rows.append(bench_apply(work, runs))
        if wanted("ask"):
            print("ask …", flush=True)
            rows += bench_ask(work, runs)
        if wanted("mcp"):
            print("mcp …", flush=True)
            from tests.benchmarks.mcp import bench_mcp  # it imports this module

            rows.append(bench_mcp(work, runs, 10 if quick else 50))
        if wanted("pg"):
            print("parallelism …", flush=True)
            rows.append(bench_parallel(8 if quick else 32, 0.02 if quick else 0.05, 8, runs))
        if wanted("compare"):
            print("compare …", flush=True)
            rows.append(bench_compare(100 if quick else 1000, 20, runs))
        if wanted("watch"):
            print("watch …", flush=True)
            rows += bench_watch(work, 3.0 if quick else 60.0, runs)
    print(render(rows), flush=True)
    return rows


if __name__ == "__main__":
    main()
