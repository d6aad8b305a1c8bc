"""README.md's Python examples run as pasted, so the README cannot drift from the library.

Each ```python block runs on its own (a fresh namespace, as pasted into a new
interpreter) with a fresh temporary directory as the working directory, holding
`bookie/`: the sample bookie directory `bkcodec.sample_data.make_bookie_dir` writes,
which the examples read (and, for the Pulsar examples, `pulsar/`). A block that makes
that directory itself starts in an empty one. Tracebacks name README.md's own line numbers.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bkcodec.sample_data import make_bookie_dir

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks() -> list[tuple[int, str]]:
    """(first line number, code) of each ```python block, in README order."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


BLOCKS = python_blocks()


def test_readme_has_its_examples():
    # The pattern finding the blocks could silently stop matching; this would catch it.
    assert len(BLOCKS) >= 12


@pytest.fixture(scope="module")
def sample_bookie(tmp_path_factory) -> Path:
    return make_bookie_dir(tmp_path_factory.mktemp("readme-sample") / "bookie").root


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_block_runs_as_pasted(line, code, sample_bookie, tmp_path, monkeypatch, request):
    if "pyspark" in code:
        request.getfixturevalue("spark")  # the one local session (skips without Java or pyspark)
    if "make_bookie_dir(" not in code:
        shutil.copytree(sample_bookie, tmp_path / "bookie")
    if "bkcodec.pulsar" in code:
        # The Pulsar examples read a bookie holding Pulsar topics and its metadata dump.
        from bkcodec.sample_data import make_pulsar_bookie

        make_pulsar_bookie(tmp_path / "pulsar" / "bookie")
    monkeypatch.chdir(tmp_path)
    # Blank lines in front, so the code's line numbers are README's.
    compiled = compile("\n" * (line - 1) + code, str(README), "exec")
    exec(compiled, {"__name__": "__readme__"})
