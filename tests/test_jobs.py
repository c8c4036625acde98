"""Bounded suite concurrency (--jobs, lens.yaml jobs:) and plans that skip unchanged lenses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2
import pytest

from reconciler.context import Runtime
from reconciler.errors import LensLoadError
from reconciler.git import trees as gitstate
from reconciler.lens import load_lens
from reconciler.reconcile import reconcile
from reconciler.suite import resolve_jobs
from tests.benchmarks import synth
from tests.helpers import invoke
from tests.shop import CUSTOMERS, ORDERS


def _dry_run(path: Path, jobs: int) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    rt = Runtime(pygit2.Repository(str(path)), env={}, progress=lambda _m: None, jobs=jobs)
    try:
        report = reconcile(rt, dry_run=True)
    finally:
        rt.close()
    return [
        (
            run.plan.lens,
            run.action,
            [(r.answer, r.outcome.value, r.detail) for r in [*run.results, *run.self_test]],
        )
        for run in report.lenses
    ]


def test_jobs_1_and_8_give_the_same_results_in_the_same_order(lens_repo: Path) -> None:
    one = _dry_run(lens_repo, 1)
    eight = _dry_run(lens_repo, 8)
    assert eight == one
    sales = next(answers for lens, _, answers in one if lens == "sales")
    assert len(sales) > 8  # more answers than workers, so the pool really interleaves
    # Plan order (self-test answers: every active answer, sorted by id) survives the pool.
    ids = [a for a, _, _ in sales]
    assert ids == sorted(ids)


@pytest.mark.parametrize("value", ["0", "-3", "65", "many"])
def test_a_bad_jobs_value_exits_2(lens_repo: Path, value: str) -> None:
    done = invoke(lens_repo, "apply", "--dry-run", "--jobs", value)
    assert done.code == 2, done.stdout + done.stderr
    assert "--jobs" in done.stderr


def test_lens_yaml_jobs_is_validated_and_cli_overrides_it() -> None:
    files = {"models/orders.yaml": ORDERS, "models/customers.yaml": CUSTOMERS}
    lens = load_lens("shop", {"lens.yaml": b"name: shop\njobs: 4\n", **files})
    assert resolve_jobs(None, lens) == 4
    assert resolve_jobs(2, lens) == 2
    plain = load_lens("shop", {"lens.yaml": b"name: shop\n", **files})
    assert resolve_jobs(None, plain) == 1
    with pytest.raises(LensLoadError) as err:
        load_lens("shop", {"lens.yaml": b"name: shop\njobs: 0\n", **files})
    assert err.value.line == 2


def test_plan_opens_only_the_changed_lens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = synth.ensure(synth.Size(4, 8, 3), tmp_path)
    opened: list[str] = []
    load = gitstate.load_lens_at

    def spy(r: pygit2.Repository, tree: gitstate.LensTree, **kw: Any) -> object:
        opened.append(tree.name)
        return load(r, tree, **kw)

    monkeypatch.setattr(gitstate, "load_lens_at", spy)
    rt = Runtime(pygit2.Repository(str(repo.path)), env={}, progress=lambda _m: None)
    report = reconcile(rt, run_suite=False)
    actions = {r.plan.lens: r.action for r in report.lenses}
    assert actions.pop(repo.changed_lens) == "planned"
    assert set(actions.values()) == {"unchanged"} and len(actions) == 3
    assert set(opened) == {repo.changed_lens}  # its serving and candidate versions only
    changed = next(r for r in report.lenses if r.plan.lens == repo.changed_lens)
    assert [c.asset for c in changed.plan.changed_assets] == ["metrics/x000"]
