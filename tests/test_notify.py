"""Notifications: ``notify:`` webhooks receive one JSON object per lens event (DESIGN §7).

A real HTTP server in a thread (the standard library's ``http.server``) records
every POST and answers 500 on purpose for its first ``fail_first`` requests; the
applies are real (example lenses, real git, real DuckDB) through the in-process CLI.
"""

from __future__ import annotations

import ast
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pygit2
import pytest
from pydantic import ValidationError

from reconciler.context import Runtime
from reconciler.lens import Webhook
from reconciler.notify import LensEvent
from reconciler.notify.webhooks import BACKOFF_S, DEADLINE_S, deliver
from reconciler.watch import Follower, follow
from tests.helpers import commit, git, invoke
from tests.helpers.examples import answers_bound_to, double_metric, serving
from tests.helpers.webhook import receiving

HOOK_ENV = "DST_TEST_WEBHOOK"


class Receiver:
    """A local webhook: records each request's JSON body; 500 for the first ``fail_first``,
    404 on a path ending in ``/404``, a 302 to ``/landed`` on one ending in ``/302``
    (GETs are recorded in ``gets``)."""

    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.calls: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.headers: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.calls.append(json.loads(body))
                receiver.headers.append(dict(self.headers))
                failing = len(receiver.calls) <= receiver.fail_first
                missing = self.path.endswith("/404")
                if self.path.endswith("/302"):
                    self.send_response(302)
                    self.send_header("Location", receiver.url + "/landed?token=t0p")
                    self.end_headers()
                    return
                self.send_response(404 if missing else 500 if failing else 200)
                self.end_headers()
                self.wfile.write(b"nope" if failing else b"ok")

            def do_GET(self) -> None:
                receiver.gets.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook/secret-token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def events(self) -> list[tuple[str, str]]:
        """``(lens, action)`` of every request received, in order."""
        return [(c["lens"], c["action"]) for c in self.calls]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _configure(repo: Path, events: str = "[promoted, blocked, stood_down, recovered]") -> None:
    commit(
        repo, {"dst.yaml": f"notify:\n  - url_env: {HOOK_ENV}\n    events: {events}\n"}, "notify"
    )


def _fix(repo: Path) -> None:
    """Undo :func:`double_metric`, with a comment so the lens tree is a new one."""
    git(repo, "revert", "--no-edit", "HEAD")
    path = repo / "lenses/sales/metrics/units_sold.yaml"
    commit(repo, {str(path.relative_to(repo)): path.read_text() + "# fixed\n"}, "fixed")


def _apply(repo: Path, url: str, *args: str) -> Any:
    return invoke(repo, "apply", *args, env={HOOK_ENV: url})


def test_promote_block_and_recovery_each_send_one_event(
    promoted_repo: Path, receiver: Receiver
) -> None:
    _configure(promoted_repo)
    users = answers_bound_to(promoted_repo, "sales", "metrics/units_sold")
    metric = promoted_repo / "lenses/sales/metrics/units_sold.yaml"
    good = metric.read_text()

    blocked_at = double_metric(promoted_repo, "units_sold")
    blocked = _apply(promoted_repo, receiver.url)
    assert blocked.code == 1, blocked.stdout + blocked.stderr
    assert receiver.events() == [("sales", "blocked")]
    sent = receiver.calls[0]
    assert sent["environment"] is None
    assert sent["source"]["commit"] == blocked_at
    assert sent["source"]["subject"] == "double units_sold"
    assert sent["source"]["author"] == "Test Author"
    assert {f["answer"] for f in sent["failing"]} == users
    assert all(f["outcome"] == "wrong" and f["reason"] for f in sent["failing"])
    assert sent["score"]["total"] == sent["previous_score"]["total"]
    assert sent["score"]["correct"] == sent["previous_score"]["correct"] - len(users)
    assert sent["reach"]["total"] == sent["score"]["total"]
    assert sent["deployment"] == git(promoted_repo, "rev-parse", "refs/dst/attempts/sales")
    assert "*sales* BLOCKED" in sent["text"] and "double units_sold" in sent["text"]
    assert receiver.headers[0]["Content-Type"] == "application/json"

    # the fix differs from what serves (a comment), so it is a new deployment
    fix = {str(metric.relative_to(promoted_repo)): good + "# fixed\n"}
    fixed_at = commit(promoted_repo, fix, "undo the doubling")
    fixed = _apply(promoted_repo, receiver.url)
    assert fixed.code == 0, fixed.stdout + fixed.stderr
    assert receiver.events() == [("sales", "blocked"), ("sales", "recovered")]
    back = receiver.calls[1]
    assert back["source"]["commit"] == fixed_at
    assert back["deployment"] == serving(promoted_repo, "sales")
    assert back["failing"] == []
    assert back["score"]["correct"] == back["score"]["total"]
    assert "recovered" in back["text"]

    # the next promotion is an ordinary one: the block is behind the new deployment
    commit(promoted_repo, {str(metric.relative_to(promoted_repo)): good}, "drop the comment")
    later = _apply(promoted_repo, receiver.url)
    assert later.code == 0, later.stdout + later.stderr
    assert receiver.events()[2:] == [("sales", "promoted")]


def test_reverting_the_commit_that_blocked_sends_recovered_once(promoted_repo: Path) -> None:
    _configure(promoted_repo)
    serving_before = serving(promoted_repo, "sales")
    with receiving() as hook:
        blocked_at = double_metric(promoted_repo, "units_sold")
        assert _apply(promoted_repo, hook.url).code == 1
        git(promoted_repo, "revert", "--no-edit", blocked_at)  # the lens tree serving, again
        reverted_at = git(promoted_repo, "rev-parse", "HEAD")
        back = _apply(promoted_repo, hook.url, "--format", "json")
        assert back.code == 0, back.stdout + back.stderr
        assert back.lens("sales")["action"] == "unchanged"
        assert [(c["lens"], c["action"]) for c in hook.calls] == [
            ("sales", "blocked"),
            ("sales", "recovered"),
        ]
        sent = hook.calls[1]
        assert sent["source"]["commit"] == reverted_at
        assert sent["deployment"] == serving_before == serving(promoted_repo, "sales")
        assert sent["failing"] == [] and "recovered after a block" in sent["text"]
        assert "recovered" in back.lens("sales")["messages"][0]
        # the recovery is recorded (never served), so it is announced once
        attempt = git(promoted_repo, "rev-parse", "refs/dst/attempts/sales")
        assert git(promoted_repo, "show", "-s", "--format=%s", attempt).startswith("recovered")
        assert _apply(promoted_repo, hook.url).code == 0
        assert len(hook.calls) == 2
        # and the next real promotion is an ordinary one
        metric = promoted_repo / "lenses/sales/metrics/units_sold.yaml"
        commit(
            promoted_repo, {str(metric.relative_to(promoted_repo)): metric.read_text() + "#\n"}, "c"
        )
        assert _apply(promoted_repo, hook.url).code == 0
        assert [c["action"] for c in hook.calls[2:]] == ["promoted"]


def test_an_older_commit_with_the_serving_tree_is_no_recovery(promoted_repo: Path) -> None:
    _configure(promoted_repo)
    with receiving() as hook:
        double_metric(promoted_repo, "units_sold")
        assert _apply(promoted_repo, hook.url).code == 1
        # applying the commit before the block is not a revert of it: the block stands
        earlier = _apply(promoted_repo, hook.url, "--to", "HEAD~1")
        assert earlier.code == 0, earlier.stdout + earlier.stderr
        assert [c["action"] for c in hook.calls] == ["blocked"]
        attempt = git(promoted_repo, "rev-parse", "refs/dst/attempts/sales")
        assert git(promoted_repo, "show", "-s", "--format=%s", attempt).startswith("blocked")


def test_only_the_subscribed_events_are_sent(promoted_repo: Path, receiver: Receiver) -> None:
    _configure(promoted_repo, events="[promoted]")
    double_metric(promoted_repo, "units_sold")
    assert _apply(promoted_repo, receiver.url).code == 1
    assert receiver.calls == []
    _fix(promoted_repo)
    assert _apply(promoted_repo, receiver.url).code == 0
    # a recovery is a promotion too: a `promoted` subscriber gets it, once
    assert receiver.events() == [("sales", "recovered")]


def test_dry_runs_send_nothing(promoted_repo: Path, receiver: Receiver) -> None:
    _configure(promoted_repo)
    double_metric(promoted_repo, "units_sold")
    dry = _apply(promoted_repo, receiver.url, "--dry-run")
    assert dry.code == 1
    plan = invoke(promoted_repo, "plan", env={HOOK_ENV: receiver.url})
    assert plan.code == 0
    assert receiver.calls == []


def test_a_receiver_answering_500_is_retried_and_the_exit_code_stands(
    promoted_repo: Path, receiver: Receiver
) -> None:
    receiver.fail_first = 2
    _configure(promoted_repo)
    double_metric(promoted_repo, "units_sold")
    blocked = _apply(promoted_repo, receiver.url)
    assert blocked.code == 1
    assert len(receiver.calls) == 3  # two 500s, then accepted (retries: 2 by default)
    assert receiver.calls[0] == receiver.calls[2]
    assert "warning: notification" not in blocked.stderr


def test_a_receiver_that_keeps_failing_is_a_warning_naming_the_variable(
    promoted_repo: Path, receiver: Receiver
) -> None:
    receiver.fail_first = 99
    commit(
        promoted_repo,
        {"dst.yaml": f"notify:\n  - url_env: {HOOK_ENV}\n    events: [blocked]\n    retries: 1\n"},
        "notify",
    )
    double_metric(promoted_repo, "units_sold")
    blocked = _apply(promoted_repo, receiver.url)
    assert blocked.code == 1
    assert len(receiver.calls) == 2
    assert f"${HOOK_ENV} failed after 2 tries: HTTP 500" in blocked.stderr
    assert "secret-token" not in blocked.stderr + blocked.stdout


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_or_unset_url_does_not_change_the_exit_code(promoted_repo: Path) -> None:
    _configure(promoted_repo)
    url = f"http://127.0.0.1:{_closed_port()}/hook"
    double_metric(promoted_repo, "units_sold")
    before = serving(promoted_repo, "sales")
    blocked = _apply(promoted_repo, url)
    assert blocked.code == 1
    assert serving(promoted_repo, "sales") == before
    assert f"warning: notification blocked for lens sales to ${HOOK_ENV} failed" in (blocked.stderr)
    _fix(promoted_repo)
    unset = invoke(promoted_repo, "apply")
    assert unset.code == 0, unset.stdout + unset.stderr
    assert f"${HOOK_ENV} not sent: the variable is not set; the verdict" in unset.stderr
    assert "after 0 tries" not in unset.stderr


def test_a_url_in_dst_yaml_is_bad_input_naming_file_and_line(promoted_repo: Path) -> None:
    commit(
        promoted_repo,
        {
            "dst.yaml": f"notify:\n  - url_env: {HOOK_ENV}\n    url: https://hooks.example.com/x\n"
            "    events: [blocked]\n"
        },
        "notify",
    )
    before = git(promoted_repo, "for-each-ref", "refs/dst/")
    done = invoke(promoted_repo, "apply")
    assert done.code == 2
    assert "dst.yaml:3:" in done.stderr and "'url'" in done.stderr, done.stderr
    assert git(promoted_repo, "for-each-ref", "refs/dst/") == before


def test_only_notifications_speak_http() -> None:
    """The standard library's HTTP client is imported by ``reconciler/notify/`` alone
    (import-linter cannot see standard-library modules, so this scans the sources)."""
    package = Path(__file__).resolve().parent.parent / "reconciler"
    speaking = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.startswith(("urllib.request", "http.client")) for n in names):
                speaking.add(path.relative_to(package).parts[0])
    assert speaking == {"notify"}


def _event() -> LensEvent:
    return LensEvent(
        event="blocked",
        lens="sales",
        environment=None,
        deployment="ab" * 20,
        source={"commit": "cd" * 20, "subject": "s", "author": "A"},
        score={"correct": 1, "total": 2},
        previous_score={"correct": 2, "total": 2},
        reach={"reached": 1, "total": 2},
        failing=({"answer": "x", "outcome": "wrong", "reason": "1 row differs"},),
        reason="gate BLOCKED",
    )


def test_backoff_doubles_and_a_4xx_is_not_retried(receiver: Receiver) -> None:
    receiver.fail_first = 99
    waits: list[float] = []

    def sleep(s: float) -> None:
        waits.append(s)
        time.sleep(s)

    hook = Webhook(url_env="U", events=("blocked",), retries=2)
    (done,) = deliver([hook], {"U": receiver.url}, [_event()], sleep=sleep)
    assert (done.ok, done.tries, done.status) == (False, 3, 500)
    assert waits == [BACKOFF_S, 2 * BACKOFF_S]
    assert len(receiver.calls) == 3

    receiver.calls.clear()
    (gone,) = deliver([hook], {"U": receiver.url + "/404"}, [_event()], sleep=sleep)
    assert (gone.ok, gone.tries, gone.status) == (False, 1, 404)  # final: not retried
    (cut,) = deliver([hook], {"U": receiver.url}, [_event()], sleep=sleep, deadline_s=0.3)
    assert cut.tries == 1 and not cut.ok  # the next wait would pass the deadline


def test_a_receiver_that_is_not_http_is_a_failed_delivery() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()

        def answer() -> None:
            for _ in range(2):
                conn, _ = server.accept()
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"garbage\r\n\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}/"
        hook = Webhook(url_env="U", events=("blocked",), retries=1)
        (done,) = deliver([hook], {"U": url}, [_event()])
        thread.join(timeout=10)
    assert not done.ok and done.tries == 2 and done.status is None
    assert "not an HTTP answer" in str(done.error)


def test_the_payload_and_its_slack_text() -> None:
    payload = _event().payload()
    assert set(payload) == {
        "schema_version", "lens", "environment", "action", "deployment", "source", "score",
        "previous_score", "reach", "failing", "reason", "text",
    }  # fmt: skip
    assert payload["text"].splitlines() == [
        f"dst: lens *sales* BLOCKED at `{'cd' * 6}` “s” by A",
        "score 1/2 (was 2/2), reach 1/2",
        "• `x` wrong: 1 row differs",
    ]


def test_ci_apply_notifies_too(promoted_repo: Path, receiver: Receiver) -> None:
    _configure(promoted_repo)
    double_metric(promoted_repo, "units_sold")
    env = {"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": "", "GITHUB_STEP_SUMMARY": ""}
    done = invoke(promoted_repo, "ci", "apply", env={**env, HOOK_ENV: receiver.url})
    assert done.code == 1, done.stdout + done.stderr
    assert receiver.events() == [("sales", "blocked")]


def test_watch_reconcile_mode_notifies_once_per_commit(
    promoted_repo: Path, receiver: Receiver
) -> None:
    _configure(promoted_repo)
    double_metric(promoted_repo, "units_sold")
    rt = Runtime(pygit2.Repository(str(promoted_repo)), env={HOOK_ENV: receiver.url})
    follower = Follower("main")
    try:
        report = follow(rt, follower)
        assert report is not None and report.exit_code == 1
        assert follow(rt, follower) is None  # the same tip is never retried
    finally:
        rt.close()
    assert receiver.events() == [("sales", "blocked")]


class Drip:
    """A receiver that reads the request, then answers one byte every ``every_s`` seconds,
    for ever (the status line never ends), on every connection."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.connections = 0
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                for byte in b"HTTP/1.1 200 OK" * 1000:
                    conn.sendall(bytes([byte]))
                    time.sleep(self.every_s)
            except OSError:
                return


def test_a_drip_feeding_receiver_is_cut_at_the_deadline_across_retries() -> None:
    drip = Drip(every_s=0.2)
    hook = Webhook(url_env="U", events=("blocked",), retries=3, deadline_s=2)
    started = time.monotonic()
    try:
        (done,) = deliver([hook], {"U": drip.url}, [_event()])
    finally:
        drip.server.close()
    took = time.monotonic() - started
    assert 2.0 <= took < 3.0, took  # the deadline, plus the grace an aborted try gets
    assert not done.ok and done.missed_deadline and done.tries == 1
    assert done.error == "no answer within the 2 s deadline"
    assert done.record()["deadline_s"] == 2 and 2.0 <= done.record()["seconds"] < 3.0


def test_after_a_missed_deadline_the_other_events_skip_that_webhook() -> None:
    drip = Drip(every_s=0.2)
    hook = Webhook(url_env="U", events=("blocked",), deadline_s=1)
    second = replace(_event(), lens="finance")
    started = time.monotonic()
    try:
        first, later = deliver([hook], {"U": drip.url}, [_event(), second])
    finally:
        drip.server.close()
    assert time.monotonic() - started < 2.0
    assert first.missed_deadline and later.tries == 0 and drip.connections == 1
    assert later.error == "the webhook missed its deadline for an earlier event"
    assert "not sent: the webhook missed" in later.warning()


def test_the_default_deadline_is_30_s_and_cannot_be_raised() -> None:
    assert DEADLINE_S == 30.0
    hook = Webhook(url_env="U", events=("blocked",))
    assert hook.deadline_s == 30.0
    # what a delivery ran with is recorded: the default, without waiting it out
    (unset,) = deliver([hook], {}, [_event()])
    assert unset.record()["deadline_s"] == 30.0
    with pytest.raises(ValidationError, match="less than or equal to 30"):
        Webhook(url_env="U", events=("blocked",), deadline_s=31)


def test_the_deadline_bounds_a_drip_fed_apply_and_is_recorded_in_the_report(
    promoted_repo: Path,
) -> None:
    drip = Drip(every_s=0.5)
    commit(
        promoted_repo,
        {
            "dst.yaml": f"notify:\n  - url_env: {HOOK_ENV}\n    events: [blocked]\n"
            "    deadline_s: 2\n"
        },
        "notify",
    )
    double_metric(promoted_repo, "units_sold")
    try:
        done = _apply(promoted_repo, drip.url, "--format", "json")
    finally:
        drip.server.close()
    assert done.code == 1, done.stderr
    (sent,) = done.lens("sales")["notifications"]
    assert sent["delivered"] is False and sent["tries"] == 1 and sent["deadline_s"] == 2
    assert 2.0 <= sent["seconds"] < 3.0
    assert f"${HOOK_ENV} failed after 1 try: no answer within the 2 s deadline" in done.stderr


def test_a_redirect_is_not_followed_and_names_its_location(receiver: Receiver) -> None:
    hook = Webhook(url_env="U", events=("blocked",), retries=2)
    (done,) = deliver([hook], {"U": receiver.url + "/302"}, [_event()])
    assert (done.ok, done.tries, done.status) == (False, 1, 302)
    landed = receiver.url.split("?")[0] + "/landed?…"
    assert done.location == landed and "t0p" not in str(done.error)
    assert done.error == f"HTTP 302 redirect to {landed} not followed"
    assert len(receiver.calls) == 1 and receiver.gets == []  # neither re-POSTed nor GET


def test_a_delivered_event_is_recorded_in_the_report(
    promoted_repo: Path, receiver: Receiver
) -> None:
    _configure(promoted_repo)
    double_metric(promoted_repo, "units_sold")
    done = _apply(promoted_repo, receiver.url, "--format", "json")
    assert done.code == 1
    (sent,) = done.lens("sales")["notifications"]
    assert sent["delivered"] is True and sent["status"] == 200 and sent["url_env"] == HOOK_ENV
    assert "secret-token" not in done.stdout


BROKEN_ANSWER = """\
id: broken
question: How many units are there in the warehouse?
sql: SELECT SUM(quantity) FROM no_such_table
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""


def test_a_block_by_certified_sql_that_cannot_run_names_that_answer(
    promoted_repo: Path, receiver: Receiver
) -> None:
    _configure(promoted_repo)
    commit(promoted_repo, {"lenses/sales/answers/broken.yaml": BROKEN_ANSWER}, "broken oracle")
    done = _apply(promoted_repo, receiver.url)
    assert done.code == 1, done.stdout + done.stderr
    (sent,) = receiver.calls
    assert sent["action"] == "blocked"
    assert [f["answer"] for f in sent["failing"]] == ["broken"]
    assert (
        sent["failing"][0]["outcome"] == "error" and "no_such_table" in sent["failing"][0]["reason"]
    )
    assert "`broken` error" in sent["text"]
