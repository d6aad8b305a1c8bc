#!/usr/bin/env python3
"""Writes a large entry log with bkcodec.EntryLogWriter, then streams it with
bkcodec.read_entry_log (digests verified) in a fresh process and reports that
process's peak resident set: it stays bounded by a few batches however large the
file is. Also reports the streaming throughput on the (now cached) file next to a
numpy sum over the same bytes. The file is deleted afterwards.

    .venv/bin/python scripts/entry_log_stream_rss.py --gib 3

Not a test: it takes tens of seconds and gigabytes of disk.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def write_log(path: Path, size: int, payload_size: int) -> int:
    import bkcodec

    blocks = [os.urandom(payload_size) for _ in range(16)]
    next_id = [0] * 8
    written = 0
    count = 0
    with bkcodec.EntryLogWriter(path) as w:
        while written < size:
            ledger = count % 8
            eid = next_id[ledger]
            next_id[ledger] += 1
            payload = blocks[count % 16]
            entry = bkcodec.encode_entry(ledger, eid, eid - 1, (eid + 1) * payload_size, payload, digest_type="crc32c")
            w.add_entry(entry)
            written += len(entry) + 4
            count += 1
    return count


def status() -> dict:
    """Memory figures of this process from /proc/self/status, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024
    return out


def rss_sampler(stop: threading.Event, peaks: dict) -> None:
    """Peak RssAnon (heap) and RssFile (mapped file pages) seen while streaming."""
    while not stop.is_set():
        for key, value in status().items():
            peaks[key] = max(peaks.get(key, 0), value)
        time.sleep(0.005)


def stream(path: str, payload: str) -> dict:
    """Run in a fresh process: stream the log once, report rows, time and memory."""
    import bkcodec

    peaks: dict = {}
    stop = threading.Event()
    sampler = threading.Thread(target=rss_sampler, args=(stop, peaks), daemon=True)
    sampler.start()
    rows = bad = 0
    start = time.perf_counter()
    for batch in bkcodec.read_entry_log(path, payload=payload):
        rows += batch.num_rows
        bad += batch.column("error").null_count != batch.num_rows
    elapsed = time.perf_counter() - start
    stop.set()
    sampler.join()
    return {
        "rows": rows,
        "batches_with_errors": bad,
        "seconds": elapsed,
        # VmHWM is this process's own high-water mark (getrusage's ru_maxrss would
        # also count the parent's resident set at fork).
        "peak_rss": status()["VmHWM"],
        "peak_rss_anon": peaks.get("RssAnon", 0),
        "peak_rss_file": peaks.get("RssFile", 0),
    }


def numpy_sum_seconds(path: Path) -> float:
    import numpy as np

    words = np.memmap(path, dtype=np.uint64, mode="r", shape=(path.stat().st_size // 8,))
    start = time.perf_counter()
    words.sum()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=3.0, help="file size (an entry log holds at most 4 GiB)")
    ap.add_argument("--payload-kib", type=int, default=64)
    ap.add_argument("--dir", default=None, help="where to write the file (default: a temporary directory)")
    ap.add_argument("--stream", nargs=2, metavar=("PATH", "PAYLOAD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stream:
        print(json.dumps(stream(*args.stream)))
        return

    size = int(args.gib * (1 << 30))
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bkcodec-large-") as d:
        path = Path(d) / "0.log"
        try:
            start = time.perf_counter()
            count = write_log(path, size, args.payload_kib * 1024)
            file_size = path.stat().st_size
            print(f"wrote {count} entries, {file_size / 2**30:.2f} GiB in {time.perf_counter() - start:.1f} s")
            numpy_sum_seconds(path)  # make sure every page is cached
            for payload in ("binary", "binary_view", "none"):
                out = subprocess.run(
                    [sys.executable, __file__, "--stream", str(path), payload],
                    check=True, capture_output=True, text=True,
                )
                r = json.loads(out.stdout)
                np_s = numpy_sum_seconds(path)
                gbps = file_size / r["seconds"] / 1e9
                np_gbps = file_size / np_s / 1e9
                assert r["rows"] == count and r["batches_with_errors"] == 0, r
                print(
                    f"payload={payload:12s} rows={r['rows']} read {gbps:.2f} GB/s, numpy sum {np_gbps:.2f} GB/s "
                    f"(ratio {gbps / np_gbps:.2f}); peak RSS {r['peak_rss'] / 2**20:.0f} MiB "
                    f"(anonymous {r['peak_rss_anon'] / 2**20:.0f} MiB, mapped file {r['peak_rss_file'] / 2**20:.0f} MiB)"
                )
        finally:
            path.unlink(missing_ok=True)
    print("file deleted")


if __name__ == "__main__":
    main()
