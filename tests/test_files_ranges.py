"""Byte ranges: a record belongs to the range its size field starts in, so ranges
that tile a file (how a large file is split across workers) read every entry
exactly once, whatever the cut points."""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bkcodec
from conftest import GOLDEN

GOLDEN_LOGS = [
    "entrylogs/many_ledgers/current/10.log",
    "entrylogs/multi_ledger/current/0.log",
    "entrylogs/open_log/current/2a.log",
    "entrylogs/torn_mid_entry_body/current/0.log",
    "direct_entrylogs/direct_open/current/0.log",
    "direct_entrylogs/direct_rolled/current/0.log",
]
GOLDEN_JOURNALS = ["journals/v5/journal/current/18bcfe56be8.txn", "journals/v6/journal/current/18bcfe56800.txn"]
KEY = ["offset", "ledger_id", "entry_id", "error"]


def rows(reader, digest=False):
    keys = KEY + ["digest_ok"] if digest else KEY
    return [tuple(r[k] for k in keys) for r in reader.read_all().select(keys).to_pylist()]


def tiled(read, path, cuts, digest=False):
    """Rows of the ranges [c0, c1), [c1, c2), ... in order."""
    size = os.path.getsize(path)
    bounds = [0, *sorted(cuts), size]
    out = []
    for start, end in zip(bounds, bounds[1:]):
        out.extend(rows(read(path, start=start, end=end), digest))
    return out


def golden(rel):
    path = GOLDEN / rel
    if not path.exists():
        pytest.skip(f"golden corpus not found at {GOLDEN}")
    return path


def read_log(path, **kw):
    digest = "dummy" if path.name == "10.log" else None
    return bkcodec.read_entry_log(path, digest_type=digest, payload="none", batch_size=1000, **kw)


def read_journal(path, **kw):
    return bkcodec.read_journal(path, password="secret", payload="none", include_padding=True, **kw)


cut_lists = st.lists(st.floats(0, 1), max_size=8)


@pytest.mark.golden
@pytest.mark.parametrize("rel", GOLDEN_LOGS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=cut_lists)
def test_golden_entry_logs_tile(rel, cuts):
    path = golden(rel)
    size = os.path.getsize(path)
    whole = rows(read_log(path))
    assert tiled(read_log, path, [int(c * size) for c in cuts]) == whole


@pytest.mark.golden
@pytest.mark.parametrize("rel", GOLDEN_JOURNALS)
@settings(max_examples=25, deadline=None)
@given(cuts=cut_lists)
def test_golden_journals_tile(rel, cuts):
    path = golden(rel)
    # Only the written part matters; cuts in the preallocated zeros are cheap.
    span = 30000
    assert tiled(read_journal, path, [int(c * span) for c in cuts]) == rows(read_journal(path))


def generated_log(d, seed, layout, damage):
    rng = random.Random(seed)
    path = Path(d) / "3.log"
    with bkcodec.EntryLogWriter(path, layout=layout, buffer_size=16384, overwrite=True) as w:
        for i in range(rng.randrange(1, 120)):
            lid = rng.randrange(4)
            size = rng.choice([0, 10, 200, 3000])
            payload = rng.randbytes(size) if rng.random() < 0.7 else bytes(size)
            w.add_entry(bkcodec.encode_entry(lid, i, i - 1, size, payload, digest_type=("crc32c", "crc32")[lid % 2]))
            if layout == "direct" and rng.random() < 0.1:
                w.flush()
    if damage:
        data = bytearray(path.read_bytes())
        for _ in range(rng.randrange(1, 4)):
            a = rng.randrange(1024, len(data))
            n = rng.randrange(1, 200)
            data[a : a + n] = rng.choice([bytes(n), rng.randbytes(n)])
        path.write_bytes(bytes(data))
    return path


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["legacy", "direct"]), st.booleans(), cut_lists)
def test_generated_entry_logs_tile(seed, layout, damage, cuts):
    with tempfile.TemporaryDirectory() as d:
        path = generated_log(d, seed, layout, damage)
        size = os.path.getsize(path)
        whole = rows(read_log(path))
        parts = tiled(read_log, path, [int(c * size) for c in cuts])
        if not damage:
            assert parts == whole
        else:
            # Every entry the whole-file read verifies is verified once, by exactly one
            # range. (What a ledger's type is can differ for a damaged entry: a range
            # that starts after the ledger's good entries may not learn it, and says
            # the entry is unchecked where the whole file says it is damaged.)
            verified = [r for r in rows(read_log(path), digest=True) if r[4]]
            assert [r for r in tiled(read_log, path, [int(c * size) for c in cuts], digest=True) if r[4]] == verified


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), cut_lists)
def test_generated_journals_tile(seed, cuts):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "1.txn"
        with bkcodec.JournalWriter(path, version=rng.choice([4, 5, 6]), alignment=rng.choice([512, 4096])) as w:
            for i in range(rng.randrange(1, 80)):
                k = rng.random()
                if k < 0.7:
                    size = rng.choice([0, 30, 700])
                    w.add_entry(bkcodec.encode_entry(1, i, i - 1, size, rng.randbytes(size)))
                elif k < 0.8:
                    w.add_ledger_key(i, bkcodec.master_key(str(i)))
                elif k < 0.9:
                    w.add_fence(i)
                else:
                    w.flush()
        size = os.path.getsize(path)
        assert tiled(read_journal, path, [int(c * size) for c in cuts]) == rows(read_journal(path))


def test_ranges_and_batches_compose():
    """Batches never cross a range and a range's rows arrive in file order."""
    path = GOLDEN / "entrylogs/multi_ledger/current/0.log"
    if not path.exists():
        pytest.skip("golden corpus absent")
    size = os.path.getsize(path)
    mid = size // 2
    first = pa.table(bkcodec.read_entry_log(path, end=mid, batch_size=7))
    second = pa.table(bkcodec.read_entry_log(path, start=mid, batch_size=7))
    offsets = first["offset"].to_pylist() + second["offset"].to_pylist()
    assert offsets == sorted(offsets) and len(offsets) == 300
    assert max(first["offset"].to_pylist()) < mid <= min(second["offset"].to_pylist())
    assert bkcodec.read_entry_log(path, start=size, end=size).read_all().num_rows == 0
    assert bkcodec.read_entry_log(path, start=size + 100).read_all().num_rows == 0
