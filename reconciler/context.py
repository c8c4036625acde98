"""What one command invocation works with: the repository, warehouses, progress.

Warehouses are opened lazily, once per resolved URL, and only when a suite
actually has to run — ``dst plan`` and an apply with nothing stale never
connect.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from reconciler.errors import (
    DstError,
    LensLoadError,
    PrivilegedWarehouse,
    UsageError,
    WarehouseError,
)
from reconciler.git import refs as refstore, trees as gitstate
from reconciler.ids import Oid
from reconciler.lensview import LensExecutor as LensExecutor
from reconciler.resultset import Executor

if TYPE_CHECKING:
    # Only for annotations: `dst status`, `dst log` and a plan with nothing stale
    # never score, so the suite, the generators and their caches load on first use;
    # `dst status` loads no lens, so the lens model loads with the first lens; and
    # dst.yaml's models and their YAML loader load when a dst.yaml is read.
    from reconciler.assembly.profiles import ProfileStore
    from reconciler.assembly.similarity import Embedder
    from reconciler.assembly.values import ValueCache
    from reconciler.generators import DimensionValues, SmartCall, TierCall
    from reconciler.generators.cache import CacheUse, GenerationCache
    from reconciler.lens import Answer, Lens
    from reconciler.lensfiles import Environment, RepoConfig
    from reconciler.suite import Scoring


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _no_total(_answers: int) -> None:
    return None


def _nothing() -> None:
    return None


def _empty_config() -> RepoConfig:
    """The settings of a repository without a ``dst.yaml``."""
    from reconciler.lensfiles import RepoConfig  # lazy: the file models load with a dst.yaml

    return RepoConfig()


@dataclass
class Runtime:
    """Per-invocation context.

    Attributes:
        repo: the git repository.
        warehouse_url: ``--warehouse`` (highest precedence), or ``None``.
        jobs: ``--jobs``: answers a suite runs at once (overrides the lens's
            ``jobs:``); ``None`` defers to the lens (default 1).
        env: the environment (``DST_WAREHOUSE_URL`` …).
        progress: sink for progress lines (stderr by default).
        on_expect: told ``n`` more answers are about to run (a progress bar's total).
        on_answer: receives the line that starts each answer; ``None`` sends it
            to ``progress`` like any other line.
        on_answers_done: told that the answers started so far have all finished
            (a suite or a self-test returned), so a clock can time the last ones.
        no_cache: ``--no-cache``: every smart and command generation is made (and stored) anew.
        cache_use: how a cache hit is treated (``use``/``verify``/``lens``: CacheUse).
        environment: ``--env``: the named environment (``dst.yaml environments:``)
            whose refs and warehouse this command works with; ``None`` for the
            unnamed default environment.
        candidate: the commit an apply or plan gates; its committed ``dst.yaml`` names
            the environments and webhooks (:meth:`committed_config`).
        read_only: a serving process that writes nothing (``dst mcp``): no column profile,
            generation-cache entry or command call log is written under ``.dst/``.
    """

    repo: gitstate.Repository
    warehouse_url: str | None = None
    jobs: int | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    progress: Callable[[str], None] = _stderr
    on_expect: Callable[[int], None] = _no_total
    on_answer: Callable[[str], None] | None = None
    on_answers_done: Callable[[], None] = _nothing
    no_cache: bool = False
    cache_use: CacheUse = "use"
    environment: str | None = None
    candidate: Oid | None = None
    read_only: bool = False
    _warehouses: dict[str, Executor] = field(default_factory=dict)
    _values: dict[str, ValueCache] = field(default_factory=dict)
    _allowing: dict[str, Executor] = field(default_factory=dict)
    _smart: dict[tuple[str, str, str], SmartCall] = field(default_factory=dict)
    _command: dict[tuple[str, ...], TierCall] = field(default_factory=dict)
    _cache: GenerationCache | None = None
    _memo: dict[str, Any] = field(default_factory=dict)  # the root, and dst.yaml by its bytes

    @property
    def root(self) -> Path:
        """The working tree root (resolved once per repository object: a plan asks per lens)."""
        got = self._memo.get("root")
        if got is None or got[0] is not self.repo:
            got = self._memo["root"] = (self.repo, gitstate.repo_root(self.repo))
        return cast(Path, got[1])

    def repo_config(self) -> RepoConfig:
        """``dst.yaml`` at the repository root, validated (an empty one without the file).

        Raises:
            LensLoadError: ``dst.yaml`` does not validate (unknown key, not a URL, an
                environment that promotes from an unknown one, from itself or in a
                cycle), at the offending line.
        """
        path = self.root / "dst.yaml"
        if not path.is_file():
            return _empty_config()
        return self._config_of(path.read_bytes())

    def config_commit(self) -> Oid | None:
        """The commit whose ``dst.yaml`` names environments and webhooks: the candidate of
        the running apply or plan (:attr:`candidate`), else ``HEAD``; ``None`` before the
        first commit."""
        if self.candidate is not None:
            return self.candidate
        try:
            return None if self.repo.head_is_unborn else Oid(str(self.repo.head.target))
        except (KeyError, ValueError):
            return None

    def committed_config(self) -> RepoConfig:
        """``dst.yaml`` as committed in :meth:`config_commit`, validated (empty without one).

        Environments (``promote_from`` included) and webhooks come from here, never from
        the working tree (DESIGN §3 "A serving ref proves its gate"): an uncommitted
        edit cannot change which environment a tree must serve in first, nor who hears
        of it.

        Raises:
            LensLoadError: it does not validate (see :meth:`repo_config`).
        """
        raw = self._committed_raw()
        return _empty_config() if raw is None else self._config_of(raw)

    def committed_environments(self) -> Mapping[str, Environment]:
        """``environments:`` of :meth:`committed_config` (empty without a committed ``dst.yaml``,
        which then loads neither the file models nor YAML).

        Raises:
            LensLoadError: it does not validate (see :meth:`repo_config`).
        """
        raw = self._committed_raw()
        return {} if raw is None else self._config_of(raw).environments

    def _committed_raw(self) -> bytes | None:
        """The bytes of ``dst.yaml`` in :meth:`config_commit`, ``None`` without one."""
        commit = self.config_commit()
        return None if commit is None else gitstate.file_at(self.repo, commit, "dst.yaml")

    def uncommitted_config(self) -> bool:
        """The working tree's ``dst.yaml`` differs from the one :meth:`committed_config` reads."""
        if self.repo.is_bare:
            return False
        path = self.root / "dst.yaml"
        here = path.read_bytes() if path.is_file() else None
        commit = self.config_commit()
        there = None if commit is None else gitstate.file_at(self.repo, commit, "dst.yaml")
        return here != there

    def _config_of(self, raw: bytes) -> RepoConfig:
        if raw == self._memo.get("config", (None,))[0]:
            return self._memo["config"][1]  # type: ignore[no-any-return]  # the same bytes: checked
        from reconciler.lensfiles import load_repo_config  # lazy: only when a dst.yaml is read

        config = load_repo_config(raw)
        self._memo["config"] = (raw, config)
        return config

    def repo_config_url(self) -> str | None:
        """``warehouse:`` from ``dst.yaml`` at the repository root, if any.

        Raises:
            LensLoadError: ``dst.yaml`` does not validate (see :meth:`repo_config`).
        """
        return self.repo_config().warehouse

    def environment_config(self) -> Environment | None:
        """The ``dst.yaml`` entry of :attr:`environment`; ``None`` for the default one.

        Read from the committed ``dst.yaml`` (:meth:`committed_config`).

        Raises:
            LensLoadError: ``dst.yaml`` does not validate.
            UsageError: ``dst.yaml`` names no such environment (exit 2).
        """
        known = self.committed_environments()
        if self.environment is None:
            return None
        if self.environment not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise UsageError(
                f"--env {self.environment}: dst.yaml has no environment of that name "
                f"(environments: {listed})",
                fix=f"add `environments: {{{self.environment}: {{warehouse: URL}}}}` to "
                "dst.yaml, or pass one of those",
            )
        return known[self.environment]

    def resolve_url(self, lens: Lens | None) -> tuple[str, str]:
        """``(url, where it came from)`` by DESIGN §7 precedence.

        ``--warehouse`` > ``DST_WAREHOUSE_URL`` > the environment's ``warehouse:``
        (``dst.yaml environments: <E>``, with ``--env E``) > the lens's
        ``warehouse:`` > ``dst.yaml``'s ``warehouse:`` > the embedded default.
        """
        # lazy: the warehouse edge loads only when a command reaches a warehouse
        from reconciler.warehouse.access import resolve_url

        environment = self.environment_config()
        return resolve_url(
            self.warehouse_url,
            self.env,
            lens.config.warehouse if lens else None,
            self.repo_config_url(),
            self.root,
            environment_url=(
                (f"environment {self.environment} warehouse:", environment.warehouse)
                if environment is not None
                else None
            ),
        )

    def warehouse_for(self, lens: Lens) -> Executor:
        """The read-only warehouse for ``lens``, opened once per URL.

        The single place lens SQL gets its warehouse: every statement of the suite,
        the self-test, ``dst ask``, ``dst certify``, profiles and ``dst mutate`` runs
        through the executor returned here, with the lens's search path
        (:meth:`search_path_for`). A connection that could write is refused once it
        opens, unless the environment sets ``allow_privileged: true``
        (:func:`reconciler.warehouse.privilege.admit`; then warned about once).

        Raises:
            WarehouseError: it cannot be reached (the gate stands down with this),
                or the embedded warehouse predates the lens's schema (run ``dst seed``).
            PrivilegedWarehouse: its login could write (exit 2; never a stand-down).
        """
        # lazy: the warehouse edge loads only when a command reaches a warehouse
        from reconciler.warehouse import privilege
        from reconciler.warehouse.access import open_warehouse

        url, _ = self.resolve_url(lens)
        if url not in self._warehouses:
            opened = open_warehouse(url, pool_size=self.jobs_for(lens))
            allowed = (self.environment_config() or self.repo_config()).allow_privileged
            privilege.admit(opened, self.environment, allowed=allowed, warn=self.progress)
            for line in opened.warnings:
                self.progress(line)
            self._warehouses[url] = opened
        warehouse = self._warehouses[url]
        path = self.search_path_for(lens, url, warehouse)
        allow, dialect = lens.config.allow_functions, lens.config.dialect
        if not allow and not path and dialect == getattr(warehouse, "dialect", dialect):
            return warehouse
        key = f"{url}\x00{','.join(allow)}\x00{dialect}\x00{','.join(path)}"
        if key not in self._allowing:
            self._allowing[key] = LensExecutor(warehouse, allow, dialect, path)
        return self._allowing[key]

    def search_path_for(self, lens: Lens, url: str, warehouse: Executor) -> tuple[str, ...]:
        """The schemas a query of ``lens`` searches first (DESIGN §2 "Seeds are per lens").

        ``lens`` itself, then the lenses it names in ``seeds_from``, each only where the
        warehouse holds a schema of that name; the warehouse's default schema follows
        them. On the embedded warehouse every lens has a schema once ``dst seed`` ran
        (tables seeded flat, before seeds were per lens, would otherwise answer a lens
        from another lens's table), so a missing one is an error.

        Returns:
            The schema names, in order; ``()`` when the warehouse has none of them.

        Raises:
            WarehouseError: the embedded warehouse lacks one of the schemas.
        """
        # lazy: the warehouse edge loads only when a command reaches a warehouse
        from reconciler.warehouse.access import is_embedded

        schemas = getattr(warehouse, "schemas", None)
        held: frozenset[str] = schemas() if schemas is not None else frozenset()
        wanted = (lens.name, *lens.config.seeds_from)
        if is_embedded(url):
            missing = [name for name in wanted if name not in held]
            if missing:
                raise WarehouseError(
                    f"the embedded warehouse has no schema {missing[0]!r} for lens "
                    f"{missing[0]}: it was seeded before that lens existed, or before "
                    "seeds were per lens (all tables in one schema)",
                    fix="run `dst seed` to rebuild it with a schema per lens",
                )
        return tuple(name for name in wanted if name in held)

    def values_for(self, lens: Lens, executor: Executor) -> DimensionValues:
        """Distinct dimension values for the generator, read once per lens version.

        Column profiles are cached under ``.dst/profiles/`` by content hash
        (:mod:`reconciler.assembly.profiles`), so a run against an unchanged
        warehouse file reads none of them from the warehouse.
        """
        # lazy: the value index loads only when a command generates
        from reconciler.assembly.values import ValueCache

        key = str(id(executor))
        if key not in self._values:
            url, _ = self.resolve_url(lens)
            path = tuple(getattr(executor, "search_path", ()))
            self._values[key] = ValueCache(
                executor,
                lens.config.statement_timeout_s,
                profiles=self.profile_store(url, path),
                dialect=str(getattr(executor, "dialect", lens.config.dialect)),
            )
        return self._values[key].for_lens(lens)

    def profile_store(self, url: str, search_path: tuple[str, ...] = ()) -> ProfileStore | None:
        """The profile cache for the warehouse at ``url``; ``None`` for an in-memory one.

        A DuckDB or SQLite file is versioned by its size and ``mtime_ns``; any
        other warehouse's entries expire after ``DST_PROFILE_TTL_S`` seconds. Only
        the redacted URL is hashed and recorded, with the lens's ``search_path``
        when it has one (two lenses' ``products`` tables are two tables).
        """
        # lazy: the warehouse edge loads only when a command reaches a warehouse
        from reconciler.assembly.profiles import ProfileStore, file_version, ttl_from_env
        from reconciler.warehouse.access import file_facts, redact

        directory = self.root / ".dst" / "profiles"
        ttl = ttl_from_env(self.env)
        shown = redact(url) + (f" search_path={','.join(search_path)}" if search_path else "")
        try:
            backend, database = file_facts(url)
        except ValueError:  # an unparseable URL never reaches here; be safe anyway
            return None
        if backend in ("duckdb", "sqlite"):
            database = database or ""
            if database in ("", ":memory:") or database.startswith(("file:", "md:")):
                return None
            version = file_version(Path(database))
            if version is None:
                return None
            return ProfileStore(
                directory, shown, f"file:{version}", ttl, writable=not self.read_only
            )
        return ProfileStore(directory, shown, None, ttl, writable=not self.read_only)

    def embedder_for(self, lens: Lens) -> tuple[Embedder | None, str]:
        """The local sentence embedder when ``lens`` asks for embedding retrieval.

        Returns:
            ``(embedder, "")``; ``(None, "")`` when the lens retrieves lexically;
            ``(None, why)`` when it asks for embeddings but the ``embed`` extra
            is not installed (the run falls back to lexical and says so).
        """
        if lens.config.generator.retrieval != "embedding":
            return None, ""
        # lazy: the optional embed extra
        from reconciler.assembly.embedding import load_embedder

        try:
            return load_embedder(self.root)
        except DstError as exc:
            return None, f"the packaged embedding model did not load ({exc.message})"
        except (OSError, ValueError, RuntimeError) as exc:
            return None, f"the packaged embedding model did not load ({type(exc).__name__})"

    def leaner_notes(self, lens: Lens) -> list[str]:
        """Why a run of ``lens`` here is leaner than production, one line each (or none).

        Stated, never silent: the lens lists the ``smart`` tier but none is
        configured, or it asks for embedding retrieval without the ``embed`` extra.
        """
        notes = []
        if "smart" in lens.config.generator.tiers:
            # Imported here: it pulls in the warehouse drivers, which a plan never needs.
            # lazy: the openai client, only with a smart tier
            from reconciler.generators import smart

            settings, why = smart.resolve(lens, self.env)
            if settings is None:
                notes.append(f"leaner than production: {why}")
        if lens.config.generator.retrieval == "embedding":
            # lazy: the optional embed extra
            from reconciler.assembly.embedding import extra_missing

            if missing := extra_missing():
                notes.append(f"leaner than production: {missing}")
        return notes

    def smart_for(self, lens: Lens) -> tuple[SmartCall | None, str]:
        """The smart tier for ``lens`` (one client per endpoint and model), or ``(None, why)``.

        Settings by :func:`reconciler.generators.smart.resolve` (environment, then ``lens.yaml``).
        """
        # lazy: the openai client, only with a smart tier
        from reconciler.generators import smart

        settings, why = smart.resolve(lens, self.env)
        if settings is None:
            return None, why
        key = (settings.base_url, settings.model, settings.api_key)
        if key not in self._smart:
            self._smart[key] = smart.SmartGenerator(settings, self.generation_cache())
        return self._smart[key], ""

    def generation_cache(self) -> GenerationCache:
        """The run's cache of external-tier generations (``.dst/cache/``, one per run): its
        budget from ``DST_MAX_CALLS`` / ``DST_MAX_COST_USD``, its warnings to progress.

        Raises:
            UsageError: either variable is set to something that is not a budget.
        """
        # lazy: the generators load only when a command generates
        from reconciler.generators.cache import Budget, GenerationCache

        if self._cache is None:
            budget, use = Budget.from_env(self.env), self.cache_use
            path = self.root / ".dst" / "cache"
            self._cache = GenerationCache(
                path, read=not self.no_cache, budget=budget, use=use, warn=self.progress
            )
            self._cache.write = not self.read_only
        return self._cache

    def command_for(self, lens: Lens) -> TierCall | None:
        """The command tier for ``lens`` when it lists one (one runner per lens and argv).

        Raises:
            LensLoadError: the lens lists the ``command`` tier without a ``command:`` block.
        """
        if "command" not in lens.config.generator.tiers:
            return None
        # lazy: the subprocess runner, only with a command tier
        from reconciler.generators import command

        settings, why = command.resolve(lens, self.root, self.env, log=not self.read_only)
        if settings is None:
            raise LensLoadError(
                f"{lens.root}/lens.yaml",
                why,
                fix="add `command: {run: [python3, gen.py]}` under generator:, "
                "or drop `command` from tiers",
            )
        key = (str(settings.cwd), str(settings.timeout_s), *settings.run)
        if key not in self._command:
            self._command[key] = command.CommandGenerator(settings, self.generation_cache())
        return self._command[key]

    def expect(self, answers: int) -> None:
        """Announce that ``answers`` more answers are about to run."""
        self.on_expect(answers)

    def answer(self, message: str) -> None:
        """Report that one answer starts running (``message`` names it)."""
        (self.on_answer or self.progress)(message)

    def answers_done(self) -> None:
        """Report that every answer started so far has finished."""
        self.on_answers_done()

    def jobs_for(self, lens: Lens) -> int:
        """Answers of ``lens`` a suite runs at once (:func:`reconciler.lens.resolve_jobs`)."""
        from reconciler.lens import resolve_jobs  # loaded already: ``lens`` is one

        return resolve_jobs(self.jobs, lens)

    def scoring_for(self, lens: Lens, *, strict: bool = False) -> Scoring:
        """Everything a suite of ``lens`` runs with: warehouse, values, tiers, embedder.

        The one scoring set-up of the suite, the self-test and ``dst test``.

        Args:
            lens: the lens version under test.
            strict: ``dst test``: an unreachable warehouse raises instead of
                standing the gate down, and no tier check is made (every
                answer then reports its own outcome).

        Returns:
            The scoring; ``cannot_score`` says why the gate cannot score (no
            warehouse, no generator tier resolves), and then nothing else is
            read from the warehouse.

        Raises:
            DstError: ``strict`` and the warehouse cannot be reached.
        """
        # lazy: the suite loads only when a command scores
        from reconciler.suite import Scoring

        executor: Executor | None = None
        cannot_score: str | None = None
        try:
            executor = self.warehouse_for(lens)
        except PrivilegedWarehouse:
            raise  # a configuration to fix, not a warehouse that is away
        except DstError as exc:
            if strict:
                raise
            cannot_score = exc.render()
        smart, no_smart = self.smart_for(lens)
        command = self.command_for(lens)
        tiers = lens.config.generator.tiers
        external = smart or command
        if executor is not None and not strict and "fast" not in tiers and not external:
            cannot_score = f"no generator tier resolves ({no_smart})"
        if executor is None or cannot_score is not None:
            return Scoring(executor, smart=smart, cannot_score=cannot_score, command=command)
        values = self.values_for(lens, executor)
        embedder, no_embedder = self.embedder_for(lens)
        return Scoring(
            executor,
            values,
            smart,
            embedder,
            jobs=self.jobs_for(lens),
            no_embedder=no_embedder,
            command=command,
        )

    def recorded_costs(self, lens: str) -> list[float]:
        """``cost_usd`` of every external-tier generation the lens's previous runs recorded:
        its serving deployment's and its last attempt's ``state/run.json`` (default
        environment), as they were charged; ``[]`` when neither exists or records one."""
        costs: list[float] = []
        for ref in (refstore.serving_ref(lens), refstore.attempts_ref(lens)):
            oid = refstore.ref_target(self.repo, ref)
            if oid is None:
                continue
            try:
                run = refstore.read_run(self.repo, oid)
            except DstError:
                continue
            for result in [*run.get("results", []), *run.get("self_test", [])]:
                for trace in result.get("trace", []):
                    generation = trace.get("generation", {})
                    cost = (generation.get("usage") or {}).get("cost_usd")
                    if generation.get("tier") in ("smart", "command") and isinstance(
                        cost, (int, float)
                    ):
                        costs.append(float(cost))
        return costs

    def over_budget(self, lens: Lens, answers: Sequence[Answer], scoring: Scoring) -> str | None:
        """Why scoring ``answers`` would exceed the lens's call or cost budget, before any call.

        The estimate is :func:`reconciler.generators.budget.estimate`'s, costed with
        what the lens's cached answers and its previous runs recorded
        (:meth:`recorded_costs`); the budget the
        run's (``DST_MAX_CALLS`` / ``DST_MAX_COST_USD``) or else the lens's own
        (``max_calls`` / ``max_cost_usd``). ``None`` when it fits or nothing bounds it.
        """
        # lazy: the generators load only when a command generates
        from reconciler.generators.budget import estimate

        if scoring.smart is None and scoring.command is None:
            return None
        budget = self.generation_cache().budget_for(lens)
        if not budget.limited:
            return None
        tiers = {"smart": scoring.smart, "command": scoring.command}
        found = estimate(
            lens,
            answers,
            scoring.values,
            tiers,
            embedder=scoring.embedder,
            recorded=self.recorded_costs(lens.name),
        )
        why = budget.fits(found.calls, found.cost_usd)
        if why is None:
            return None
        return f"generation budget: {why}; estimate: {found.describe()}, nothing was called"

    def close(self) -> None:
        """Close every warehouse opened."""
        for wh in self._warehouses.values():
            close = getattr(wh, "close", None)
            if close is not None:
                close()
        self._warehouses.clear()
