"""Real input end to end: both Cortex Analyst models import, seed and apply.

The run's JSON reports, for every verified query, whether generation got it
correct, wrong or declined. The figures are printed (``pytest -s``) so they can
be quoted; the assertions hold only what must always hold: every verified query
is scored, nothing errors, and the generator declines far more than it guesses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers import CORPORA, commit, invoke

MODELS = {
    "revenue": ("revenue_timeseries/revenue_timeseries.yaml", "revenue_timeseries/data"),
    "sfdc": ("sfdc_sales/sfdc_sales.yaml", "sfdc_sales/sample_data"),
}


@pytest.fixture(scope="module")
def cortex() -> Path:
    base = CORPORA / "cortex-analyst"
    if not base.is_dir():
        pytest.skip(f"Cortex corpus not found at {base} (set DST_CORPORA to the corpora folder)")
    return base


def test_both_cortex_models_import_seed_and_apply(cortex: Path, repo: Path) -> None:
    verified: dict[str, int] = {}
    for lens, (model, data) in MODELS.items():
        done = invoke(
            repo,
            "import",
            "cortex",
            str(cortex / model),
            "--lens",
            lens,
            "--data",
            str(cortex / data),
            "--format",
            "json",
        )
        assert done.code == 0, done.stdout + done.stderr
        assert done.json()["answers"] >= 1
        source = yaml.safe_load((cortex / model).read_text())
        verified[lens] = len(source.get("verified_queries") or [])
    commit(repo, {}, "import both Cortex models")
    assert invoke(repo, "seed").code == 0
    applied = invoke(repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stdout + applied.stderr
    lines = []
    for lens, count in verified.items():
        obj = applied.lens(lens)
        assert obj["action"] == "promoted"
        outcomes = [r["outcome"] for r in obj["self_test"]]
        assert len(outcomes) == count  # every verified query is scored
        assert set(outcomes) <= {"correct", "wrong", "declined"}
        tally = {o: outcomes.count(o) for o in ("correct", "wrong", "declined")}
        assert tally["wrong"] <= max(1, count // 10), tally  # declines rather than guesses
        lines.append(f"{lens}: {tally} of {count} verified queries")
    print("\n" + "\n".join(lines))
