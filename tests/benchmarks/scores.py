"""Benchmark figures: one :class:`Score` per database or model, counted per question file."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from reconciler.ask import AskResponse

OUTCOMES = ("correct", "wrong", "declined", "error")
IDK_FILE = "idk.csv"
TOP_REASONS = 12
_UNKNOWN = "unrecognised words: "
_QUOTED = re.compile(r"'[^']*'")
_READ_AS = re.compile(r" \(read: .*\)$")


@dataclass
class Score:
    """One database's (or one semantic model's) figures.

    Attributes:
        corpus: ``defog`` or ``cortex``.
        name: the database or model name.
        lens: where its lens came from: ``hand-written``, ``auto-generated``, ``imported``.
        files: ``{question file: Counter(outcome)}``; on ``idk.csv`` a served answer
            is ``wrong`` (every question there is unanswerable).
        load: ``{"statements": n, "failed": n, "rows_dropped": n}`` when data was loaded.
        wrong_examples: one line per wrong answer: question, served SQL, why.
        declines: why answerable questions were declined, by reason (see :func:`reasons`).
        outcomes: one ``{"file", "question", "outcome", "detail"}`` per scored question
            (and whatever else the scorer recorded for it, e.g. ``sql``).
        wrong_classes: wrong answers by the kind of difference (Spider: see
            :func:`tests.benchmarks.spider.wrong_class`).
        disputed: of the wrong answers, those whose gold SQL a reviewed note says
            contradicts its question, one ``"'question': reason"`` line each (Spider:
            ``tests/benchmarks/spider_gold_notes.yaml``); they stay counted as wrong.
    """

    corpus: str
    name: str
    lens: str = "auto-generated"
    files: dict[str, Counter[str]] = field(default_factory=dict)
    load: dict[str, int] = field(default_factory=dict)
    wrong_examples: list[str] = field(default_factory=list)
    declines: Counter[str] = field(default_factory=Counter)
    outcomes: list[dict[str, str]] = field(default_factory=list)
    wrong_classes: Counter[str] = field(default_factory=Counter)
    disputed: list[str] = field(default_factory=list)

    def count(
        self,
        question_file: str,
        outcome: str,
        detail: str = "",
        question: str = "",
        extra: dict[str, str] | None = None,
    ) -> None:
        """Count one scored question of ``question_file``; ``extra`` joins its outcome record."""
        self.files.setdefault(question_file, Counter())[outcome] += 1
        self.outcomes.append(
            {
                "file": question_file,
                "question": question,
                "outcome": outcome,
                "detail": detail,
                **(extra or {}),
            }
        )
        if outcome == "wrong":
            self.wrong_examples.append(f"[{self.name} {question_file}] {detail}")
        elif outcome == "declined" and question_file != IDK_FILE:
            self.declines.update(reasons(detail))

    def answerable(self) -> Counter[str]:
        """Outcomes summed over every question file except ``idk.csv``."""
        total: Counter[str] = Counter()
        for name, counts in self.files.items():
            if name != IDK_FILE:
                total.update(counts)
        return total

    def idk(self) -> Counter[str]:
        """Outcomes on ``idk.csv``."""
        return self.files.get(IDK_FILE, Counter())

    def record(self, *, details: bool = False) -> dict[str, Any]:
        """JSON-ready figures; ``details`` adds every question's outcome."""
        out: dict[str, Any] = {
            "corpus": self.corpus,
            "database": self.name,
            "lens": self.lens,
            "load": self.load,
            "files": {f: {k: c[k] for k in OUTCOMES} for f, c in sorted(self.files.items())},
            "wrong_examples": self.wrong_examples,
            "declines": dict(self.declines.most_common()),
            "wrong_classes": dict(self.wrong_classes.most_common()),
            "gold_disputed": self.disputed,
        }
        if details:
            out["questions"] = self.outcomes
        return out


def not_served(resp: AskResponse) -> str | None:
    """Why ``resp`` scores as declined, or ``None`` when it served generated rows.

    Served means rows with a trust state other than ``blocked``
    (:attr:`~reconciler.ask.AskResponse.served_rows`). A question matching one of the
    lens's certified answers is served through the certified route, not generated: it
    scores as declined ("not generated"), never as correct, since the benchmark
    measures the generator. The reason is the generator's decline message, else why
    the response served nothing (e.g. ``blocked by execution: …``).
    """
    if resp.route == "certified_answer":
        return f"not generated: the lens's certified answer {resp.answer} matches the question"
    if not resp.served_rows or resp.result is None:
        return resp.message or resp.unserved_reason() or ""
    return None


def reasons(message: str) -> list[str]:
    """A decline message as countable reasons: each unknown word apart, other messages
    with their quoted names elided (``'x' is a fact of model 'y' …`` → ``'…' is a fact …``)
    and without the "(read: …)" clue that follows some of them.
    """
    first = message.strip().splitlines()[0] if message.strip() else "no reason given"
    first = _READ_AS.sub("", first)
    if first.startswith(_UNKNOWN):
        return [f"unknown word {w}" for w in dict.fromkeys(_QUOTED.findall(first))]
    return [_QUOTED.sub("'…'", first)[:90]]


@dataclass
class Report:
    """A whole run: scores, the pieces of the corpus that were missing and skipped, the
    lens author's additions written on top of imported lenses, and the gold notes that no
    longer match a wrong answer (one line each)."""

    scores: list[Score] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    additions: list[str] = field(default_factory=list)
    stale_notes: list[str] = field(default_factory=list)

    def by_corpus(self) -> dict[str, dict[str, Counter[str]]]:
        """``{corpus: {question file: Counter(outcome)}}``, summed over databases."""
        out: dict[str, dict[str, Counter[str]]] = {}
        for s in self.scores:
            files = out.setdefault(s.corpus, {})
            for name, counts in s.files.items():
                files.setdefault(name, Counter()).update(counts)
        return out

    def totals(self) -> dict[str, Counter[str]]:
        """``{"questions": answerable outcomes, "idk": idk.csv outcomes}`` over every score."""
        q: Counter[str] = Counter()
        i: Counter[str] = Counter()
        for s in self.scores:
            q.update(s.answerable())
            i.update(s.idk())
        return {"questions": q, "idk": i}

    def declines(self) -> Counter[str]:
        """Decline reasons summed over every score."""
        total: Counter[str] = Counter()
        for s in self.scores:
            total.update(s.declines)
        return total

    def wrong_classes(self) -> Counter[str]:
        """Wrong answers by kind of difference, summed over every score."""
        total: Counter[str] = Counter()
        for s in self.scores:
            total.update(s.wrong_classes)
        return total

    def record(self, elapsed_s: float, *, details: bool = False) -> dict[str, Any]:
        """The ``--format json`` object (``details``: with every question's outcome)."""
        t = self.totals()
        return {
            "databases": [s.record(details=details) for s in self.scores],
            "corpora": {
                c: {f: {k: n[k] for k in OUTCOMES} for f, n in sorted(files.items())}
                for c, files in self.by_corpus().items()
            },
            "overall": {k: {o: v[o] for o in OUTCOMES} for k, v in t.items()},
            "declines": dict(self.declines().most_common()),
            "wrong_classes": dict(self.wrong_classes().most_common()),
            "gold_disputed": sum(len(s.disputed) for s in self.scores),
            "stale_gold_notes": self.stale_notes,
            "skipped": self.skipped,
            "additions": self.additions,
            "elapsed_s": round(elapsed_s, 1),
        }


def rate(c: Counter[str], key: str) -> str:
    """``key``'s share of the scored (correct + wrong + declined) questions, as text."""
    scored = c["correct"] + c["wrong"] + c["declined"]
    return f"{100 * c[key] / scored:.1f}%" if scored else "n/a"


def render(report: Report, elapsed_s: float) -> list[str]:
    """The printed tables: per database and question file, per corpus, then overall."""
    w = max([len("database"), *(len(s.name) for s in report.scores)])
    head = f"{'corpus':<7} {'database':<{w}} {'question file':<28} {'lens':<14}"
    lines = [f"{head} correct  wrong  declined  error  accuracy  wrong-rate"]
    for s in report.scores:
        for name, c in sorted(s.files.items()):
            lines.append(f"{s.corpus:<7} {s.name:<{w}} {name:<28} {s.lens:<14} " + _cells(c))
    lines.append("")
    lines.append(f"{'corpus':<7} {'question file':<28} correct  wrong  declined  error  idk served")
    for corpus, files in report.by_corpus().items():
        for name, c in sorted(files.items()):
            served = str(c["wrong"]) if name == IDK_FILE else "-"
            lines.append(f"{corpus:<7} {name:<28} {_cells(c, rates=False)}  {served:>10}")
    t = report.totals()
    q, i = t["questions"], t["idk"]
    lines.append(
        f"overall: {q['correct']} correct, {q['wrong']} wrong, {q['declined']} declined, "
        f"{q['error']} error (accuracy {rate(q, 'correct')}, wrong-rate {rate(q, 'wrong')}); "
        f"idk.csv: {i['wrong']} served of {i['wrong'] + i['declined']}; {elapsed_s:.1f} s"
    )
    lines += [
        f"load: {s.name}: {s.load.get('failed', 0)} statements failed, "
        f"{s.load.get('rows_dropped', 0)} rows dropped"
        for s in report.scores
        if s.load.get("failed") or s.load.get("rows_dropped")
    ]
    lines += [f"skipped: {m}" for m in report.skipped]
    lines += [f"additions: {m}" for m in report.additions]
    lines += [f"stale gold note: {m}" for m in report.stale_notes]
    classes = report.wrong_classes().most_common()
    if classes:
        lines.append("wrong answers by difference: " + "; ".join(f"{c} ({n})" for c, n in classes))
    disputed = [f"{s.name}: {line}" for s in report.scores for line in s.disputed]
    if disputed:
        lines.append(
            f"of the {q['wrong']} wrong, {len(disputed)} differ from a gold SQL that a reviewed "
            "note says contradicts its question (still counted wrong):"
        )
        lines += [f"  {line}" for line in disputed]
    top = report.declines().most_common(TOP_REASONS)
    if top:
        lines.append("most frequent decline reasons: " + "; ".join(f"{r} ({n})" for r, n in top))
    return lines


def _cells(c: Counter[str], *, rates: bool = True) -> str:
    cells = f"{c['correct']:>7} {c['wrong']:>6} {c['declined']:>9} {c['error']:>6}"
    return f"{cells}  {rate(c, 'correct'):>8}  {rate(c, 'wrong'):>10}" if rates else cells
