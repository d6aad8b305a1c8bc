"""Generated benchmark data and a timer, shared by the asv benchmarks and compare.py.

Entries come from ``bkcodec.encode_entry`` so they are exactly what the decoders
expect. Encoding in Python costs about a microsecond per entry, so a set of at
most ``UNIQUE_ENTRIES`` distinct entries is built once per process and tiled to
larger counts; decoders do not care that entry ids repeat.
"""

from __future__ import annotations

import functools
import os
import random
import tempfile
import timeit
from pathlib import Path
from typing import Callable

# numpy's BLAS threads would spin on the other core while timings run.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import bkcodec  # noqa: E402

KiB = 1024
MiB = 1024 * KiB

UNIQUE_ENTRIES = 1 << 16
# Aim for this many entry bytes per generated batch, between these entry counts.
BATCH_BYTES = 32 * MiB
MIN_ENTRIES, MAX_ENTRIES = 256, 100_000

LEDGER_ID = 7
V2_SCOPE_ID = 0x5C0FE

def entry_count(payload_size: int, batch_bytes: int = BATCH_BYTES) -> int:
    """How many entries of this payload size make a batch worth timing."""
    return max(MIN_ENTRIES, min(MAX_ENTRIES, batch_bytes // max(payload_size, 64)))


@functools.lru_cache(maxsize=1)
def _random_source() -> bytes:
    # Seeded, so every run times the same bytes; larger inputs tile it.
    return random.Random(0xB0C).randbytes(2 * MiB)


def pattern(size: int) -> bytes:
    """`size` pseudo-random bytes (the same for every call)."""
    source = _random_source()
    if size <= len(source):
        return source[:size]
    return (source * (size // len(source) + 1))[:size]


@functools.lru_cache(maxsize=16)
def entries(
    count: int,
    payload_size: int,
    digest_type: str = "crc32c",
    format_version: int = 1,
) -> tuple[bytes, ...]:
    """`count` encoded entries of one ledger, each with its own payload bytes."""
    source = _random_source()
    # Payloads start at different offsets so no two neighbouring entries are equal.
    span = len(source) - payload_size
    scope_id = V2_SCOPE_ID if format_version == 2 else 0
    unique = min(count, UNIQUE_ENTRIES)
    encode = bkcodec.encode_entry
    built = []
    length = 0
    for entry_id in range(unique):
        start = (entry_id * 4099) % span if span else 0
        payload = source[start : start + payload_size]
        length += payload_size
        built.append(
            encode(
                LEDGER_ID,
                entry_id,
                entry_id - 1,
                length,
                payload,
                digest_type=digest_type,
                password=b"bench",
                scope_id=scope_id,
                format_version=format_version,
            )
        )
    tiled = built * (count // unique + 1)
    return tuple(tiled[:count])


@functools.lru_cache(maxsize=16)
def entry_array(
    count: int,
    payload_size: int,
    digest_type: str = "crc32c",
    format_version: int = 1,
) -> pa.BinaryArray:
    """The same entries as one Arrow binary column (one contiguous value buffer)."""
    return pa.array(entries(count, payload_size, digest_type, format_version), type=pa.binary())


def value_bytes(array: pa.BinaryArray) -> memoryview:
    """The contiguous entry bytes behind an Arrow binary column."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)
    start, end = int(offsets[array.offset]), int(offsets[array.offset + len(array)])
    return memoryview(array.buffers()[2])[start:end]


def data_dir() -> Path:
    """Where generated files are kept between runs ($BKCODEC_BENCH_DATA or a temp dir)."""
    path = Path(os.environ.get("BKCODEC_BENCH_DATA") or Path(tempfile.gettempdir()) / "bkcodec-bench")
    path.mkdir(parents=True, exist_ok=True)
    return path


def cached_file(name: str, write: Callable[[Path], None]) -> Path:
    """A file under `data_dir()`, made once by `write(path)`; it is written under a
    temporary name and renamed, so concurrent benchmark processes never read a
    half-written file."""
    path = data_dir() / name
    if not path.exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        write(tmp)
        tmp.replace(path)
    return path


def _count(total_bytes: int, payload_size: int) -> int:
    # 4 bytes of framing, 36 of V1 CRC-32C header per entry
    return max(1, total_bytes // (payload_size + 40))


def entry_log(total_bytes: int, payload_size: int) -> tuple[Path, int]:
    """A cached legacy entry log of about `total_bytes`, `payload_size` payloads
    (CRC-32C, V1), rolled (ledgers map written) as a rotated log is; its path and
    number of entries."""
    count = _count(total_bytes, payload_size)

    def write(path: Path) -> None:
        with bkcodec.EntryLogWriter(path, 1, layout="legacy", overwrite=True) as writer:
            for entry in entries(count, payload_size):
                writer.add_entry(entry)

    return cached_file(f"entry-log-{count}x{payload_size}.log", write), count


JOURNAL_FLUSH_EVERY = 64


def journal(total_bytes: int, payload_size: int) -> tuple[Path, int]:
    """A cached V6 journal of about `total_bytes`, `payload_size` payloads (CRC-32C,
    V1): a ledger-key record, then the entries with a flush (so a padding record)
    every JOURNAL_FLUSH_EVERY of them, as a busy bookie writes; its path and number
    of data entries."""
    count = _count(total_bytes, payload_size)

    def write(path: Path) -> None:
        with bkcodec.JournalWriter(path, version=6, overwrite=True) as writer:
            writer.add_ledger_key(LEDGER_ID, bkcodec.master_key(b"bench"))
            for index, entry in enumerate(entries(count, payload_size), 1):
                writer.add_entry(entry)
                if index % JOURNAL_FLUSH_EVERY == 0:
                    writer.flush()

    return cached_file(f"journal-{count}x{payload_size}-v6.txn", write), count


# How a cached file's bytes came into the page cache: the kernel keeps what one large
# write() brought in as large folios, and what many small writes brought in as 4 KiB
# pages, and both mapping and copying a file run at very different speeds on the two.
ONE_WRITE = "in one write()"
RECORD_WRITES = "record by record"
PAGE_CACHE_STATES = (ONE_WRITE, RECORD_WRITES)


@functools.lru_cache(maxsize=4)
def entry_log_as_written(total_bytes: int, payload_size: int, state: str) -> tuple[Path, int]:
    """The entry log of `entry_log(total_bytes, payload_size)`, written afresh (once
    per process) to a new file in the page-cache `state`: in one write(), or in one
    write() per record (the 1024-byte header, each record, then the ledgers map), as
    a bookie appends. A new file and inode each time, so no earlier state lingers;
    renamed into place, so a concurrent reader keeps the file it opened."""
    source, count = entry_log(total_bytes, payload_size)
    data = source.read_bytes()
    record = 4 + _V1_CRC32C_HEADER + payload_size
    if state == ONE_WRITE:
        pieces = [memoryview(data)]
    elif state == RECORD_WRITES:
        view = memoryview(data)
        records_end = _LEGACY_HEADER + count * record
        pieces = [view[:_LEGACY_HEADER]]
        pieces += [view[at : at + record] for at in range(_LEGACY_HEADER, records_end, record)]
        pieces.append(view[records_end:])
    else:
        raise ValueError(f"unknown page-cache state {state!r}")
    slug = "one-write" if state == ONE_WRITE else "record-writes"
    path = data_dir() / f"{source.stem}-{slug}.log"
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for piece in pieces:
            while piece:
                piece = piece[os.write(fd, piece) :]
    finally:
        os.close(fd)
    tmp.replace(path)
    return path, count


_LEGACY_HEADER = 1024
_V1_CRC32C_HEADER = 36


def memory_read(buffer) -> int:
    """The physical floor: read every byte once (numpy sum of 8-byte words)."""
    view = memoryview(buffer).cast("B")
    words = np.frombuffer(view, dtype=np.uint64, count=len(view) // 8)
    return int(words.sum())


def file_memory_read(path: Path) -> int:
    """The physical floor for a file: map it and read every byte once."""
    with open(path, "rb") as f:
        mapped = np.memmap(f, dtype=np.uint8, mode="r")
        words = mapped[: len(mapped) // 8 * 8].view(np.uint64)
        total = int(words.sum())
        del words, mapped
    return total


READ_CHUNKS = (256 * KiB, MiB, 4 * MiB)


@functools.lru_cache(maxsize=len(READ_CHUNKS))
def _read_buffer(chunk: int) -> tuple[bytearray, np.ndarray]:
    buffer = bytearray(chunk)
    return buffer, np.frombuffer(buffer, dtype=np.uint64)


def file_read(path: Path, chunk: int = MiB) -> int:
    """The other floor for a file: read() it in `chunk`-byte pieces into one reused
    buffer and read every byte once (numpy sum of 8-byte words, as
    `file_memory_read`; a trailing partial word is not summed)."""
    buffer, words = _read_buffer(chunk)
    total = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buffer):
            total += int(words[: n // 8].sum())
    return total % 2**64


def _calibrated(fn: Callable, args: tuple, min_time: float) -> tuple[timeit.Timer, int, float]:
    """A timer of `fn(*args)` (timeit's loop, so the overhead per call is one Python
    call, the same for every contender), the number of calls that lasts at least
    `min_time`, and the seconds per call that run took."""
    names = [f"a{i}" for i in range(len(args))]
    timer = timeit.Timer(f"fn({', '.join(names)})", globals={"fn": fn, **dict(zip(names, args))})
    number, elapsed = 1, timer.timeit(1)
    while elapsed < min_time:
        # Grow towards min_time, at most 10x per step so a slow first call can't overshoot.
        number = max(number + 1, min(number * 10, int(number * min_time / max(elapsed, 1e-9) * 1.2)))
        elapsed = timer.timeit(number)
    return timer, number, elapsed / number


def seconds_per_call(fn: Callable, *args, min_time: float = 0.02, repeats: int = 3) -> float:
    """The best of `repeats` timings of `fn(*args)`, each over enough calls to last
    at least `min_time`; seconds per call."""
    timer, number, best = _calibrated(fn, args, min_time)
    for _ in range(repeats - 1):
        best = min(best, timer.timeit(number) / number)
    return best


def location_index(count: int) -> Path:
    """A DbLedgerStorage `locations` database (a bookie's RocksDB options, LZ4) of
    `count` entries in 1000-entry ledgers spread over 8 entry logs, flushed to
    table files. Needs rocksdict (bkcodec[rocksdb])."""

    def write(path: Path) -> None:
        from bkcodec import index_db

        step = 1_000_000
        for first in range(0, count, step):
            rows = [(i // 1000, i % 1000, (i % 8) << 32 | (1028 + 64 * (i // 8))) for i in range(first, min(count, first + step))]
            index_db.write_location_index(path, rows)

    return cached_file(f"locations-{count}", write)


def seconds_side_by_side(calls: list, min_time: float = 0.02, repeats: int = 3) -> list[float]:
    """The best seconds per call of each of `calls` (a function, or a function and
    its arguments as a tuple), timed in turn: each is calibrated as in
    `seconds_per_call`, then every round times each once, so that other work on
    the machine weighs on all of them alike. Each timing follows one untimed call,
    so that none is timed on the caches and memory another one just left."""
    timers, numbers, best = [], [], []
    for call in calls:
        fn, args = call if isinstance(call, tuple) else (call, ())
        timer, number, seconds = _calibrated(fn, tuple(args), min_time)
        timers.append(timer)
        numbers.append(number)
        best.append(seconds)
    for _ in range(repeats - 1):
        for i, (timer, number) in enumerate(zip(timers, numbers)):
            timer.timeit(1)
            best[i] = min(best[i], timer.timeit(number) / number)
    return best


def small_logs_bookie(count: int, payload_size: int = 64) -> Path:
    """A cached bookie directory of `count` rolled entry logs of one entry each,
    `<dir>/ledgers/current/<hex>.log` (about 1.2 KB a file, mostly the legacy
    header): what per-file costs of the directory commands are measured on."""

    def write(root: Path) -> None:
        current = root / "ledgers" / "current"
        current.mkdir(parents=True)
        entry = entries(1, payload_size)[0]
        for log_id in range(count):
            with bkcodec.EntryLogWriter(current / bkcodec.entry_log_file_name(log_id), log_id) as writer:
                writer.add_entry(entry)

    return cached_file(f"small-logs-{count}x{payload_size}", write)
