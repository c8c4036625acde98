"""Read a dbt semantic layer: project YAML, MetricFlow manifest YAML or ``semantic_manifest.json``.

Three spellings of the same objects reach the dbt importer:

* a dbt project's property files under ``models/`` (dbt docs, "Semantic models",
  "Metrics", "Saved queries"): top-level lists ``semantic_models:``, ``metrics:``,
  ``saved_queries:``, next to the ``models:`` the project documents;
* MetricFlow's own YAML (``semantic_model:``, ``metric:``, ``saved_query:``,
  ``project_configuration:``), one object per ``---`` document;
* the compiled ``semantic_manifest.json`` (lists ``semantic_models``, ``metrics``,
  ``saved_queries``, plus ``project_configuration``).

Legacy ``dbt_metrics`` definitions (dbt 1.3–1.5: ``calculation_method``,
``expression``, ``timestamp``) arrive under ``metrics:`` too and are told apart
by their ``calculation_method``. This module only sorts objects by kind and keeps
each object's file and line; :mod:`reconciler.interop.importers.dbt` maps them. Pure:
bytes in, values out.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.errors import LensLoadError, UsageError
from reconciler.interop.importers import scalar_text
from reconciler.loader import Document, Location, load_yaml

KINDS = ("semantic_model", "metric", "legacy_metric", "saved_query", "dbt_model")
# singular MetricFlow document key / plural dbt & manifest key -> kind
_KEYS = {
    "semantic_model": "semantic_model",
    "semantic_models": "semantic_model",
    "metric": "metric",
    "metrics": "metric",
    "saved_query": "saved_query",
    "saved_queries": "saved_query",
    "models": "dbt_model",
}
_IGNORED = {"version", "metadata", "project_configuration"}
_SKIPPED = {
    "sources": "dbt sources describe raw tables; the lens reads the tables its models name",
    "seeds": "seed properties are not lens content (the CSVs themselves can be seeds)",
    "exposures": "dbt exposures describe downstream uses; a lens has none",
    "macros": "dbt macros are Jinja; a lens holds SQL",
    "snapshots": "dbt snapshots are build steps; a lens reads built tables",
    "analyses": "dbt analyses are not lens content",
    "unit_tests": "dbt unit tests are not lens content",
    "data_tests": "dbt data tests are not lens content",
    "groups": "dbt groups are ownership metadata; a lens has none",
}
_SEPARATOR = re.compile(r"^---[ \t]*(#.*)?$")
_DOCS_BLOCK = re.compile(r"{%-?\s*docs\s+(\w+)\s*-?%}(.*?){%-?\s*enddocs\s*-?%}", re.DOTALL)


@dataclass(frozen=True)
class Item:
    """One dbt object and where it was declared.

    Attributes:
        kind: one of :data:`KINDS`.
        data: the object's mapping as written.
        doc: the document it came from (for lines).
        at: its path inside ``doc.data`` (``("metrics", 3)``).
    """

    kind: str
    data: Mapping[str, Any]
    doc: Document
    at: tuple[str | int, ...]

    @property
    def name(self) -> str:
        """The object's ``name`` as text (empty when absent)."""
        return scalar_text(self.data.get("name")).strip()

    @property
    def line(self) -> int | None:
        """The 1-based line the object starts on, when known."""
        return self.doc.line_of(self.at)

    def fail(self, message: str, fix: str, *at: str | int) -> LensLoadError:
        """A load error at this object (or at ``at`` inside it)."""
        return LensLoadError(
            self.doc.path, message, line=self.doc.line_of((*self.at, *at)), fix=fix
        )


@dataclass
class Sources:
    """Every object found, by kind, plus what was skipped and why.

    Attributes:
        items: ``{kind: [Item, …]}`` in file order.
        docs: ``{docs block name: text}`` from ``{% docs %}`` blocks in ``.md`` files.
        skipped: ``(where, reason)`` for top-level keys that hold nothing a lens keeps.
        time_spines: how many time spine tables ``project_configuration`` declares.
    """

    items: dict[str, list[Item]] = field(default_factory=lambda: {k: [] for k in KINDS})
    docs: dict[str, str] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    time_spines: int = 0


def split_documents(path: str, content: bytes) -> list[Document]:
    """Parse a YAML stream of ``---``-separated documents, each keeping its true lines.

    Each document is handed to :func:`reconciler.loader.load_yaml` (duplicate keys,
    strict tags) behind as many blank lines as precede it, so errors and
    :meth:`Document.line_of` give lines of the whole file.

    Raises:
        LensLoadError: a document that is not UTF-8 YAML, at its line.
    """
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LensLoadError(
            path, f"not UTF-8 ({exc.reason} at byte {exc.start})", fix="save the file as UTF-8"
        ) from None
    docs: list[Document] = []
    chunk: list[str] = []
    start = 0
    for number, line in enumerate([*text.splitlines(), "---"]):
        if _SEPARATOR.match(line):
            body = "\n" * start + "\n".join(chunk)
            if "".join(chunk).strip():
                docs.append(load_yaml(path, body.encode("utf-8")))
            chunk, start = [], number + 1
        else:
            chunk.append(line)
    return docs


def _json_document(path: str, content: bytes) -> Document:
    try:
        data = json.loads(content.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise LensLoadError(path, "not UTF-8", fix="save the file as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise LensLoadError(
            path, f"JSON syntax error: {exc.msg}", line=exc.lineno, fix="correct the JSON"
        ) from None
    # JSON keeps no per-node lines; errors inside it name the file only.
    return Document(path, data, {(): Location(1)})


def read_sources(files: Mapping[str, bytes]) -> Sources:
    """Sort the objects of dbt / MetricFlow files by kind.

    Args:
        files: ``{display path: bytes}`` of ``.yml``/``.yaml``/``.json`` property or
            manifest files and ``.md`` docs files, in the order to read them.

    Returns:
        The objects found; files that hold none of them add nothing.

    Raises:
        LensLoadError: a file that does not parse, or a kind's value that is not a
            list of mappings (``metrics:`` holding a string), at its line.
    """
    sources = Sources()
    for path, content in files.items():
        if path.lower().endswith(".md"):
            text = content.decode("utf-8", errors="replace")
            sources.docs.update(
                (m.group(1), m.group(2).strip()) for m in _DOCS_BLOCK.finditer(text)
            )
            continue
        is_json = path.lower().endswith(".json")
        docs = [_json_document(path, content)] if is_json else split_documents(path, content)
        for doc in docs:
            _sort(doc, sources)
    return sources


def _sort(doc: Document, sources: Sources) -> None:
    if not isinstance(doc.data, dict):
        return
    for key, value in doc.data.items():
        if key == "project_configuration" and isinstance(value, dict):
            spines = value.get("time_spines") or value.get("time_spine_table_configurations")
            sources.time_spines += len(spines) if isinstance(spines, list) else 0
        kind = _KEYS.get(key)
        if kind is None:
            if key in _SKIPPED and value:
                sources.skipped.append((f"{doc.path}: {key}", _SKIPPED[key]))
            elif key not in _IGNORED and key not in _SKIPPED:
                sources.skipped.append((f"{doc.path}: {key}", "not a dbt semantic-layer key"))
            continue
        entries = [value] if key in ("semantic_model", "metric", "saved_query") else value
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise LensLoadError(
                doc.path,
                f"{key} must be a list of mappings",
                line=doc.line_of((key,)),
                fix=f"write {key}: as a YAML list (- name: …)",
            )
        for i, entry in enumerate(entries):
            at: tuple[str | int, ...] = (key,) if entries is not value else (key, i)
            if not isinstance(entry, dict):
                raise LensLoadError(
                    doc.path,
                    f"{key} entry #{i + 1} is not a mapping",
                    line=doc.line_of(at),
                    fix="give every entry a name and its properties",
                )
            real = "legacy_metric" if kind == "metric" and "calculation_method" in entry else kind
            sources.items[real].append(Item(real, entry, doc, at))


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else an empty one (absent or mistyped blocks)."""
    return value if isinstance(value, dict) else {}


def resolve_doc(text: str, docs: Mapping[str, str]) -> tuple[str, str | None]:
    """Replace ``{{ doc("name") }}`` references by their docs block.

    Returns:
        ``(text, missing)``: the resolved text, and the first block name that no
        ``.md`` file defines (its reference is removed), or ``None``.
    """
    missing: list[str] = []

    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in docs:
            return docs[name]
        missing.append(name)
        return ""

    out = re.sub(r"{{\s*doc\(\s*['\"](\w+)['\"]\s*\)\s*}}", sub, text).strip()
    return out, (missing[0] if missing else None)


def ref_name(value: Any) -> str | None:
    """The model named by ``ref('orders')`` / ``ref("pkg", "orders")``, else ``None``."""
    match = re.fullmatch(
        r"\s*ref\(\s*(?:['\"]\w+['\"]\s*,\s*)?['\"](\w+)['\"]\s*\)\s*", scalar_text(value)
    )
    return match.group(1) if match else None


@dataclass(frozen=True)
class SourceTable:
    """A source table's data as CSV: header then rows; ``None`` cells are empty.

    Attributes:
        name: the table, lowercase.
        csv: header row of column names, then the data rows.
        rows: data rows.
        origin: the file it came from.
        types: ``{column: MetricFlow type}`` (``TIME``, ``INT``, ``STRING``,
            ``FLOAT``, ``BOOLEAN``); empty for a CSV.
    """

    name: str
    csv: bytes
    rows: int
    origin: str
    types: Mapping[str, str] = field(default_factory=dict)


def table_snapshot(path: str, content: bytes) -> SourceTable | None:
    """A MetricFlow ``table_snapshot`` YAML as CSV.

    The snapshot holds ``table_name``, ``column_definitions`` (name, type) and ``rows``.

    Returns:
        The table, or ``None`` when the file is not a table snapshot.

    Raises:
        LensLoadError: a snapshot whose rows do not match its columns, at the row's line.
    """
    doc = load_yaml(path, content)
    snap = doc.data.get("table_snapshot") if isinstance(doc.data, dict) else None
    if not isinstance(snap, dict):
        return None
    columns = [scalar_text(c.get("name")).lower() for c in snap.get("column_definitions") or ()]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    rows = snap.get("rows") or []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(columns):
            raise LensLoadError(
                path,
                f"row {i + 1} has {len(row) if isinstance(row, list) else 0} cells, "
                f"the table declares {len(columns)} columns",
                line=doc.line_of(("table_snapshot", "rows", i)),
                fix="make every row as wide as column_definitions",
            )
        writer.writerow(["" if cell is None else scalar_text(cell) for cell in row])
    name = scalar_text(snap.get("table_name")).strip().lower()
    types = {
        scalar_text(c.get("name")).lower(): scalar_text(c.get("type")).upper()
        for c in snap.get("column_definitions") or ()
        if isinstance(c, dict)
    }
    return SourceTable(name, buffer.getvalue().encode("utf-8"), len(rows), path, types)


def collect(
    source: Path, data: Path | None = None
) -> tuple[dict[str, bytes], dict[str, bytes], str]:
    """Gather the files :func:`~reconciler.interop.importers.dbt.import_dbt` reads.

    ``source`` is a dbt project directory (``dbt_project.yml``: its ``model-paths``,
    default ``models``, searched for ``.yml``/``.yaml``/``.md``), any other directory
    (every ``.yml``/``.yaml``/``.json`` below it) or one manifest file. Data comes
    from ``data`` (``.csv`` and table-snapshot ``.yaml`` below it), else from a
    project's ``seed-paths`` (default ``seeds``).

    Returns:
        ``(sources, data files, source name)``; paths are relative to ``source``'s
        directory (data files: to ``data``), sorted.

    Raises:
        UsageError: ``source`` or ``data`` does not exist.
    """
    if not source.exists():
        raise UsageError(
            f"{source}: no such file or directory", fix="pass a dbt project or manifest"
        )
    if data is not None and not data.is_dir():
        raise UsageError(
            f"{data}: not a directory", fix="pass the folder of seed CSVs or snapshots"
        )
    if source.is_file():
        return {source.name: source.read_bytes()}, _data_files(data), source.name
    project = source / "dbt_project.yml"
    if project.is_file():
        config = load_yaml(project.name, project.read_bytes()).data
        config = config if isinstance(config, dict) else {}
        folders = [str(p) for p in config.get("model-paths") or ["models"]]
        seed_folders = [str(p) for p in config.get("seed-paths") or ["seeds"]]
        suffixes = (".yml", ".yaml", ".md")
        found = sorted(
            p for f in folders for p in (source / f).rglob("*") if p.suffix.lower() in suffixes
        )
        if data is None:
            seeds = [source / f for f in seed_folders if (source / f).is_dir()]
            data_files = {
                p.relative_to(source).as_posix(): p.read_bytes()
                for folder in seeds
                for p in sorted(folder.rglob("*.csv"))
            }
        else:
            data_files = _data_files(data)
    else:
        suffixes = (".yml", ".yaml", ".json")
        found = sorted(p for p in source.rglob("*") if p.suffix.lower() in suffixes)
        data_files = _data_files(data)
    sources = {p.relative_to(source).as_posix(): p.read_bytes() for p in found if p.is_file()}
    return sources, data_files, source.name


def _data_files(data: Path | None) -> dict[str, bytes]:
    if data is None:
        return {}
    return {
        p.relative_to(data).as_posix(): p.read_bytes()
        for p in sorted(data.rglob("*"))
        if p.is_file() and p.suffix.lower() in (".csv", ".yaml", ".yml")
    }
