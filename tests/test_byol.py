"""Bring your own lens: shared Cortex models imported beside the example lenses.

In a repository that already serves the example lenses, each shared Cortex Analyst
model is imported with its data, seeded and applied; the imported lens then takes a
harmless change (a new skill file) with its unreached answers listed, blocks a change
that breaks an answer the generator reaches, and blocks the harmless change too once
``strict_declines: true`` is set (DESIGN §5).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import CORPORA, commit, invoke
from tests.helpers.examples import answers_bound_to, deployment_json, serving

MODELS = {
    "revenue": ("revenue_timeseries/revenue_timeseries.yaml", "revenue_timeseries/data"),
    "sfdc": ("sfdc_sales/sfdc_sales.yaml", "sfdc_sales/sample_data"),
}
SKILL = {"lenses/sfdc/skills/fiscal.md": "# Fiscal year\n\nThe fiscal year starts in February.\n"}


@pytest.fixture
def imported(promoted_repo: Path) -> Path:
    """``promoted_repo`` with both shared Cortex models imported, seeded and promoted."""
    base = CORPORA / "cortex-analyst"
    if not base.is_dir():
        pytest.skip(f"Cortex corpus not found at {base} (set DST_CORPORA to the corpora folder)")
    for lens, (model, data) in MODELS.items():
        done = invoke(
            promoted_repo,
            "import",
            "cortex",
            str(base / model),
            "--lens",
            lens,
            "--data",
            str(base / data),
        )
        assert done.code == 0, done.stdout + done.stderr
    commit(promoted_repo, {}, "import the shared Cortex models")
    seeded = invoke(promoted_repo, "seed")
    assert seeded.code == 0, seeded.stdout + seeded.stderr
    applied = invoke(promoted_repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    for lens in MODELS:
        assert applied.lens(lens)["action"] == "promoted"
    return promoted_repo


def test_imported_models_promote_beside_the_examples_and_take_a_skill(imported: Path) -> None:
    status = invoke(imported, "status", "--format", "json")
    assert status.code == 0, status.stderr
    assert {"sales", "finance", *MODELS} <= {lens["lens"] for lens in status.json()["lenses"]}
    commit(imported, SKILL, "a skill for the imported lens")
    applied = invoke(imported, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    obj = applied.lens("sfdc")
    assert obj["action"] == "promoted"
    declined = [r["answer"] for r in obj["results"] if r["outcome"] == "declined"]
    listed = [m for m in obj["messages"] if "untested: unreached by the generator: " in m]
    assert declined and len(listed) == len(declined)
    assert obj["reach"]["reached"] == obj["reach"]["total"] - len(declined)


def test_doubling_the_measure_a_reached_answer_uses_blocks(imported: Path) -> None:
    # The answers the fast tier reaches on sfdc_sales average the deal amount: the
    # fact ``amount`` of the opportunity model (its SUM metric does not fit "average").
    oid = serving(imported, "sfdc")
    assert oid is not None
    reached = set(deployment_json(imported, oid, "state/bindings.json")["answers"])
    assert reached, "the fast tier reaches at least one imported verified query"
    assert reached <= answers_bound_to(imported, "sfdc", "models/opportunity")
    path = imported / "lenses/sfdc/models/opportunity.yaml"
    text = path.read_text()
    doubled = text.replace("- name: amount\n", "- name: amount\n  expr: amount * 2\n", 1)
    assert doubled != text
    before = serving(imported, "sfdc")
    commit(imported, {str(path.relative_to(imported)): doubled}, "double the deal amount")
    applied = invoke(imported, "apply", "--format", "json")
    assert applied.code == 1, applied.stdout + applied.stderr
    obj = applied.lens("sfdc")
    assert obj["action"] == "blocked"
    wrong = {r["answer"] for r in obj["results"] if r["outcome"] == "wrong"}
    assert wrong and wrong <= reached
    assert serving(imported, "sfdc") == before


def test_strict_declines_blocks_the_skill(imported: Path) -> None:
    lens_yaml = imported / "lenses/sfdc/lens.yaml"
    text = lens_yaml.read_text()
    assert "strict_declines" not in text
    strict = text.rstrip("\n") + "\nstrict_declines: true\n"
    before = serving(imported, "sfdc")
    commit(imported, {**SKILL, "lenses/sfdc/lens.yaml": strict}, "strict declines and a skill")
    applied = invoke(imported, "apply", "--format", "json")
    assert applied.code == 1, applied.stdout + applied.stderr
    assert applied.lens("sfdc")["action"] == "blocked"
    assert serving(imported, "sfdc") == before
