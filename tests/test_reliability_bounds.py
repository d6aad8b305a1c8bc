"""Bounds on what data and arguments can make bkcodec do: memory held by the batch
whatever sizes Pulsar payloads declare, small files read only when they are regular
files of a sane size, writers that refuse sizes that would fill a disk, and argument
errors that say which argument, before anything is read.

What could exhaust memory, block or fill the disk runs in a child process under
limits (address space, file size, time), so that a regression fails the test rather
than the machine; peak memory is the child's own (`wait4`)."""

from __future__ import annotations

import base64
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest
import zstandard

import bkcodec
import bkcodec.pulsar as pulsar
import bkcodec.sample_data.pulsar as pc

MiB = 1 << 20
GiB = 1 << 30
#: What a child may hold resident: far below what the inputs declare.
PEAK = 1 * GiB
#: Address space a child gets: a safety net, above PEAK.
ADDRESS_SPACE = 2 * GiB
#: What the bombs' entries each declare: 300 MiB (9.6 KB of zstd, inside zstd's ratio bound).
DECLARED = 300 * MiB


# ---------------------------------------------------------------- children under limits


def run_limited(code: str, *args: str, timeout: float = 120, address_space: int = ADDRESS_SPACE, file_size: int | None = None):
    """Runs `python -c code args...` under the limits; returns (exit status, stdout,
    stderr, peak resident bytes). The status is the exit code, or minus the signal."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if file_size is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bkcodec-bounds-{os.getpid()}-{time.monotonic_ns()}"
    with open(f"{out_path}.out", "w+") as out, open(f"{out_path}.err", "w+") as err:
        p = subprocess.Popen([sys.executable, "-c", code, *args], stdout=out, stderr=err, preexec_fn=limits)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                p.returncode = -9
                pytest.fail(f"still running after {timeout} s (blocked?)")
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    os.unlink(f"{out_path}.out")
    os.unlink(f"{out_path}.err")
    return p.returncode, stdout, stderr, usage.ru_maxrss * 1024


def run_cli_limited(*args: str | os.PathLike[str], **limits):
    return run_limited("import sys; from bkcodec.cli import main; sys.exit(main(sys.argv[1:]))", *map(str, args), **limits)


def assert_bounded(status: int, stderr: str, peak: int) -> None:
    assert status == 0, f"exit status {status} (negative: killed by that signal)\n{stderr[-3000:]}"
    assert peak < PEAK, f"peak resident memory {peak / MiB:.0f} MiB"


# ---------------------------------------------------------------- Pulsar decompression bombs


def zstd_zeros(n: int) -> bytes:
    """A zstd frame of `n` zeros (which it declares), compressed in pieces: the zeros
    are never all in memory here."""
    c = zstandard.ZstdCompressor(level=3).compressobj(size=n)
    chunk = bytes(MiB)
    parts = [c.compress(chunk[: min(MiB, n - i)]) for i in range(0, n, MiB)]
    return b"".join(parts) + c.flush()


def java_zlib_zeros(n: int) -> bytes:
    """`n` zeros as Java's Deflater writes them for Pulsar (sync flush, no final block)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 15)
    chunk = bytes(MiB)
    parts = [c.compress(chunk[: min(MiB, n - i)]) for i in range(0, n, MiB)]
    return b"".join(parts) + c.flush(zlib.Z_SYNC_FLUSH)


def write_log(path: Path, ledger: int, payloads: list[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with bkcodec.EntryLogWriter(path) as w:
        for i, p in enumerate(payloads):
            w.add_entry(pc.bk_entry(ledger, i, p))


def message(codec: str, stored: bytes, size: int, sequence_id: int = 0) -> bytes:
    """One non-batched message whose metadata declares `size` uncompressed bytes."""
    md = pc.message_metadata("bomb", sequence_id, compression=pc.CODECS[codec], uncompressed_size=size)
    return pc.frame(md, stored)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    """A bookie of 195 KB: 20 zstd entries (ledger 5, 0.log) and 8 zlib entries
    (ledger 6, 1.log), each honestly declaring 300 MiB; 7 GB if decompressed."""
    root = tmp_path_factory.mktemp("bombs") / "bookie"
    current = root / "ledgers" / "current"
    zstd_stored = zstd_zeros(DECLARED)
    assert len(zstd_stored) < 10_000
    write_log(current / "0.log", 5, [message("zstd", zstd_stored, DECLARED, i) for i in range(20)])
    zlib_stored = java_zlib_zeros(DECLARED)
    write_log(current / "1.log", 6, [message("zlib", zlib_stored, DECLARED, i) for i in range(8)])
    return root, {5: zstd_stored, 6: zlib_stored}


def json_rows(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_pulsar_messages_flags_messages_declaring_more_than_a_batch_holds_in_bounded_memory(bombs):
    root, stored = bombs
    status, stdout, stderr, peak = run_cli_limited("pulsar", "messages", root, "--json")
    assert_bounded(status, stderr, peak)
    rows = json_rows(stdout)
    assert sorted((r["ledger_id"], r["entry_id"]) for r in rows) == [(5, i) for i in range(20)] + [(6, i) for i in range(8)]
    for r in rows:
        # Flagged, not dropped: with the size it declares and the bytes as stored.
        assert r["uncompressed_size"] == DECLARED
        assert f"uncompressed_size {DECLARED} is more than" in r["error"] and "max_message_bytes" in r["error"]
        assert base64.b64decode(r["payload"]) == stored[r["ledger_id"]]


@pytest.mark.parametrize("limit", [[], ["--limit", "1"]])
def test_pulsar_messages_without_payloads_decompresses_nothing(bombs, limit):
    root, _ = bombs
    status, stdout, stderr, peak = run_cli_limited("pulsar", "messages", root, "--json", "--payload", "none", *limit)
    assert_bounded(status, stderr, peak)
    rows = json_rows(stdout)
    assert len(rows) == (1 if limit else 28)
    # The metadata answers everything asked: the messages are whole, unflagged.
    assert all(r["error"] is None and r["payload"] is None and r["uncompressed_size"] == DECLARED for r in rows)


DECODE_MESSAGES = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    import bkcodec, bkcodec.pulsar as pulsar
    rows = []
    for path, n in zip(sys.argv[1::2], sys.argv[2::2]):
        with bkcodec.read_entry_log(path) as r:
            rows.append(r.read_all().slice(0, int(n)))
    batch = pulsar.decode_messages(pa.concat_tables(rows))
    print(json.dumps(batch.select(["ledger_id", "uncompressed_size", "error"]).to_pylist()))
    """
)


def test_decode_messages_flags_bombs_in_bounded_memory_without_aborting(bombs):
    root, _ = bombs
    current = root / "ledgers" / "current"
    status, stdout, stderr, peak = run_limited(DECODE_MESSAGES, str(current / "0.log"), "12", str(current / "1.log"), "8")
    assert_bounded(status, stderr, peak)
    rows = json.loads(stdout)
    assert [r["ledger_id"] for r in rows] == [5] * 12 + [6] * 8
    assert all(r["uncompressed_size"] == DECLARED and "max_message_bytes" in r["error"] for r in rows)


READ_MESSAGES = textwrap.dedent(
    """
    import sys
    import bkcodec.pulsar as pulsar
    rows = payload_bytes = 0
    for batch in pulsar.read_messages(sys.argv[1]):
        assert batch.column("error").null_count == batch.num_rows, batch.column("error")
        rows += batch.num_rows
        payload_bytes += sum(len(p) for p in batch.column("payload").to_pylist())
    print(rows, payload_bytes)
    """
)


def test_read_messages_holds_one_batch_of_decompressed_payloads_at_a_time(tmp_path):
    # Each message really is 64 MiB (within what one message may be): 1.25 GiB in
    # all, one input batch of entries, read as a stream.
    n = 64 * MiB
    stored = zstd_zeros(n)
    write_log(tmp_path / "bookie" / "ledgers" / "current" / "0.log", 7, [message("zstd", stored, n, i) for i in range(20)])
    status, stdout, stderr, peak = run_limited(READ_MESSAGES, str(tmp_path / "bookie"))
    assert_bounded(status, stderr, peak)
    assert stdout.split() == ["20", str(20 * n)]


# ---------------------------------------------------------------- small files and writers


JOURNAL_WRITER = textwrap.dedent(
    """
    import sys
    import bkcodec
    path, option, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        with bkcodec.JournalWriter(path, **{option: value}) as w:
            w.add_entry(bkcodec.encode_entry(1, 0, -1, 2, b"hi"))
    except Exception as e:
        print(type(e).__name__, e)
    else:
        print("accepted")
    """
)


@pytest.mark.parametrize("option, value", [("prealloc_size", 2**40), ("prealloc_size", 2 * GiB), ("alignment", 2**40)])
def test_journal_writer_refuses_sizes_that_would_write_a_disk_of_zeros(tmp_path, option, value):
    path = tmp_path / "1.txn"
    status, stdout, stderr, _ = run_limited(JOURNAL_WRITER, str(path), option, str(value), file_size=64 * MiB)
    assert status == 0, stderr
    kind, _, text = stdout.strip().partition(" ")
    assert kind == "ValueError" and option in text, stdout
    assert not path.exists(), "refused before the file is created"


def test_journal_writer_takes_bookkeepers_default_preallocation(tmp_path):
    with bkcodec.JournalWriter(tmp_path / "1.txn", prealloc_size=16 * MiB, alignment=4096) as w:
        w.add_entry(bkcodec.encode_entry(1, 0, -1, 2, b"hi"))
    assert (tmp_path / "1.txn").stat().st_size == 16 * MiB


READ_COOKIE = textwrap.dedent(
    """
    import sys
    import bkcodec
    try:
        bkcodec.read_cookie(sys.argv[1])
    except Exception as e:
        print(type(e).__name__, e)
    else:
        print("read")
    """
)


def sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


@pytest.mark.parametrize("what", ["fifo", "device", "huge"])
def test_read_cookie_refuses_what_cannot_be_a_cookie_at_once(tmp_path, what):
    if what == "fifo":
        path = tmp_path / "VERSION"
        os.mkfifo(path)
        expected = ("ValueError", "FIFO")
    elif what == "device":
        path = Path("/dev/zero")
        expected = ("ValueError", "character device")
    else:
        path = sparse(tmp_path / "current" / "VERSION", 3 * GiB)
        expected = ("CorruptDataError", "larger than any")
    status, stdout, stderr, peak = run_limited(READ_COOKIE, str(path), timeout=30)
    assert_bounded(status, stderr, peak)
    kind, _, text = stdout.strip().partition(" ")
    assert (kind, expected[1] in text, str(path) in text) == (expected[0], True, True), stdout


def test_bookie_layout_notes_a_cookie_too_large_to_be_one(tmp_path):
    root = tmp_path / "bookie"
    sparse(root / "current" / "VERSION", 3 * GiB)
    code = "import sys, bkcodec; print(repr(bkcodec.bookie_layout(sys.argv[1]).notes))"
    status, stdout, stderr, peak = run_limited(code, str(root), timeout=30)
    assert_bounded(status, stderr, peak)
    assert "cookie not read" in stdout and "larger than any" in stdout, stdout


def test_a_fifo_in_a_metadata_dump_is_a_row_naming_it(tmp_path):
    dump = tmp_path / "dump"
    good = bkcodec.encode_ledger_metadata(bkcodec.LedgerMetadata([(0, ["bk1:3181"])], digest_type="crc32c", password=b"pw"))
    (dump / "ledgers" / "00" / "0000").mkdir(parents=True)
    (dump / "ledgers" / "00" / "0000" / "L0001").write_bytes(good)
    fifo = dump / "ledgers" / "00" / "0000" / "L0002"
    os.mkfifo(fifo)
    rows = bkcodec.ledger_metadata_table(dump).to_pylist()
    by_id = {r["ledger_id"]: r for r in rows}
    assert by_id[1]["error"] is None
    assert "FIFO" in by_id[2]["error"] and str(fifo) in by_id[2]["error"], by_id[2]
    with pytest.raises(ValueError, match="FIFO"):
        bkcodec.load_ledger_metadata_dir(dump)
    # A Pulsar topic's znode, likewise.
    topic = dump / "managed-ledgers" / "public" / "default" / "persistent" / "orders"
    topic.parent.mkdir(parents=True)
    os.mkfifo(topic)
    t = pulsar.topic_ledgers(dump).to_pylist()
    bad = {r["managed_ledger"] or r["ledger_id"]: r["error"] for r in t if r["error"] is not None}
    assert set(bad) == {"public/default/persistent/orders", 2}, t
    assert all("FIFO" in e for e in bad.values()) and str(topic) in bad["public/default/persistent/orders"]


# ---------------------------------------------------------------- argument errors


@pytest.fixture(scope="module")
def pulsar_bookie(tmp_path_factory):
    return pc.make_pulsar_bookie(tmp_path_factory.mktemp("pulsar") / "bookie")


@pytest.mark.parametrize(
    "source, options, error, named",
    [
        (None, {"digest_type": "xx"}, ValueError, "digest_type"),
        (None, {"digest_type": {10: "xx"}}, ValueError, "digest_type"),
        (None, {"password": 123}, TypeError, "password"),
        (None, {"ledgers": [2**64]}, ValueError, "ledgers"),
        (None, {"ledgers": ["10"]}, TypeError, "ledgers"),
        (None, {"ledgers": 10}, TypeError, "ledgers"),
        (None, {"batch_size": -1}, ValueError, "batch_size"),
        (None, {"ledger_metadata": 5}, TypeError, "ledger_metadata"),
        (b"bookie", {}, TypeError, "path_or_reader"),
        ([b"bookie"], {}, TypeError, "path_or_reader"),
    ],
)
def test_read_messages_names_a_bad_argument_before_reading(pulsar_bookie, source, options, error, named):
    with pytest.raises(error, match=named) as e:
        pulsar.read_messages(pulsar_bookie.root if source is None else source, **options)
    assert not isinstance(e.value, bkcodec.BookKeeperFormatError), "a usage error, not damage"
    # The same arguments, good, read the bookie.
    assert pulsar.read_messages(pulsar_bookie.root, ledgers=[10], batch_size=5).read_all().num_rows > 0


def test_write_location_index_onto_a_file_is_file_exists_error(tmp_path):
    pytest.importorskip("rocksdict", reason="rocksdict is not installed (pip install 'bkcodec[rocksdb]')")
    from bkcodec import index_db

    target = tmp_path / "locations"
    target.write_bytes(b"not a database")
    with pytest.raises(FileExistsError) as e:
        index_db.write_location_index(target, {(1, 0): 1 << 32 | 1028})
    assert e.value.filename == str(target)
    assert target.read_bytes() == b"not a database"
