"""A small GitHub Actions runner: a workflow's steps, in order, on this machine.

What it emulates, and how:

* ``${{ … }}`` expressions: :func:`evaluate` reads the handful dst's workflows use —
  contexts (``github.…``, ``inputs.…``, ``secrets.…``, ``env.…``), string, boolean
  and ``null`` literals, ``==``, ``!=``, ``!``, ``&&``, ``||``, parentheses and the
  status functions ``success()``, ``failure()``, ``cancelled()``, ``always()``. An
  expression it cannot read is an error, never a guess.
* ``actions/checkout``: a shallow ``git clone --depth N file://ORIGIN`` of the
  event's ref (a pull request's ``refs/pull/N/merge`` is fetched at that depth).
* ``actions/setup-python``: nothing (the test's Python is on ``PATH``);
  ``actions/upload-artifact``: records whether the path exists.
* A composite action (``./.github/actions/dst`` or ``OWNER/REPO/.github/actions/dst@REF``):
  its ``action.yml`` is read from ``action_root``; its steps run with
  ``github.action_path`` set to that folder and its inputs (defaults, then ``with:``).
* ``run:`` steps: ``bash --noprofile --norc -eo pipefail`` in the workspace, with the
  job's and the step's ``env:``, and ``GITHUB_EVENT_PATH``, ``GITHUB_EVENT_NAME``,
  ``GITHUB_SHA``, ``GITHUB_REF``, ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY`` and
  ``GITHUB_WORKSPACE`` as the runner sets them.

Nothing here reaches a network: a step the caller cannot run here (a ``pip
install``) is handed to ``skip``, which returns the reason it is not run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import GIT_ENV, git

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<num>-?\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_.-]*))"
)
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)


class Unsupported(Exception):
    """An expression or step this runner does not emulate."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise Unsupported(f"cannot read expression {text!r} at {text[pos:]!r}")
        kind = match.lastgroup
        assert kind is not None
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


def _lookup(path: str, ctx: Mapping[str, Any]) -> Any:
    head, *rest = path.split(".")
    if head not in ctx:
        raise Unsupported(f"unknown context {head!r} in {path!r}")
    value: Any = ctx[head]
    for part in rest:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _loose_equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()  # GitHub compares strings case-insensitively
    return bool(a == b)


_FUNCTIONS = ("success", "failure", "cancelled", "always")


class _Parser:
    """Recursive descent over one expression's tokens (``||`` < ``&&`` < ``==`` < unary)."""

    def __init__(self, text: str, ctx: Mapping[str, Any]) -> None:
        self.text, self.ctx = text, ctx
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise Unsupported(f"expression {self.text!r} ends early")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def whole(self) -> Any:
        value = self.disjunction()
        if self.pos != len(self.tokens):
            raise Unsupported(f"trailing tokens in {self.text!r}")
        return value

    def disjunction(self) -> Any:
        left = self.conjunction()
        while self.peek() == ("op", "||"):
            self.take()
            right = self.conjunction()
            left = left or right
        return left

    def conjunction(self) -> Any:
        left = self.comparison()
        while self.peek() == ("op", "&&"):
            self.take()
            right = self.comparison()
            left = left and right
        return left

    def comparison(self) -> Any:
        left = self.primary()
        while self.peek() in (("op", "=="), ("op", "!=")):
            _, op = self.take()
            right = self.primary()
            left = _loose_equal(left, right) == (op == "==")
        return left

    def primary(self) -> Any:
        kind, value = self.take()
        if (kind, value) == ("op", "!"):
            return not self.primary()
        if (kind, value) == ("op", "("):
            got = self.disjunction()
            if self.take() != ("op", ")"):
                raise Unsupported(f"unbalanced parentheses in {self.text!r}")
            return got
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "num":
            return float(value)
        if kind != "name":
            raise Unsupported(f"unexpected {value!r} in {self.text!r}")
        literals = {"true": True, "false": False, "null": None}
        if value in literals:
            return literals[value]
        if self.peek() == ("op", "("):
            return self.call(value)
        return _lookup(value, self.ctx)

    def call(self, name: str) -> bool:
        self.take()
        if name not in _FUNCTIONS or self.take() != ("op", ")"):
            raise Unsupported(f"cannot read function {name}(…) in {self.text!r}")
        status = self.ctx.get("__status__", "success")
        return {"success": status == "success", "failure": status == "failure"}.get(
            name, name == "always"
        )


def evaluate(text: str, ctx: Mapping[str, Any]) -> Any:
    """The value of one expression (without its ``${{ }}``) in contexts ``ctx``.

    ``ctx`` maps context names to mappings; ``ctx["__status__"]`` is ``"success"``
    or ``"failure"`` (what the status functions read; nothing is ever cancelled).

    Raises:
        Unsupported: the expression uses what this reader does not know.
    """
    return _Parser(text, ctx).whole()


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def interpolate(text: Any, ctx: Mapping[str, Any]) -> str:
    """``text`` with every ``${{ expr }}`` replaced by its value's string."""
    return _EXPRESSION.sub(lambda m: _text(evaluate(m.group(1), ctx)), _text(text))


def condition(text: Any, ctx: Mapping[str, Any]) -> bool:
    """A step's or job's ``if:`` (with or without ``${{ }}``); absent means ``success()``."""
    if text is None:
        return bool(evaluate("success()", ctx))
    if isinstance(text, bool):
        return text
    body = str(text).strip()
    whole = _EXPRESSION.fullmatch(body)
    value = evaluate(whole.group(1) if whole else body, ctx)
    statuses = ("success()", "failure()", "cancelled()", "always()")
    if ctx.get("__status__") == "failure" and not any(f in body for f in statuses):
        return False  # GitHub reads a condition without a status function as success() && it
    return bool(value)


@dataclass
class Step:
    """One step that ran (or was skipped), composite steps flattened after their parent."""

    name: str
    code: int | None  # None: not run
    stdout: str = ""
    stderr: str = ""
    why_not_run: str = ""
    summary: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Job:
    """What a job did: its steps in order, and whether it failed."""

    name: str
    ran: bool
    steps: list[Step] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(s.code not in (None, 0) for s in self.steps)

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def log(self) -> str:
        return "\n".join(
            f"--- {s.name}: {s.code if s.code is not None else 'skipped: ' + s.why_not_run}\n"
            f"{s.stdout}{s.stderr}"
            for s in self.steps
        )


@dataclass
class Runner:
    """Runs workflow jobs for one event against ``origin`` (a bare repository).

    Attributes:
        origin: the repository ``actions/checkout`` clones (``file://``).
        action_root: the checkout of dst whose ``.github/actions/dst`` composite
            action ``uses:`` names resolve to (``github.action_path``).
        workdir: where workspaces, event payloads and step files are written.
        path_prefix: folders put first on ``PATH`` (where ``dst`` is).
        base_env: the rest of the process environment of every step.
        secrets: the ``secrets`` context.
        skip: given a step's name and its resolved environment, returns why it is
            not run here, or ``None`` to run it.
    """

    origin: Path
    action_root: Path
    workdir: Path
    path_prefix: list[Path]
    base_env: Mapping[str, str]
    secrets: Mapping[str, str] = field(default_factory=dict)
    skip: Callable[[str, Mapping[str, str]], str | None] = lambda _n, _e: None

    def run(
        self,
        workflow: Path,
        job: str,
        *,
        event_name: str,
        event: Mapping[str, Any],
        ref: str,
        sha: str,
    ) -> Job:
        """Run ``job`` of ``workflow`` for ``event``; a fresh workspace each time."""
        spec = yaml.safe_load(workflow.read_text())
        job_spec = spec["jobs"][job]
        self.workdir.mkdir(parents=True, exist_ok=True)
        workspace = self.workdir / f"{workflow.stem}-{job}"
        event_path = self.workdir / f"{workflow.stem}-{job}.event.json"
        event_path.write_text(json.dumps(event))
        github = {
            "event_name": event_name,
            "event": dict(event),
            "sha": sha,
            "ref": ref,
            "ref_name": ref.rsplit("/", 1)[-1] if ref.startswith("refs/heads/") else ref,
            "workspace": str(workspace),
            "repository": event.get("repository", {}).get("full_name", ""),
            "action_path": "",
        }
        ctx: dict[str, Any] = {
            "github": github,
            "inputs": dict(event.get("inputs") or {}),
            "secrets": dict(self.secrets),
            "env": {},
            "__status__": "success",
        }
        result = Job(job, ran=condition(job_spec.get("if"), ctx))
        if not result.ran:
            return result
        env = {
            **self.base_env,
            "PATH": os.pathsep.join([*map(str, self.path_prefix), self.base_env["PATH"]]),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_SHA": sha,
            "GITHUB_REF": ref,
            "GITHUB_REF_NAME": github["ref_name"],
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_REPOSITORY": github["repository"],
        }
        for key, value in (job_spec.get("env") or {}).items():
            env[key] = interpolate(value, ctx)
        ctx["env"] = env
        for step in job_spec["steps"]:
            self._step(step, ctx, env, workspace, result, ref)
        return result

    def _step(
        self,
        step: Mapping[str, Any],
        ctx: dict[str, Any],
        env: Mapping[str, str],
        workspace: Path,
        job: Job,
        ref: str,
    ) -> None:
        name = interpolate(step.get("name") or step.get("uses") or step.get("run", ""), ctx)
        if not condition(step.get("if"), ctx):
            job.steps.append(Step(name, None, why_not_run="its if: is false"))
            return
        step_env = {**env}
        for key, value in (step.get("env") or {}).items():
            step_env[key] = interpolate(value, ctx)
        uses = step.get("uses")
        before = len(job.steps)
        if uses is None:
            self._run(name, str(step["run"]), step_env, workspace, job, ctx)
        elif uses.startswith("actions/checkout@"):
            depth = int((step.get("with") or {}).get("fetch-depth", 1))
            self._checkout(workspace, ref, depth)
            job.steps.append(Step(name, 0, stdout=f"cloned {ref} at depth {depth}\n"))
        elif uses.startswith("actions/setup-python@"):
            job.steps.append(Step(name, None, why_not_run="the test's Python is on PATH"))
        elif uses.startswith("actions/upload-artifact@"):
            path = interpolate((step.get("with") or {}).get("path", ""), ctx)
            there = (workspace / path).exists()
            job.steps.append(Step(name, 0, stdout=f"{path}: {'found' if there else 'absent'}\n"))
        elif uses == "./.github/actions/dst" or re.fullmatch(
            r"[\w.-]+/[\w.-]+/\.github/actions/dst@[\w./-]+", uses
        ):
            self._composite(step, ctx, step_env, workspace, job)
        else:
            raise Unsupported(f"step {name!r} uses {uses!r}")
        if any(s.code not in (None, 0) for s in job.steps[before:]):
            ctx["__status__"] = "failure"

    def _composite(
        self,
        step: Mapping[str, Any],
        ctx: dict[str, Any],
        env: Mapping[str, str],
        workspace: Path,
        job: Job,
    ) -> None:
        action_path = self.action_root / ".github" / "actions" / "dst"
        action = yaml.safe_load((action_path / "action.yml").read_text())
        given = {k: interpolate(v, ctx) for k, v in (step.get("with") or {}).items()}
        unknown = set(given) - set(action.get("inputs", {}))
        if unknown:
            raise Unsupported(f"inputs the action does not declare: {sorted(unknown)}")
        inputs = {k: _text(v.get("default", "")) for k, v in action.get("inputs", {}).items()}
        inputs.update(given)
        inner = {
            **ctx,
            "inputs": inputs,
            "github": {**ctx["github"], "action_path": str(action_path)},
        }
        for sub in action["runs"]["steps"]:
            before = len(job.steps)
            self._step(sub, inner, env, workspace, job, ctx["github"]["ref"])
            for done in job.steps[before:]:
                done.name = f"{interpolate(step.get('name', ''), ctx)} / {done.name}"
        ctx["__status__"] = inner["__status__"]

    def _run(
        self,
        name: str,
        script: str,
        env: dict[str, str],
        workspace: Path,
        job: Job,
        ctx: Mapping[str, Any],
    ) -> None:
        reason = self.skip(name, env)
        if reason is not None:
            job.steps.append(Step(name, None, why_not_run=reason))
            return
        index = len(job.steps)
        files = {
            key: self.workdir / f"{job.name}.{index}.{key.lower()}"
            for key in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")
        }
        for path in files.values():
            path.write_text("")
        script_path = self.workdir / f"{job.name}.{index}.sh"
        script_path.write_text(interpolate(script, ctx))
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_path)],
            cwd=workspace,
            env={**env, **{k: str(v) for k, v in files.items()}},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        outputs = dict(
            line.split("=", 1)
            for line in files["GITHUB_OUTPUT"].read_text().splitlines()
            if "=" in line
        )
        job.steps.append(
            Step(
                name,
                done.returncode,
                done.stdout,
                done.stderr,
                summary=files["GITHUB_STEP_SUMMARY"].read_text(),
                outputs=outputs,
            )
        )

    def _checkout(self, workspace: Path, ref: str, depth: int) -> None:
        url = self.origin.as_uri()
        if ref.startswith("refs/heads/"):
            branch = ref.removeprefix("refs/heads/")
            args = ["clone", "-q", "--depth", str(depth), "--branch", branch, url, str(workspace)]
            git(self.workdir, *args)
        else:  # refs/pull/N/merge: what actions/checkout fetches for a pull request
            git(self.workdir, "init", "-q", str(workspace))
            git(workspace, "remote", "add", "origin", url)
            git(workspace, "fetch", "-q", "--no-tags", "--depth", str(depth), "origin", ref)
            git(workspace, "checkout", "-q", "--detach", "FETCH_HEAD")
        for key, value in GIT_ENV.items():
            if key.endswith("_NAME"):
                git(workspace, "config", "user.name", value)
            elif key.endswith("_EMAIL"):
                git(workspace, "config", "user.email", value)
