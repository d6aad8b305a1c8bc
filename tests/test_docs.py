"""Every code block of README.md and of the pages under docs/ runs as pasted, so the
documentation cannot drift from the library.

A page's blocks run in order, as a reader pastes them, in one temporary working
directory per page (each ```python block in a fresh namespace, as pasted into a new
interpreter). README.md starts in an empty directory: its first steps write the sample
data the rest reads. The other pages start where those steps leave a reader, beside
`bookie/`, `cluster/` and `pulsar/` (`bkcodec.sample_data`). A ```sh block runs each
of its `bkcodec` commands with this installation's `bkcodec`, and its exit status must
be the one the command's comment states (`# ... exit 1: ...`), else 0.

A block that cannot run here (it needs a cluster, the network, the wheels of
`scripts/run wheel`, ...) says so right before it, with its reason:
`<!-- not run: reason -->`. Tracebacks and failures name the page's own line numbers.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
RUN = {"python", "sh"}  # the languages whose blocks run
SHELL = {"sh", "bash", "shell", "console"}  # shell blocks must be ```sh, run or not

_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_NOT_RUN = re.compile(r"<!--\s*not run\b:?(.*?)-->\s*$", re.S)
_EXIT = re.compile(r"\bexit (\d+)\b")


@dataclass
class Block:
    page: Path
    line: int  # of the block's first line of code
    lang: str
    code: str
    not_run: str | None  # the reason given, "" when none was

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out, previous_end = [], 0
    for m in _FENCE.finditer(text):
        before = text[previous_end : m.start()].rstrip().splitlines()
        marker = _NOT_RUN.search(before[-1]) if before else None
        line = text.count("\n", 0, m.start(2)) + 1
        out.append(Block(page, line, m.group(1), m.group(2), marker.group(1).strip() if marker else None))
        previous_end = m.end()
    return out


ALL = [b for page in PAGES for b in blocks(page)]


def commands(block: Block) -> list[tuple[int, str, int]]:
    """(line, command, expected exit status) of each command in a shell block."""
    out: list[tuple[int, str, int]] = []
    pending, start = "", 0
    for i, raw in enumerate(block.code.splitlines()):
        if not pending:
            start = block.line + i
        pending += raw
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        # A comment starts at a `#` after a space (`env.tar.gz#environment` is no comment).
        hash_ = re.search(r"(^|\s)#", pending)
        command, comment = (pending[: hash_.start()], pending[hash_.end() :]) if hash_ else (pending, "")
        pending = ""
        if command.strip():
            expected = _EXIT.search(comment)
            out.append((start, command.strip(), int(expected.group(1)) if expected else 0))
    return out


def test_the_pages_have_their_blocks():
    # The pattern finding the blocks could silently stop matching; this would catch it.
    langs = [b.lang for b in ALL]
    assert langs.count("python") >= 25 and langs.count("sh") >= 10, langs
    assert {p.name for p in PAGES} >= {"README.md", "files.md", "bookies.md", "cli.md", "spark.md", "pulsar.md"}


def test_a_block_that_does_not_run_says_why():
    unrun = [b for b in ALL if b.not_run is not None]
    for b in unrun:
        assert b.not_run, f"{b.where}: `<!-- not run: ... -->` needs its reason"
        assert b.lang in RUN | SHELL, f"{b.where}: a ```{b.lang} block is never run; mark only code"
    # Most of the documentation runs; what does not is counted and each has its reason.
    assert len(unrun) <= len(ALL) // 4, [b.where for b in unrun]
    print(f"{len(ALL) - len(unrun)} blocks run, {len(unrun)} not run: " + "; ".join(f"{b.where}: {b.not_run}" for b in unrun))


def test_shell_blocks_run_bkcodec_or_say_why_not():
    for b in ALL:
        if b.lang in SHELL and b.not_run is None:
            assert b.lang == "sh", f"{b.where}: a shell block is ```sh"
            for line, command, _ in commands(b):
                assert shlex.split(command)[0] == "bkcodec", (
                    f"{b.page.relative_to(REPO)}:{line}: only `bkcodec` commands run here; "
                    "mark the block `<!-- not run: reason -->`"
                )


def test_no_page_installs_bkcodec_from_an_index():
    # Nothing is on PyPI: the wheels come from dist/ (or the source tree).
    for b in ALL:
        for i, line in enumerate(b.code.splitlines()):
            if "pip install" not in line:
                continue
            args = shlex.split(line.split("pip install", 1)[1].split(" #", 1)[0])
            named = [a for a in args if re.match(r"bkcodec", a)]
            assert not named, f"{b.page.relative_to(REPO)}:{b.line + i}: install {named} from dist/"


def test_the_cluster_recipe_links_the_environment_before_spark_submit():
    """docs/spark.md's packed-environment recipe, step by step in the order that works:
    the wheels from dist/, then in client mode the driver needs ./environment too."""
    recipe = next(b for b in ALL if b.page.name == "spark.md" and "--archives env.tar.gz#environment" in b.code)
    steps = [
        "python -m venv --copies env",
        "env/bin/pip install dist/bkcodec-",
        "venv-pack -p env -o env.tar.gz",
        'ln -s "$PWD/env" environment',
        "export PYSPARK_PYTHON=./environment/bin/python",
        "spark-submit --archives env.tar.gz#environment",
    ]
    lines = recipe.code.splitlines()
    found = [next((i for i, ln in enumerate(lines) if ln.startswith(step)), None) for step in steps]
    assert None not in found, dict(zip(steps, found))
    assert found == sorted(found), dict(zip(steps, found))


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Path:
    """What the README's first steps leave: bookie/, cluster/ and pulsar/."""
    from bkcodec.sample_data import make_bookie_dir, make_cluster, make_pulsar_bookie

    root = tmp_path_factory.mktemp("docs-samples")
    make_bookie_dir(root / "bookie")
    make_cluster(root / "cluster")
    make_pulsar_bookie(root / "pulsar" / "bookie")
    return root


def _bkcodec_env() -> dict[str, str]:
    # This installation's `bkcodec` first on PATH, as after `source .venv/bin/activate`.
    bin_dir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))


RUNNABLE = [p for p in PAGES if any(b.page == p and b.not_run is None and b.lang in RUN for b in ALL)]


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(REPO)) for p in RUNNABLE])
def test_page_runs_as_pasted(page, samples, tmp_path, monkeypatch, request):
    runnable = [b for b in blocks(page) if b.not_run is None and b.lang in RUN]
    if any(b.lang == "python" and re.search(r"\bpyspark\b|\bbkcodec_spark\b", b.code) for b in runnable):
        request.getfixturevalue("spark")  # the one local session (skips without Java or pyspark)
    if page.name != "README.md":
        for name in ("bookie", "cluster", "pulsar"):
            shutil.copytree(samples / name, tmp_path / name, symlinks=True)
    monkeypatch.chdir(tmp_path)
    env = _bkcodec_env()
    for b in runnable:
        if b.lang == "python":
            # Blank lines in front, so the code's line numbers are the page's.
            code = compile("\n" * (b.line - 1) + b.code, str(page), "exec")
            exec(code, {"__name__": "__docs__"})
            continue
        for line, command, expected in commands(b):
            done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == expected, (
                f"{page.relative_to(REPO)}:{line}: `{command}` exited {done.returncode}, "
                f"the page says {expected}\n{done.stderr[-2000:]}"
            )
