"""State files as typed records, the Action vocabulary and the reconcile's step tuple.

Deployments written by earlier dst versions must keep loading byte for byte; an
unknown ``schema_version`` is a typed error; the committed state schemas match
the models.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pygit2
import pytest

from reconciler.assets import HASH_SCHEME
from reconciler.bindings import BINDINGS_SCHEMA, Bindings
from reconciler.errors import StateError
from reconciler.git import records, refs as refstore
from reconciler.ids import Oid
from reconciler.plan import LensPlan
from reconciler.reconcile import LENS_STEPS, PLAN_STEPS, cases_step, suite_step
from reconciler.results import Action
from reconciler.schemas import STATE_KINDS, main, render, state_schema_for
from reconciler.state import STATE_SCHEMA, DeploymentMeta, RunRecord, load
from reconciler.verify import VERIFY_STEPS
from tests.conftest import PROJECT, commit

# meta.json exactly as the dst before typed state wrote it (sorted, indented).
OLD_META = {
    "action": "promote",
    "gate": "block",
    "lens": "a",
    "previous": None,
    "previous_score": None,
    "reason": "gate SKIPPED: the lens has no active certified answers",
    "recorded_at": 1767225600,
    "schema_version": 1,
    "score": {"correct": 0, "declined": 0, "error": 0, "total": 0, "wrong": 0},
    "tool_version": "0.1.0",
}


def _raw_deployment(
    repo: pygit2.Repository, source: str, meta: bytes, run: bytes, bindings: bytes | None = None
) -> Oid:
    lens_tree = repo.revparse_single(f"{source}:lenses/a").id
    state = repo.TreeBuilder()
    for name, raw in (
        ("bindings.json", Bindings().dumps() if bindings is None else bindings),
        ("run.json", run),
        ("meta.json", meta),
    ):
        state.insert(name, repo.create_blob(raw), pygit2.GIT_FILEMODE_BLOB)
    root = repo.TreeBuilder()
    root.insert("lens", lens_tree, pygit2.GIT_FILEMODE_TREE)
    root.insert("state", state.write(), pygit2.GIT_FILEMODE_TREE)
    sig = pygit2.Signature("t", "t@localhost", 0, 0)
    oid = repo.create_commit(None, sig, sig, "old", root.write(), [pygit2.Oid(hex=source)])
    return Oid(str(oid))


def _dumps(data: object) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


@pytest.fixture
def source(repo: Path) -> tuple[pygit2.Repository, str]:
    sha = commit(repo, {"lenses/a/lens.yaml": "name: a\n"}, "one lens")
    return pygit2.Repository(str(repo)), sha


def test_an_old_deployment_loads_and_round_trips_byte_for_byte(
    source: tuple[pygit2.Repository, str],
) -> None:
    repo, sha = source
    meta = {**OLD_META, "source": sha}
    run = {"schema_version": 1, "lens": "a", "source": sha, "results": [], "messages": []}
    oid = _raw_deployment(repo, sha, _dumps(meta), _dumps(run))
    dep = refstore.read_deployment(repo, oid)
    assert dep.source == sha and dep.previous is None
    assert dep.info.score == meta["score"] and dep.info.gate == "block"
    assert dep.meta == meta
    assert dep.info.dumps() == _dumps(meta)
    assert refstore.read_run(repo, oid) == run


def test_written_meta_keeps_the_keys_it_was_given(source: tuple[pygit2.Repository, str]) -> None:
    repo, sha = source
    tree = Oid(str(repo.revparse_single(f"{sha}:lenses/a").id))
    given = DeploymentMeta(action="promote", lens="a", source=Oid(sha), previous=None)
    oid = refstore.write_deployment(
        repo,
        lens_tree=tree,
        bindings=Bindings(),
        run=RunRecord(schema_version=1, lens="a"),
        meta=given,
        parents=[Oid(sha)],
        message="promote a",
    )
    stored = json.loads(repo[oid].peel(pygit2.Commit).tree["state/meta.json"].data)
    assert set(stored) == {
        "schema_version",
        "tool_version",
        "recorded_at",
        "action",
        "lens",
        "source",
        "previous",
    }
    assert "rollback_to" not in stored
    run = json.loads(repo[oid].peel(pygit2.Commit).tree["state/run.json"].data)
    assert run == {"schema_version": 1, "lens": "a"}


@pytest.mark.parametrize("version", [2, None, "1"])
def test_unknown_meta_schema_version_is_a_state_error(
    source: tuple[pygit2.Repository, str], version: object
) -> None:
    repo, sha = source
    meta = {**OLD_META, "source": sha, "schema_version": version}
    oid = _raw_deployment(repo, sha, _dumps(meta), _dumps({"schema_version": 1}))
    with pytest.raises(StateError) as info:
        refstore.read_deployment(repo, oid)
    assert f"unknown meta schema_version {version!r}" in info.value.message
    assert "upgrade dst" in info.value.render()


def test_unknown_run_schema_version_and_bad_types_are_state_errors(
    source: tuple[pygit2.Repository, str],
) -> None:
    repo, sha = source
    newer = _raw_deployment(
        repo, sha, _dumps({**OLD_META, "source": sha}), b'{"schema_version": 9}'
    )
    with pytest.raises(StateError, match=r"unknown state/run\.json schema_version 9"):
        refstore.read_run(repo, newer)
    bad = {**OLD_META, "source": sha, "score": "high"}
    broken = _raw_deployment(repo, sha, _dumps(bad), _dumps({"schema_version": 1}))
    with pytest.raises(StateError, match="score"):
        refstore.read_deployment(repo, broken)


@pytest.mark.parametrize("kind", STATE_KINDS)
def test_committed_state_schema_is_current(kind: str) -> None:
    path = PROJECT / "schemas" / "state" / f"{kind}.schema.json"
    assert path.is_file(), f"{path.name} is missing: run `python -m reconciler.schemas`"
    assert path.read_text(encoding="utf-8") == render(state_schema_for(kind))


def test_module_entry_writes_the_state_schemas(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 0
    written = sorted(p.name for p in (tmp_path / "state").glob("*.json"))
    assert written == sorted(f"{kind}.schema.json" for kind in STATE_KINDS)


def test_action_is_a_str_enum_with_predicates() -> None:
    assert f"{Action.STOOD_DOWN}" == str(Action.STOOD_DOWN) == "stood_down"
    assert json.dumps({"action": Action.PROMOTED}) == '{"action": "promoted"}'
    assert Action("blocked") is Action.BLOCKED and Action.BLOCKED == "blocked"
    assert {a for a in Action if a.moves_ref} == {Action.PROMOTED, Action.RETIRED}
    assert {a for a in Action if a.blocks} == {Action.BLOCKED, Action.STOOD_DOWN}
    assert {a for a in Action if a.fails} == {Action.BLOCKED, Action.STOOD_DOWN, Action.ERROR}


def test_plan_takes_keywords_only() -> None:
    fields = {f.name for f in dataclasses.fields(LensPlan) if f.kw_only}
    assert {"lens", "gate", "serving", "candidate", "unchanged"} <= fields
    positional: tuple[object, ...] = ("a", "block", None, None, None, None, False)
    with pytest.raises(TypeError):
        LensPlan(*positional)


def test_plan_dry_run_and_test_share_the_step_tuple() -> None:
    assert [s.__name__ for s in LENS_STEPS] == [
        "plan_step",
        "data_step",
        "suite_step",
        "self_test_step",
        "cases_step",
        "gate_step",
    ]
    assert LENS_STEPS[:1] == PLAN_STEPS
    assert VERIFY_STEPS[1:3] == (suite_step, cases_step)
    assert LENS_STEPS[2] is suite_step


def _intent(repo: pygit2.Repository, raw: bytes) -> None:
    tb = repo.TreeBuilder()
    tb.insert("apply.json", repo.create_blob(raw), pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("t", "t@localhost", 0, 0)
    oid = repo.create_commit(None, sig, sig, "intent", tb.write(), [])
    repo.references.create(refstore.APPLYING, oid, force=True)


def test_an_old_intent_rolls_forward_and_a_newer_one_is_not_deleted(
    source: tuple[pygit2.Repository, str],
) -> None:
    repo, sha = source
    ref = refstore.serving_ref("a")
    old = {"schema_version": 1, "reason": "t", "updates": [{"ref": ref, "old": None, "new": sha}]}
    _intent(repo, _dumps(old))
    assert refstore.recover(repo) == [f"rolled forward {ref} to {sha[:12]}"]
    assert refstore.ref_target(repo, ref) == sha
    assert refstore.ref_target(repo, refstore.APPLYING) is None
    _intent(repo, _dumps({**old, "schema_version": 2}))
    with pytest.raises(StateError) as newer:
        refstore.recover(repo)
    assert "unknown apply.json schema_version 2" in newer.value.message
    assert "update-ref -d" not in newer.value.render()
    _intent(repo, b'{"schema_version": 1, "updates": [{"ref": 1}]}')
    with pytest.raises(StateError, match="not a dst intent record"):
        refstore.recover(repo)


def test_the_plain_meta_reader_checks_every_field_of_the_model() -> None:
    # reconciler.git.records reads serving state without pydantic: a field the model
    # gains must get its check there, or a value of the wrong type would read as valid
    assert set(records.FIELDS) == set(DeploymentMeta.model_fields)
    assert records.STATE_SCHEMA == STATE_SCHEMA


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"reach": {"reached": 1, "total": 2}, "flake_rates": {"q": {"flaky_samples": 1}}},
        {"verified": "ab" * 20, "rollback_to": None, "unknown_key": [1, {"a": None}]},
        {"recorded_at": "1767225600"},  # the model coerces it: so does the read
        {"recorded_at": 1767225600.0},
        {"recorded_at": True},
        {"schema_version": True},  # True == 1, and the model's Literal[1] takes it
        {"score": {"correct": "1"}},
        {"gate": None, "previous_score": None},
    ],
)
def test_the_plain_meta_reader_reads_what_the_model_reads(change: dict[str, object]) -> None:
    raw = _dumps({**OLD_META, "source": "ab" * 20, **change})
    model = load(DeploymentMeta, raw, where="deployment x", name="state/meta.json")
    meta = records.loads_meta(raw, where="deployment x")
    assert meta.record() == model.record() and meta.dumps() == model.dumps()
    for name in DeploymentMeta.model_fields:
        if name != "schema_version":
            assert getattr(meta, name) == getattr(model, name), name


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1]",
        _dumps({**OLD_META}),  # no source
        _dumps({**OLD_META, "source": "ab" * 20, "schema_version": 2}),
        _dumps({**OLD_META, "source": "ab" * 20, "score": "high"}),
        _dumps({**OLD_META, "source": 7}),
        _dumps({**OLD_META, "source": "ab" * 20, "flake_rates": {"q": 1}}),
    ],
)
def test_the_plain_meta_reader_refuses_what_the_model_refuses(raw: bytes) -> None:
    with pytest.raises(StateError) as model:
        load(DeploymentMeta, raw, where="deployment x", name="state/meta.json")
    with pytest.raises(StateError) as plain:
        records.loads_meta(raw, where="deployment x")
    assert plain.value.render() == model.value.render()


def test_the_bindings_shape_check_names_the_stored_constants() -> None:
    assert records.BINDINGS_SCHEMA == BINDINGS_SCHEMA and records.HASH_SCHEME == HASH_SCHEME


_STAMP = {"assets": {"metrics/m": "h"}, "oracle": "o", "source": "s"}
_HEAD = {"schema_version": 1, "hash_scheme": 1}


@pytest.mark.parametrize(
    ("stored", "as_is"),
    [
        ({**_HEAD, "answers": {"q": _STAMP}}, True),
        (_HEAD, True),
        ({**_HEAD, "answers": {"q": {**_STAMP, "flakes": 2}}}, True),
        # parsed now: what Bindings.loads accepts or refuses, it still does at the read
        (
            {"schema_version": 1, "hash_scheme": 1, "answers": {"q": {**_STAMP, "flakes": "2"}}},
            False,
        ),
        ({"schema_version": True, "hash_scheme": 1}, False),
        ({"schema_version": 2, "hash_scheme": 1}, False),
        ({"schema_version": 1, "hash_scheme": 2}, False),
        ({**_HEAD, "answers": {"q": {"oracle": "o"}}}, False),
        ([1], False),
    ],
)
def test_bindings_parse_late_only_when_they_parse(
    source: tuple[pygit2.Repository, str], stored: object, as_is: bool
) -> None:
    raw = _dumps(stored)
    assert records.bindings_read_as_is(raw) is as_is
    if as_is:  # then parsing them later cannot fail
        assert Bindings.loads(raw, where="x").to_json()["hash_scheme"] == HASH_SCHEME
    repo, sha = source
    meta = _dumps({**OLD_META, "source": sha})
    oid = _raw_deployment(repo, sha, meta, _dumps({"schema_version": 1}), bindings=raw)
    try:
        expected: object = Bindings.loads(raw, where=f"deployment {oid[:12]} state/bindings.json")
    except Exception as exc:
        with pytest.raises(type(exc)):
            refstore.read_deployment(repo, oid)
        return
    assert refstore.read_deployment(repo, oid).bindings == expected
