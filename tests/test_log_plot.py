"""``dst log``: accuracy and wrong-rate per deployment as text sparklines and a PNG plot."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from reconciler.render.trend import BLOCKS, sparkline
from tests.helpers import dst, invoke
from tests.helpers.examples import answers_bound_to, double_metric


def _block(rate: float) -> str:
    # An absolute 0..1 scale over the eight block characters.
    return BLOCKS[round(rate * (len(BLOCKS) - 1))]


@pytest.fixture(scope="module")
def two_deployments(
    _promoted_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, int, int]:
    """sales promoted green, then promoted under ``warn`` with a doubled metric's answers wrong.

    Built once for the module: the tests only read its history.
    """
    lens_repo = tmp_path_factory.mktemp("log") / "repo"
    shutil.copytree(_promoted_template, lens_repo, symlinks=True)
    wrong = len(answers_bound_to(lens_repo, "sales", "metrics/units_sold"))
    double_metric(lens_repo, "units_sold", gate="warn")
    applied = invoke(lens_repo, "apply", "--format", "json")
    assert applied.code == 0, applied.stderr
    total = applied.lens("sales")["score"]["total"]
    return lens_repo, wrong, total


def test_sparkline_scale_is_absolute() -> None:
    assert sparkline([0.0, 1.0, None, 0.5]) == "▁█ ▅"
    assert sparkline([1.0, 1.0]) == "██"
    assert sparkline([]) == ""


def test_log_json_gains_rates_and_text_shows_both_sparklines(
    two_deployments: tuple[Path, int, int],
) -> None:
    repo, wrong, total = two_deployments
    as_json = invoke(repo, "log", "sales", "--format", "json")
    assert as_json.code == 0, as_json.stderr
    newest, oldest = as_json.json()["deployments"]
    assert oldest["accuracy"] == 1.0 and oldest["wrong_rate"] == 0.0
    assert newest["score"]["wrong"] == wrong
    assert newest["accuracy"] == pytest.approx((total - wrong) / total)
    assert newest["wrong_rate"] == pytest.approx(wrong / total)

    text = invoke(repo, "log", "sales")
    assert text.code == 0, text.stderr
    lines = text.stdout.splitlines()
    accuracy = next(line for line in lines if line.strip().startswith("accuracy "))
    wrong_rate = next(line for line in lines if line.strip().startswith("wrong-rate "))
    # oldest first: the green promote, then the one with wrong answers
    assert accuracy.split()[1] == "█" + _block((total - wrong) / total)
    assert wrong_rate.split()[1] == "▁" + _block(wrong / total)
    assert f"now {round(100 * (total - wrong) / total)}%" in accuracy
    assert f"now {round(100 * wrong / total)}%" in wrong_rate


def test_log_plot_writes_an_800_by_400_png(two_deployments: tuple[Path, int, int]) -> None:
    image = pytest.importorskip("matplotlib.image")
    repo, _, _ = two_deployments
    out = repo / "trend.png"
    done = invoke(repo, "log", "sales", "--plot", str(out), "--format", "json")
    assert done.code == 0, done.stderr
    assert len(done.json()["deployments"]) == 2  # stdout stays one JSON object
    raw = out.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", raw[16:24]) == (800, 400)
    pixels = image.imread(str(out))
    assert pixels.shape[:2] == (400, 800)

    def has(colour: str) -> bool:
        rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        close = (abs(pixels[:, :, :3] - rgb) < 2 / 255).all(axis=2)
        return int(close.sum()) > 50

    assert has("#1a7f37"), "the accuracy line is not drawn"
    assert has("#cf222e"), "the wrong-rate line is not drawn"


def test_plot_without_matplotlib_exits_2_naming_the_extra(
    two_deployments: tuple[Path, int, int],
) -> None:
    lens_repo, _, _ = two_deployments
    # A matplotlib that cannot be imported, first on the path: as if it were not installed.
    shadow = lens_repo.parent / "no_matplotlib"
    (shadow / "matplotlib").mkdir(parents=True)
    (shadow / "matplotlib" / "__init__.py").write_text("raise ImportError('not installed')\n")
    out = lens_repo / "never.png"
    # PYTHONPATH is read at start-up: this one needs a process of its own.
    # (kept in front of an inherited PYTHONPATH, so the dst under test stays the one imported)
    path = os.pathsep.join(p for p in (str(shadow), os.environ.get("PYTHONPATH", "")) if p)
    done = dst(lens_repo, "log", "sales", "--plot", str(out), env={"PYTHONPATH": path})
    assert done.code == 2, done.stdout + done.stderr
    assert "pip install matplotlib" in done.stderr and "dst-reconciler[" not in done.stderr
    assert not out.exists()
