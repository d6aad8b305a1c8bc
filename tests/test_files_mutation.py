"""Files that change under open readers, and paths that are not regular files.

A live bookie truncates, replaces and deletes entry logs (compaction, garbage
collection) and journals while an operator reads them. Each case runs in a
subprocess, so a signal (the SIGBUS a mapped file gives when it shrinks, issue 13
item 1) shows as a negative return code instead of killing the test run: the reader
must give a typed error naming the file and offset, or flag the rows
(`file_shrank`), and payloads already returned must not change.

FIFOs, devices, directories and /proc files are refused at once by every reader and
header function (issue 13 item 3: a FIFO named like an entry log blocked forever);
the FIFO case runs in a thread with a time limit, so a hang fails instead of blocking.

Memory (issue 12): sparse 2 GiB entry logs (a preallocated hole, a zero tail) and a
journal with a large zero tail are read in small batches and their ledgers maps
computed in under 300 MB of peak RSS, measured in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import bkcodec

READERS = ["read_entry_log", "read_journal", "read_index"]
HEADERS = ["entry_log_header", "ledgers_map", "journal_header", "index_header", "read_last_mark", "read_last_id"]


def run_case(code: str, timeout: float = 300) -> dict:
    """Runs `code` in a fresh interpreter; it prints one JSON object last."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"the reader's process ended with {r.returncode} (negative: a signal)\n{r.stderr[-3000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


# The body shared by the mutation cases: build the file, open a reader, read one
# batch (keeping its payload views), mutate the file, read on; report what came.
BODY = """
import json, os, sys
import bkcodec

kind, how, on_error, path = {kind!r}, {how!r}, {on_error!r}, {path!r}
payload = 1000

def build(p, seed):
    if kind == "entry_log":
        with bkcodec.EntryLogWriter(p, overwrite=True) as w:
            return [bkcodec.split_location(w.add_entry(bkcodec.encode_entry(1, i, i - 1, payload * (i + 1), bytes([seed + i & 255]) * payload)))[1] - 4
                    for i in range(3000)]
    if kind == "journal":
        with bkcodec.JournalWriter(p, version=6, overwrite=True) as w:
            out = []
            for i in range(3000):
                out.append(w.add_entry(bkcodec.encode_entry(1, i, i - 1, payload * (i + 1), bytes([seed + i & 255]) * payload)))
                if i % 100 == 99:
                    w.flush()
            return out
    bkcodec.write_index_file(p, {{e: bkcodec.make_location(0, 1024 + 64 * e) for e in range(200_000)}}, overwrite=True)
    return list(range(200_000))

records = build(path, 0)
if kind == "index":
    reader = bkcodec.read_index(path, batch_size=1000)
else:
    open_reader = bkcodec.read_entry_log if kind == "entry_log" else bkcodec.read_journal
    reader = open_reader(path, batch_size=200, payload="binary_view", on_error=on_error)
first = reader.read_next_batch()
kept = [bytes(p) for p in first.column("payload").to_pylist()] if "payload" in first.schema.names else []

size = os.path.getsize(path)
cut = size // 3
if how == "truncate":
    os.truncate(path, cut)
elif how == "replace":
    other = os.path.join(os.path.dirname(path), "7" + os.path.splitext(path)[1])
    build(other, 7)
    os.replace(other, path)
elif how == "delete":
    os.unlink(path)
elif how == "zero_then_truncate":
    with open(path, "r+b") as f:
        f.truncate(cut)
        f.truncate(size)

rows, error = list(first.to_pylist()), None
try:
    for batch in reader:
        rows.extend(batch.to_pylist())
except bkcodec.BookKeeperFormatError as e:
    error = {{"type": type(e).__name__, "offset": e.offset, "path": e.path, "text": str(e)}}
# Payloads handed out before the change are the reader's own bytes.
still = [bytes(p) for p in first.column("payload").to_pylist()] if kept else []
key = "entry_id" if kind == "index" else "offset"
print(json.dumps({{
    "error": error, "size": size, "cut": cut, "records": len(records),
    "keys": [r[key] for r in rows if r.get("error") is None],
    "flagged": [(r["offset"], r.get("error_kind")) for r in rows if r.get("error") is not None],
    "payloads_unchanged": still == kept,
    "first_batch": first.num_rows,
}}))
"""


@pytest.mark.parametrize("kind", ["entry_log", "journal", "index"])
@pytest.mark.parametrize("how", ["truncate", "replace", "delete", "zero_then_truncate"])
@pytest.mark.parametrize("on_error", ["flag", "raise"])
def test_file_changing_under_an_open_reader(tmp_path, kind, how, on_error):
    # Issue 13 item 1 and issue 12's I/O tests: a file that shrinks (or is replaced,
    # deleted, or zeroed and cut) while a reader has it open.
    if kind == "index" and on_error == "raise":
        pytest.skip("index readers have no on_error setting")
    name = {"entry_log": "5.log", "journal": "5.txn", "index": "5.idx"}[kind]
    path = str(tmp_path / name)
    got = run_case(BODY.format(kind=kind, how=how, on_error=on_error, path=path))
    assert got["payloads_unchanged"]
    keys = got["keys"]
    assert keys == sorted(set(keys)), "rows in order, each once"
    if how in ("replace", "delete"):
        # The reader reads the file it opened, which lives on until it is closed.
        assert got["error"] is None and got["flagged"] == [] and len(keys) == got["records"]
        return
    error, flagged = got["error"], got["flagged"]
    if kind == "index":
        assert error is None or error["type"] in ("TruncatedError", "CorruptDataError")
        assert len(keys) >= got["first_batch"]
        return
    assert len(keys) < got["records"]
    if how == "zero_then_truncate":
        # The same size, zeros from the cut: damage where records were (a journal's
        # zeros are where its data ends, unless lastMark says otherwise).
        if on_error == "raise" and kind == "entry_log":
            assert error is not None and error["path"] == path and error["offset"] is not None
        elif kind == "entry_log":
            assert flagged and all(at >= got["cut"] - 10_000 for at, _ in flagged)
        return
    # Shrunk: the rows up to where the data now ends, then a flag or the typed error.
    if on_error == "flag":
        assert error is None
        assert [k for _, k in flagged][-1] == "file_shrank" and flagged[-1][0] <= got["cut"]
    else:
        assert error is not None and error["type"] in ("TruncatedError", "CorruptDataError")
        assert error["path"] == path and error["offset"] is not None and error["offset"] <= got["size"]


def test_a_shrunk_file_is_a_flagged_row_naming_where_it_shrank(tmp_path):
    # The row of the cut: where the data now ends and how far it went before.
    path = str(tmp_path / "3.log")
    got = run_case(BODY.format(kind="entry_log", how="truncate", on_error="flag", path=path))
    at, kind = got["flagged"][-1]
    assert kind == "file_shrank" and got["keys"][-1] < at <= got["cut"]


def call_with_timeout(fn, arg, timeout=20):
    """(exception or None, finished) of fn(arg), run in a thread."""
    out = {}

    def target():
        try:
            r = fn(arg)
            if hasattr(r, "read_all"):
                r.read_all()
            out["error"] = None
        except BaseException as e:  # noqa: BLE001 - judged by the caller
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    return out.get("error"), not t.is_alive()


@pytest.mark.parametrize("what", ["fifo", "dev_zero", "directory", "proc_status"])
@pytest.mark.parametrize("fn", READERS + HEADERS)
def test_paths_that_are_not_regular_files_are_refused_at_once(tmp_path, what, fn):
    # Issue 13 item 3 (a FIFO blocked every reader forever) and the small items (a
    # directory said "[Errno 19] No such device"; /proc files read as 0 rows).
    if what == "fifo":
        path = tmp_path / "3.log"
        os.mkfifo(path)
    else:
        path = {"dev_zero": Path("/dev/zero"), "directory": tmp_path, "proc_status": Path("/proc/self/status")}[what]
        if not path.exists():
            pytest.skip(f"{path} does not exist here")
    error, finished = call_with_timeout(getattr(bkcodec, fn), path)
    assert finished, f"{fn} blocked on a {what}"
    assert error is not None, f"{fn} accepted a {what}"
    text = str(error)
    if what == "directory":
        assert isinstance(error, IsADirectoryError) and "Is a directory" in text
    else:
        assert isinstance(error, ValueError)
        expected = {"fifo": "FIFO", "dev_zero": "character device", "proc_status": "/proc"}[what]
        assert expected in text and str(path) in text


# ---------------------------------------------------------------------------
# Memory: sparse and preallocated tails.

MEMORY = """
import json, os
import bkcodec

path, kind, layout = {path!r}, {kind!r}, {layout!r}
if kind == "entry_log":
    with bkcodec.EntryLogWriter(path, layout=layout) as w:
        for i in range(100):
            w.add_entry(bkcodec.encode_entry(1, i, i - 1, 100 * (i + 1), bytes(100)))
        w.close(roll=False)
else:
    with bkcodec.JournalWriter(path, version=6) as w:
        for i in range(100):
            w.add_entry(bkcodec.encode_entry(1, i, i - 1, 100 * (i + 1), bytes(100)))
# A 2 GiB hole after the data: preallocated (direct, journal) or a zero tail (legacy).
with open(path, "r+b") as f:
    f.truncate(2 << 30)
assert os.stat(path).st_blocks * 512 < 1 << 20, "the file must be sparse"
if kind == "entry_log":
    rows = sum(b.num_rows for b in bkcodec.read_entry_log(path, batch_size=10))
    lmap = bkcodec.ledgers_map(path)
    extra = [lmap.source, dict(lmap.ledgers)]
else:
    rows = sum(b.num_rows for b in bkcodec.read_journal(path, batch_size=10))
    extra = []
# VmHWM, not ru_maxrss: Linux carries that across exec (the parent test run's size)
peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) // 1024
os.unlink(path)
print(json.dumps({{"rows": rows, "peak_mb": peak, "extra": extra}}))
"""


@pytest.mark.parametrize("kind,layout", [("entry_log", "direct"), ("entry_log", "legacy"), ("journal", None)])
def test_sparse_two_gib_tails_are_read_in_bounded_memory(tmp_path, kind, layout):
    # Issue 12: a direct log preallocated to 2 GiB reached 2.1 GB resident with
    # read_entry_log(batch_size=10) and with ledgers_map(); a legacy log with a 2 GiB
    # zero tail 2.2 GB. (An open log: its ledgers map is counted by a scan.)
    path = str(tmp_path / ("1.log" if kind == "entry_log" else "1.txn"))
    got = run_case(MEMORY.format(path=path, kind=kind, layout=layout), timeout=600)
    assert got["rows"] == 100
    if kind == "entry_log":
        assert got["extra"] == ["scan", {"1": 100 * (4 + 32 + 4 + 100)}]
    assert got["peak_mb"] < 300, f"peak RSS {got['peak_mb']} MB"
