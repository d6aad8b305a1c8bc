"""The documentation site builds (`mkdocs build --strict`, as `scripts/run docs` does:
a broken link or reference fails it) and renders: its home page (the README) and an
API reference page, generated from the stubs, are opened in headless Chromium and
must show their content. Without Chromium the rendering test skips, saying so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from browser import screenshot, served

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs comes with the docs extra (scripts/run setup installs it)")
    pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings[python] comes with the docs extra")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def test_the_site_has_every_page_and_the_api_from_the_stubs(site):
    for page in ["index.html", "files/index.html", "cli/index.html", "spark/index.html", "api/bkcodec/index.html"]:
        assert (site / page).is_file(), page
    api = (site / "api" / "bkcodec" / "index.html").read_text()
    # Functions of the compiled core, known only from python/bkcodec/_bkcodec.pyi.
    for name in ["read_entry_log", "decode_entries", "bookie_layout", "RecordBatchReader"]:
        assert f'id="bkcodec.{name}"' in api, name
    # The README is the home page, its links into docs/ made site links.
    home = (site / "index.html").read_text()
    assert 'href="files/"' in home and "docs/files.md" not in home


def ink(png: Path) -> float:
    """The share of the screenshot that is not background: text, code, headings."""
    from PIL import Image

    gray = Image.open(png).convert("L")
    dark = sum(gray.histogram()[:160])
    return dark / (gray.width * gray.height)


def test_the_site_renders_in_a_browser(site, tmp_path):
    pytest.importorskip("PIL", reason="pillow comes with the test extra")
    with served(site) as url:
        home_png, api_png = tmp_path / "home.png", tmp_path / "api.png"
        home = screenshot(f"{url}/index.html", home_png)
        api = screenshot(f"{url}/api/bkcodec/", api_png)
    assert "First steps" in home and "make_pulsar_bookie" in home
    assert "read_entry_log" in api and "doc-signature" in api
    # The theme's stylesheet applied: the navigation drawn, and text on the page.
    assert "md-nav" in home
    assert ink(home_png) > 0.005, home_png
    assert ink(api_png) > 0.005, api_png
    # Kept for a person to look at: pytest's basetemp holds them after the run.
    print(f"screenshots: {home_png} {api_png}")
