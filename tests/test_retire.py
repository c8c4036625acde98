"""A lens deleted in the candidate is retired by an explicit, recorded deployment."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from tests.helpers import commit, git, invoke
from tests.helpers.bare_lenses import FINANCE, SALES

SERVING = "refs/dst/serving/sales"
RETIRED = "refs/dst/retired/sales"


@pytest.fixture
def lens_repo(repo: Path) -> Path:
    """Two small lenses, both serving."""
    commit(repo, {**SALES, **FINANCE}, "two lenses")
    assert invoke(repo, "apply").code == 0
    return repo


def ref(repo: Path, name: str) -> str | None:
    found = pygit2.Repository(str(repo)).references.get(name)
    return None if found is None else str(found.target)


def test_deleting_a_serving_lens_retires_it_with_a_recorded_deployment(lens_repo: Path) -> None:
    served = ref(lens_repo, SERVING)
    assert served is not None
    served_tree = str(pygit2.Repository(str(lens_repo))[served].peel(pygit2.Commit).tree["lens"].id)
    candidate = commit(lens_repo, {"lenses/sales": None}, "drop the sales lens")

    planned = invoke(lens_repo, "plan", "--format", "json")
    assert planned.code == 0, planned.stderr
    sales = planned.lens("sales")
    assert sales["action"] == "retire"
    assert any(m.startswith("WARNING") and RETIRED in m for m in sales["messages"])
    assert "RETIRE" in invoke(lens_repo, "plan").stdout

    dry = invoke(lens_repo, "apply", "--dry-run", "--format", "json")
    assert dry.code == 0 and dry.lens("sales")["action"] == "retired"
    assert dry.lens("sales")["serving_after"] == served
    assert "WOULD RETIRE (dry run)" in invoke(lens_repo, "apply", "--dry-run").stdout
    assert ref(lens_repo, SERVING) == served and ref(lens_repo, RETIRED) is None

    applied = invoke(lens_repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stderr
    sales = applied.lens("sales")
    assert sales["action"] == "retired" and sales["serving_after"] is None
    assert sales["serving_before"] == served
    retired = sales["recorded"]
    assert ref(lens_repo, SERVING) is None
    assert ref(lens_repo, RETIRED) == retired
    assert ref(lens_repo, "refs/dst/applying") is None
    assert ref(lens_repo, "refs/dst/serving/finance") is not None

    repo = pygit2.Repository(str(lens_repo))
    record = repo[retired].peel(pygit2.Commit)
    assert [str(p) for p in record.parent_ids] == [served, candidate]
    assert record.message.startswith("retire sales ")
    assert str(record.tree["lens"].id) == served_tree
    meta = json.loads(repo[record.tree["state/meta.json"].id].data)
    assert meta["action"] == "retired" and meta["source"] == candidate
    assert meta["previous"] == served
    history = git(lens_repo, "log", "--first-parent", "--format=%H", RETIRED).split()
    assert history[:2] == [retired, served]

    status = invoke(lens_repo, "status", "--format", "json")
    row = next(x for x in status.json()["lenses"] if x["lens"] == "sales")
    assert row["serving"] is None and row["retired"] == retired
    assert row["retired_meta"]["action"] == "retired"
    assert f"retired by {retired[:12]}" in invoke(lens_repo, "status").stdout
    log = invoke(lens_repo, "log", "sales", "--format", "json")
    assert log.code == 0, log.stderr
    assert [d["action"] for d in log.json()["deployments"][:2]] == ["retired", "promote"]

    again = invoke(lens_repo, "apply", "--format", "json")
    assert again.code == 0, again.stderr
    assert "sales" not in {x["lens"] for x in again.json()["lenses"]}
    assert ref(lens_repo, RETIRED) == retired


def test_retirement_rolls_back_with_the_rest_of_a_blocked_apply(lens_repo: Path) -> None:
    base = git(lens_repo, "rev-parse", "HEAD")
    served = ref(lens_repo, SERVING)
    commit(lens_repo, {"lenses/finance/lens.yaml": "name: finance\ndescription: v2\n"}, "v2")
    assert invoke(lens_repo, "apply", "--lens", "finance").code == 0
    # From a branch that lacks finance's serving commit, finance is a refused
    # rewind (blocked), so the whole apply rolls back: sales is not retired.
    git(lens_repo, "checkout", "-q", "-b", "old", base)
    commit(lens_repo, {"lenses/sales": None}, "drop sales")
    applied = invoke(lens_repo, "apply", "--format", "json")
    assert applied.code == 1, applied.stdout
    assert applied.lens("finance")["action"] == "blocked"
    sales = applied.lens("sales")
    assert sales["action"] == "skipped"
    assert any("not retired" in m for m in sales["messages"])
    assert ref(lens_repo, SERVING) == served and ref(lens_repo, RETIRED) is None


def test_a_candidate_without_the_serving_commit_does_not_retire(lens_repo: Path) -> None:
    base = git(lens_repo, "rev-parse", "HEAD")
    commit(lens_repo, {"lenses/sales/lens.yaml": "name: sales\ndescription: v2\n"}, "newer")
    assert invoke(lens_repo, "apply").code == 0
    served = ref(lens_repo, SERVING)
    # A branch cut before the newer commit that drops the lens: retiring it
    # from there would undo a promotion nobody reviewed against the deletion.
    git(lens_repo, "checkout", "-q", "-b", "old", base)
    commit(lens_repo, {"lenses/sales": None}, "drop sales on an old branch")
    applied = invoke(lens_repo, "apply", "--format", "json")
    assert applied.code == 1
    assert applied.lens("sales")["action"] == "blocked"
    assert ref(lens_repo, SERVING) == served and ref(lens_repo, RETIRED) is None


def test_a_retired_lens_can_come_back(lens_repo: Path) -> None:
    commit(lens_repo, {"lenses/sales": None}, "drop sales")
    assert invoke(lens_repo, "apply", "--lens", "sales").code == 0
    retired = ref(lens_repo, RETIRED)
    assert retired is not None and ref(lens_repo, SERVING) is None
    commit(lens_repo, dict(SALES), "sales is back")
    back = invoke(lens_repo, "apply", "--format", "json")
    assert back.code == 0, back.stderr
    assert back.lens("sales")["action"] == "promoted"
    assert ref(lens_repo, SERVING) is not None and ref(lens_repo, RETIRED) == retired
    status = invoke(lens_repo, "status")
    assert "sales: serving" in status.stdout
