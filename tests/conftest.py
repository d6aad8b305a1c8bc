"""Shared fixtures: the golden corpus (skipped with a reason when absent)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(os.environ.get("BKCODEC_GOLDEN", REPO.parent / "shared" / "golden"))


def golden_path(*parts: str) -> Path:
    """A path inside the golden corpus; skips the test when the corpus is absent."""
    p = GOLDEN.joinpath(*parts)
    if not GOLDEN.is_dir():
        pytest.skip(
            f"golden corpus not found at {GOLDEN} (it sits beside the repository in CI; "
            "set BKCODEC_GOLDEN to point elsewhere)"
        )
    return p


def read_jsonl(path: Path) -> list[dict]:
    # Python's json keeps 64-bit integers exact, as the corpus requires.
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture
def golden():
    return golden_path
