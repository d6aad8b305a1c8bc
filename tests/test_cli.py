"""The `bkcodec` command line, run as a user runs it (`python -m bkcodec ...`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bkcodec


def run_cli(*args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "bkcodec", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def run_json(*args: str | os.PathLike[str], expect: int = 0):
    r = run_cli(*args, "--json")
    assert r.returncode == expect, r.stderr
    return json.loads(r.stdout)


def assert_one_line_error(r: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("bkcodec: error: ")
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


# ---- ledger-id


def test_ledger_id_converts_every_spelling():
    out = run_json("ledger-id", "3", "0x1234", "00000000-0000-0005-0000-000000000007", "ffffffffffffffffffffffffffffffff")
    rows = out["ledger_ids"]
    assert [(r["scope_id"], r["ledger_id"]) for r in rows] == [(0, 3), (0, 0x1234), (5, 7), (-1, -1)]
    assert rows[0]["qualified_name"] == "0" * 31 + "3"
    assert rows[0]["uuid"] == "00000000-0000-0000-0000-000000000003"
    assert rows[1]["index_path"] == "12/34/1234.idx"
    assert rows[2]["index_path"] == "0/5/0/7/7.idx"
    assert int(rows[3]["value"]) == 2**128 - 1
    for r in rows:
        lid = bkcodec.LedgerId.from_qualified_name(r["uuid"])
        assert (lid.scope_id, lid.ledger_id) == (r["scope_id"], r["ledger_id"])
        assert lid.index_path() == r["index_path"]


def test_ledger_id_scope_and_unsigned_spelling():
    rows = run_json("ledger-id", "--scope", "0x5", "7", "0xffffffffffffffff")["ledger_ids"]
    assert rows[0]["qualified_name"] == "00000000000000050000000000000007"
    assert rows[1]["ledger_id"] == -1 and rows[1]["scope_id"] == 5


def test_ledger_id_finds_the_index_file(golden):
    ledger_dir = golden("index", "ledgers")
    rows = run_json("ledger-id", "3", "4660", "5", "--ledger-dir", ledger_dir)["ledger_ids"]
    assert [r["index_file_exists"] for r in rows] == [True, True, False]
    assert rows[1]["index_file"] == str(ledger_dir / "current" / "12" / "34" / "1234.idx")


def test_ledger_id_text_output():
    r = run_cli("ledger-id", "0x1234")
    assert r.returncode == 0
    assert "00000000-0000-0000-0000-000000001234" in r.stdout and "12/34/1234.idx" in r.stdout


@pytest.mark.parametrize("value", ["xyz", "0x1" + "0" * 17, "123456789012345678901234567890123"])
def test_ledger_id_rejects_garbage(value):
    assert_one_line_error(run_cli("ledger-id", value), value)


def test_usage_errors_exit_2():
    assert run_cli().returncode == 2
    assert run_cli("no-such-command").returncode == 2
    assert run_cli("ledger-id").returncode == 2
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("bkcodec ")
