"""JSON Schemas for the lens file formats, generated from the pydantic models.

The models in :mod:`reconciler.lens` are the single source of truth (STYLE §5);
this module exports them as JSON Schema so an editor can flag a wrong key while
the file is being typed, before ``dst validate`` or a plan ever runs. The
generated files live in ``schemas/<kind>.schema.json`` at the repository root and
a test checks they match the models; regenerate them with::

    python -m reconciler.schemas            # writes ./schemas/
    python -m reconciler.schemas DIRECTORY

A lens file opts in with a first line the YAML language server reads (see
:func:`schema_comment`)::

    # yaml-language-server: $schema=../../../schemas/model.schema.json

The schemas are advisory: they cannot express the loader's cross-file checks
(unknown model references, duplicate names, unsafe SQL, implicit-typing traps),
which only :func:`reconciler.lens.load_lens` and ``dst validate`` perform.

The state files dst writes into git (:mod:`reconciler.state`: a deployment's
``state/meta.json`` and ``state/run.json``, the intent record's ``apply.json``)
are exported the same way, to ``schemas/state/<kind>.schema.json``, for tools
that read deployments; they allow unknown keys, since a newer dst of the same
``schema_version`` may add some.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from reconciler.lens import (
    Answer,
    CasesFile,
    Exemplar,
    LensConfig,
    Metric,
    Model,
    RepoConfig,
)
from reconciler.state import ApplyIntent, DeploymentMeta, RunRecord

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS_DIR = "schemas"

# kind -> (model, title). Titles name the file(s) the schema describes.
_KINDS: dict[str, tuple[type[BaseModel], str]] = {
    "lens": (LensConfig, "dst lens.yaml"),
    "model": (Model, "dst lens models/*.yaml"),
    "metric": (Metric, "dst lens metrics/*.yaml"),
    "exemplar": (Exemplar, "dst lens exemplars/*.yaml"),
    "answer": (Answer, "dst lens answers/*.yaml"),
    "cases": (CasesFile, "dst lens evals/cases.yaml"),
    "dst": (RepoConfig, "dst.yaml (repository settings)"),
}

# First path component of a lens-relative YAML file -> kind (mirrors load_lens).
_FOLDER_KINDS = {
    "models": "model",
    "metrics": "metric",
    "exemplars": "exemplar",
    "answers": "answer",
}

KINDS: tuple[str, ...] = tuple(_KINDS)
"""Every file kind with a schema, in a stable order."""

STATE_DIR = "state"
"""The sub-directory of ``schemas/`` the state file schemas are written to."""

_STATE_KINDS: dict[str, tuple[type[BaseModel], str]] = {
    "meta": (DeploymentMeta, "dst deployment state/meta.json"),
    "run": (RunRecord, "dst deployment state/run.json"),
    "intent": (ApplyIntent, "dst intent record apply.json (refs/dst/applying)"),
}

STATE_KINDS: tuple[str, ...] = tuple(_STATE_KINDS)
"""Every state file kind with a schema, in a stable order."""


def schema_id(kind: str) -> str:
    """The ``$id`` of a kind's schema (a URN: the schemas are not served anywhere)."""
    return f"urn:dst:schema:{kind}"


def schema_filename(kind: str) -> str:
    """The file name a kind's schema is written to (``model.schema.json``)."""
    return f"{kind}.schema.json"


def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of one file kind.

    Args:
        kind: one of :data:`KINDS`.

    Returns:
        A JSON-ready dict (draft 2020-12) with ``$schema``, ``$id`` and ``title`` set;
        every object keeps pydantic's ``additionalProperties: false`` from
        ``extra="forbid"``.

    Raises:
        KeyError: ``kind`` is not a known kind.
    """
    model, title = _KINDS[kind]
    schema = model.model_json_schema()
    schema["$schema"] = SCHEMA_DIALECT
    schema["$id"] = schema_id(kind)
    schema["title"] = title
    return schema


def state_schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of one state file kind (``meta``, ``run``, ``intent``).

    Returns:
        A JSON-ready dict (draft 2020-12) with ``$schema``, ``$id``
        (``urn:dst:schema:state:<kind>``) and ``title`` set.

    Raises:
        KeyError: ``kind`` is not one of :data:`STATE_KINDS`.
    """
    model, title = _STATE_KINDS[kind]
    schema = model.model_json_schema()
    schema["$schema"] = SCHEMA_DIALECT
    schema["$id"] = schema_id(f"{STATE_DIR}:{kind}")
    schema["title"] = title
    return schema


def write_state_schemas(directory: Path) -> list[Path]:
    """Write ``<directory>/state/<kind>.schema.json`` for every state kind.

    Returns:
        The paths written, in :data:`STATE_KINDS` order.
    """
    target = directory / STATE_DIR
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in STATE_KINDS:
        path = target / schema_filename(kind)
        path.write_text(render(state_schema_for(kind)), encoding="utf-8")
        written.append(path)
    return written


def schemas() -> dict[str, dict[str, Any]]:
    """Every kind's JSON Schema, by kind (``lens``, ``model``, … ``dst``)."""
    return {kind: schema_for(kind) for kind in KINDS}


def render(schema: dict[str, Any]) -> str:
    """A schema as committed: sorted keys, two-space indent, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write ``<directory>/<kind>.schema.json`` for every kind.

    Args:
        directory: target directory, created if missing (usually ``schemas/``).

    Returns:
        The paths written, in :data:`KINDS` order.
    """
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, schema in schemas().items():
        path = directory / schema_filename(kind)
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written


def kind_of(lens_relative_path: str) -> str | None:
    """The schema kind of a lens file, or ``None`` for files without one.

    ``lens.yaml`` → ``lens``; ``models/x.yaml`` → ``model`` (likewise metrics,
    exemplars, answers, including nested folders as :func:`~reconciler.lens.load_lens`
    reads them); ``evals/cases.yaml`` → ``cases``; skills, seeds and anything else
    → ``None``.
    """
    path = PurePosixPath(lens_relative_path)
    if path.suffix.lower() not in (".yaml", ".yml"):
        return None
    if path.parts == ("lens.yaml",):
        return "lens"
    if path.parts == ("evals", "cases.yaml"):
        return "cases"
    if len(path.parts) > 1:
        return _FOLDER_KINDS.get(path.parts[0])
    return None


def schema_comment(kind: str, lens_relative_path: str) -> str:
    """The ``yaml-language-server`` modeline pointing a lens file at its schema.

    The path is relative to the file, assuming the lens lives at
    ``lenses/<name>/`` and the schemas at ``schemas/`` in the repository root.

    Args:
        kind: one of :data:`KINDS`.
        lens_relative_path: the file's path inside the lens (``models/orders.yaml``).

    Returns:
        One comment line ending in a newline, e.g.
        ``# yaml-language-server: $schema=../../../schemas/model.schema.json``.

    Raises:
        KeyError: ``kind`` is not a known kind.
    """
    _KINDS[kind]  # unknown kinds fail here, not in an editor later
    depth = len(PurePosixPath(lens_relative_path).parts) - 1 + 2  # + lenses/<name>/
    target = "/".join([".."] * depth + [SCHEMAS_DIR, schema_filename(kind)])
    return f"# yaml-language-server: $schema={target}\n"


def with_schema_comment(lens_relative_path: str, content: bytes) -> bytes:
    """``content`` with its schema modeline prepended, if the file has a schema kind."""
    kind = kind_of(lens_relative_path)
    if kind is None:
        return content
    return schema_comment(kind, lens_relative_path).encode("utf-8") + content


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate the schema files: ``python -m reconciler.schemas [DIRECTORY]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    directory = Path(args[0]) if args else Path(SCHEMAS_DIR)
    for path in write_schemas(directory):
        print(f"wrote {path.as_posix()}")
    state = write_state_schemas(directory)
    print(f"and the state file schemas: {', '.join(p.as_posix() for p in state)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
