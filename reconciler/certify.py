"""Human certification: question → SQL → executed result → a person's yes → ``answers/<id>.yaml``.

DESIGN §1: a certified answer's SQL is the oracle and *only a human certifies*.
This module prepares everything that person needs to decide, and writes the
answer once they did; ``cli_certify`` shows the SQL and its result and asks.
Apart from the importers (which carry over answers a person already verified
upstream, with that provenance), nothing else in the package writes into a
lens's ``answers/`` — ``tests/test_certify.py`` checks the package source for it.

The SQL comes from the same path the certified suite re-asks through
(:func:`reconciler.assembly.request.assemble` then :func:`reconciler.generators.generate`,
certified matching off), so an answer certified here re-verifies as ``correct``
on its first self-test unless the lens changes; or it is the person's own SQL
(``--sql FILE``), which is executed and shown just the same.

The answer file has the format of :class:`reconciler.lens.Answer`, the schema
modeline of :func:`reconciler.schemas.with_schema_comment`, and provenance
``certified_by`` (the person), ``certified_at`` (UTC, ISO-8601 to the second)
and ``source`` (``dst certify``, the generator tier or the SQL file, a run id).
Before anything is shown, the lens is loaded with the new file added, so an
answer that :func:`reconciler.lens.load_lens` would reject is refused up front.

``dst evals migrate`` (:func:`plan_migration`) is the other way in: legacy value
cases become certified answers. A legacy value case is an entry of
``evals/cases.yaml`` holding a question and the SQL expected for it (``sql:`` or
``expected_sql:``) instead of an expected shape. Such a file no longer loads
(cases are behavioural: ``expect: clarify|refuse|answer``). Migration moves each
value case to ``answers/<id>.yaml`` — question, SQL, status ``active`` and
provenance naming the person who vouches for the old cases (``--by``), the time,
and the case's file and line — and keeps every behavioural case in
``evals/cases.yaml`` (rewritten without the migrated entries; comments in that
file are not kept). The result is validated as a whole lens before anything is
written; the next ``dst apply`` self-tests the new answers against the warehouse.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from reconciler.assembly.request import assemble
from reconciler.assembly.text import normalize
from reconciler.assets import asset_hashes
from reconciler.errors import LensLoadError, UsageError
from reconciler.files import replace_file, write_new_file
from reconciler.generators import DimensionValues, SmartCall, TierCall, generate
from reconciler.ids import AnswerId
from reconciler.interop.importers import dump_yaml, slugify
from reconciler.lens import Answer, Lens, Provenance, load_lens
from reconciler.loader import load_yaml
from reconciler.provenance import certifier_problem
from reconciler.schemas import with_schema_comment

ANSWER_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
HAND_WRITTEN = "hand-written"
"""The ``tier`` of a candidate whose SQL a person wrote (``--sql FILE``)."""

_FIELD_ORDER = ("id", "question", "sql", "status", "expect_empty", "provenance", "description")
CASES = "evals/cases.yaml"
LEGACY_SQL_KEYS = ("sql", "expected_sql")


@dataclass(frozen=True)
class Candidate:
    """The SQL proposed as the oracle for a question.

    Attributes:
        question: the question as asked.
        sql: the query, or ``None`` when the generator declined.
        tier: the generator tier that produced it (``fast``, ``smart``, ``command``), or
            :data:`HAND_WRITTEN`.
        declined: why the generator declined (``None`` when there is SQL).
        origin: the SQL file's name for hand-written SQL, else ``None``.
        request: the assembly record (``GenerationRequest.record()``), or ``None``
            for hand-written SQL.
    """

    question: str
    sql: str | None
    tier: str
    declined: str | None = None
    origin: str | None = None
    request: Mapping[str, object] | None = None

    def record(self) -> dict[str, object]:
        """JSON-ready record: question, sql, tier, declined, origin, request."""
        return {
            "question": self.question,
            "sql": self.sql,
            "tier": self.tier,
            "declined": self.declined,
            "origin": self.origin,
            "request": dict(self.request) if self.request is not None else None,
        }


@dataclass(frozen=True)
class Signoff:
    """Who certified an answer, when, and in which run.

    Attributes:
        by: the person; surrounding whitespace is dropped when the answer is built.
        at: UTC ISO-8601 (:func:`utc_now`).
        run: the run id (:func:`run_id`).
    """

    by: str
    at: str
    run: str


def answer_id_for(question: str, given: str | None = None) -> AnswerId:
    """The answer id: ``given`` when set, else the question slugged to ``[a-z0-9_]``.

    Raises:
        UsageError: ``given`` is not a valid answer id (letters, digits, ``_``,
            ``.``, ``-``; not starting with ``.`` or ``-``).
    """
    if given is None:
        return AnswerId(slugify(question))
    if not ANSWER_ID_RE.match(given):
        raise UsageError(
            f"--id {given!r} is not a valid answer id",
            fix="use letters, digits, '_', '.' and '-', starting with a letter, digit or '_'",
        )
    return AnswerId(given)


def answer_path(answer_id: str) -> str:
    """The lens-relative path of an answer's file: ``answers/<id>.yaml``."""
    return f"answers/{answer_id}.yaml"


def existing_answer(lens: Lens, files: Mapping[str, bytes], answer_id: str) -> str | None:
    """The lens-relative file that already holds ``answer_id``, or ``None``.

    Both a file at :func:`answer_path` (whatever id it declares) and an answer
    declaring the id in another file count: either way writing would clash.
    """
    rel = answer_path(answer_id)
    for taken in (rel, rel.removesuffix(".yaml") + ".yml"):
        if taken in files:
            return taken
    if answer_id in lens.answers:
        return lens.sources.get(f"answers/{answer_id}", rel)
    return None


def same_question(lens: Lens, question: str) -> Answer | None:
    """The active answer whose question normalizes to the same text, if any.

    Two active answers to one question would make the certified match of
    ``dst ask`` ambiguous, so certification refuses the second.
    """
    wanted = normalize(question)
    for answer in lens.active_answers():
        if normalize(answer.question) == wanted:
            return answer
    return None


def propose(
    lens: Lens,
    question: str,
    values: DimensionValues,
    *,
    sql: str | None = None,
    origin: str | None = None,
    smart: SmartCall | None = None,
    exclude: AnswerId | None = None,
    command: TierCall | None = None,
) -> Candidate:
    """The candidate oracle for ``question``.

    Args:
        lens: the lens version (working tree) whose assets feed generation.
        question: the question as it will be stored.
        values: ``{(model, dimension): distinct warehouse values}`` for the generator.
        sql: a person's own SQL (``--sql FILE``); skips generation when given.
        origin: the SQL file's name, recorded in the provenance.
        smart: the lens's smart tier when configured (as the suite gets it).
        exclude: an answer kept out of its own exemplars (the one being replaced,
            as the suite re-asks it).
        command: the lens's command tier when it lists one (as the suite gets it).

    Returns:
        The candidate; ``sql`` is ``None`` when every configured tier declined.
    """
    if not question.strip():
        raise UsageError("--question is empty", fix='pass the question: --question "…"')
    if sql is not None:
        return Candidate(question, sql, HAND_WRITTEN, origin=origin)
    request = assemble(lens, question, exclude_answer=exclude, certified_matching=False)
    generation = generate(lens, request, values, smart=smart, command=command)
    return Candidate(
        question,
        generation.sql,
        generation.tier,
        declined=generation.declined,
        request=request.record(asset_hashes(lens)),
    )


def utc_now() -> str:
    """The current UTC time as ISO-8601 to the second: ``2025-03-01T14:05:09Z``."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def run_id(candidate: Candidate, at: str) -> str:
    """A run id for the provenance: the time (compact) and a digest of question and SQL.

    ``20250301T140509Z-3f2a9c1d``: sortable, and two certifications of different
    SQL in the same second still differ.
    """
    digest = hashlib.sha256(f"{candidate.question}\0{candidate.sql}".encode()).hexdigest()
    return f"{re.sub(r'[^0-9TZ]', '', at)}-{digest[:8]}"


def source_of(candidate: Candidate, run: str) -> str:
    """The provenance ``source`` line: what produced the SQL and in which run."""
    if candidate.tier == HAND_WRITTEN:
        what = f"hand-written SQL from {candidate.origin}" if candidate.origin else HAND_WRITTEN
    else:
        what = f"generator tier {candidate.tier}"
    return f"dst certify ({what}; run {run})"


def answer_file(
    lens: Lens,
    files: Mapping[str, bytes],
    answer_id: str,
    candidate: Candidate,
    signoff: Signoff,
    *,
    result_shape: tuple[int, int] | None = None,
    expect_empty: bool = False,
) -> tuple[Answer, bytes]:
    """The validated answer and the bytes of ``answers/<id>.yaml``.

    Args:
        lens: the lens the answer joins.
        files: the lens's current files (lens-relative path → bytes).
        answer_id: the new answer's id (see :func:`answer_id_for`).
        candidate: a candidate with SQL.
        signoff: the person, the time and the run id of the certification.
        result_shape: ``(rows, columns)`` of the executed result, noted in the
            description.
        expect_empty: mark the answer ``expect_empty: true`` (its result is empty
            on purpose).

    Returns:
        ``(answer, file bytes)``; the bytes start with the schema modeline.

    Raises:
        UsageError: ``certified_by`` is blank or a placeholder (see
            :mod:`reconciler.provenance`), or the candidate has no SQL.
        LensLoadError: the lens does not load with the new file added (unsafe
            SQL, a relative-date question without ``as_of``, a clashing id …),
            naming the file and line.
    """
    shape = f" ({result_shape[0]} rows x {result_shape[1]} columns)" if result_shape else ""
    how = "hand-written SQL" if candidate.tier == HAND_WRITTEN else f"{candidate.tier}-tier SQL"
    what = f"dst certify: {how} and its executed result{shape} shown, then confirmed."
    return _signed(
        lens, files, (answer_path(answer_id), answer_id), candidate, signoff, (what, expect_empty)
    )


def _signed(
    lens: Lens,
    files: Mapping[str, bytes],
    where: tuple[str, str],
    candidate: Candidate,
    signoff: Signoff,
    described: tuple[str, bool],
) -> tuple[Answer, bytes]:
    """The active answer at ``where`` (file, id) with ``signoff``'s provenance, validated.

    ``described`` is the description and the ``expect_empty`` mark.
    """
    rel, answer_id = where
    description, expect_empty = described
    by = _certifier(signoff.by, fix='pass --by "Your Name"')
    if candidate.sql is None:
        raise UsageError("nothing to certify: the generator declined", fix="rephrase the question")
    answer = Answer(
        id=answer_id,
        question=candidate.question,
        sql=candidate.sql.strip() + "\n",
        status="active",
        provenance=Provenance(
            certified_by=by, certified_at=signoff.at, source=source_of(candidate, signoff.run)
        ),
        description=description,
        expect_empty=expect_empty,
    )
    content = _answer_bytes(rel, answer)
    load_lens(lens.name, {**files, rel: content}, root=lens.root)
    return answer, content


@dataclass(frozen=True)
class Replacement:
    """The active answer ``dst certify --replace`` rewrites: as loaded, its file, its bytes."""

    answer: Answer
    path: str
    content: bytes


def replacement_target(lens: Lens, files: Mapping[str, bytes], answer_id: str) -> Replacement:
    """The active answer ``answer_id`` of ``lens``, to be re-certified.

    Raises:
        UsageError: no answer has that id (the closest ids are listed), or it is
            retired or a draft (neither carries a certification to replace).
    """
    answer = lens.answers.get(AnswerId(answer_id))
    if answer is None:
        # only active answers carry a certification to replace: drafts and retired ones
        # would be refused in turn, so they are never offered
        active = sorted(a for a, x in lens.answers.items() if x.status == "active")
        close = difflib.get_close_matches(answer_id, active, n=5, cutoff=0.5)
        known = close or active[:5]
        raise UsageError(
            f"lens {lens.name!r} has no answer {answer_id!r}",
            fix=f"pass --replace one of the active answers: {', '.join(known)}"
            if known
            else "the lens has no active answer yet: certify one with --question",
        )
    rel = lens.sources.get(f"answers/{answer_id}", answer_path(answer_id))
    where = f"{lens.root}/{rel}"
    if answer.status == "retired":
        raise UsageError(
            f"answer {answer_id!r} ({where}) is retired: there is no active certification to "
            "replace",
            fix=f"set `status: active` in {where} first if it should serve again, or certify a "
            "new answer with --question",
        )
    if answer.status == "draft":
        raise UsageError(
            f"answer {answer_id!r} ({where}) is a draft: it was never certified",
            fix=f"delete {where}, then certify it as a new answer: dst certify --lens "
            f'{lens.name} --question "{answer.question}" --id {answer_id}',
        )
    return Replacement(answer, rel, files.get(rel, b""))


def replaced_file(
    lens: Lens,
    files: Mapping[str, bytes],
    target: Replacement,
    candidate: Candidate,
    signoff: Signoff,
    *,
    expect_empty: bool = False,
) -> tuple[Answer, bytes]:
    """The re-certified answer: ``target``'s id, question and file, new SQL and provenance.

    The old provenance is not kept: ``certified_by``/``certified_at``/``source``
    describe who certified the new SQL, when, and what produced it. The answer
    is marked ``expect_empty`` when ``expect_empty`` is set or the old one was.

    Raises:
        UsageError, LensLoadError: as for :func:`answer_file`.
    """
    old = target.answer.provenance
    what = (
        f"dst certify --replace: the new SQL and its executed result were shown beside the "
        f"previous oracle's (certified by {old.certified_by} at {old.certified_at}), then "
        "confirmed."
    )
    empty = expect_empty or target.answer.expect_empty
    return _signed(lens, files, (target.path, target.answer.id), candidate, signoff, (what, empty))


def replace_answer(repo_root: Path, lens_root: str, target: Replacement, content: bytes) -> str:
    """Rewrite ``target``'s file atomically with ``content``; returns its repository path.

    Raises:
        UsageError: the file changed (or vanished) since it was read; nothing is written.
    """
    rel = f"{lens_root}/{target.path}"
    path = repo_root / rel
    current = path.read_bytes() if path.is_file() else None
    if current != target.content:
        raise UsageError(
            f"{rel} changed while it was being re-certified: refusing to overwrite it",
            fix=f"run dst certify --replace {target.answer.id} --lens "
            f"{lens_root.rsplit('/', 1)[-1]} again on the file as it is now",
        )
    replace_file(path, content)
    return rel


def _certifier(by: str, *, fix: str) -> str:
    """``by`` trimmed, when it names a person (:func:`reconciler.provenance.certifier_problem`).

    Raises:
        UsageError: it is blank or a placeholder (``TBD``, ``nobody`` …).
    """
    problem = certifier_problem(by)
    if problem is not None:
        raise UsageError(
            f"certified_by {by.strip()!r} {problem}: only a named person certifies", fix=fix
        )
    return by.strip()


def _answer_bytes(rel: str, answer: Answer) -> bytes:
    """The answer file: schema modeline, then the fields in :data:`_FIELD_ORDER`."""
    data = answer.model_dump(mode="json")
    if not answer.expect_empty:  # the default stays unwritten
        del data["expect_empty"]
    return with_schema_comment(rel, dump_yaml({k: data[k] for k in _FIELD_ORDER if k in data}))


def write_answer(repo_root: Path, lens_root: str, answer_id: str, content: bytes) -> str:
    """Create ``<lens_root>/answers/<id>.yaml`` atomically, never over an existing file.

    Args:
        repo_root: the working tree root.
        lens_root: the repository-relative lens directory (``lenses/sales``).
        answer_id: the answer id.
        content: the file (see :func:`answer_file`).

    Returns:
        The repository-relative path written.

    Raises:
        UsageError: the file exists (another answer, or a certification that won
            a race); nothing is written.
    """
    rel = f"{lens_root}/{answer_path(answer_id)}"
    try:
        write_new_file(repo_root / rel, content)
    except FileExistsError:
        raise UsageError(
            f"{rel} already exists: refusing to overwrite a certified answer",
            fix="pass another --id, or retire the old answer (status: retired) in its file",
        ) from None
    return rel


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
        UsageError: ``by`` is blank or a placeholder (see :mod:`reconciler.provenance`),
            or there is no legacy value case to migrate.
        LensLoadError: a legacy entry lacks a question or SQL, or the migrated lens
            does not load (the file and line are named).
    """
    who = _certifier(by, fix='pass --by "Your Name" (the person vouching for the legacy cases)')
    legacy = legacy_entries(files, root)
    if not legacy:
        raise UsageError(
            f"{root}/{CASES} holds no legacy value case (an entry with sql: or expected_sql:)",
            fix="nothing to migrate; certify new answers with "
            f"`dst certify --lens {root.rsplit('/', 1)[-1]} --question QUESTION`",
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
        written.append((aid, rel, _answer_bytes(rel, answer)))
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
