"""Join paths and the per-lens-version memo: same answers, computed once per version."""

from __future__ import annotations

from pathlib import Path

import pygit2

from reconciler.assembly import memo as lensmemo
from reconciler.assembly.joins import join_index, join_paths
from reconciler.assembly.retrieval import retrieve, time_models
from reconciler.context import Runtime
from reconciler.ids import LensName
from reconciler.lens import Column, Join, Lens, LensConfig, Model
from reconciler.reconcile import reconcile


def _model(name: str, *joins: str, dated: bool = False) -> Model:
    return Model(
        name=name,
        table=f"t_{name}",
        joins=tuple(Join(to=j, on={"k": "k"}) for j in joins),
        time_dimensions=(Column(name="day", data_type="date"),) if dated else (),
        dimensions=(Column(name="region", sample_values=("North",)),),
    )


def _diamond() -> Lens:
    """a → b → d, a → c → d, d → a (a cycle back), d → ghost (no such model)."""
    models = {
        "a": _model("a", "b", "c"),
        "b": _model("b", "d"),
        "c": _model("c", "d"),
        "d": _model("d", "a", "ghost", dated=True),
    }
    return Lens(LensName("x"), "lenses/x", LensConfig(name="x"), models=models)


def _hops(paths: list[tuple[tuple[str, Join], ...]]) -> list[list[str]]:
    return [[f"{here}>{join.to}" for here, join in path] for path in paths]


def test_join_paths_are_every_shortest_path_in_discovery_order() -> None:
    lens = _diamond()
    assert _hops(join_paths(lens, "a", "d")) == [["a>b", "b>d"], ["a>c", "c>d"]]
    assert _hops(join_paths(lens, "d", "c")) == [["d>a", "a>c"]]
    assert join_paths(lens, "a", "a") == [()]
    assert join_paths(lens, "b", "nope") == []
    assert _hops(join_paths(lens, "b", "ghost")) == [["b>d", "d>ghost"]]
    assert join_index(lens).models_between("a", "d") == frozenset("abcd")
    assert join_index(lens).reachable("b") == frozenset({"a", "b", "c", "d", "ghost"})


def test_join_paths_hand_out_a_new_list_each_call() -> None:
    lens = _diamond()
    first = join_paths(lens, "a", "d")
    first.clear()
    assert len(join_paths(lens, "a", "d")) == 2


def test_time_models_follow_the_nearest_dated_model() -> None:
    lens = _diamond()
    assert time_models(lens, "a") == ["d"]
    time_models(lens, "a").append("zzz")
    assert time_models(lens, "a") == ["d"]


def test_memo_is_per_lens_object_not_per_equal_value() -> None:
    one, two = _diamond(), _diamond()
    calls: list[str] = []

    def compute(tag: str) -> str:
        calls.append(tag)
        return tag

    assert lensmemo.memoized(one, "k", lambda: compute("one")) == "one"
    assert lensmemo.memoized(one, "k", lambda: compute("again")) == "one"
    assert lensmemo.memoized(two, "k", lambda: compute("two")) == "two"
    assert calls == ["one", "two"]


def test_memo_keeps_only_the_last_versions() -> None:
    first = _diamond()
    lensmemo.memoized(first, "k", lambda: 1)
    for _ in range(lensmemo.KEPT):
        lensmemo.memoized(_diamond(), "k", lambda: 0)
    assert lensmemo.memoized(first, "k", lambda: 2) == 2


def test_retrieval_keys_warehouse_values_by_content() -> None:
    lens = _diamond()
    assert [m.targets[0].kind for m in retrieve(lens, "East").mentions] == []
    east = {("a", "region"): ("East",)}
    found = retrieve(lens, "East", dict(east))
    assert [(t.kind, t.value) for m in found.mentions for t in m.targets] == [("value", "East")]
    assert retrieve(lens, "East", dict(east)) == found
    assert retrieve(lens, "East", {("a", "region"): ("West",)}).mentions == ()


def _plan_messages(path: Path) -> list[str]:
    rt = Runtime(pygit2.Repository(str(path)), env={}, progress=lambda _m: None)
    try:
        return list(reconcile(rt, run_suite=False).messages)
    finally:
        rt.close()


def test_plan_notes_uncommitted_lens_edits_in_any_lens(lens_repo: Path) -> None:
    assert not [m for m in _plan_messages(lens_repo) if "uncommitted" in m]
    skill = next((lens_repo / "lenses" / "finance").rglob("*.md"))
    skill.write_text(skill.read_text() + "\nOne more line.\n")
    (lens_repo / "lenses" / "sales" / "answers" / "draft.yaml").write_text("id: draft\n")
    notes = [m for m in _plan_messages(lens_repo) if "uncommitted" in m]
    assert len(notes) == 1
    assert "2 uncommitted change(s)" in notes[0]
    assert skill.relative_to(lens_repo).as_posix() in notes[0]
