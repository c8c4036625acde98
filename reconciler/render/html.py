"""A run report as one self-contained HTML page (pure; ``dst report --html``).

The input is the JSON object of DESIGN §6 (``dst plan|apply|test --format
json``), or the same shape rebuilt from deployment and attempt records by
:func:`lens_object_from_record`. The page has inline CSS only: no script, no
font, no image and no stylesheet is fetched, so it can be attached to a CI run
or mailed and still render. Every piece of text from the input goes through
:func:`html.escape`.

For each lens it shows the action and gate, the score with the wrong-rate beside
accuracy (DESIGN §1 makes them co-headlines), the plan (changed assets, stale
answers with their reasons) and every answer's result. A result that is not
``correct`` shows both executed results side by side, certified (the oracle) on
the left and generated on the right; rows the comparison reported as missing or
extra are highlighted, and within a highlighted pair of rows at the same position
the cells that differ are marked more strongly.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from reconciler.render.trend import percent, rates

DIFF_ROW_COLOUR = "#ffe08a"  # a differing row (missing on the left, extra on the right)
DIFF_CELL_COLOUR = "#f0a400"  # a differing cell within a highlighted pair of rows
ACTION_CLASS = {
    "promoted": "good",
    "verified": "good",
    "unchanged": "quiet",
    "planned": "quiet",
    "skipped": "warn",
    "rolled_back": "warn",
    "blocked": "bad",
    "stood_down": "bad",
    "failed": "bad",
    "error": "bad",
}
OUTCOME_CLASS = {
    "correct": "good",
    "wrong": "bad",
    "declined": "warn",
    "error": "bad",
    "flaky": "warn",
}
FOLD_ROWS = 8  # longer plan and all-green result tables start folded

CSS = f"""
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1f2328; }}
h1 {{ font-size: 22px; margin: 0 0 4px; }} h2 {{ font-size: 18px; margin: 28px 0 8px; }}
h3 {{ font-size: 15px; margin: 18px 0 6px; }}
.meta {{ color: #59636e; margin-bottom: 16px; }}
table {{ border-collapse: collapse; margin: 4px 0 12px; }}
th, td {{ border: 1px solid #d1d9e0; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f6f8fa; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.badge {{ display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600; }}
.good {{ background: #dafbe1; color: #116329; }} .bad {{ background: #ffebe9; color: #a40e26; }}
.warn {{ background: #fff8c5; color: #7d4e00; }} .quiet {{ background: #eaeef2; color: #424a53; }}
.pair {{ display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }}
.pair h4 {{ margin: 6px 0 2px; font-size: 13px; }}
table.divergence tr.diff td {{ background: {DIFF_ROW_COLOUR}; }}
table.divergence tr.diff td.cell-diff {{ background: {DIFF_CELL_COLOUR}; font-weight: 700; }}
.answer {{ border: 1px solid #d1d9e0; border-radius: 6px; padding: 8px 12px; margin: 10px 0; }}
pre {{ background: #f6f8fa; padding: 8px; overflow-x: auto; white-space: pre-wrap; }}
ul.messages li {{ margin: 2px 0; }}
.legend span {{ padding: 0 6px; margin-right: 8px; }}
"""


def _e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def _badge(text: str, css: str) -> str:
    return f'<span class="badge {css}">{_e(text)}</span>'


def _cell(value: object) -> str:
    # Aggregation order leaves noise in a DOUBLE's last bits; show 12 significant digits.
    return (
        f"{value:.12g}" if isinstance(value, float) else ("NULL" if value is None else str(value))
    )


def _score_cells(score: Mapping[str, Any] | None) -> str:
    accuracy, wrong = rates(score)
    if not score:
        return '<td class="num">n/a</td><td class="num">n/a</td><td class="num">n/a</td>'
    counts = f"{int(score.get('correct', 0))}/{int(score.get('total', 0))}"
    return (
        f'<td class="num">{_e(counts)}</td><td class="num">{_e(percent(accuracy))}</td>'
        f'<td class="num">{_e(percent(wrong))}</td>'
    )


def _table(
    head: Sequence[str], rows: Iterable[Sequence[str]], css: str = "", *, fold: bool = False
) -> str:
    """An HTML table of already-escaped cells; ``fold`` puts a long one in a closed ``details``."""
    rows = list(rows)
    if fold and len(rows) > FOLD_ROWS:
        summary = f"{len(rows)} × {head[0]}"
        inner = _table(head, rows, css)
        return f"<details><summary>{_e(summary)}</summary>{inner}</details>"
    cls = f' class="{css}"' if css else ""
    out = [f"<table{cls}><thead><tr>"]
    out += [f"<th>{_e(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _row_key(row: Sequence[object]) -> str:
    return json.dumps(list(row), default=str, sort_keys=True)


def _marked(rows: Sequence[Sequence[object]], reported: Sequence[Sequence[object]]) -> list[bool]:
    """Which of ``rows`` are among ``reported`` (a multiset: each report marks one row)."""
    left = Counter(_row_key(r) for r in reported)
    out = []
    for row in rows:
        key = _row_key(row)
        out.append(left[key] > 0)
        if left[key] > 0:
            left[key] -= 1
    return out


def _in_oracle_order(
    rows: Sequence[Sequence[object]], columns: Sequence[str], oracle_columns: Sequence[str]
) -> list[list[object]]:
    # The comparison aligns generated columns to the oracle's by name when both
    # carry the same names, and reports extra rows in that order.
    if sorted(columns) != sorted(oracle_columns) or list(columns) == list(oracle_columns):
        return [list(r) for r in rows]
    where = [list(columns).index(c) for c in oracle_columns]
    return [[row[i] for i in where] for row in rows]


def _result_table(
    result: Mapping[str, Any] | None,
    marks: Sequence[bool],
    cell_marks: Mapping[int, set[int]],
    side: str,
) -> str:
    if not result:
        return f'<p class="meta">no {_e(side)} result</p>'
    columns = [str(c) for c in result.get("columns", [])]
    rows = result.get("rows", [])
    body = []
    for i, row in enumerate(rows):
        diff = i < len(marks) and marks[i]
        tds = "".join(
            f'<td class="cell-diff">{_e(_cell(v))}</td>'
            if j in cell_marks.get(i, set())
            else f"<td>{_e(_cell(v))}</td>"
            for j, v in enumerate(row)
        )
        body.append(f'<tr class="{"diff" if diff else "same"}" data-side="{_e(side)}">{tds}</tr>')
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    count = int(result.get("row_count", len(rows)))
    more = f'<p class="meta">showing {len(rows)} of {count} rows</p>' if count > len(rows) else ""
    return (
        f'<table class="divergence" data-side="{_e(side)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{more}"
    )


Marks = tuple[list[bool], list[bool], dict[int, set[int]], dict[int, set[int]]]


def divergence_marks(
    oracle: Mapping[str, Any] | None,
    generated: Mapping[str, Any] | None,
    comparison: Mapping[str, Any],
) -> Marks:
    """Which oracle and generated preview rows differ, and which cells within paired rows.

    A row is marked when the comparison reported it missing (oracle side) or
    extra (generated side); a 1×1 pair that diverged is marked on both sides.
    Each marked oracle row is then paired with the marked generated row that
    shares the most equal cells (at least one, or both are one column wide);
    within a pair the cells that differ are marked. Row order plays no part,
    since it counts only under the oracle's ORDER BY.

    Returns:
        ``(oracle row marks, generated row marks, {oracle row: differing oracle
        columns}, {generated row: differing generated columns})``, indexes into
        each side's own preview rows and columns.
    """
    o_rows = list((oracle or {}).get("rows", []))
    g_rows = list((generated or {}).get("rows", []))
    o_cols = list((oracle or {}).get("columns", []))
    g_cols = list((generated or {}).get("columns", []))
    o_marks = _marked(o_rows, comparison.get("missing", []))
    g_aligned = _in_oracle_order(g_rows, g_cols, o_cols)
    g_marks = _marked(g_aligned, comparison.get("extra", []))
    diverged = comparison.get("verdict") == "diverged"
    if diverged and len(o_rows) == len(g_rows) == 1 and len(o_cols) == len(g_cols) == 1:
        o_marks, g_marks = [True], [True]
    aligned = sorted(g_cols) == sorted(o_cols) and g_cols != o_cols
    back = [g_cols.index(c) for c in o_cols] if aligned else list(range(len(o_cols)))
    o_cells: dict[int, set[int]] = {}
    g_cells: dict[int, set[int]] = {}
    free = [j for j, marked in enumerate(g_marks) if marked]
    for i, marked in enumerate(o_marks):
        if not marked or not free:
            continue
        row = [_cell(v) for v in o_rows[i]]

        def equal(j: int, row: list[str] = row) -> int:
            other = g_aligned[j]
            return sum(1 for k, v in enumerate(row) if k < len(other) and v == _cell(other[k]))

        best = max(free, key=lambda j: (equal(j), -j))
        if len(row) != len(g_aligned[best]) or (equal(best) == 0 and len(row) > 1):
            continue
        free.remove(best)
        differ = {k for k, v in enumerate(row) if v != _cell(g_aligned[best][k])}
        o_cells[i] = differ
        g_cells[best] = {back[k] for k in differ if k < len(back)}
    return o_marks, g_marks, o_cells, g_cells


def _answer_block(r: Mapping[str, Any], label: str) -> str:
    outcome = str(r.get("outcome") or "not run")
    trace = list(r.get("trace") or [])
    last = trace[-1] if trace else {}
    comparison = dict(last.get("comparison") or {})
    sql = (last.get("generation") or {}).get("sql")
    flaky = " (flaky: passed on the second attempt)" if r.get("flaky") else ""
    parts = [
        f'<div class="answer" id="{_e(label)}-{_e(r.get("answer"))}">',
        f"<h3>{_e(r.get('answer'))} {_badge(outcome, OUTCOME_CLASS.get(outcome, 'warn'))}"
        f"{_e(flaky)}</h3>",
        f"<p>{_e(r.get('detail'))}</p>",
    ]
    if r.get("trust_state"):
        parts.append(f"<p>trust state: {_badge(str(r['trust_state']), 'quiet')}</p>")
    oracle, generated = r.get("oracle_result"), r.get("generated_result")
    if outcome != "correct" and (oracle or generated):
        o_marks, g_marks, o_cells, g_cells = divergence_marks(oracle, generated, comparison)
        kinds = ", ".join(str(k) for k in comparison.get("kinds", [])) or "n/a"
        parts.append(
            f'<p class="meta">divergence: {_e(kinds)}; missing rows '
            f"{_e(comparison.get('missing_count', 0))}, extra rows "
            f"{_e(comparison.get('extra_count', 0))}</p>"
        )
        parts.append('<div class="pair">')
        parts.append(
            "<div><h4>certified (oracle) result</h4>"
            + _result_table(oracle, o_marks, o_cells, "certified")
            + "</div>"
        )
        parts.append(
            "<div><h4>generated result</h4>"
            + _result_table(generated, g_marks, g_cells, "generated")
            + "</div>"
        )
        parts.append("</div>")
        parts.append(
            '<p class="meta">The choice this forces: fix the definition, or re-certify / '
            "retire the answer.</p>"
        )
    if sql and outcome != "correct":
        parts.append(f"<details><summary>generated SQL</summary><pre>{_e(sql)}</pre></details>")
    parts.append("</div>")
    return "".join(parts)


def _plan_section(lens: Mapping[str, Any]) -> str:
    parts = ["<h3>plan</h3>"]
    changed = lens.get("changed_assets") or []
    if changed:
        rows = [[_e(c.get("asset")), _e(c.get("change")), _e(c.get("path", ""))] for c in changed]
        parts.append(_table(["changed asset", "change", "path"], rows, fold=True))
    else:
        parts.append('<p class="meta">no asset changed</p>')
    answers = lens.get("changed_answers") or []
    if answers:
        rows = [[_e(a.get("answer")), _e(a.get("change"))] for a in answers]
        parts.append(_table(["changed answer", "change"], rows, fold=True))
    stale = lens.get("stale") or []
    if stale:
        rows = [
            [
                _e(s.get("answer")),
                _e(", ".join(s.get("reasons", []))),
                "<br>".join(_e(x) for x in s.get("explain", [])),
            ]
            for s in stale
        ]
        parts.append(_table(["stale answer", "reasons", "why"], rows, "stale", fold=True))
    else:
        parts.append('<p class="meta">no answer is stale</p>')
    return "".join(parts)


def _trust_summary(results: Sequence[Mapping[str, Any]]) -> str:
    states = Counter(str(r["trust_state"]) for r in results if r.get("trust_state"))
    return ", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "n/a"


def _lens_section(lens: Mapping[str, Any]) -> str:
    name = str(lens.get("lens"))
    action = str(lens.get("action"))
    parts = [
        f'<section class="lens" id="lens-{_e(name)}">',
        f"<h2>lens {_e(name)} {_badge(action, ACTION_CLASS.get(action, 'quiet'))}</h2>",
        f'<p class="meta">gate {_e(lens.get("gate"))}; serving '
        f"{_e(str(lens.get('serving_before') or 'nothing')[:12])} → "
        f"{_e(str(lens.get('serving_after') or 'nothing')[:12])}; candidate "
        f"{_e(str(lens.get('candidate') or 'working tree')[:12])}</p>",
    ]
    messages = lens.get("messages") or []
    if messages:
        parts.append('<ul class="messages">' + "".join(f"<li>{_e(m)}</li>" for m in messages))
        parts.append("</ul>")
    parts.append(_plan_section(lens))
    for title, key in (("results", "results"), ("self-test", "self_test")):
        items = [r for r in lens.get(key) or [] if r.get("outcome")]
        if not items:
            continue
        rows = [
            [
                f'<a href="#{_e(key)}-{_e(r.get("answer"))}">{_e(r.get("answer"))}</a>',
                _badge(str(r["outcome"]), OUTCOME_CLASS.get(str(r["outcome"]), "warn")),
                _e(r.get("attempts", "")),
                _e(r.get("detail")),
            ]
            for r in items
        ]
        parts.append(f"<h3>{_e(title)}</h3>")
        failing = [r for r in items if r.get("outcome") != "correct"]
        head = ["answer", "outcome", "attempts", "detail"]
        parts.append(_table(head, rows, key, fold=not failing))
        parts += [_answer_block(r, key) for r in failing]
    parts.append("</section>")
    return "".join(parts)


def render(report: Mapping[str, Any], *, origin: str = "") -> str:
    """The whole page for one report object.

    Args:
        report: ``{"command", "exit_code", "dry_run", "messages", "lenses": [...]}``
            (DESIGN §6; missing keys render as ``n/a``).
        origin: a line saying where the report came from (shown under the title).

    Returns:
        The HTML document as a string (UTF-8 when written).
    """
    # Lenses that need a person (blocked, stood down, failed) come first.
    lenses = sorted(
        report.get("lenses") or [],
        key=lambda x: (
            ACTION_CLASS.get(str(x.get("action")), "quiet") != "bad",
            str(x.get("lens")),
        ),
    )
    command = str(report.get("command") or "run")
    dry = " (dry run)" if report.get("dry_run") else ""
    code = f": exit code {report['exit_code']}" if report.get("exit_code") is not None else ""
    summary_rows = []
    for lens in lenses:
        action = str(lens.get("action"))
        results = [*(lens.get("results") or []), *(lens.get("self_test") or [])]
        summary_rows.append(
            f'<tr><td><a href="#lens-{_e(lens.get("lens"))}">{_e(lens.get("lens"))}</a></td>'
            f"<td>{_e(lens.get('gate'))}</td>"
            f"<td>{_badge(action, ACTION_CLASS.get(action, 'quiet'))}</td>"
            f"{_score_cells(lens.get('score'))}{_score_cells(lens.get('previous_score'))}"
            f"<td>{_e(_trust_summary(results))}</td></tr>"
        )
    head = (
        "<tr><th rowspan=2>lens</th><th rowspan=2>gate</th><th rowspan=2>action</th>"
        "<th colspan=3>score</th><th colspan=3>previous score</th>"
        "<th rowspan=2>trust states</th></tr><tr>"
        + "<th>correct</th><th>accuracy</th><th>wrong-rate</th>" * 2
        + "</tr>"
    )
    messages = report.get("messages") or []
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>dst {_e(command)} report</title><style>{CSS}</style></head><body>",
        f"<h1>dst {_e(command)}{_e(dry)}{_e(code)}</h1>",
        f'<p class="meta">{_e(origin)}</p>' if origin else "",
        "".join(f"<p>{_e(m)}</p>" for m in messages),
        f'<table class="summary"><thead>{head}</thead><tbody>{"".join(summary_rows)}'
        "</tbody></table>",
        '<p class="legend meta">highlighted rows: '
        f'<span style="background:{DIFF_ROW_COLOUR}">differing row</span>'
        f'<span style="background:{DIFF_CELL_COLOUR}">differing cell</span> '
        "(left: certified rows the generated result lacks; right: generated rows the "
        "certified result lacks)</p>",
        *(_lens_section(lens) for lens in lenses),
        "</body></html>",
    ]
    return "\n".join(b for b in body if b)


_ACTION_OF_RECORD = {"promote": "promoted", "verify": "verified", "rollback": "rolled_back"}


def lens_object_from_record(
    deployment: str,
    meta: Mapping[str, Any],
    run: Mapping[str, Any],
    *,
    served: bool,
    serving: str | None = None,
) -> dict[str, Any]:
    """A lens's report object rebuilt from a deployment or attempt commit's state.

    Args:
        deployment: the deployment (or attempt) commit.
        meta: its ``state/meta.json``.
        run: its ``state/run.json`` (a rollback's holds no plan or results).
        served: ``True`` for a serving deployment, ``False`` for an attempt.
        serving: for an attempt, the deployment serving now (it kept serving).

    Returns:
        The DESIGN §6 lens object (``results`` carry the recorded traces).
    """
    plan = dict(run.get("plan") or {})
    action = str(meta.get("action", ""))
    return {
        "lens": meta.get("lens") or run.get("lens"),
        "gate": meta.get("gate"),
        "serving_before": meta.get("previous") if served else serving,
        "serving_after": deployment if served else serving,
        "candidate": meta.get("source"),
        "action": _ACTION_OF_RECORD.get(action, action),
        "changed_assets": plan.get("changed_assets", []),
        "changed_answers": plan.get("changed_answers", []),
        "stale": plan.get("stale", []),
        "self_test": list(run.get("self_test") or []),
        "results": list(run.get("results") or []),
        "score": meta.get("score"),
        "previous_score": meta.get("previous_score"),
        "recorded": deployment,
        "messages": list(run.get("messages") or []),
    }
