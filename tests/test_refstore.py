"""Deployment commits and compare-and-swap ref updates on a real repository."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from reconciler.bindings import Bindings
from reconciler.errors import RefConflict
from reconciler.git import refs as refstore
from reconciler.ids import Oid
from tests.helpers import commit


def _deploy(repo: pygit2.Repository, source: str, previous: Oid | None, lens: str) -> Oid:
    tree = repo.revparse_single(f"{source}:lenses/{lens}").id
    return refstore.write_deployment(
        repo,
        lens_tree=Oid(str(tree)),
        bindings=Bindings(),
        run={"schema_version": 1},
        meta={"action": "promote", "lens": lens, "source": source, "previous": previous},
        parents=[p for p in (previous, Oid(source)) if p is not None],
        message=f"promote {lens}",
    )


@pytest.fixture
def two_lenses(repo: Path) -> tuple[pygit2.Repository, str]:
    source = commit(
        repo, {"lenses/a/lens.yaml": "name: a\n", "lenses/b/lens.yaml": "name: b\n"}, "two lenses"
    )
    return pygit2.Repository(str(repo)), source


def test_deployment_commit_shape(two_lenses: tuple[pygit2.Repository, str]) -> None:
    repo, source = two_lenses
    oid = _deploy(repo, source, None, "a")
    dep = refstore.read_deployment(repo, oid)
    assert dep.source == source and dep.previous is None
    assert dep.lens_tree == str(repo.revparse_single(f"{source}:lenses/a").id)
    assert dep.meta["schema_version"] == refstore.META_SCHEMA
    second = _deploy(repo, source, oid, "a")
    commit_obj = repo[second].peel(pygit2.Commit)
    assert [str(p) for p in commit_obj.parent_ids] == [oid, source]
    assert [d.oid for d in refstore.history(repo, second)] == [second, oid]


def test_compare_and_swap_refuses_a_moved_ref(two_lenses: tuple[pygit2.Repository, str]) -> None:
    repo, source = two_lenses
    first = _deploy(repo, source, None, "a")
    ref = refstore.serving_ref("a")
    refstore.update_refs(repo, [refstore.RefUpdate(ref, None, first)], reason="t")
    second = _deploy(repo, source, first, "a")
    with pytest.raises(RefConflict) as info:
        refstore.update_refs(repo, [refstore.RefUpdate(ref, None, second)], reason="t")
    assert "re-plan" in info.value.render()
    assert refstore.ref_target(repo, ref) == first


def test_multi_lens_update_is_all_or_nothing(two_lenses: tuple[pygit2.Repository, str]) -> None:
    repo, source = two_lenses
    a1, b1 = _deploy(repo, source, None, "a"), _deploy(repo, source, None, "b")
    refstore.update_refs(
        repo, [refstore.RefUpdate(refstore.serving_ref("b"), None, b1)], reason="t"
    )
    updates = [
        refstore.RefUpdate(refstore.serving_ref("a"), None, a1),
        refstore.RefUpdate(refstore.serving_ref("b"), None, b1),
    ]  # b's old is wrong
    with pytest.raises(RefConflict):
        refstore.update_refs(repo, updates, reason="t")
    assert refstore.ref_target(repo, refstore.serving_ref("a")) is None
    assert refstore.ref_target(repo, refstore.APPLYING) is None


def test_interrupted_apply_rolls_forward(two_lenses: tuple[pygit2.Repository, str]) -> None:
    repo, source = two_lenses
    a1, b1 = _deploy(repo, source, None, "a"), _deploy(repo, source, None, "b")
    updates = [
        refstore.RefUpdate(refstore.serving_ref("a"), None, a1),
        refstore.RefUpdate(refstore.serving_ref("b"), None, b1),
    ]
    # simulate a crash after the intent record was written, before any lens ref moved
    intent = refstore._write_intent(repo, updates, "crash test")
    refstore._transaction(repo, [refstore.RefUpdate(refstore.APPLYING, None, intent)], "t")
    messages = refstore.recover(repo)
    assert len(messages) == 2
    assert refstore.ref_target(repo, refstore.serving_ref("a")) == a1
    assert refstore.ref_target(repo, refstore.serving_ref("b")) == b1
    assert refstore.ref_target(repo, refstore.APPLYING) is None
    assert refstore.recover(repo) == []


def test_recovery_is_all_or_nothing_when_a_ref_moved_elsewhere(
    two_lenses: tuple[pygit2.Repository, str],
) -> None:
    repo, source = two_lenses
    a1, b1 = _deploy(repo, source, None, "a"), _deploy(repo, source, None, "b")
    b_other = _deploy(repo, source, None, "b")
    b_other = _deploy(repo, source, b_other, "b")
    updates = [
        refstore.RefUpdate(refstore.serving_ref("a"), None, a1),
        refstore.RefUpdate(refstore.serving_ref("b"), None, b1),
    ]
    # the apply lost b's compare-and-swap to a peer, then died before removing its intent
    intent = refstore._write_intent(repo, updates, "crash test")
    refstore._transaction(repo, [refstore.RefUpdate(refstore.APPLYING, None, intent)], "t")
    refstore._transaction(
        repo, [refstore.RefUpdate(refstore.serving_ref("b"), None, b_other)], "peer"
    )
    (message,) = refstore.recover(repo)
    assert "not rolled forward" in message and refstore.serving_ref("b") in message
    assert refstore.ref_target(repo, refstore.serving_ref("a")) is None
    assert refstore.ref_target(repo, refstore.serving_ref("b")) == b_other
    assert refstore.ref_target(repo, refstore.APPLYING) is None


def test_a_second_intent_never_overwrites_one_in_flight(
    two_lenses: tuple[pygit2.Repository, str],
) -> None:
    repo, source = two_lenses
    a1, b1 = _deploy(repo, source, None, "a"), _deploy(repo, source, None, "b")
    updates = [
        refstore.RefUpdate(refstore.serving_ref("a"), None, a1),
        refstore.RefUpdate(refstore.serving_ref("b"), None, b1),
    ]
    first = refstore._write_intent(repo, updates, "in flight")
    refstore._transaction(repo, [refstore.RefUpdate(refstore.APPLYING, None, first)], "t")
    with pytest.raises(RefConflict):
        refstore.update_refs(repo, updates, reason="second")
    assert refstore.ref_target(repo, refstore.APPLYING) == first
    assert refstore.ref_target(repo, refstore.serving_ref("a")) is None
