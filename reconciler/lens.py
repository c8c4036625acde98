"""The lens: the loader that builds one from bytes, and the validated :class:`Lens`.

Layout (DESIGN §2)::

    lens.yaml  models/*.yaml  metrics/*.yaml  skills/*.md  exemplars/*.yaml
    answers/*.yaml  evals/cases.yaml  seeds/*.csv

:func:`load_lens` takes the lens directory's files as ``{lens-relative path: bytes}``
so a lens at a commit, in the working tree and in a test load the same way. Each
file validates against its strict model in :mod:`reconciler.lensfiles` (re-exported
here): an unknown key, a wrong type or an unquoted ``NO`` is a
:class:`~reconciler.errors.LensLoadError` at its line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler import provenance
from reconciler.errors import LensLoadError
from reconciler.ids import AnswerId, LensName
from reconciler.lensfiles import (
    LENS_NAME_RE,
    MAX_JOBS,
    MAX_ROW_CAP,
    RELATIVE_DATE_RE,
    Answer,
    Case,
    CasesFile,
    ClarifyTerm,
    Column,
    CommandTier,
    Exemplar,
    GeneratorConfig,
    Join,
    LensConfig,
    Metric,
    Model,
    Provenance,
    RepoConfig,
    SmartTier,
    Strict,
    Webhook,
)
from reconciler.loader import Document, load_yaml, validate

# Schema names a warehouse keeps for itself (DuckDB's main and temp, PostgreSQL's public
# and catalogs): a lens of one of these names would share them (DESIGN §2 "Seeds are per lens").
RESERVED_SCHEMAS = frozenset({"main", "temp", "public", "information_schema", "pg_catalog"})


@dataclass(frozen=True)
class Skill:
    """``skills/*.md``: instructions merged into the generation context."""

    path: str
    text: str


@dataclass(frozen=True)
class Lens:
    """A validated lens.

    Attributes:
        name: the lens directory name (``lenses/<name>``).
        root: repository-relative directory, for messages.
        config: ``lens.yaml``.
        models, metrics, exemplars: by declared name.
        skills: by lens-relative path (``skills/fiscal.md``).
        answers: by answer id, every status.
        cases: behavioural cases.
        seeds: ``{table name: lens-relative csv path}``.
        sources: ``{asset id or answer id: lens-relative path}`` for messages.
    """

    name: LensName
    root: str
    config: LensConfig
    models: Mapping[str, Model] = field(default_factory=dict)
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    skills: Mapping[str, Skill] = field(default_factory=dict)
    exemplars: Mapping[str, Exemplar] = field(default_factory=dict)
    answers: Mapping[AnswerId, Answer] = field(default_factory=dict)
    cases: tuple[Case, ...] = ()
    seeds: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    def active_answers(self) -> list[Answer]:
        """Active answers, sorted by id."""
        return sorted(
            (a for a in self.answers.values() if a.status == "active"), key=lambda a: a.id
        )

    def models_for_table(self, table: str) -> list[Model]:
        """Models whose physical table is ``table`` (case-insensitive, last name part)."""
        wanted = table.lower().split(".")[-1]
        return [m for m in self.models.values() if m.table.lower().split(".")[-1] == wanted]


def _yaml_files(files: Mapping[str, bytes], folder: str) -> list[str]:
    return sorted(
        p for p in files if p.startswith(folder + "/") and p.lower().endswith((".yaml", ".yml"))
    )


def load_lens(
    name: str, files: Mapping[str, bytes], *, root: str | None = None, sql_checked: bool = False
) -> Lens:
    """Build a lens from its files.

    Args:
        name: the lens directory name.
        files: ``{lens-relative posix path: bytes}`` for every file under the lens.
        root: repository-relative lens directory for messages (default ``lenses/<name>``).
        sql_checked: these exact files loaded before under the same rules
            (:mod:`reconciler.git.checked`): skip the guard's checks of their SQL
            and of relative dates, which passed then; everything else is checked.

    Returns:
        The validated lens.

    Raises:
        LensLoadError: the first problem found, naming the file and line: bad
            YAML, unknown or duplicate keys, wrong types, implicit-typing traps,
            a name declared twice, a reference to an unknown model, unsafe or
            unparseable SQL, or a relative-date question without ``as_of``.
    """
    root = root or f"lenses/{name}"
    if not LENS_NAME_RE.match(name):
        # A git tree may name a directory with control characters or bytes that
        # are not UTF-8; the message shows them escaped, never raw.
        raise LensLoadError(
            root if root.isprintable() else ascii(root)[1:-1],
            f"lens name {name!a} is not a valid lens name (it names the ref "
            f"refs/dst/serving/<name>)",
            fix="rename the directory: 1-63 lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit",
        )
    if name in RESERVED_SCHEMAS:
        raise LensLoadError(
            root,
            f"lens name {name!r} is reserved: a lens's seeds load into the warehouse schema "
            f"of its name, and {name!r} is a warehouse's own schema",
            fix="rename the directory (e.g. to 'sales' or 'main_lens')",
        )
    if "lens.yaml" not in files:
        raise LensLoadError(f"{root}/lens.yaml", "missing", fix="add a lens.yaml with a name")
    read = _Reader(name, root, files, check_sql=not sql_checked)
    config = read.config
    models = read.models()
    metrics = read.metrics()
    exemplars = read.exemplars()
    answers = read.answers()
    skills = read.skills()
    cases = read.cases()
    seeds = {
        rel[len("seeds/") : -len(".csv")].lower(): rel
        for rel in sorted(files)
        if rel.startswith("seeds/") and rel.endswith(".csv") and rel.count("/") == 1
    }
    lens = Lens(
        LensName(name),
        root,
        config,
        models,
        metrics,
        skills,
        exemplars,
        answers,
        cases,
        seeds,
        read.sources,
    )
    _check_references(lens, files)
    return lens


class _Reader:
    """Reads one lens's files kind by kind, recording where each asset is declared.

    Constructing it reads and checks ``lens.yaml``; each method then reads one
    kind of file, in sorted path order, raising on the first problem.
    """

    def __init__(
        self, name: str, root: str, files: Mapping[str, bytes], *, check_sql: bool = True
    ) -> None:
        self.name = name
        self.check_sql = check_sql
        self.root = root
        self.files = files
        config_doc = self.doc("lens.yaml")
        self.config = validate(LensConfig, config_doc)
        if self.config.name != name:
            raise LensLoadError(
                config_doc.path,
                f"name {self.config.name!r} differs from the directory name {name!r}",
                line=config_doc.line_of(("name",)),
                fix=f"set name: {name}",
            )
        generator = self.config.generator
        if "command" in generator.tiers and generator.command is None:
            raise LensLoadError(
                config_doc.path,
                "generator.tiers lists the command tier but there is no `generator.command` block",
                line=config_doc.line_of(("generator", "tiers")),
                fix="add `command: {run: [python3, gen.py]}` under generator:, "
                "or drop `command` from tiers",
            )
        self.sources: dict[str, str] = {f"lens/{name}": "lens.yaml"}
        self.dialect = self.config.dialect
        self.allow = self.config.allow_functions

    def expression(self, d: Document, sql: str, at: tuple[str | int, ...]) -> None:
        if self.check_sql:
            _check_expression(d, sql, self.dialect, at, self.allow)

    def query(self, d: Document, sql: str) -> None:
        if self.check_sql:
            _check_query(d, sql, self.dialect, self.allow)

    def doc(self, rel: str) -> Document:
        return load_yaml(f"{self.root}/{rel}", self.files[rel])

    def declare(self, kind: str, key: str, rel: str, d: Document, at: tuple[str, ...]) -> None:
        asset = f"{kind}/{key}"
        if asset in self.sources:
            raise LensLoadError(
                d.path,
                f"{kind[:-1] if kind != 'answers' else 'answer'} "
                f"{key!r} is already declared in {self.root}/{self.sources[asset]}",
                line=d.line_of(at),
                fix="rename one of them",
            )
        self.sources[asset] = rel

    def models(self) -> dict[str, Model]:
        models: dict[str, Model] = {}
        for rel in _yaml_files(self.files, "models"):
            d = self.doc(rel)
            m = validate(Model, d)
            self.declare("models", m.name, rel, d, ("name",))
            for group in ("dimensions", "time_dimensions", "facts"):
                for i, col in enumerate(getattr(m, group)):
                    self.expression(d, col.sql, (group, i))
            models[m.name] = m
        return models

    def metrics(self) -> dict[str, Metric]:
        metrics: dict[str, Metric] = {}
        for rel in _yaml_files(self.files, "metrics"):
            d = self.doc(rel)
            mt = validate(Metric, d)
            self.declare("metrics", mt.name, rel, d, ("name",))
            self.expression(d, mt.expression, ("expression",))
            for i, flt in enumerate(mt.filters):
                self.expression(d, flt, ("filters", i))
            metrics[mt.name] = mt
        return metrics

    def exemplars(self) -> dict[str, Exemplar]:
        exemplars: dict[str, Exemplar] = {}
        for rel in _yaml_files(self.files, "exemplars"):
            d = self.doc(rel)
            ex = validate(Exemplar, d)
            self.declare("exemplars", ex.name, rel, d, ("name",))
            self.query(d, ex.sql)
            exemplars[ex.name] = ex
        return exemplars

    def answers(self) -> dict[AnswerId, Answer]:
        answers: dict[AnswerId, Answer] = {}
        for rel in _yaml_files(self.files, "answers"):
            d = self.doc(rel)
            ans = validate(Answer, d)
            self.declare("answers", ans.id, rel, d, ("id",))
            self.query(d, ans.sql)
            if ans.status == "active":
                who, when = ans.provenance.certified_by, ans.provenance.certified_at
                provenance.require_certified(d, ans.id, who, when, lens=self.name)
            if self.check_sql and self.config.pinned_as_of is None and ans.status == "active":
                _check_relative_dates(d, ans, self.dialect, today=self.config.as_of is not None)
            answers[AnswerId(ans.id)] = ans
        return answers

    def skills(self) -> dict[str, Skill]:
        skills: dict[str, Skill] = {}
        for rel in sorted(p for p in self.files if p.startswith("skills/") and p.endswith(".md")):
            skills[rel] = Skill(rel, _skill_text(f"{self.root}/{rel}", self.files[rel]))
            self.sources[rel] = rel
        return skills

    def cases(self) -> tuple[Case, ...]:
        if "evals/cases.yaml" not in self.files:
            return ()
        cases_doc = self.doc("evals/cases.yaml")
        _refuse_legacy_cases(cases_doc, self.name)
        return validate(CasesFile, cases_doc).cases


def _skill_text(path: str, raw: bytes) -> str:
    """A skill's Markdown text; a file that is not UTF-8 text is a load error."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LensLoadError(
            path,
            f"not UTF-8 ({exc.reason} at byte {exc.start})",
            line=raw[: exc.start].count(b"\n") + 1,
            fix="save it as UTF-8 (binary files do not belong in a lens)",
        ) from None
    if "\x00" in text:
        raise LensLoadError(
            path,
            "a NUL byte: this is a binary file, not Markdown",
            line=text[: text.index("\x00")].count("\n") + 1,
            fix="remove it; skills are Markdown text",
        )
    return text


def _refuse_legacy_cases(d: Document, name: str) -> None:
    """A value case (question + expected SQL) is the legacy format: point at the migration."""
    entries = d.data.get("cases") if isinstance(d.data, dict) else None
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict) and ("sql" in entry or "expected_sql" in entry):
            raise LensLoadError(
                d.path,
                "a legacy value case (question + expected SQL): cases are behavioural now",
                line=d.line_of(("cases", i)),
                fix=f"turn value cases into certified answers: dst evals migrate --lens {name} "
                f'--by "Your Name"',
            )


def _check_expression(
    d: Document, sql: str, dialect: str, at: tuple[str | int, ...], allow: tuple[str, ...]
) -> None:
    from reconciler import guard  # lazy: sqlglot, for reading a lens (not `dst status`)

    problem = guard.expression_problem(sql, dialect, allow)
    if problem is not None:
        message, fix = problem
        raise LensLoadError(d.path, message, line=d.line_of(at), fix=fix)


def _check_query(d: Document, sql: str, dialect: str, allow: tuple[str, ...]) -> None:
    from reconciler import guard  # lazy: sqlglot, for reading a lens (not `dst status`)

    problem = guard.query_problem(sql, dialect, allow)
    if problem is not None:
        message, fix = problem
        raise LensLoadError(d.path, f"sql: {message}", line=d.line_of(("sql",)), fix=fix)


def _check_relative_dates(d: Document, ans: Answer, dialect: str, *, today: bool) -> None:
    """Reject an active answer whose question or SQL depends on the day while the lens
    pins no date (``today`` tells apart ``as_of: today``, which follows the clock)."""
    match = RELATIVE_DATE_RE.search(ans.question)
    from reconciler import guard  # lazy: sqlglot, for reading a lens (not `dst status`)

    reads_clock = guard.reads_current_date(ans.sql, dialect)
    if match or reads_clock:
        what = f"question says {match.group(0)!r}" if match else "sql reads the current date"
        pins = "as_of: today follows the warehouse's clock" if today else "the lens pins no date"
        verb = "replace as_of: today with" if today else "add"
        raise LensLoadError(
            d.path,
            f"answer {ans.id!r}: {what}, but {pins}",
            line=d.line_of(("question",) if match else ("sql",)),
            fix=f'{verb} as_of: "YYYY-MM-DD" in lens.yaml so the answer runs on a fixed day',
        )


def _check_references(lens: Lens, files: Mapping[str, bytes]) -> None:
    def fail(asset: str, at: tuple[str | int, ...], message: str, fix: str) -> None:
        rel = lens.sources[asset]
        d = load_yaml(f"{lens.root}/{rel}", files[rel])
        raise LensLoadError(d.path, message, line=d.line_of(at), fix=fix)

    known = ", ".join(sorted(lens.models)) or "none"
    terms = _terms(lens)
    for word, term in lens.config.vocabulary.items():
        if term and _term_key(term) not in terms:
            d = load_yaml(f"{lens.root}/lens.yaml", files["lens.yaml"])
            raise LensLoadError(
                d.path,
                f"vocabulary: {word!r} maps to {term!r}, which names no model, metric, "
                f"dimension, fact or sample value of the lens",
                line=d.line_of(("vocabulary", word)),
                fix='map it to a name or synonym the lens declares, or to "" for a word '
                "that adds nothing",
            )
    for metric in lens.metrics.values():
        if metric.model not in lens.models:
            fail(
                f"metrics/{metric.name}",
                ("model",),
                f"metric {metric.name!r} reads unknown model {metric.model!r}",
                f"use one of the lens's models ({known})",
            )
    for model in lens.models.values():
        names = {c.name for c in model.time_dimensions}
        if model.default_time_dimension and model.default_time_dimension not in names:
            fail(
                f"models/{model.name}",
                ("default_time_dimension",),
                f"default_time_dimension {model.default_time_dimension!r} is not one of "
                f"the model's time_dimensions",
                "name one of its time_dimensions",
            )
        for i, join in enumerate(model.joins):
            if join.to not in lens.models:
                fail(
                    f"models/{model.name}",
                    ("joins", i, "to"),
                    f"model {model.name!r} joins unknown model {join.to!r}",
                    f"use one of the lens's models ({known})",
                )


def _term_key(text: str) -> tuple[str, ...]:
    """Words of ``text`` for the vocabulary check: lowercase, a plural ``s`` dropped."""
    said = (w for w in re.split(r"[\W_]+", text.lower()) if w)
    return tuple(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in said)


def _terms(lens: Lens) -> set[tuple[str, ...]]:
    """Every phrase a vocabulary entry may map to (see :func:`_term_key`): a lens
    phrase, or a dimension's sample value ("california" → the stored "CA")."""
    texts: list[str] = []
    for metric in lens.metrics.values():
        texts += [metric.name, metric.label or "", *metric.synonyms]
    for model in lens.models.values():
        texts += [model.name, model.table.split(".")[-1]]
        for col in model.columns():
            texts += [col.name, *col.synonyms, f"{model.name} {col.name}", *col.sample_values]
    return {_term_key(t) for t in texts}


def resolve_jobs(cli_jobs: int | None, lens: Lens) -> int:
    """How many answers of ``lens`` run at once: ``--jobs`` > ``jobs:`` in lens.yaml > 1.

    Raises:
        ValueError: ``cli_jobs`` is outside ``1..MAX_JOBS`` (the CLI refuses it first).
    """
    if cli_jobs is not None and not 1 <= cli_jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be between 1 and {MAX_JOBS}, got {cli_jobs}")
    return cli_jobs or lens.config.jobs or 1


__all__ = [
    "LENS_NAME_RE",
    "MAX_JOBS",
    "MAX_ROW_CAP",
    "RELATIVE_DATE_RE",
    "Answer",
    "Case",
    "CasesFile",
    "ClarifyTerm",
    "Column",
    "CommandTier",
    "Exemplar",
    "GeneratorConfig",
    "Join",
    "Lens",
    "LensConfig",
    "Metric",
    "Model",
    "Provenance",
    "RepoConfig",
    "Skill",
    "SmartTier",
    "Strict",
    "Webhook",
    "load_lens",
    "resolve_jobs",
]
