"""A lens author's additions on top of an imported Cortex model, for the benchmark.

An imported model is the semantic model as Snowflake had it; a data team that adopts
it writes what its own lens needs on top (the metrics its reports use, the words its
people say). ``tests/fixtures/cortex_additions/*.yaml`` hold those additions in dst's
own lens format, one file per family of models::

    lenses: [sfdc_sales, sfdc_sales_demo]   # the imported lens names it applies to
    metrics:                                 # new metrics/<name>.yaml, lens format
      - {name: win_rate, model: opportunity, expression: ..., synonyms: [...]}
    synonyms:                                # more synonyms on existing columns
      opportunity.salescycleduration: [cycle length]
      metrics.closed_revenue: [bookings]      # … and on existing metrics
    retired_synonyms:                        # synonyms the team does not use that way
      opportunity.fiscalquarter: [quarter]
    vocabulary: {deal: opportunity}          # merged into lens.yaml's vocabulary
    lens: {series_order: newest_first}       # lens.yaml settings that feed generation
    models:                                  # model settings (lens format)
      opportunity: {default_time_dimension: closedate}

:func:`apply_additions` writes them into the imported lens folder before it is
committed, and returns one line per addition, which the benchmark lists under
``additions:``. Every addition names an existing model, column or metric file it
extends (or a new metric); anything else is an error, so a stale additions file
fails loudly instead of silently adding nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_KEYS = {"lenses", "metrics", "synonyms", "retired_synonyms", "vocabulary", "models", "lens"}
_MODEL_SETTINGS = {"default_time_dimension", "description"}
_LENS_SETTINGS = {"series_order"}


class AdditionsError(ValueError):
    """An additions file that does not fit the lens it names."""


def additions_for(folder: Path, lens: str) -> list[Path]:
    """The additions files under ``folder`` whose ``lenses`` list names ``lens``."""
    if not folder.is_dir():
        return []
    return [p for p in sorted(folder.glob("*.yaml")) if lens in _read(p).get("lenses", ())]


def apply_additions(lens_dir: Path, additions: Path) -> list[str]:
    """Write the additions of file ``additions`` into the lens at ``lens_dir``.

    Returns:
        One human-readable line per addition (``metric win_rate: …``), in file order.

    Raises:
        AdditionsError: an unknown key, or an addition naming a model, column or
            metric the lens does not have (or a new metric that already exists).
    """
    doc = _read(additions)
    unknown = set(doc) - _KEYS
    if unknown:
        raise AdditionsError(f"{additions.name}: unknown keys {sorted(unknown)}")
    lines: list[str] = []
    for metric in doc.get("metrics") or ():
        lines.append(_add_metric(lens_dir, metric))
    for place, words in (doc.get("synonyms") or {}).items():
        lines.append(_synonyms(lens_dir, place, list(words), add=True))
    for place, words in (doc.get("retired_synonyms") or {}).items():
        lines.append(_synonyms(lens_dir, place, list(words), add=False))
    for model, settings in (doc.get("models") or {}).items():
        lines.append(_model_settings(lens_dir, model, settings))
    if doc.get("vocabulary"):
        lines.append(_vocabulary(lens_dir, doc["vocabulary"]))
    if doc.get("lens"):
        lines.append(_lens_settings(lens_dir, doc["lens"]))
    return lines


def _read(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text("utf-8"))
    if not isinstance(doc, dict):
        raise AdditionsError(f"{path.name}: not a mapping")
    return doc


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise AdditionsError(f"{path.parent.name}/{path.name}: no such lens file")
    return _read(path)


def _dump(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), "utf-8")


def _add_metric(lens_dir: Path, metric: dict[str, Any]) -> str:
    name = str(metric["name"])
    path = lens_dir / "metrics" / f"{name}.yaml"
    if path.exists():
        raise AdditionsError(f"metric {name!r} already exists in the imported lens")
    _load(lens_dir / "models" / f"{metric['model']}.yaml")
    _dump(path, dict(metric))
    filters = metric.get("filters") or []
    where = f" where {' and '.join(filters)}" if filters else ""
    said = ", ".join(metric.get("synonyms") or ())
    return f"metric {name}: {metric['expression']}{where} on {metric['model']}" + (
        f" (said: {said})" if said else ""
    )


def _column(doc: dict[str, Any], place: str, column: str) -> dict[str, Any]:
    for kind in ("dimensions", "time_dimensions", "facts"):
        for col in doc.get(kind) or ():
            if col["name"] == column:
                return dict(col)
    raise AdditionsError(f"{place}: model {doc.get('name')!r} has no column {column!r}")


def _synonyms(lens_dir: Path, place: str, words: list[str], *, add: bool) -> str:
    model, _, column = place.partition(".")
    if model == "metrics":
        return _metric_synonyms(lens_dir, column, words, add=add)
    path = lens_dir / "models" / f"{model}.yaml"
    doc = _load(path)
    _column(doc, place, column)
    for kind in ("dimensions", "time_dimensions", "facts"):
        for col in doc.get(kind) or ():
            if col["name"] != column:
                continue
            have = list(col.get("synonyms") or ())
            if add:
                col["synonyms"] = have + [w for w in words if w not in have]
            else:
                missing = [w for w in words if w not in have]
                if missing:
                    raise AdditionsError(f"{place}: no synonyms {missing} to retire")
                col["synonyms"] = [w for w in have if w not in words]
    _dump(path, doc)
    listed = ", ".join(words)
    return f"{place} synonyms {'+' if add else '-'} {listed}"


def _metric_synonyms(lens_dir: Path, name: str, words: list[str], *, add: bool) -> str:
    path = lens_dir / "metrics" / f"{name}.yaml"
    doc = _load(path)
    have = list(doc.get("synonyms") or ())
    missing = [w for w in words if w not in have]
    if not add and missing:
        raise AdditionsError(f"metrics.{name}: no synonyms {missing} to retire")
    doc["synonyms"] = have + missing if add else [w for w in have if w not in words]
    _dump(path, doc)
    return f"metric {name} synonyms {'+' if add else '-'} {', '.join(words)}"


def _model_settings(lens_dir: Path, model: str, settings: dict[str, Any]) -> str:
    unknown = set(settings) - _MODEL_SETTINGS
    if unknown:
        raise AdditionsError(f"models.{model}: unknown settings {sorted(unknown)}")
    path = lens_dir / "models" / f"{model}.yaml"
    doc = _load(path)
    if "default_time_dimension" in settings:
        _column(doc, f"models.{model}", str(settings["default_time_dimension"]))
    doc.update(settings)
    _dump(path, doc)
    return f"model {model}: " + ", ".join(f"{k} = {v}" for k, v in settings.items())


def _vocabulary(lens_dir: Path, vocabulary: dict[str, str]) -> str:
    path = lens_dir / "lens.yaml"
    doc = _load(path)
    merged = dict(doc.get("vocabulary") or {})
    merged.update(vocabulary)
    doc["vocabulary"] = merged
    _dump(path, doc)
    return "vocabulary: " + ", ".join(f"{k!r} → {v!r}" for k, v in vocabulary.items())


def _lens_settings(lens_dir: Path, settings: dict[str, Any]) -> str:
    unknown = set(settings) - _LENS_SETTINGS
    if unknown:
        raise AdditionsError(f"lens: unknown settings {sorted(unknown)}")
    path = lens_dir / "lens.yaml"
    doc = _load(path)
    doc.update(settings)
    _dump(path, doc)
    return "lens.yaml: " + ", ".join(f"{k} = {v}" for k, v in settings.items())
