"""The plan memo: asset hashes, oracle hashes and dependency sets of a lens version on disk.

A re-plan of the same trees normalizes no SQL and assembles nothing; a changed SQL
string, another dialect, another lens tree, another tool version or a corrupt
file misses, and the plan it yields is the one a plan without the memo yields.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconciler import assets
from reconciler.assembly import request
from reconciler.assets import PlanMemo, normalize_sql
from reconciler.bindings import Binding, Bindings
from reconciler.ids import AnswerId, AssetId, Oid
from reconciler.lens import load_lens
from reconciler.plan import LensPlan, Planner, plan_lens
from tests.helpers import commit, invoke
from tests.helpers.certified import ANSWER, files

# A stamp whose oracle hash differs from every answer's: the plan compares oracle hashes.
OLD = Bindings({AnswerId("rev"): Binding({AssetId("lens/shop"): "h1:0"}, "h1:0", "c0")})


def _edited(**changes: bytes) -> dict[str, bytes]:
    out = files()
    out.update(changes)
    return out


def _plan(
    memo: PlanMemo | None,
    candidate: dict[str, bytes],
    *,
    serving_tree: str = "a" * 40,
    candidate_tree: str = "b" * 40,
) -> LensPlan:
    args: dict[str, Any] = {
        "candidate": load_lens("shop", candidate),
        "candidate_commit": None,
        "candidate_tree": Oid(candidate_tree),
        "serving": load_lens("shop", files()),
        "serving_deployment": None,
        "serving_tree": Oid(serving_tree),
        "bindings": OLD,
    }
    if memo is None:
        return plan_lens("shop", **args)
    return Planner(memo).plan_lens("shop", **args)


def _same(a: LensPlan, b: LensPlan) -> None:
    assert a.stale == b.stale
    assert a.deps == b.deps
    assert a.changed_assets == b.changed_assets
    assert a.changed_answers == b.changed_answers
    assert a.assets == b.assets


@pytest.fixture
def assembled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Questions the real assembly is asked for a dependency set, in order."""
    calls: list[str] = []
    real: Callable[..., Any] = request.assemble

    def spy(lens: Any, question: str, **kw: Any) -> Any:
        calls.append(question)
        return real(lens, question, **kw)

    monkeypatch.setattr(request, "assemble", spy)
    return calls


CHANGED = _edited(
    **{"metrics/revenue.yaml": files()["metrics/revenue.yaml"].replace(b"SUM(amount)", b"SUM(2)")}
)


def test_a_replan_of_the_same_trees_hashes_and_assembles_nothing(
    tmp_path: Path, assembled: list[str]
) -> None:
    first = _plan(PlanMemo(tmp_path), CHANGED)
    assert len(list(tmp_path.glob("*.json"))) == 2  # serving and candidate
    assert len(assembled) == 2
    assembled.clear()
    normalize_sql.cache_clear()
    memo = PlanMemo(tmp_path)
    again = _plan(memo, CHANGED)
    assert (memo.hits, memo.misses) == (2, 0)
    assert assembled == []
    assert normalize_sql.cache_info().currsize == 0
    _same(again, first)
    _same(again, _plan(None, CHANGED))
    assert [s.answer for s in again.stale] == ["cnt", "rev"]


def test_a_changed_sql_string_misses_that_answer(tmp_path: Path, assembled: list[str]) -> None:
    _plan(PlanMemo(tmp_path), CHANGED)
    assembled.clear()
    reauthored = dict(CHANGED)
    reauthored["answers/rev.yaml"] = ANSWER.format(
        id="rev", q="What was total revenue?", sql="SELECT SUM(amount) AS r FROM orders"
    ).encode()
    # the same tree id on purpose: the answer's own text keys its entries
    plan = _plan(PlanMemo(tmp_path), reauthored)
    assert assembled == ["What was total revenue?"]
    _same(plan, _plan(None, reauthored))
    assert dict(plan.changed_answers) == {"rev": "reauthored"}


def test_another_dialect_misses(tmp_path: Path, assembled: list[str]) -> None:
    _plan(PlanMemo(tmp_path), CHANGED)
    assembled.clear()
    postgres = dict(CHANGED)
    postgres["lens.yaml"] = CHANGED["lens.yaml"] + b"dialect: postgres\n"
    memo = PlanMemo(tmp_path)
    plan = _plan(memo, postgres)
    assert memo.misses == 1  # the candidate; the serving version is the same
    assert len(assembled) == 2
    _same(plan, _plan(None, postgres))


def test_another_lens_tree_misses(tmp_path: Path, assembled: list[str]) -> None:
    _plan(PlanMemo(tmp_path), CHANGED)
    assembled.clear()
    memo = PlanMemo(tmp_path)
    _plan(memo, CHANGED, candidate_tree="c" * 40)
    assert (memo.hits, memo.misses) == (1, 1)
    assert len(assembled) == 2
    assert len(list(tmp_path.glob("*.json"))) == 3


def test_another_tool_version_misses(
    tmp_path: Path, assembled: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _plan(PlanMemo(tmp_path), CHANGED)
    assembled.clear()
    monkeypatch.setattr(assets, "__version__", "999.0.0")
    memo = PlanMemo(tmp_path)
    _plan(memo, CHANGED)
    assert (memo.hits, memo.misses) == (0, 2)
    assert len(assembled) == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # a torn write
        lambda raw: b"\x00\xff not json",
        lambda raw: json.dumps({**json.loads(raw), "hash_scheme": 0}).encode(),
        lambda raw: json.dumps({**json.loads(raw), "deps": {"k": {"a": 3}}}).encode(),
    ],
)
def test_a_corrupt_or_foreign_entry_is_ignored_and_rewritten(
    tmp_path: Path, assembled: list[str], damage: Callable[[bytes], bytes]
) -> None:
    expected = _plan(PlanMemo(tmp_path), CHANGED)
    for entry in tmp_path.glob("*.json"):
        entry.write_bytes(damage(entry.read_bytes()))
    assembled.clear()
    memo = PlanMemo(tmp_path)
    _same(_plan(memo, CHANGED), expected)
    assert memo.misses == 2
    assert len(assembled) == 2
    again = PlanMemo(tmp_path)
    _plan(again, CHANGED)
    assert (again.hits, again.misses) == (2, 0)


def test_dst_plan_keeps_its_memo_under_dot_dst(promoted_repo: Path) -> None:
    skill = next((promoted_repo / "lenses" / "sales" / "skills").glob("*.md"))
    edited = skill.read_text() + "\n- One more convention.\n"
    commit(promoted_repo, {skill.relative_to(promoted_repo).as_posix(): edited}, "skill")
    memo = promoted_repo / ".dst" / "plan"
    before = set(memo.glob("*.json"))
    first = invoke(promoted_repo, "plan", "--format", "json")
    assert first.code == 0, first.stderr
    stored = set(memo.glob("*.json"))
    assert len(stored - before) == 1  # the new sales tree; the serving one was kept by apply
    second = invoke(promoted_repo, "plan", "--format", "json")
    assert second.json() == first.json()
    assert set(memo.glob("*.json")) == stored


def test_only_the_most_recent_versions_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assets, "MEMO_KEPT", 3)
    for n in range(4):
        _plan(PlanMemo(tmp_path), CHANGED, candidate_tree=f"{n}" * 40)
    kept = list(tmp_path.glob("*.json"))
    assert len(kept) == 3
    memo = PlanMemo(tmp_path)
    _plan(memo, CHANGED, candidate_tree="3" * 40)  # the last one planned is still there
    assert (memo.hits, memo.misses) == (2, 0)
