"""A lens author's additions on top of an imported Cortex model (tests/benchmarks/additions.py).

The additions are written into the imported lens in dst's own format (the result
must load), each is listed, and one naming something the lens lacks is an error.
End to end, the benchmark imports a real Cortex model, applies an additions file,
lists it, and the verified query the addition serves is scored correct.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from reconciler.lens import load_lens
from tests.benchmarks.additions import AdditionsError, additions_for, apply_additions
from tests.benchmarks.cortex import ADDITIONS, run_cortex
from tests.figures import record
from tests.helpers import CORPORA

LENS = {
    "lens.yaml": "name: crm\n",
    "models/deals.yaml": (
        "name: deals\ntable: deals\nprimary_key: [id]\ndimensions:\n  - name: id\n"
        "  - name: fiscalquarter\n    synonyms: [quarter]\n  - name: iswon\n"
        "    data_type: BOOLEAN\ntime_dimensions:\n  - name: createddate\n    data_type: date\n"
        "  - name: closedate\n    data_type: date\nfacts:\n  - name: amount\n"
    ),
    "metrics/amount.yaml": "name: amount\nmodel: deals\nexpression: SUM(amount)\n",
}
ADDED = {
    "lenses": ["crm"],
    "metrics": [
        {
            "name": "win_rate",
            "synonyms": ["win rate"],
            "model": "deals",
            "expression": "AVG(CASE WHEN iswon THEN 1.0 ELSE 0.0 END)",
        }
    ],
    "synonyms": {"deals.createddate": ["created"], "metrics.amount": ["revenue"]},
    "retired_synonyms": {"deals.fiscalquarter": ["quarter"]},
    "models": {"deals": {"default_time_dimension": "closedate"}},
    "vocabulary": {"deal": "deals"},
    "lens": {"series_order": "newest_first"},
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, "utf-8")
    return root


def _loaded(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.yaml")}


def test_additions_are_written_in_lens_format_and_listed(tmp_path: Path) -> None:
    lens_dir = _write(tmp_path / "crm", LENS)
    extra = tmp_path / "additions" / "crm.yaml"
    extra.parent.mkdir()
    extra.write_text(yaml.safe_dump(ADDED), "utf-8")
    assert additions_for(extra.parent, "crm") == [extra]
    assert additions_for(extra.parent, "other") == []
    lines = apply_additions(lens_dir, extra)
    assert lines == [
        "metric win_rate: AVG(CASE WHEN iswon THEN 1.0 ELSE 0.0 END) on deals (said: win rate)",
        "deals.createddate synonyms + created",
        "metric amount synonyms + revenue",
        "deals.fiscalquarter synonyms - quarter",
        "model deals: default_time_dimension = closedate",
        "vocabulary: 'deal' → 'deals'",
        "lens.yaml: series_order = newest_first",
    ]
    lens = load_lens("crm", _loaded(lens_dir))
    deals = lens.models["deals"]
    assert deals.default_time_dimension == "closedate"
    assert next(c for c in deals.dimensions if c.name == "fiscalquarter").synonyms == ()
    assert next(c for c in deals.time_dimensions if c.name == "createddate").synonyms == (
        "created",
    )
    assert lens.metrics["win_rate"].synonyms == ("win rate",)
    assert lens.metrics["amount"].synonyms == ("revenue",)
    assert lens.config.vocabulary == {"deal": "deals"}
    assert lens.config.series_order == "newest_first"


@pytest.mark.parametrize(
    ("added", "message"),
    [
        ({"synonyms": {"deals.stage": ["phase"]}}, "has no column 'stage'"),
        ({"retired_synonyms": {"deals.id": ["key"]}}, "no synonyms ['key'] to retire"),
        ({"metrics": [{"name": "amount", "model": "deals", "expression": "SUM(1)"}]}, "exists"),
        ({"models": {"deals": {"table": "x"}}}, "unknown settings ['table']"),
        ({"lens": {"row_cap": 5}}, "unknown settings ['row_cap']"),
        ({"measures": []}, "unknown keys ['measures']"),
    ],
)
def test_an_addition_naming_what_the_lens_lacks_is_an_error(
    tmp_path: Path, added: dict[str, object], message: str
) -> None:
    lens_dir = _write(tmp_path / "crm", LENS)
    extra = tmp_path / "crm_additions.yaml"
    extra.write_text(yaml.safe_dump({"lenses": ["crm"], **added}), "utf-8")
    with pytest.raises(AdditionsError) as caught:
        apply_additions(lens_dir, extra)
    assert message in str(caught.value)


def test_the_shipped_additions_files_name_the_cortex_models() -> None:
    names = {
        lens for p in ADDITIONS.glob("*.yaml") for lens in yaml.safe_load(p.read_text())["lenses"]
    }
    assert {"sfdc_sales", "sfdc_sales_demo", "revenue_timeseries"} <= names


def test_the_benchmark_applies_and_lists_additions(tmp_path: Path) -> None:
    source = CORPORA / "cortex-analyst" / "sfdc_sales"
    if not (source / "sfdc_sales.yaml").is_file():
        pytest.skip(f"Cortex corpus not found at {source}")
    corpus = tmp_path / "corpus" / "sales"
    corpus.mkdir(parents=True)
    shutil.copy(source / "sfdc_sales.yaml", corpus / "sfdc_sales.yaml")
    shutil.copytree(source / "sample_data", corpus / "csv")
    extra = tmp_path / "additions"
    extra.mkdir()
    win_rate = {key: ADDED["metrics"][0][key] for key in ("name", "synonyms", "expression")}
    (extra / "sales.yaml").write_text(
        yaml.safe_dump(
            {"lenses": ["sfdc_sales"], "metrics": [{**win_rate, "model": "opportunity"}]}
        ),
        "utf-8",
    )
    (tmp_path / "plain").mkdir()
    (tmp_path / "added").mkdir()
    plain = run_cortex(corpus.parent, tmp_path / "plain", additions=None)
    added = run_cortex(corpus.parent, tmp_path / "added", additions=extra)
    assert plain.additions == []
    assert added.additions == [
        "sfdc_sales: metric win_rate: AVG(CASE WHEN iswon THEN 1.0 ELSE 0.0 END) "
        "on opportunity (said: win rate)"
    ]
    question = "what_is_our_win_rate_over_the_entire_available_time_period"

    def outcome(report_scores: list[dict[str, str]]) -> str:
        return next(o["outcome"] for o in report_scores if o["question"] == question)

    assert outcome(plain.scores[0].outcomes) == "declined"
    assert outcome(added.scores[0].outcomes) == "correct"
    assert added.scores[0].answerable()["wrong"] == 0


def test_every_cortex_model_with_its_additions_is_never_wrong(tmp_path: Path) -> None:
    corpus = CORPORA / "cortex-analyst"
    if not corpus.is_dir():
        pytest.skip(f"Cortex corpus not found at {corpus}")
    report = run_cortex(corpus, tmp_path, additions=ADDITIONS)
    assert not report.skipped, report.skipped
    totals = report.totals()["questions"]
    wrong = [e for s in report.scores for e in s.wrong_examples]
    assert totals["wrong"] == 0, wrong
    assert totals["correct"] >= 18, totals  # 4 before the additions and the grammar for them
    assert {line.split(":")[0] for line in report.additions} == {s.name for s in report.scores}
    record(
        f"accuracy (Cortex, imported models + additions, fast tier): {totals['correct']} "
        f"correct, {totals['wrong']} wrong, {totals['declined']} declined of "
        f"{sum(totals.values())}; {len(report.additions)} additions"
    )
