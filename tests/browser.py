"""Headless Chromium for the tests that look at a page as a person would: the asv
dashboard and the documentation site. Chromium comes from Debian (`scripts/run test`
installs it); without it those tests skip, saying so."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium to render the page (scripts/run test installs Debian's chromium)")


def screenshot(url: str, png: Path) -> str:
    """Renders `url` (scripts run, then a screenshot); returns the DOM as it ended."""
    chromium = browser()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900",
             "--virtual-time-budget=15000", "--no-first-run", "--disable-extensions"]
    subprocess.run([chromium, *flags, f"--screenshot={png}", url], capture_output=True, timeout=120, check=True)
    dom = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True)
    return dom.stdout


@contextmanager
def served(directory: Path) -> Iterator[str]:
    """`directory` served on loopback; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.RequestHandlerClass.log_message = lambda *a: None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
