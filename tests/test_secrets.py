"""Credentials never appear in output, logs, run records, annotations or deployment commits.

Secrets are planted in every place dst reads one from: the password of
``DST_WAREHOUSE_URL``, of ``--warehouse``, of a lens's ``warehouse:`` (through a
``${VAR}`` reference), of ``dst.yaml``'s ``warehouse:`` (written literally), and
the LLM API key variables. Every command then runs in every output format,
against a reachable warehouse (PostgreSQL, whose local trust authentication
accepts any password) and an unreachable one, and every byte it printed or
wrote — stdout, stderr, JUnit, the job summary, the HTML report, the embedded
warehouse directory, crash logs, and every git object and reflog — is searched
for each secret.

A second test plants values in the environment of a ``command``-tier generator that
prints its whole environment (and exits 1, or replies with it as unknown keys, or
quotes it in a decline): the terminal, the webhook bodies a local HTTP server
receives, JUnit, the job summary, the HTML report and every object reachable from
``refs/dst/*`` must hold none of them; the local log under ``.dst/logs/`` keeps
them whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.figures import record
from tests.helpers import GIT_ENV, Result, commit, git, invoke

PG = "127.0.0.1:5432/test"
# Characters a password may hold: URL-escaped in the URL, raw in the driver.
S_ENV = "envPW-7f3a9c"
S_CLI = "cliPW-51d2e8"
S_VAR = "varPW-c0ffee"
S_FILE = "filePW-9b8a77"
S_KEY = "sk-keyPW-4e4e4e"
S_OPENAI = "sk-openaiPW-1d1d1d"
SECRETS = (S_ENV, S_CLI, S_VAR, S_FILE, S_KEY, S_OPENAI)
ALLOWED = "allow_privileged: true\n"
IN_FILES = (S_FILE,)  # written into the repository by the user, so in its own blobs

ANSWER = """\
id: {id}
question: How many orders are there?
sql: SELECT COUNT(*) AS orders FROM {table}
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""
MODEL = "name: orders\ntable: {table}\nfacts:\n  - name: amount\n    data_type: number\n"


def _pg_reachable() -> bool:
    try:
        import sqlalchemy as sa

        engine = sa.create_engine(f"postgresql+psycopg2://postgres@{PG}")
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        engine.dispose()
        return True
    except Exception as exc:  # any failure means "skip", with the reason
        print(f"PostgreSQL at {PG} is not reachable: {exc}")
        return False


@pytest.fixture
def table() -> Iterator[str]:
    if not _pg_reachable():
        pytest.skip(f"PostgreSQL at {PG} is not reachable")
    import sqlalchemy as sa

    name = f"dst_secret_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(f"postgresql+psycopg2://postgres@{PG}")
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (id int, amount numeric)")
        conn.exec_driver_sql(f"INSERT INTO {name} VALUES (1, 10), (2, 20), (3, 5)")
    yield name
    with engine.begin() as conn:
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
    engine.dispose()


class Recorder:
    """Runs dst and keeps everything it printed, for the final search."""

    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        self.repo = repo
        self.env = env
        self.outputs: list[tuple[str, str]] = []

    def run(
        self, *args: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0, 1, 2)
    ) -> Result:
        done = invoke(self.repo, *args, env={**self.env, **(env or {})})
        label = " ".join(args)
        assert done.code in ok, (label, done.code, done.stdout, done.stderr)
        assert done.code != 3 and "unexpected error" not in done.stderr, (label, done.stderr)
        self.outputs += [
            (f"stdout of dst {label}", done.stdout),
            (f"stderr of dst {label}", done.stderr),
        ]
        return done


def _git_objects(repo: Path) -> list[tuple[str, str]]:
    """Every object in the repository (loose and packed), as text."""
    env = {**os.environ, **GIT_ENV, "HOME": str(repo)}
    listing = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
        cwd=repo, env=env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=repo, env=env, input="\n".join(listing).encode() + b"\n", capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    return [
        (f"git object in {repo.name} ({len(listing)} objects)", batch.decode("utf-8", "replace"))
    ]


def _files(root: Path, skip: tuple[Path, ...] = ()) -> list[tuple[str, str]]:
    out = []
    for path in sorted(root.rglob("*")):
        if (
            path.is_file()
            and not path.is_symlink()
            and not any(path.is_relative_to(s) for s in skip)
        ):
            raw = path.read_bytes()
            if path.parent.name[:2].isalnum() and len(path.parent.name) == 2:
                with contextlib.suppress(zlib.error):  # a loose object: inflate it too
                    raw += zlib.decompress(raw)
            out.append((str(path.relative_to(root)), raw.decode("utf-8", "replace")))
    return out


def test_no_output_format_or_record_reveals_a_planted_secret(
    repo: Path, table: str, tmp_path: Path
) -> None:
    crash_logs_before = set(Path(tempfile.gettempdir()).glob("dst-crash-*.log"))
    # The lens reads its password from the environment; dst.yaml holds one literally.
    # The login is the superuser, allowed on purpose: the warning that allowing prints
    # names the warehouse, so it is one more output that must not reveal a password.
    commit(
        repo,
        {
            "dst.yaml": f"warehouse: postgresql://postgres:{S_FILE}@{PG}\n{ALLOWED}",
            "lenses/shop/lens.yaml": "name: shop\ndialect: postgres\n"
            f"warehouse: postgresql://postgres:${{DST_TEST_PW}}@{PG}\n",
            "lenses/shop/models/orders.yaml": MODEL.format(table=table),
            "lenses/shop/answers/total.yaml": ANSWER.format(id="total", table=table),
            "lenses/ledger/lens.yaml": "name: ledger\ndialect: postgres\n",
            "lenses/ledger/models/orders.yaml": MODEL.format(table=table),
            "lenses/ledger/answers/count.yaml": ANSWER.format(id="count", table=table),
        },
        "two lenses on PostgreSQL",
    )
    env = {
        "DST_TEST_PW": S_VAR,
        "DST_LLM_API_KEY": S_KEY,
        "OPENAI_API_KEY": S_OPENAI,
        "DST_WAREHOUSE_URL": "",
    }
    rec = Recorder(repo, env)
    unreachable_env = {"DST_WAREHOUSE_URL": f"postgresql://analyst:{S_ENV}@127.0.0.1:1/test"}
    unreachable_cli = f"postgresql://analyst:{S_CLI}@127.0.0.1:1/test"

    # Reachable warehouse: both lenses promote (through the lens URL and dst.yaml).
    # Each command runs once per format across the two phases.
    rec.run("plan", "--format", "text")
    rec.run("apply", "--dry-run", "--format", "json")
    applied = rec.run("apply", "--format", "json", ok=(0,))
    assert {x["action"] for x in applied.json()["lenses"]} == {"promoted"}
    rec.run("test", "--all", "--format", "text", ok=(0, 1))
    rec.run("status", "--format", "text")
    rec.run("log", "shop", "--format", "json")
    rec.run("ask", "How many orders are there?", "--lens", "shop", "--format", "json")

    # Unreachable warehouses, with the password in the URL: stand-downs, errors.
    model = MODEL.format(table=table) + "description: orders, v2\n"
    commit(repo, {"lenses/shop/models/orders.yaml": model}, "stale answers")
    rec.run("plan", "--format", "json", env=unreachable_env)
    down = rec.run("apply", "--format", "text", env=unreachable_env, ok=(1,))
    assert "STOOD DOWN" in down.stdout
    down = rec.run("apply", "--warehouse", unreachable_cli, "--format", "json", ok=(1,))
    rec.run("test", "shop", "--warehouse", unreachable_cli, "--format", "text", ok=(1, 2))
    rec.run("test", "shop", "--format", "json", env=unreachable_env, ok=(1, 2))
    rec.run("ask", "How many orders?", "--lens", "shop", "--format", "text", env=unreachable_env)
    rec.run("status", "--format", "json", env=unreachable_env)
    rec.run("log", "shop", "--format", "text", env=unreachable_env)

    # The GitHub Actions outputs: annotations, JUnit, job summary.
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    base = git(repo, "rev-parse", "HEAD~1")
    ci_env = {**unreachable_env, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    rec.run("ci", "check", "--base", base, "--junit", str(junit), "--format", "github", env=ci_env)
    rec.run("ci", "apply", "--format", "github", env={**ci_env, "GITHUB_EVENT_NAME": "push"})
    html = tmp_path / "report.html"
    saved = tmp_path / "apply.json"
    saved.write_text(down.stdout)
    rec.run("report", "--from", str(saved), "--html", str(html))

    haystacks = list(rec.outputs)
    for written in (junit, summary, html):
        if written.exists():
            haystacks.append((written.name, written.read_text(errors="replace")))
    haystacks += [(f"git file {w}", t) for w, t in _files(repo / ".git")]
    haystacks += _git_objects(repo)
    haystacks += _files(repo, skip=(repo / ".git", repo / "dst.yaml"))
    crash_logs = set(Path(tempfile.gettempdir()).glob("dst-crash-*.log")) - crash_logs_before
    haystacks += [(str(p), p.read_text(errors="replace")) for p in crash_logs]
    assert junit.exists() and summary.exists() and html.exists()

    leaks = []
    for where, text in haystacks:
        for secret in SECRETS:
            if secret in text and not (secret in IN_FILES and where.startswith("git ")):
                leaks.append((secret, where))
    # The user's own dst.yaml blob holds S_FILE; dst's objects must not: check those alone.
    leaks += [(S_FILE, w) for w, t in _dst_objects(repo) if S_FILE in t]
    record(
        f"secrets: {len(SECRETS)} planted, {len(haystacks)} outputs/files/object dumps grepped, "
        f"{len(leaks)} leaks"
    )
    assert not leaks, leaks
    # The redacted form is what shows, in the allow_privileged warning too.
    assert "***@127.0.0.1:1" in "".join(t for _, t in rec.outputs)
    warned = [t for w, t in rec.outputs if w.startswith("stderr") and "allow_privileged" in t]
    assert warned and all("postgres:***@127.0.0.1:5432" in t for t in warned), warned


def _dst_objects(repo: Path) -> list[tuple[str, str]]:
    """Messages and state files of every commit dst wrote under refs/dst/."""
    out = []
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/dst/").split()
    for ref in refs:
        for oid in git(repo, "rev-list", "--first-parent", ref).split():
            text = git(repo, "cat-file", "-p", oid)
            for name in ("meta.json", "run.json", "bindings.json"):
                with contextlib.suppress(subprocess.CalledProcessError):
                    text += git(repo, "show", f"{oid}:state/{name}")
            out.append((f"{ref} commit {oid[:12]}", text))
    return out


# --- a generator that prints its whole environment ------------------------------------
#
# The values are planted in the environment dst (and so the program) runs with. None is
# named like a secret (no KEY/TOKEN/PASS), one holds characters JSON escapes, one is a
# URL with a password: the redaction must go by value. Each value carries a core
# ("pl4nted-…") that is searched for, so half a value is a leak too.
PLANTED = {
    "DST_SLACK_WEBHOOK": "https://hooks.example.com/services/T01/B02/pl4nted-webhook-7Qx",
    "GH_PAT": "pl4nted-pat-9f8e7d6c5b",
    "MY_AUTH": "pl4nted-auth_31337xyz",
    "DB_DSN": "postgresql://svc:pl4nted-dbpw-42@db.internal:5432/prod",
    "QUOTED_NOTE": 'say "pl4nted-quoted" \\ twice',
}
CORES = ("pl4nted-webhook", "pl4nted-pat", "pl4nted-auth", "pl4nted-dbpw", "pl4nted-quoted")
HOOK_VAR = "DST_TEST_GENERATOR_HOOK"
DUMP_ENV = b"""\
import json, os, sys
sys.stdin.read()
for name, value in sorted(os.environ.items()):
    print(f"{name}={value}", file=sys.stderr)
    print(f"{name}={value}")
print(json.dumps(dict(os.environ)), file=sys.stderr)
print("RuntimeError: the generator gave up", file=sys.stderr)
sys.exit(1)
"""
EXTRA_KEYS = b"""\
import json, os, sys
sys.stdin.read()
print(json.dumps({"sql": "SELECT COUNT(*) AS orders FROM orders", **os.environ}))
"""
# Answers the certified question, declines every other one with a reason that quotes the
# environment, and chats on stderr all the while.
CHATTY = b"""\
import json, os, sys
req = json.loads(sys.stdin.read())
print("env: " + json.dumps(dict(os.environ)), file=sys.stderr)
if req["question"] == "How many orders are there?":
    print(json.dumps({"sql": "SELECT COUNT(*) AS orders FROM orders"}))
else:
    print(json.dumps({"declined": "cannot; settings " + os.environ["MY_AUTH"] + " "
                      + os.environ["DB_DSN"]}))
"""


def _generator_lens(program: str) -> str:
    run = json.dumps([sys.executable, program])
    return (
        'name: shop\nas_of: "2024-12-31"\ngenerator:\n  tiers: [command]\n'
        f"  command: {{run: {run}, timeout_s: 60}}\n"
    )


class _Hook:
    """A local webhook: keeps every request body as received."""

    def __init__(self) -> None:
        bodies: list[str] = []
        self.bodies = bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def hook() -> Iterator[_Hook]:
    h = _Hook()
    thread = threading.Thread(target=h.server.serve_forever, daemon=True)
    thread.start()
    yield h
    h.server.shutdown()
    h.server.server_close()


def _reachable_objects(repo: Path) -> list[tuple[str, str]]:
    """Every object reachable from any ref under refs/dst/, as text (commits, trees, blobs)."""
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/dst/").split()
    assert refs, "nothing recorded under refs/dst/"
    listing = git(repo, "rev-list", "--objects", *refs).splitlines()
    oids = [line.split()[0] for line in listing if line.strip()]
    env = {**os.environ, **GIT_ENV, "HOME": str(repo)}
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=repo, env=env, input="\n".join(oids).encode() + b"\n", capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    where = f"{len(oids)} objects reachable from {len(refs)} refs/dst refs"
    return [(where, batch.decode("utf-8", "replace"))]


def test_a_generator_printing_its_environment_leaks_no_value_anywhere(
    repo: Path, hook: _Hook, tmp_path: Path
) -> None:
    answer = ANSWER.format(id="orders", table="orders")
    commit(
        repo,
        {
            "dst.yaml": f"notify:\n  - url_env: {HOOK_VAR}\n    events: [promoted, blocked]\n",
            "lenses/shop/lens.yaml": _generator_lens("chatty.py"),
            "lenses/shop/chatty.py": CHATTY,
            "lenses/shop/dump_env.py": DUMP_ENV,
            "lenses/shop/extra_keys.py": EXTRA_KEYS,
            "lenses/shop/models/orders.yaml": MODEL.format(table="orders"),
            "lenses/shop/answers/orders.yaml": answer,
            "lenses/shop/seeds/orders.csv": "order_id,customer_id,order_date,amount\n"
            "1,1,2024-01-02,10\n2,2,2024-02-03,20\n",
        },
        "shop lens, generated by a program that talks on stderr",
    )
    rec = Recorder(repo, {**PLANTED, HOOK_VAR: hook.url, "DST_WAREHOUSE_URL": ""})
    rec.run("seed", ok=(0,))
    promoted = rec.run("apply", "--format", "json", ok=(0,))
    assert promoted.lens("shop")["action"] == "promoted"
    declined = rec.run("ask", "What is the total amount?", "--lens", "shop", "--format", "json")
    assert "cannot; settings ***" in declined.stdout, declined.stdout
    rec.run("ask", "What is the total amount?", "--lens", "shop", "--format", "text")

    # The program now prints its whole environment and exits 1: the apply blocks.
    commit(repo, {"lenses/shop/lens.yaml": _generator_lens("dump_env.py")}, "dump_env.py")
    rec.run("apply", "--dry-run", "--format", "text", ok=(1,))
    blocked = rec.run("apply", "--format", "json", ok=(1,))
    shop = blocked.lens("shop")
    assert shop["action"] == "blocked"
    (result,) = shop["results"]
    assert result["outcome"] == "error"
    detail = result["detail"]
    assert "exited with status 1" in detail and "RuntimeError: the generator gave up" in detail
    assert "bytes, whole in .dst/logs/command/" in detail, detail
    summary = result["trace"][0]["generation"]["usage"]["stderr"]
    assert summary["exit_status"] == 1 and summary["bytes"] > 0
    log = repo / summary["log"]
    kept = log.read_text()
    assert all(v in kept for v in PLANTED.values()), "the local log keeps the stream whole"
    assert git(repo, "check-ignore", summary["log"]) == summary["log"]

    # Reports of that run: JUnit and the job summary of the PR check, the HTML report.
    junit, step_summary, html = tmp_path / "junit.xml", tmp_path / "summary.md", tmp_path / "r.html"
    ci_env = {"GITHUB_STEP_SUMMARY": str(step_summary), "GITHUB_ACTIONS": "true"}
    base = git(repo, "rev-parse", "HEAD~1")
    rec.run("ci", "check", "--base", base, "--junit", str(junit), "--format", "github", env=ci_env)
    saved = tmp_path / "apply.json"
    saved.write_text(blocked.stdout)
    rec.run("report", "--from", str(saved), "--html", str(html))

    # A reply carrying the environment as unknown keys fails its schema.
    commit(repo, {"lenses/shop/lens.yaml": _generator_lens("extra_keys.py")}, "extra_keys.py")
    extra = rec.run("apply", "--format", "json", ok=(1,))
    (result,) = extra.lens("shop")["results"]
    assert "unparseable output" in result["detail"], result["detail"]
    assert "Extra inputs are not permitted" in result["detail"], result["detail"]
    rec.run("status", "--format", "text")
    rec.run("log", "shop", "--format", "json")

    haystacks = list(rec.outputs)
    haystacks += [(f"webhook body {i}", body) for i, body in enumerate(hook.bodies)]
    haystacks += [(p.name, p.read_text(errors="replace")) for p in (junit, step_summary, html)]
    haystacks += _reachable_objects(repo)
    haystacks += [(f"git file {w}", t) for w, t in _files(repo / ".git")]
    assert len(hook.bodies) >= 2 and junit.exists() and step_summary.exists() and html.exists()
    planted = (*PLANTED.values(), *CORES)
    leaks = [(p, where) for where, text in haystacks for p in planted if p in text]
    record(
        f"secrets (generator environment): {len(PLANTED)} values planted, none named like a "
        f"secret; {len(haystacks)} outputs checked (terminal, {len(hook.bodies)} webhook "
        f"bodies, JUnit, job summary, HTML, every object under refs/dst/, .git files); "
        f"{len(leaks)} leaks"
    )
    assert not leaks, leaks
