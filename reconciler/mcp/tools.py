"""The five MCP tools as plain functions over the serving versions (no SDK here).

:class:`Catalogue` answers every tool from the **serving version** of a lens in one
environment (``refs/dst/serving/<lens>``, or ``refs/dst/env/<E>/serving/<lens>``),
never from the working tree:

* **re-read, proven, every call** — each call reads the serving ref again and proves
  it the way ``dst ask`` does (:func:`reconciler.git.serving.serving_target`: the ref
  must point at a deployment whose recorded gate passed), so a promotion, a rollback
  or a hand-edited ref is seen by the next call, without a restart;
* **warm per deployment** — the lens of a deployment is loaded once (its SQL parsed
  and checked once) and kept under its deployment oid; each environment keeps one
  :class:`~reconciler.context.Runtime`, whose warehouse connections, dimension
  values and tiers stay open across calls — until a file warehouse changes on disk
  (``dst seed`` replaces ``.dst/warehouse.duckdb``): then that environment's runtime
  is reopened, so the next answer reads the new data;
* **read-only** — nothing is written: no ref, no ``.dst/checked/`` marker, no profile
  cache entry (:attr:`Runtime.read_only <reconciler.context.Runtime.read_only>`);
  the SQL runs on the read-only warehouse as ``dst ask``'s does.

Calls are serialized by one lock (the SDK runs each tool call in a worker thread;
a warehouse connection and a git repository are used by one thread at a time).
Errors are :class:`~reconciler.errors.DstError` s with the fix in their message; the
server turns them into tool errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from reconciler.ask import serve
from reconciler.assembly.profiles import file_version
from reconciler.assembly.request import assemble
from reconciler.candidate import load_serving
from reconciler.context import Runtime
from reconciler.errors import DstError, UsageError
from reconciler.git import refs as refstore, serving as proven, trees as gitstate
from reconciler.history import not_serving
from reconciler.ids import LENS_NAME_RE, AnswerId, Oid
from reconciler.lens import Lens
from reconciler.lensfiles import Column as LensColumn, Model
from reconciler.mcp.shapes import (
    Answered,
    AnswerEntry,
    AnswerList,
    ClarifyEntry,
    Column,
    Explanation,
    Gate,
    LensDescription,
    LensEntry,
    LensList,
    MetricEntry,
    ModelEntry,
)
from reconciler.warehouse.access import file_facts

T = TypeVar("T")

KEPT = 256
"""Lens versions kept warm at once; past it every cache is dropped and rebuilt (a long
session that saw many promotions starts cold once rather than grow). A version is
never dropped alone: the runtime's dimension values are keyed by the lens object, so
an evicted lens must take its runtime with it."""


class Catalogue:
    """The serving versions of one repository's lenses, for the MCP tools.

    Args:
        repo: ``--repo`` (default: the current directory).
        environment: ``--env``: the environment a call without ``env`` reads.
        warehouse: ``--warehouse``, overriding every configured warehouse.
        progress: receives warnings (a superuser login …); stderr in the server.

    Raises:
        UsageError: no git repository there; ``environment`` is not in ``dst.yaml``.
    """

    def __init__(
        self,
        repo: Path | None,
        environment: str | None,
        warehouse: str | None,
        progress: Callable[[str], None],
    ) -> None:
        self.repo = gitstate.open_repo(repo)
        self.environment = environment
        self.warehouse = warehouse
        self.progress = progress
        self._runtimes: dict[str | None, Runtime] = {}
        self._loaded: dict[tuple[str | None, str, Oid], tuple[refstore.Deployment, Lens]] = {}
        self._data: dict[tuple[str | None, str], str | None] = {}  # (env, url): file version
        self._lock = threading.Lock()
        self._runtime(environment)  # an unknown --env is bad input before serving starts

    def close(self) -> None:
        """Close every warehouse connection opened."""
        with self._lock:
            self._drop()

    # -- the tools ----------------------------------------------------------------------

    def list_lenses(self, env: str | None = None) -> LensList:
        """Every lens serving in ``env`` (default: the session's), with its last score."""
        return self._locked(lambda: self._list_lenses(self._env(env)))

    def describe_lens(self, lens: str, env: str | None = None) -> LensDescription:
        """The models, metrics, dimensions and synonyms of ``lens``'s serving version."""
        return self._locked(lambda: self._describe(lens, self._env(env)))

    def ask(self, question: str, lens: str, env: str | None = None) -> Answered:
        """``question`` through the serving path of ``lens`` (``dst ask``'s steps)."""
        return self._locked(lambda: self._ask(question, lens, self._env(env)))

    def list_answers(self, lens: str | None = None, env: str | None = None) -> AnswerList:
        """The active certified answers of ``lens`` (default: every serving lens)."""
        return self._locked(lambda: self._list_answers(lens, self._env(env)))

    def explain(self, answer: str, lens: str | None = None, env: str | None = None) -> Explanation:
        """One certified answer of a serving version: SQL, provenance, binding, last outcome.

        Raises:
            UsageError: no serving lens has ``answer`` (or more than one, without ``lens``).
        """
        return self._locked(lambda: self._explain(answer, lens, self._env(env)))

    # -- implementations ------------------------------------------------------------------

    def _list_lenses(self, env: str | None) -> LensList:
        rt = self._runtime(env)
        rows = []
        for name in refstore.served_lenses(rt.repo, env):
            if not LENS_NAME_RE.match(name):
                continue  # not a ref dst wrote; `dst status` reports it
            dep, lens = self._served(name, env)
            info = dep.info
            active = sum(1 for a in lens.answers.values() if a.status == "active")
            rows.append(
                LensEntry(
                    lens=name,
                    environment=env,
                    deployment=dep.oid,
                    description=lens.config.description,
                    gate=info.gate,
                    action=info.action,
                    source=info.source,
                    recorded_at=info.recorded_at,
                    score=dict(info.score) if info.score is not None else None,
                    reach=dict(info.reach) if info.reach is not None else None,
                    certified_answers=active,
                )
            )
        return LensList(environment=env, lenses=rows)

    def _describe(self, name: str, env: str | None) -> LensDescription:
        dep, lens = self._served(name, env)
        cfg = lens.config
        return LensDescription(
            lens=lens.name,
            environment=env,
            deployment=dep.oid,
            description=cfg.description,
            dialect=cfg.dialect,
            row_cap=cfg.row_cap,
            as_of=cfg.as_of,
            models=[_model(m) for _, m in sorted(lens.models.items())],
            metrics=[
                MetricEntry(
                    name=m.name,
                    label=m.label,
                    description=m.description,
                    synonyms=list(m.synonyms),
                    model=m.model,
                )
                for _, m in sorted(lens.metrics.items())
            ],
            vocabulary=dict(cfg.vocabulary),
            exclusions=list(cfg.exclusions),
            clarify=[ClarifyEntry(term=c.term, ask=c.ask) for c in cfg.clarify],
            example_questions=[e.question for _, e in sorted(lens.exemplars.items())],
        )

    def _ask(self, question: str, name: str, env: str | None) -> Answered:
        if not question.strip():
            raise UsageError("ask: the question is empty", fix="pass the question in words")
        dep, lens = self._served(name, env)
        resp = serve(self._current(env, lens), lens, question)
        out = resp.to_json(rows_shown=lens.config.row_cap)
        return Answered(
            lens=lens.name,
            environment=env,
            deployment=dep.oid,
            question=question,
            route=resp.route,
            trust_state=resp.trust_state,
            served=resp.served_rows,
            answer=resp.answer,
            sql=resp.sql,
            columns=out["columns"],
            rows=out["rows"],
            row_count=out["row_count"],
            truncated=out["truncated"],
            message=resp.message,
            reason=resp.unserved_reason(),
            notes=list(resp.notes),
            term=resp.term,
            transpiled=out.get("transpiled"),
            gates=[
                Gate(gate=e.gate, passed=e.passed, severity=e.severity, detail=e.detail)
                for e in resp.evaluations
            ],
        )

    def _list_answers(self, only: str | None, env: str | None) -> AnswerList:
        names = [only] if only is not None else refstore.served_lenses(self.repo, env)
        found = []
        for name in names:
            dep, lens = self._served(name, env)
            for aid, a in sorted(lens.answers.items()):
                if a.status != "active":
                    continue
                found.append(
                    AnswerEntry(
                        lens=lens.name,
                        answer=aid,
                        question=a.question,
                        description=a.description,
                        certified_by=a.provenance.certified_by,
                        certified_at=a.provenance.certified_at,
                        verified=aid in dep.bindings.answers,
                    )
                )
        return AnswerList(environment=env, answers=found)

    def _explain(self, answer: str, only: str | None, env: str | None) -> Explanation:
        names = [only] if only is not None else refstore.served_lenses(self.repo, env)
        holding = [n for n in names if AnswerId(answer) in self._served(n, env)[1].answers]
        if len(holding) != 1:
            where = f"lens {only}" if only else f"the serving lenses ({', '.join(names) or 'none'})"
            many = f"answer {answer!r} is in {', '.join(holding)}" if holding else ""
            raise UsageError(
                many or f"no certified answer {answer!r} in {where}",
                fix="pass lens as well" if holding else "list_answers shows the answer ids",
            )
        dep, lens = self._served(holding[0], env)
        aid = AnswerId(answer)
        found = lens.answers[aid]
        binding = dep.bindings.answers.get(aid)
        rt = self._runtime(env)
        request = assemble(
            lens,
            found.question,
            exclude_answer=aid,
            certified_matching=False,
            embedder=rt.embedder_for(lens)[0],
        )
        return Explanation(
            lens=lens.name,
            environment=env,
            deployment=dep.oid,
            answer=found.id,
            question=found.question,
            description=found.description,
            sql=found.sql,
            status=found.status,
            certified_by=found.provenance.certified_by,
            certified_at=found.provenance.certified_at,
            source=found.provenance.source,
            expect_empty=found.expect_empty,
            assets=dict(sorted(binding.assets.items())) if binding else {},
            verified_at=binding.source if binding else None,
            last_outcome=_last_outcome(rt, dep.oid, found.id),
            request=request.record(),
        )

    # -- the serving versions ---------------------------------------------------------------

    def _locked(self, call: Callable[[], T]) -> T:
        with self._lock:
            return call()

    def _env(self, env: str | None) -> str | None:
        return self.environment if env is None or env == "" else env

    def _runtime(self, env: str | None) -> Runtime:
        rt = self._runtimes.get(env)
        if rt is None:
            rt = Runtime(
                self.repo,
                warehouse_url=self.warehouse,
                environment=env,
                progress=self.progress,
                read_only=True,
            )
            self._runtimes[env] = rt
        rt.environment_config()  # dst.yaml as committed at HEAD names it (exit 2 / tool error)
        return rt

    def _current(self, env: str | None, lens: Lens) -> Runtime:
        """``env``'s runtime, reopened first when ``lens``'s file warehouse changed on disk
        since this session last read it (a server warehouse has no file: kept open)."""
        rt = self._runtime(env)
        url, _ = rt.resolve_url(lens)
        try:
            backend, database = file_facts(url)
        except ValueError:  # not a URL: opening it says so, with the fix
            return rt
        if backend not in ("duckdb", "sqlite") or not database or database == ":memory:":
            return rt
        version = file_version(Path(database))
        seen = self._data.get((env, url), version)
        if seen != version:
            rt.close()
            del self._runtimes[env]
            self._data = {k: v for k, v in self._data.items() if k[0] != env}
            rt = self._runtime(env)
        self._data[(env, url)] = version
        return rt

    def _served(self, name: str, env: str | None) -> tuple[refstore.Deployment, Lens]:
        """The serving deployment and lens of ``name`` in ``env``: the ref re-read and
        proven now, the lens loaded once per deployment."""
        if not LENS_NAME_RE.match(name):
            raise UsageError(
                f"{name!r} is not a lens name (lowercase letters, digits, _ and -)",
                fix="list_lenses shows the lenses that serve",
            )
        rt = self._runtime(env)
        oid = proven.serving_target(rt.repo, name, env)
        if oid is None:
            raise not_serving(rt, name)
        hit = self._loaded.get((env, name, oid))
        if hit is not None:
            return hit
        dep, lens = load_serving(rt.repo, name, env, marks=False)
        if dep is None or lens is None:  # the ref went away between the two reads
            raise not_serving(rt, name)
        if len(self._loaded) >= KEPT:
            self._drop()
        self._loaded[(env, name, dep.oid)] = (dep, lens)
        return dep, lens

    def _drop(self) -> None:
        for rt in self._runtimes.values():
            rt.close()
        self._runtimes.clear()
        self._loaded.clear()
        self._data.clear()


def _columns(cols: tuple[LensColumn, ...]) -> list[Column]:
    return [
        Column(
            name=c.name,
            data_type=c.data_type,
            description=c.description,
            synonyms=list(c.synonyms),
            sample_values=list(c.sample_values),
        )
        for c in cols
    ]


def _model(m: Model) -> ModelEntry:
    return ModelEntry(
        name=m.name,
        description=m.description,
        table=m.table,
        dimensions=_columns(m.dimensions),
        time_dimensions=_columns(m.time_dimensions),
        facts=_columns(m.facts),
        joins=[j.to for j in m.joins],
    )


def _last_outcome(rt: Runtime, deployment: Oid, answer: str) -> str | None:
    """``answer``'s outcome in ``deployment``'s ``state/run.json``, if it ran there."""
    try:
        run = refstore.read_run(rt.repo, deployment)
    except DstError:
        return None
    for result in run.get("results", []):
        if result.get("answer") == answer:
            return str(result.get("outcome"))
    return None
