"""The asv dashboard works offline: a tiny asv project (its own one-benchmark suite,
results for two commits of this repository) is published with benches/publish.py's
patch, served on loopback, and opened in headless Chromium. The main page and a
benchmark's graph must show plotted data; the same page without the vendored scripts
must not (so the check can fail). Chromium comes from Debian (`scripts/run test`
installs it); without it the test skips, saying so.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from browser import screenshot, served

REPO = Path(__file__).resolve().parent.parent
BENCHES = REPO / "benches"
_spec = importlib.util.spec_from_file_location("bkcodec_bench_publish", BENCHES / "publish.py")
publish = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(publish)

BENCHMARK = "tiny.time_sum"
SUITE = '''
def time_sum():
    sum(range(1000))
'''


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory) -> Path:
    """A published, patched asv dashboard with BENCHMARK measured at two commits."""
    pytest.importorskip("asv", reason="asv comes with the test extra")
    try:
        # asv graphs the branch's first-parent history: a merged branch's commit is no point on it.
        commits = _git("rev-list", "--first-parent", "--max-count=2", "HEAD").split()
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"asv needs this repository's git history: {err}")
    root = tmp_path_factory.mktemp("asv")
    (root / "suite").mkdir()
    (root / "suite" / "__init__.py").write_text("")
    (root / "suite" / "tiny.py").write_text(SUITE)
    (root / "asv.conf.json").write_text(
        json.dumps(
            {
                "version": 1,
                "project": "bkcodec",
                "repo": str(REPO),
                "branches": ["HEAD"],
                "environment_type": "existing",
                "benchmark_dir": "suite",
                "results_dir": "results",
                "html_dir": "html",
                "env_dir": "env",
            }
        )
    )
    asv = [sys.executable, "-m", "asv"]
    # asv keeps its machine description in ~/.asv-machine.json: a home of its own.
    env = dict(os.environ, HOME=str(root))
    run = functools.partial(subprocess.run, cwd=root, env=env, check=True, capture_output=True, text=True, timeout=300)
    run([*asv, "machine", "--yes", "--machine", "testbox"])
    for commit in commits:
        run([*asv, "run", "-E", f"existing:{sys.executable}", "--quick", "--set-commit-hash", commit, "--machine", "testbox"])
    run([*asv, "publish"])
    html = root / "html"
    assert publish.make_offline(html), "index.html loads nothing remote: asv changed its page"
    return html


@pytest.fixture(scope="module")
def server(dashboard):
    with served(dashboard.parent) as url:
        yield url


# asv draws each series in its own colour, the first in a steel blue (#247aad); in
# Pillow's HSV (0-255 scales) that hue is about 143. Links and highlighted buttons
# are other blues or far less saturated.
SERIES_HUE = 143


def plotted_pixels(png: Path) -> int:
    """Pixels of the first series' colour (its line, points and anti-aliasing) below
    the navigation bar."""
    import numpy as np
    from PIL import Image

    hsv = np.asarray(Image.open(png).convert("HSV"))[60:]
    hue, saturation, value = hsv[..., 0].astype(int), hsv[..., 1], hsv[..., 2]
    return int(np.count_nonzero((abs(hue - SERIES_HUE) <= 10) & (saturation > 120) & (value > 80)))


def test_dashboard_shows_graphs_offline(dashboard, server, tmp_path):
    pytest.importorskip("PIL", reason="pillow comes with the test extra")
    main_png, graph_png = tmp_path / "main.png", tmp_path / "graph.png"
    main_dom = screenshot(f"{server}/html/index.html", main_png)
    graph_dom = screenshot(f"{server}/html/index.html#{BENCHMARK}", graph_png)
    for dom in (main_dom, graph_dom):
        assert "continental origin of swallow" not in dom  # asv's message when scripts fail to load
        assert "flot-base" in dom  # a Flot canvas was drawn
    assert BENCHMARK.split(".")[-1] in main_dom
    assert plotted_pixels(main_png) > 50, main_png
    assert plotted_pixels(graph_png) > 50, graph_png

    # The same dashboard without the vendored scripts is blank: the check can fail.
    shutil.move(dashboard / "vendor", tmp_path / "vendor")
    try:
        blank_png = tmp_path / "blank.png"
        blank_dom = screenshot(f"{server}/html/index.html#{BENCHMARK}", blank_png)
        assert "flot-base" not in blank_dom
        assert plotted_pixels(blank_png) < 50
    finally:
        shutil.move(tmp_path / "vendor", dashboard / "vendor")
    # Kept for a person to look at: pytest's basetemp holds them after the run.
    print(f"screenshots: {main_png} {graph_png}")
