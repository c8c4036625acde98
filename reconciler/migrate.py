"""``dst evals migrate``: legacy value cases become certified answers (pure).

A legacy value case is an entry of ``evals/cases.yaml`` holding a question and the
SQL expected for it (``sql:`` or ``expected_sql:``) instead of an expected shape.
Such a file no longer loads (cases are behavioural: ``expect: clarify|refuse|answer``).
Migration moves each value case to ``answers/<id>.yaml`` — question, SQL, status
``active`` and provenance naming the person who vouches for the old cases
(``--by``), the time, and the case's file and line — and keeps every behavioural
case in ``evals/cases.yaml`` (rewritten without the migrated entries; comments in
that file are not kept). The result is validated as a whole lens before anything
is written; the next ``dst apply`` self-tests the new answers against the warehouse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.certify import answer_id_for, answer_path
from reconciler.errors import LensLoadError, UsageError
from reconciler.interop.importers import dump_yaml
from reconciler.lens import Answer, Lens, Provenance, load_lens
from reconciler.loader import load_yaml
from reconciler.schemas import with_schema_comment

CASES = "evals/cases.yaml"
LEGACY_SQL_KEYS = ("sql", "expected_sql")


@dataclass(frozen=True)
class Migration:
    """What migrating one lens writes.

    Attributes:
        answers: ``(answer id, lens-relative path, file bytes)`` of each new answer,
            in case order.
        cases_file: the rewritten ``evals/cases.yaml`` (``None`` when nothing is left).
        kept: behavioural cases kept.
        lens: the lens as it loads after migration.
    """

    answers: tuple[tuple[str, str, bytes], ...]
    cases_file: bytes | None
    kept: int
    lens: Lens


def legacy_entries(files: Mapping[str, bytes], root: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line, entry)`` for each legacy value case in ``evals/cases.yaml`` (may be empty)."""
    if CASES not in files:
        return []
    doc = load_yaml(f"{root}/{CASES}", files[CASES])
    cases = doc.data.get("cases") if isinstance(doc.data, dict) else None
    if not isinstance(cases, list):
        return []
    return [
        (doc.line_of(("cases", i)) or 0, entry)
        for i, entry in enumerate(cases)
        if isinstance(entry, dict) and any(k in entry for k in LEGACY_SQL_KEYS)
    ]


def plan_migration(
    name: str, files: Mapping[str, bytes], root: str, *, by: str, at: str
) -> Migration:
    """The migration of lens ``name`` (lens-relative ``files``), validated, not written.

    Args:
        name: the lens name.
        files: the lens's files, lens-relative path → bytes.
        root: the repository-relative lens directory, for messages.
        by: the person vouching for the legacy cases (non-blank).
        at: UTC ISO-8601 time recorded as ``certified_at``.

    Raises:
        UsageError: ``by`` is blank, or there is no legacy value case to migrate.
        LensLoadError: a legacy entry lacks a question or SQL, or the migrated lens
            does not load (the file and line are named).
    """
    who = by.strip()
    if not who:
        raise UsageError(
            "certified_by is empty: only a named person certifies",
            fix='pass --by "Your Name" (the person vouching for the legacy cases)',
        )
    legacy = legacy_entries(files, root)
    if not legacy:
        raise UsageError(
            f"{root}/{CASES} holds no legacy value case (an entry with sql: or expected_sql:)",
            fix="nothing to migrate; certify new answers with `dst certify`",
        )
    doc = load_yaml(f"{root}/{CASES}", files[CASES])
    taken = {p for p in files if p.startswith("answers/")}
    written: list[tuple[str, str, bytes]] = []
    for line, entry in legacy:
        question = str(entry.get("question") or "").strip()
        sql = str(next(entry[k] for k in LEGACY_SQL_KEYS if k in entry) or "").strip()
        if not question or not sql:
            raise LensLoadError(
                f"{root}/{CASES}",
                "a legacy value case needs both question: and sql:",
                line=line,
                fix="complete or delete the entry, then migrate again",
            )
        aid = _free_id(answer_id_for(question), taken)
        rel = answer_path(aid)
        taken.add(rel)
        answer = Answer(
            id=aid,
            question=question,
            sql=sql + "\n",
            status="active",
            provenance=Provenance(
                certified_by=who, certified_at=at, source=f"dst evals migrate ({CASES}:{line})"
            ),
            description=str(entry.get("description") or "Migrated from a legacy value case."),
        )
        data = answer.model_dump(mode="json")
        order = ("id", "question", "sql", "status", "provenance", "description")
        written.append((aid, rel, with_schema_comment(rel, dump_yaml({k: data[k] for k in order}))))
    rest = [
        e
        for e in doc.data["cases"]
        if not (isinstance(e, dict) and any(k in e for k in LEGACY_SQL_KEYS))
    ]
    cases_file = with_schema_comment(CASES, dump_yaml({"cases": rest})) if rest else None
    after = {k: v for k, v in files.items() if k != CASES}
    after.update((rel, content) for _, rel, content in written)
    if cases_file is not None:
        after[CASES] = cases_file
    lens = load_lens(name, after, root=root)
    return Migration(tuple(written), cases_file, len(rest), lens)


def _free_id(base: str, taken: set[str]) -> str:
    candidate, n = base, 2
    while answer_path(candidate) in taken or f"answers/{candidate}.yml" in taken:
        candidate, n = f"{base}_{n}", n + 1
    return candidate
