"""JSON Schemas exported from the lens models, and ``dst validate``.

The committed ``schemas/*.schema.json`` must equal what the models generate; every
example lens file must satisfy its schema; a wrong key is both a schema error (what
an editor shows) and a ``dst validate`` failure naming the file and line.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import LensLoadError
from reconciler.lens import load_lens
from reconciler.loader import load_yaml
from reconciler.schemas import (
    KINDS,
    kind_of,
    main,
    render,
    schema_comment,
    schema_for,
    schemas,
    with_schema_comment,
)
from tests.helpers import EXAMPLE_LENSES, PROJECT, invoke

SCHEMAS = PROJECT / "schemas"
REGENERATE = "run `python -m reconciler.schemas` from the repository root and commit schemas/"

try:
    import jsonschema
except ImportError:  # pragma: no cover - exercised only where jsonschema is absent
    jsonschema = None


def _lens_parts(path: Path) -> tuple[str, ...]:
    """The path of a file inside its lens (``models/orders.yaml``) as parts."""
    rel = path.relative_to(EXAMPLE_LENSES)
    return rel.parts[1:]


def _lens_rel(path: Path) -> str:
    return "/".join(_lens_parts(path))


EXAMPLE_FILES = [
    p
    for p in (sorted(EXAMPLE_LENSES.rglob("*.yaml")) if EXAMPLE_LENSES.is_dir() else [])
    if kind_of(_lens_rel(p))
]


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


def schema_errors(kind: str, data: Any) -> list[str]:
    """Schema violations of ``data``: via jsonschema when installed, else a structural check."""
    schema = schema_for(kind)
    if jsonschema is not None:
        validator = jsonschema.Draft202012Validator(schema)
        return [
            f"{'.'.join(str(p) for p in e.absolute_path) or '(document)'}: {e.message}"
            for e in validator.iter_errors(data)
        ]
    # Top level only: unknown keys and missing required keys.
    if not isinstance(data, dict):
        return ["(document): not a mapping"]
    errors = [f"{key}: unknown key" for key in data if key not in schema["properties"]]
    errors += [f"{key}: missing" for key in schema.get("required", ()) if key not in data]
    return errors


# --- the committed schema files ---------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_committed_schema_is_current(kind: str) -> None:
    path = SCHEMAS / f"{kind}.schema.json"
    assert path.is_file(), f"{path.name} is missing: {REGENERATE}"
    assert path.read_text(encoding="utf-8") == render(schema_for(kind)), (
        f"schemas/{path.name} is stale: {REGENERATE}"
    )


def test_no_stray_schema_files() -> None:
    committed = {p.name for p in SCHEMAS.glob("*.json")}
    assert committed == {f"{kind}.schema.json" for kind in KINDS}, REGENERATE


def test_module_entry_regenerates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "out")]) == 0
    for kind in KINDS:
        written = (tmp_path / "out" / f"{kind}.schema.json").read_text(encoding="utf-8")
        assert written == (SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8")
        assert written.endswith("}\n")
    assert capsys.readouterr().out.count("wrote ") == len(KINDS)


def test_schemas_have_ids_titles_and_forbid_extra_keys() -> None:
    all_schemas = schemas()
    assert set(all_schemas) == {"lens", "model", "metric", "exemplar", "answer", "cases", "dst"}
    ids = {s["$id"] for s in all_schemas.values()}
    assert len(ids) == len(all_schemas)
    for kind, schema in all_schemas.items():
        assert schema["title"].startswith("dst"), kind
        assert schema["$schema"].endswith("/draft/2020-12/schema")
        objects = list(_objects(schema))
        assert objects, kind
        for obj in objects:
            assert obj["additionalProperties"] is False, (kind, obj.get("title"))


# --- example lenses against their schemas ---------------------------------------


def test_example_lens_files_found() -> None:
    if not EXAMPLE_FILES:
        pytest.skip("example lenses are not present")
    kinds = {kind_of(_lens_rel(p)) for p in EXAMPLE_FILES}
    assert {"lens", "model", "metric", "exemplar", "answer", "cases"} <= kinds


@pytest.mark.parametrize(
    "path", EXAMPLE_FILES, ids=[p.relative_to(EXAMPLE_LENSES).as_posix() for p in EXAMPLE_FILES]
)
def test_example_file_matches_its_schema(path: Path) -> None:
    rel = _lens_rel(path)
    kind = kind_of(rel)
    assert kind is not None
    data = load_yaml(rel, path.read_bytes()).data
    assert schema_errors(kind, data) == []


def test_wrong_key_is_a_schema_error_and_a_load_error() -> None:
    source = EXAMPLE_LENSES / "sales" / "models" / "orders.yaml"
    if not source.is_file():
        pytest.skip("example lenses are not present")
    bad = source.read_bytes().replace(b"primary_key:", b"primary_keys:", 1)
    data = load_yaml("models/orders.yaml", bad).data
    errors = schema_errors("model", data)
    assert errors and any("primary_keys" in e for e in errors)

    files = {
        p.relative_to(source.parents[1]).as_posix(): p.read_bytes()
        for p in source.parents[1].rglob("*")
        if p.is_file()
    }
    files["models/orders.yaml"] = bad
    with pytest.raises(LensLoadError) as raised:
        load_lens("sales", files)
    line = 1 + next(
        i for i, text in enumerate(bad.decode().splitlines()) if text.startswith("primary_keys:")
    )
    assert raised.value.path == "lenses/sales/models/orders.yaml"
    assert raised.value.line == line


# --- the yaml-language-server modeline -------------------------------------------


@pytest.mark.parametrize(
    ("rel", "kind", "target"),
    [
        ("lens.yaml", "lens", "../../schemas/lens.schema.json"),
        ("models/orders.yaml", "model", "../../../schemas/model.schema.json"),
        ("metrics/deep/x.yml", "metric", "../../../../schemas/metric.schema.json"),
        ("exemplars/e.yaml", "exemplar", "../../../schemas/exemplar.schema.json"),
        ("answers/a.yaml", "answer", "../../../schemas/answer.schema.json"),
        ("evals/cases.yaml", "cases", "../../../schemas/cases.schema.json"),
    ],
)
def test_schema_comment_points_at_the_schema(rel: str, kind: str, target: str) -> None:
    assert kind_of(rel) == kind
    comment = schema_comment(kind, rel)
    assert comment == f"# yaml-language-server: $schema={target}\n"
    # The relative path resolves to the committed file from lenses/<name>/<rel>.
    here = PROJECT / "lenses" / "any" / rel
    assert (here.parent / target).resolve() == (SCHEMAS / f"{kind}.schema.json").resolve()


@pytest.mark.parametrize("rel", ["skills/time.md", "seeds/orders.csv", "notes.yaml", "lens.yml"])
def test_files_without_a_schema(rel: str) -> None:
    assert kind_of(rel) is None
    assert with_schema_comment(rel, b"x") == b"x"


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(KeyError):
        schema_comment("widget", "lens.yaml")


def test_lens_with_modelines_still_loads() -> None:
    base = EXAMPLE_LENSES / "sales"
    if not base.is_dir():
        pytest.skip("example lenses are not present")
    files = {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}
    marked = {rel: with_schema_comment(rel, data) for rel, data in files.items()}
    assert marked["lens.yaml"].startswith(b"# yaml-language-server: $schema=")
    assert load_lens("sales", marked) == load_lens("sales", files)


def test_cortex_import_writes_modelines_and_schema_valid_files() -> None:
    from reconciler.interop.importers.cortex import import_cortex
    from tests.helpers.interop import SMALL_MODEL

    files, _ = import_cortex(
        SMALL_MODEL.encode(), model_path="shop.yaml", lens="shop", data_dir=None
    )
    yaml_files = {rel: data for rel, data in files.items() if kind_of(rel)}
    assert "lens.yaml" in yaml_files and any(r.startswith("answers/") for r in yaml_files)
    for rel, data in yaml_files.items():
        kind = kind_of(rel)
        assert kind is not None
        assert data.startswith(schema_comment(kind, rel).encode()), rel
        assert schema_errors(kind, load_yaml(rel, data).data) == [], rel
    for rel, data in files.items():
        if not kind_of(rel):
            assert b"yaml-language-server" not in data, rel


# --- dst validate -----------------------------------------------------------------


@pytest.fixture(scope="module")
def _validate_wired(tmp_path_factory: pytest.TempPathFactory) -> None:
    done = invoke(tmp_path_factory.mktemp("help"), "validate", "--help")
    if done.code != 0:
        pytest.skip("dst validate is not wired into reconciler/cli/app.py yet")


@pytest.fixture
def lenses_copy(_validate_wired: None, tmp_path: Path) -> Path:
    """A plain directory (no git) holding a copy of the example lenses."""
    if not (EXAMPLE_LENSES / "sales" / "lens.yaml").is_file():
        pytest.skip("example lenses are not present")
    root = tmp_path / "work"
    shutil.copytree(EXAMPLE_LENSES, root / "lenses")
    return root


def test_validate_example_lenses(lenses_copy: Path) -> None:
    done = invoke(lenses_copy, "validate", "--format", "json")
    assert done.code == 0, done.stderr
    report = done.json()
    assert report["schema_version"] == 1 and report["command"] == "validate"
    assert {x["lens"] for x in report["lenses"]} == {"finance", "sales"}
    assert all(x["valid"] and x["error"] is None for x in report["lenses"])


def test_validate_wrong_key_names_file_and_line(lenses_copy: Path) -> None:
    path = lenses_copy / "lenses" / "sales" / "metrics" / "net_revenue.yaml"
    lines = path.read_text().splitlines()
    lines.insert(1, "labell: Net revenue")
    path.write_text("\n".join(lines) + "\n")

    done = invoke(lenses_copy, "validate", "lenses/sales/metrics/net_revenue.yaml")
    assert done.code == 2
    assert "lenses/sales/metrics/net_revenue.yaml:2: unknown key 'labell'" in done.stderr
    assert "fix:" in done.stderr

    done = invoke(lenses_copy, "validate", "--format", "json")
    assert done.code == 2
    assert done.lens("finance")["valid"] is True
    error = done.lens("sales")["error"]
    assert done.lens("sales")["valid"] is False
    assert (error["path"], error["line"]) == ("lenses/sales/metrics/net_revenue.yaml", 2)
    assert error["fix"]


def test_validate_many_files_of_one_lens_checks_it_once(lenses_copy: Path) -> None:
    done = invoke(
        lenses_copy,
        "validate",
        "lenses/sales/lens.yaml",
        "lenses/sales/models/orders.yaml",
        "lenses/sales",
        "--format",
        "json",
    )
    assert done.code == 0, done.stderr
    assert [x["lens"] for x in done.json()["lenses"]] == ["sales"]


def test_validate_path_outside_a_lens_is_usage_error(lenses_copy: Path) -> None:
    (lenses_copy / "notes.yaml").write_text("a: 1\n")
    done = invoke(lenses_copy, "validate", "notes.yaml")
    assert done.code == 2
    assert "not inside a lens directory" in done.stderr
