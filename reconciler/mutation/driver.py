"""``dst mutate``: how much of a lens the gate really guards (mutation score).

Mutants (:mod:`reconciler.mutation.operators`) and formatting-only edits
(:mod:`reconciler.mutation.formatting`) of one lens version each go through the real
reconcile path in dry-run mode (:func:`reconciler.reconcile.reconcile`, ``dry_run=True``)
against a baseline deployment of that same version, so the plan selects exactly
what a push of that edit would select and the gate runs exactly those answers.

* A semantic mutant is **blocked** when some gated stale answer's outcome is not
  ``correct`` (what ``eval_gate: block`` blocks on, DESIGN §5); it **survives**
  when no certified answer goes stale or every stale answer still passes.
  Mutation score = blocked / (blocked + survived); a mutant the lens loader
  rejects is ``invalid`` and not counted.
* A survivor is one of three kinds (:data:`SURVIVOR_KINDS`): ``untested`` (no
  certified answer goes stale), ``unread`` (answers go stale, but the generated
  SQL of every one of them is the baseline's: the generator does not read the
  edited asset for them) or ``equivalent`` (the generated SQL of a stale answer
  changed and its result did not: the data cannot tell the mutant apart). The
  *stale score* = blocked / (blocked + unread): the share of the meaning changes
  that make an answer stale, equivalent mutants aside, that the gate blocks.
* A formatting-only edit is **false-stale** when it makes any answer stale or
  puts any answer in the self-test. Asset hashes are canonical (DESIGN §2), so
  the share must be 0.

Isolation: everything happens in a temporary ``git clone --shared --no-checkout``
of the repository (objects are read through git's alternates; new ones are written
inside the clone). The baseline deployment, the mutant commits and every ref the
runs write live in the clone, which is deleted afterwards; the user's working
tree and ``refs/dst/*`` are never touched. The clone reuses one runtime, so one
warehouse connection and one dimension-value cache serve every mutant.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.context import Runtime
from reconciler.errors import LensLoadError, UsageError
from reconciler.git import trees as gitstate
from reconciler.git.scratch import commit_file, scratch_clone
from reconciler.ids import Oid
from reconciler.lens import Lens, load_lens
from reconciler.mutation.formatting import FORMATTING_KINDS, formatting_edits
from reconciler.mutation.operators import OPERATORS, Edit, semantic_mutants
from reconciler.reconcile import reconcile
from reconciler.results import LensRun
from reconciler.state import Outcome
from reconciler.warehouse.connection import EMBEDDED_DIR, EMBEDDED_FILE, embedded_path

BLOCKED, SURVIVED, INVALID, ERROR = "blocked", "survived", "invalid", "error"
CLEAN, FALSE_STALE = "clean", "false_stale"
UNTESTED, UNREAD, EQUIVALENT = "untested", "unread", "equivalent"
SURVIVOR_KINDS = (UNTESTED, UNREAD, EQUIVALENT)


@dataclass(frozen=True)
class EditResult:
    """What the gate made of one edit.

    Attributes:
        edit: the mutant or formatting-only edit.
        outcome: ``blocked`` / ``survived`` (semantic), ``clean`` / ``false_stale``
            (formatting), ``invalid`` (the lens no longer loads) or ``error``
            (the gate stood down).
        stale: answers the plan selected (stale or self-test), sorted.
        failing: gated answers whose outcome was not ``correct``, sorted.
        changed_assets: asset ids whose canonical hash changed.
        detail: one human line.
        seconds: wall time of the plan and gate for this edit.
        survivor: for a survivor, its kind (:data:`SURVIVOR_KINDS`), else ``""``.
    """

    edit: Edit
    outcome: str
    stale: tuple[str, ...] = ()
    failing: tuple[str, ...] = ()
    changed_assets: tuple[str, ...] = ()
    detail: str = ""
    seconds: float = 0.0
    survivor: str = ""

    def record(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            **self.edit.record(),
            "outcome": self.outcome,
            "stale": list(self.stale),
            "failing": list(self.failing),
            "changed_assets": list(self.changed_assets),
            "detail": self.detail,
            "seconds": round(self.seconds, 4),
            **({"survivor": self.survivor} if self.survivor else {}),
        }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


@dataclass
class MutationReport:
    """``dst mutate``'s result for one lens.

    Attributes:
        lens: lens name.
        commit: the source commit whose lens version was mutated.
        gate: the lens's ``eval_gate``.
        mutants: semantic mutants' results, in generation order.
        formatting: formatting-only edits' results, in generation order.
        baseline_seconds: wall time of the baseline run (full active corpus).
        baseline_failing: answers not ``correct`` on the unmutated lens; they are
            left out of every mutant's verdict.
        baseline_sql: ``{answer: (generated SQL, exemplar served)}`` on the unmutated lens.
        messages: notes for the user.
    """

    lens: str
    commit: Oid
    gate: str
    mutants: list[EditResult] = field(default_factory=list)
    formatting: list[EditResult] = field(default_factory=list)
    baseline_seconds: float = 0.0
    baseline_failing: tuple[str, ...] = ()
    baseline_sql: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    @property
    def counted(self) -> list[EditResult]:
        """Semantic mutants that count toward the score (blocked or survived)."""
        return [r for r in self.mutants if r.outcome in (BLOCKED, SURVIVED)]

    @property
    def blocked(self) -> int:
        """Semantic mutants the gate blocked."""
        return sum(r.outcome == BLOCKED for r in self.mutants)

    @property
    def survivors(self) -> list[EditResult]:
        """Semantic mutants the gate let through."""
        return [r for r in self.mutants if r.outcome == SURVIVED]

    def survivor_kinds(self) -> dict[str, int]:
        """``{untested, unread, equivalent: count}`` over the survivors."""
        return {k: sum(r.survivor == k for r in self.survivors) for k in SURVIVOR_KINDS}

    @property
    def false_stale(self) -> list[EditResult]:
        """Formatting-only edits that made an answer stale."""
        return [r for r in self.formatting if r.outcome == FALSE_STALE]

    @property
    def exit_code(self) -> int:
        """0 ran (whatever the score); 1 a formatting-only edit made an answer stale."""
        return 1 if self.false_stale else 0

    def timing(self) -> dict[str, float | None]:
        """Seconds: baseline, all edits, mean and median per mutant and per formatting edit."""
        sem = [r.seconds for r in self.mutants]
        fmt = [r.seconds for r in self.formatting]
        return {
            "baseline_s": round(self.baseline_seconds, 3),
            "edits_s": round(sum(sem) + sum(fmt), 3),
            "per_mutant_mean_s": round(statistics.fmean(sem), 4) if sem else None,
            "per_mutant_median_s": round(statistics.median(sem), 4) if sem else None,
            "per_formatting_edit_mean_s": round(statistics.fmean(fmt), 4) if fmt else None,
        }

    def by_operator(self) -> dict[str, dict[str, int]]:
        """``{operator: {"blocked", "survived", "invalid"}}`` for each operator that made one."""
        out: dict[str, dict[str, int]] = {}
        for op in OPERATORS:
            rows = [r for r in self.mutants if r.edit.operator == op]
            if rows:
                out[op] = {
                    k: sum(r.outcome == k for r in rows) for k in (BLOCKED, SURVIVED, INVALID)
                }
        return out

    def by_asset_kind(self) -> dict[str, dict[str, int]]:
        """``{"metrics" | "models" | "exemplars": {"blocked", "total"}}`` over counted mutants."""
        out: dict[str, dict[str, int]] = {}
        for r in self.counted:
            kind = out.setdefault(r.edit.asset.split("/", 1)[0], {"blocked": 0, "total": 0})
            kind["blocked"] += r.outcome == BLOCKED
            kind["total"] += 1
        return out

    def record(self) -> dict[str, Any]:
        """The lens object of ``dst mutate --format json``."""
        counted, false_stale = len(self.counted), len(self.false_stale)
        kinds = {k: sum(r.edit.operator == k for r in self.formatting) for k in FORMATTING_KINDS}
        kinds_of_survivors = self.survivor_kinds()
        stale_total = self.blocked + kinds_of_survivors[UNREAD]
        return {
            "lens": self.lens,
            "commit": self.commit,
            "gate": self.gate,
            "mutation_score": {
                "blocked": self.blocked,
                "total": counted,
                "share": _share(self.blocked, counted),
                "invalid": sum(r.outcome == INVALID for r in self.mutants),
                "error": sum(r.outcome == ERROR for r in self.mutants),
                **kinds_of_survivors,
                "stale_score": {
                    "blocked": self.blocked,
                    "total": stale_total,
                    "share": _share(self.blocked, stale_total),
                },
            },
            "formatting_false_stale": {
                "false_stale": false_stale,
                "total": len(self.formatting),
                "share": _share(false_stale, len(self.formatting)),
                "kinds": {k: n for k, n in kinds.items() if n},
            },
            "operators": self.by_operator(),
            "asset_kinds": self.by_asset_kind(),
            "survivors": [r.record() for r in self.survivors],
            "mutants": [r.record() for r in self.mutants],
            "formatting_edits": [r.record() for r in self.formatting],
            "baseline": {"failing": list(self.baseline_failing)},
            "timing": self.timing(),
            "messages": list(self.messages),
        }


Progress = Callable[[str], None]


def mutate_lens(
    rt: Runtime, name: str, *, rev: str = "HEAD", limit: int | None = None
) -> MutationReport:
    """Run every mutant and formatting-only edit of lens ``name`` at ``rev`` through the gate.

    Args:
        rt: the user's runtime (repository, warehouse precedence, progress sink).
        name: the lens to mutate.
        rev: the revision whose lens version is mutated.
        limit: at most this many mutants per operator and edits per formatting kind.

    Returns:
        The report; nothing in the user's repository changes.

    Raises:
        UsageError: ``rev`` or ``name`` does not resolve, the embedded warehouse
            was never seeded, the lens's gate is ``off``, or the unmutated lens
            does not promote (exit 2).
        LensLoadError: the lens does not load at ``rev`` (exit 2).
        WarehouseError: the warehouse cannot be reached (exit 2).
    """
    repo = rt.repo
    commit = gitstate.resolve_commit(repo, rev)
    trees = gitstate.lens_trees(repo, commit)
    if name not in trees:
        raise UsageError(
            f"lens {name!r} is not in {rev}",
            fix=f"use one of: {', '.join(sorted(trees)) or 'none'}",
        )
    files = gitstate.tree_files(repo, trees[name].tree)
    lens = load_lens(name, files)
    if lens.config.eval_gate == "off":
        raise UsageError(
            f"lens {name!r} has eval_gate: off, so no mutant can be blocked",
            fix=f"set eval_gate: block (or warn) in lenses/{name}/lens.yaml",
        )
    url = _warehouse_url(rt, lens)
    mutants = semantic_mutants(lens, files, limit=limit)
    edits = formatting_edits(lens, files, limit=limit)
    report = MutationReport(name, commit, lens.config.eval_gate)
    with tempfile.TemporaryDirectory(prefix="dst-mutate-") as tmp:
        clone = scratch_clone(repo, Path(tmp) / "clone")
        scratch = Runtime(clone, warehouse_url=url, env=rt.env, progress=lambda _m: None)
        try:
            scratch.warehouse_for(lens)
            _baseline(scratch, report, rt.progress)
            total = len(mutants) + len(edits)
            for i, edit in enumerate([*mutants, *edits], start=1):
                rt.progress(f"{name}: [{i}/{total}] {edit.operator} {edit.asset}")
                result = _run_edit(scratch, report, edit, semantic=i <= len(mutants))
                (report.mutants if i <= len(mutants) else report.formatting).append(result)
        finally:
            # Close the warehouse before the clone (its objects and refs) is deleted.
            scratch.close()
    return report


def _warehouse_url(rt: Runtime, lens: Lens) -> str:
    """The lens's resolved warehouse URL; the embedded one must have been seeded."""
    url, source = rt.resolve_url(lens)
    if source == "embedded default" and not embedded_path(rt.root).is_file():
        raise UsageError(
            f"lens {lens.name!r}: the embedded warehouse {EMBEDDED_DIR}/{EMBEDDED_FILE} does not "
            f"exist; dst mutate runs every mutant against the warehouse",
            fix="run `dst seed` first, or pass --warehouse URL (or set DST_WAREHOUSE_URL)",
        )
    return url


def _lens_run(runs: Sequence[LensRun], name: str) -> LensRun:
    return next(r for r in runs if r.plan.lens == name)


def _baseline(scratch: Runtime, report: MutationReport, progress: Progress) -> None:
    """Promote the unmutated lens in the scratch clone; record answers that do not pass."""
    progress(f"{report.lens}: baseline (every active answer against the warehouse)")
    started = time.perf_counter()
    run = _lens_run(reconcile(scratch, to=report.commit, only=report.lens).lenses, report.lens)
    report.baseline_seconds = time.perf_counter() - started
    if run.action != "promoted":
        raise UsageError(
            f"lens {report.lens!r} at {report.commit[:12]} does not pass its own gate "
            f"({run.action}: {'; '.join(run.messages) or 'no detail'}), so mutants cannot "
            f"be judged",
            fix=f"run `dst apply --dry-run --lens {report.lens}` and fix what it reports",
        )
    failing = sorted(r.answer for r in run.self_test if r.outcome is not Outcome.CORRECT)
    report.baseline_sql = _generated(run)
    report.baseline_failing = tuple(failing)
    if failing:
        report.messages.append(
            f"{len(failing)} answer(s) do not pass on the unmutated lens and are left out of "
            f"every verdict: {', '.join(failing)}"
        )


def _generated(run: LensRun) -> dict[str, tuple[str | None, str | None]]:
    """``{answer: (generated SQL, exemplar it was served from)}`` of each answer's last
    generation attempt in ``run``."""
    out: dict[str, tuple[str | None, str | None]] = {}
    for r in (*run.results, *run.self_test):
        generation = r.attempts[-1].get("generation", {}) if r.attempts else {}
        sql, exemplar = generation.get("sql"), generation.get("exemplar")
        out[r.answer] = (
            sql if isinstance(sql, str) else None,
            exemplar if isinstance(exemplar, str) else None,
        )
    return out


def _survivor(report: MutationReport, run: LensRun, stale: Sequence[str]) -> tuple[str, str]:
    """``(kind, detail)`` of a survivor whose ``stale`` answers all passed."""
    if not stale:
        return UNTESTED, "no certified answer goes stale"
    now, before = _generated(run), report.baseline_sql
    changed = [a for a in stale if a in now and now[a][0] != before.get(a, (None, None))[0]]
    # An exemplar edit that stops the exemplar adapting leaves its answers to the
    # compiler: their SQL changes, but the edit itself was never read.
    dropped = [a for a in changed if before.get(a, (None, None))[1] and not now[a][1]]
    if dropped:
        return UNREAD, (
            f"{len(stale)} stale answer(s) still pass: {', '.join(stale)}; the edit stops "
            f"the exemplar serving {', '.join(dropped)}, which the compiler answers instead"
        )
    if changed:
        return EQUIVALENT, (
            f"{len(stale)} stale answer(s) still pass: {', '.join(stale)}; the generated SQL "
            f"of {', '.join(changed)} changed and its result did not (equivalent on this data)"
        )
    return UNREAD, (
        f"{len(stale)} stale answer(s) still pass: {', '.join(stale)}; their generated SQL "
        f"is unchanged (the generator does not read this edit for them)"
    )


def _run_edit(
    scratch: Runtime, report: MutationReport, edit: Edit, *, semantic: bool
) -> EditResult:
    """Commit ``edit`` on top of the baseline in the clone and run a dry-run reconcile of it."""
    started = time.perf_counter()
    path = f"lenses/{report.lens}/{edit.path}"
    oid = commit_file(scratch.repo, report.commit, path, edit.content, message=f"mutant: {path}")
    try:
        runs = reconcile(scratch, to=oid, only=report.lens, dry_run=True).lenses
    except LensLoadError as exc:
        return EditResult(edit, INVALID, detail=exc.message, seconds=time.perf_counter() - started)
    seconds = time.perf_counter() - started
    run = _lens_run(runs, report.lens)
    ignore = set(report.baseline_failing)
    plan = run.plan
    stale = sorted(({s.answer for s in plan.stale} | set(plan.self_test)) - ignore)
    failing = sorted(
        r.answer for r in run.results if r.outcome is not Outcome.CORRECT and r.answer not in ignore
    )
    changed = tuple(c.asset for c in plan.changed_assets)

    def result(outcome: str, detail: str, survivor: str = "") -> EditResult:
        return EditResult(
            edit, outcome, tuple(stale), tuple(failing), changed, detail, seconds, survivor
        )

    if run.action == "stood_down":
        return result(ERROR, "; ".join(run.messages))
    if not semantic:
        if stale:
            return result(FALSE_STALE, f"made {len(stale)} answer(s) stale: {', '.join(stale)}")
        return result(CLEAN, "nothing stale")
    if failing:
        return result(
            BLOCKED, f"{len(failing)} of {len(stale)} stale answer(s) fail: {', '.join(failing)}"
        )
    kind, detail = _survivor(report, run, stale)
    return result(SURVIVED, detail, kind)
