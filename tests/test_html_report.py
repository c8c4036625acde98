"""``dst report --html``: a blocked run as a self-contained page, checked in headless Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from reconciler.render.html import DIFF_ROW_COLOUR, divergence_marks, render
from tests.helpers import invoke
from tests.helpers.examples import answers_bound_to, double_metric


class _Page(HTMLParser):
    """Tags, attributes and the rows of every divergence table, by side and class."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        if tag == "tr" and found.get("data-side"):
            self.rows.append((str(found["data-side"]), str(found.get("class"))))


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


@pytest.fixture(scope="module")
def blocked(
    _promoted_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, set[str]]:
    """sales promoted, then a doubled metric makes its certified answers wrong: blocked."""
    repo = tmp_path_factory.mktemp("report") / "repo"
    shutil.copytree(_promoted_template, repo, symlinks=True)
    users = answers_bound_to(repo, "sales", "metrics/units_sold")
    double_metric(repo, "units_sold")
    applied = invoke(repo, "apply", "--format", "json")
    assert applied.code == 1, applied.stdout + applied.stderr
    (repo / "run.json").write_text(applied.stdout)
    return repo, users


def test_report_of_the_last_recorded_run_shows_every_divergence(
    blocked: tuple[Path, set[str]],
) -> None:
    repo, wrong = blocked
    out = repo / "report.html"
    done = invoke(repo, "report", "--html", str(out), "--lens", "sales", "--format", "json")
    assert done.code == 0, done.stderr
    assert done.json()["lenses"] == ["sales"]
    text = out.read_text()
    page = _parse(text)
    # self-contained: no script, no stylesheet link, nothing fetched
    assert not [t for t, _ in page.tags if t in ("script", "link", "img", "iframe")]
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    for answer in wrong:
        assert f'id="results-{answer}"' in text
    assert "metrics/units_sold" in text and "asset_changed" in text
    assert ">blocked<" in text
    sides = {side for side, css in page.rows if css == "diff"}
    assert sides == {"certified", "generated"}
    assert "wrong-rate" in text


def test_report_from_a_saved_json_run_matches_its_results(
    blocked: tuple[Path, set[str]],
) -> None:
    repo, wrong = blocked
    out = repo / "saved.html"
    done = invoke(repo, "report", "--html", str(out), "--from", str(repo / "run.json"))
    assert done.code == 0, done.stderr
    text = out.read_text()
    assert "exit code 1" in text
    assert {a for a in wrong if f'id="results-{a}"' in text} == wrong


def test_report_rejects_a_file_that_is_not_a_run(tmp_path: Path, blocked: tuple[Path, Any]) -> None:
    repo, _ = blocked
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "lenses": [\n')
    done = invoke(repo, "report", "--html", str(tmp_path / "x.html"), "--from", str(bad))
    assert done.code == 2
    assert f"{bad}:3: not JSON" in done.stderr
    assert not (tmp_path / "x.html").exists()


def test_text_is_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    page = render(
        {
            "command": "apply",
            "lenses": [
                {
                    "lens": "a<b",
                    "action": "blocked",
                    "messages": [hostile],
                    "results": [
                        {
                            "answer": "x",
                            "outcome": "wrong",
                            "detail": hostile,
                            "oracle_result": {"columns": ["<c>"], "rows": [["<v>"]]},
                            "generated_result": {"columns": ["<c>"], "rows": [["&"]]},
                        }
                    ],
                }
            ],
        }
    )
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<c>" not in page and "&lt;v&gt;" in page and "a&lt;b" in page


def test_rows_pair_by_content_not_position() -> None:
    oracle = {"columns": ["segment", "units"], "rows": [["A", 1], ["B", 2], ["C", 3]]}
    generated = {"columns": ["units", "segment"], "rows": [[2, "A"], [3, "C"], [4, "B"]]}
    comparison = {
        "verdict": "diverged",
        "missing": [["A", 1], ["B", 2]],
        "extra": [["A", 2], ["B", 4]],  # in the oracle's column order, as compare reports
    }
    o_marks, g_marks, o_cells, g_cells = divergence_marks(oracle, generated, comparison)
    assert o_marks == [True, True, False]
    assert g_marks == [True, False, True]
    assert o_cells == {0: {1}, 1: {1}}  # the units column on the oracle side
    assert g_cells == {0: {0}, 2: {0}}  # the units column is first on the generated side


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH, HEIGHT = 1100, 1600


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(blocked: tuple[Path, set[str]]) -> None:
    repo, wrong = blocked
    out = repo / "browser.html"
    assert invoke(repo, "report", "--html", str(out), "--lens", "sales").code == 0
    flags = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom = subprocess.run(
        [*flags, "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = _parse(dom.stdout)
    diff_rows = [side for side, css in rendered.rows if css == "diff"]
    assert diff_rows.count("certified") >= len(wrong)
    assert diff_rows.count("generated") >= len(wrong)

    shot = repo / "report.png"
    done = subprocess.run(
        [*flags, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", out.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    raw = shot.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", raw[16:24]) == (WIDTH, HEIGHT)
    assert len(raw) > 20_000  # a blank page compresses to a few hundred bytes
    image = pytest.importorskip("matplotlib.image")
    pixels = image.imread(str(shot))
    rgb = [int(DIFF_ROW_COLOUR[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    highlighted = (abs(pixels[:, :, :3] - rgb) < 3 / 255).all(axis=2)
    assert int(highlighted.sum()) > 2_000, "no highlighted divergence rows on screen"
