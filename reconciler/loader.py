"""YAML loading with line numbers, duplicate-key checks and implicit-typing traps.

Loaders take bytes, not paths, so a lens read from a git tree, from the working
tree and from a test share one code path. A document is composed (not loaded)
so every node keeps its line; values are then built by hand so that

* a duplicate key is an error naming both lines,
* every value's line is kept under its path (``("columns", 2, "name")``),
* a plain scalar that YAML 1.1 reads as something other than a string
  (``NO`` → false, ``1.10`` → 1.1, ``012`` → 10, ``12:30`` → 750) keeps its raw
  text, so a string field that receives it can ask for quotes instead of
  silently coercing.

Validation goes through pydantic models in strict mode; :func:`validate` turns a
``ValidationError`` into a :class:`~reconciler.errors.LensLoadError` at the
offending line.
"""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from reconciler.errors import LensLoadError

Path = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)

MAX_DOCUMENT_BYTES = 1_000_000
MAX_DEPTH = 64
"""Deepest nesting of maps and lists a lens file may have (no lens format needs 10)."""
MAX_NODES = 100_000
"""Most values one file may expand to; aliases count once per use, so an alias
expansion bomb (a "billion laughs" of nested ``*refs``) stops here, not in memory."""

_STR_TAG = "tag:yaml.org,2002:str"
_FAST_MAX_BRACKETS = 2000  # flow nesting libyaml composes without deep C recursion
# Spaces at a line's end, unless a backslash escapes the first (double-quoted scalars).
_TRAILING_SPACES = re.compile(r"(?<!\\) +(?=\r?$)", re.MULTILINE)
_PATTERN_HINTS = {
    "warehouse": "a SQLAlchemy URL (duckdb:///path.duckdb, postgresql://host/db …)",
    "table": "a table name, optionally qualified (schema.table)",
    "as_of": 'a date "YYYY-MM-DD" or today',
    "name": "an identifier (letters, digits and _, not starting with a digit)",
    "id": "an identifier (letters, digits, _, . and -)",
}
_SCALAR_TAGS = frozenset(
    {
        "tag:yaml.org,2002:str",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:timestamp",
        "tag:yaml.org,2002:null",
    }
)
_TYPE_WORDS = {
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:timestamp": "a date",
    "tag:yaml.org,2002:null": "null",
}


@dataclass(frozen=True)
class Location:
    """Where a value came from: 1-based line, its raw text and its YAML tag."""

    line: int
    raw: str | None = None
    tag: str | None = None


@dataclass(frozen=True)
class Document:
    """A parsed YAML file: its repository-relative path, data and per-path locations."""

    path: str
    data: Any
    locations: Mapping[Path, Location]

    def line_of(self, path: Path) -> int | None:
        """The line of the deepest known node on ``path``, or ``None`` for an empty file."""
        for end in range(len(path), -1, -1):
            loc = self.locations.get(path[:end])
            if loc is not None:
                return loc.line
        return None

    def key_line(self, path: Path) -> int | None:
        """The line of the mapping key ``path[-1]`` itself (its value may start below)."""
        loc = self.locations.get((*path, _KEY))
        return None if loc is None else loc.line


# The locations entry of a mapping key's own line: (*path, _KEY); no YAML key is a NUL.
_KEY = "\0key"


def load_yaml(path: str, content: bytes) -> Document:
    """Parse one YAML document.

    Args:
        path: repository-relative path, used in error messages only.
        content: the file's bytes (UTF-8, at most ``MAX_DOCUMENT_BYTES``).

    Returns:
        The document; an empty file yields ``data=None``.

    Raises:
        LensLoadError: a file over ``MAX_DOCUMENT_BYTES``, non-UTF-8 bytes, a
            syntax error (tabs included), several documents in one file, a
            duplicate key, a non-string mapping key, nesting deeper than
            ``MAX_DEPTH``, or more than ``MAX_NODES`` values after alias expansion.
    """
    if len(content) > MAX_DOCUMENT_BYTES:
        raise LensLoadError(
            path,
            f"file is {len(content)} bytes, over the {MAX_DOCUMENT_BYTES}-byte bound "
            f"(crossed on this line)",
            line=content[:MAX_DOCUMENT_BYTES].count(b"\n") + 1,
            fix="split it into several files",
        )
    # Trailing spaces are invisible, yet YAML keeps them as content inside a block
    # scalar (``|``, ``>``), so an editor's stray spaces would change a description
    # and with it the asset's canonical hash (DESIGN §2: formatting changes no hash).
    # Elsewhere YAML drops them already; line numbers are unaffected.
    text = _TRAILING_SPACES.sub("", _decode(path, content))
    fast = _compose_fast(text)
    loader: yaml.SafeLoader | None = None
    try:
        if fast is not False:
            node = fast
        else:
            loader = yaml.SafeLoader(text)
            node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context:
            problem = f"{exc.context}, {exc.problem}"
        tab = "'\\t'" in problem or "\t" in problem
        raise LensLoadError(
            path,
            f"YAML syntax error: {problem}",
            line=line,
            fix="indent with spaces: YAML does not allow tabs there"
            if tab
            else "correct the YAML syntax at that line",
        ) from None
    except RecursionError:
        # The composer recurses once per nesting level; only a file far past
        # MAX_DEPTH gets here.
        line = loader.get_mark().line + 1 if loader is not None else None
        raise _depth_error(path, line) from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        raise LensLoadError(
            path,
            f"control character #x{exc.character:04x} is not allowed in YAML",
            line=line,
            fix="remove it (binary data does not belong in a lens file)",
        ) from None
    except yaml.YAMLError as exc:
        raise LensLoadError(path, f"YAML error: {exc}", fix="correct the YAML") from None
    finally:
        if loader is not None:
            loader.dispose()
    locations: dict[Path, Location] = {}
    if node is None:
        return Document(path, None, locations)
    data = _build(path, node, (), locations, yaml.SafeLoader(""), [MAX_NODES])
    return Document(path, data, locations)


def _compose_fast(text: str) -> yaml.Node | Literal[False] | None:
    """The node tree from libyaml's composer, or ``False`` to use the pure-Python one.

    libyaml yields the same nodes, tags and line marks about fifteen times faster,
    which is most of the cost of loading a large lens. It is skipped when PyYAML
    was built without it, when the text nests flow collections deeply enough to
    recurse far in C (more opening brackets than ``_FAST_MAX_BRACKETS``), and on
    any error: the pure-Python composer then runs again and reports the error in
    its own words, so messages never depend on how PyYAML was built.
    """
    loader_class = getattr(yaml, "CSafeLoader", None)
    if loader_class is None:
        return False
    if text.count("[") + text.count("{") > _FAST_MAX_BRACKETS:
        return False
    loader = loader_class(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):
        return False
    finally:
        loader.dispose()
    return node


def _decode(path: str, content: bytes) -> str:
    """The file's text: UTF-8, with or without a byte-order mark."""
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise LensLoadError(
            path, "UTF-16 or UTF-32 text, not UTF-8", line=1, fix="save the file as UTF-8"
        )
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LensLoadError(
            path,
            f"not UTF-8 ({exc.reason} at byte {exc.start}; binary data or another encoding)",
            line=content[: exc.start].count(b"\n") + 1,
            fix="save the file as UTF-8 (binary files do not belong in a lens)",
        ) from None


def _depth_error(path: str, line: int | None) -> LensLoadError:
    return LensLoadError(
        path,
        f"nesting deeper than {MAX_DEPTH} levels (or an alias that contains itself)",
        line=line,
        fix="flatten the structure; lens files need a few levels at most",
    )


def _tag_error(path: str, tag: str, line: int) -> LensLoadError:
    return LensLoadError(
        path,
        f"YAML tag {tag!r} is not supported",
        line=line,
        fix="remove the tag; lens files hold plain text, numbers, lists and maps",
    )


def _build(
    path: str,
    node: yaml.Node,
    at: Path,
    locations: dict[Path, Location],
    constructor: yaml.SafeLoader,
    budget: list[int],
) -> Any:
    line = node.start_mark.line + 1
    if len(at) > MAX_DEPTH:
        raise _depth_error(path, line)
    budget[0] -= 1
    if budget[0] < 0:
        raise LensLoadError(
            path,
            f"the document expands to more than {MAX_NODES} values (aliases count once per "
            f"use: an alias expansion bomb?)",
            line=line,
            fix="write the values out instead of nesting *aliases",
        )
    if isinstance(node, yaml.MappingNode):
        if node.tag != "tag:yaml.org,2002:map":
            raise _tag_error(path, node.tag, line)
        locations[at] = Location(line)
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise LensLoadError(
                    path, "merge keys (<<) are not supported", line=line, fix="write the keys out"
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise LensLoadError(
                    path,
                    "mapping keys must be plain strings",
                    line=key_node.start_mark.line + 1,
                    fix="write the key as plain text (no [list] or {map} keys)",
                )
            key = str(key_node.value)
            key_line = key_node.start_mark.line + 1
            if key in out:
                raise LensLoadError(
                    path,
                    f"duplicate key {key!r} (first on line {first_line[key]})",
                    line=key_line,
                    fix="keep one of the two entries",
                )
            first_line[key] = key_line
            locations[(*at, key, _KEY)] = Location(key_line)
            out[key] = _build(path, value_node, (*at, key), locations, constructor, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        if node.tag != "tag:yaml.org,2002:seq":
            raise _tag_error(path, node.tag, line)
        locations[at] = Location(line)
        return [
            _build(path, child, (*at, i), locations, constructor, budget)
            for i, child in enumerate(node.value)
        ]
    assert isinstance(node, yaml.ScalarNode)
    if node.tag not in _SCALAR_TAGS:
        raise _tag_error(path, node.tag, line)
    locations[at] = Location(line, raw=str(node.value), tag=node.tag)
    if node.tag == _STR_TAG:
        return str(node.value)
    try:
        return constructor.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError):
        return str(node.value)


def validate(model: type[M], doc: Document, *, data: Any = None) -> M:
    """Validate a document against a strict pydantic model.

    Args:
        model: the pydantic model class (``extra="forbid"``, strict).
        doc: the parsed document.
        data: validate this instead of ``doc.data`` (for documents a caller reshapes).

    Returns:
        The validated, frozen model instance.

    Raises:
        LensLoadError: at the line of the first offending value, saying which
            key is unknown, which type was expected, or which YAML 1.1 implicit
            type captured an unquoted string.
    """
    payload = doc.data if data is None else data
    if payload is None:
        payload = {}
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        err = _first_error(exc.errors())
        loc: Path = tuple(err["loc"])
        raise _located(doc, loc, err, model) from None


def _first_error(errors: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The error to report: pydantic's first, except that a misspelt key beats the
    required key it stands for (``expresion:`` is reported at its own line, with the
    suggestion, not as "missing required key 'expression'" at the mapping's first line)."""
    first = errors[0]
    if first.get("type") != "missing":
        return first
    parent = tuple(first["loc"])[:-1]
    for err in errors:
        loc = tuple(err["loc"])
        if err.get("type") == "extra_forbidden" and loc[:-1] == parent:
            return err
    return first


def known_keys(model: type[BaseModel], loc: Path) -> tuple[str, ...]:
    """The keys the mapping at ``loc`` (a key path into a ``model`` document) may hold.

    Follows ``loc`` through nested pydantic models, list items (int parts) and
    ``dict`` values, unwrapping ``X | None``. Returns ``()`` when ``loc`` does not lead
    to a pydantic model (a free-form mapping).
    """
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return ()
    found = _model_in(current)
    if found is None:
        return ()
    return tuple(f.alias or name for name, f in found.model_fields.items())


def _step(annotation: Any, part: str | int) -> Any:
    """The annotation of ``part`` inside a value of type ``annotation``, or ``None``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None) and a is not Ellipsis]
    origin = typing.get_origin(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin in (list, tuple) and isinstance(part, int) and len(args) == 1:
        return args[0]
    found = _model_in(annotation)
    if found is None or not isinstance(part, str):
        return None
    for name, field in found.model_fields.items():
        if part in (name, field.alias):
            return field.annotation
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model ``annotation`` is, or holds (as ``X | None``, a tuple's or
    list's item, or a dict's value); ``None`` when it holds none or several."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None) and a is not Ellipsis]
    origin = typing.get_origin(annotation)
    if origin is dict and len(args) == 2:
        args = args[1:]
    models = {m for m in (_model_in(a) for a in args) if m is not None}
    return models.pop() if len(models) == 1 else None


def _unknown_key_fix(key: str, keys: tuple[str, ...]) -> str:
    if not keys:
        return "remove it or check its spelling"
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    known = ", ".join(keys)
    if close:
        return f"did you mean {close[0]!r}? (keys here: {known})"
    return f"remove it, or use one of the keys here: {known}"


def _located(
    doc: Document, loc: Path, err: Mapping[str, Any], model: type[BaseModel] | None = None
) -> LensLoadError:
    kind = str(err.get("type", ""))
    dotted = ".".join(str(p) for p in loc) or "(document)"
    line = doc.line_of(loc)
    found = doc.locations.get(loc)
    if kind == "extra_forbidden":
        keys = known_keys(model, loc[:-1]) if model is not None else ()
        return LensLoadError(
            doc.path,
            f"unknown key {loc[-1]!r}",
            line=doc.key_line(loc) or line,
            fix=_unknown_key_fix(str(loc[-1]), keys),
        )
    if kind == "missing":
        return LensLoadError(
            doc.path, f"missing required key {dotted!r}", line=line, fix=f"add {loc[-1]!r}"
        )
    if (
        (kind.startswith("string_") or kind in ("literal_error", "enum"))
        and found is not None
        and found.tag in _TYPE_WORDS
        and found.raw is not None
    ):
        word = _TYPE_WORDS[found.tag]
        return LensLoadError(
            doc.path,
            f"{dotted}: YAML reads unquoted {found.raw!r} as {word}, not the text",
            line=line,
            fix=f'quote it: {loc[-1]}: "{found.raw}"'
            if loc and isinstance(loc[-1], str)
            else f'quote it: "{found.raw}"',
        )
    if kind == "string_pattern_mismatch" and loc and str(loc[-1]) in _PATTERN_HINTS:
        return LensLoadError(
            doc.path,
            f"{dotted}: {found.raw if found else ''!r} is not {_PATTERN_HINTS[str(loc[-1])]}",
            line=line,
            fix=f"write {loc[-1]} as {_PATTERN_HINTS[str(loc[-1])]}",
        )
    msg = str(err.get("msg", "invalid value"))
    if not loc and kind in ("model_type", "dict_type") and model is not None:
        shape = ", ".join(known_keys(model, ()))  # "- question: …" where "cases:" was meant
        return LensLoadError(
            doc.path, f"{dotted}: {msg}", line=line, fix=f"write it as a mapping of: {shape}"
        )
    return LensLoadError(
        doc.path,
        f"{dotted}: {msg}",
        line=line,
        fix=f"correct the value of {loc[-1]!r}" if loc else "correct the document",
    )
