#!/usr/bin/env python3
"""Writes a large DbLedgerStorage `locations` database (a bookie's RocksDB options,
LZ4 tables), then streams it with bkcodec.read_location_index in a fresh process
and reports that process's peak resident set and throughput next to rocksdict's
raw iteration of the same database. Memory stays bounded by a batch or two however
many entries the index holds. The database is deleted afterwards.

    .venv/bin/python scripts/index_stream_rss.py --millions 20

Not a test: it takes minutes and a gigabyte of disk. Needs bkcodec[rocksdb].
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))


def status() -> dict:
    """Memory figures of this process from /proc/self/status, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon"):
                out[key] = int(value.split()[0]) * 1024
    return out


def stream(path: str, raw: bool) -> dict:
    """Run in a fresh process: read the index once, report rows, time and memory."""
    import bkcodec
    import rocksdict

    peak = {"RssAnon": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak["RssAnon"] = max(peak["RssAnon"], status()["RssAnon"])
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    start_rss = status()["RssAnon"]
    sampler.start()
    rows = 0
    start = time.perf_counter()
    if raw:
        db = rocksdict.Rdict(path, rocksdict.Options(raw_mode=True), access_type=rocksdict.AccessType.read_only())
        for _ in db.items():
            rows += 1
        db.close()
    else:
        for batch in bkcodec.read_location_index(path):
            rows += batch.num_rows
    elapsed = time.perf_counter() - start
    stop.set()
    sampler.join()
    return {"rows": rows, "seconds": elapsed, "start_rss_anon": start_rss, "peak_rss_anon": peak["RssAnon"], "peak_rss": status()["VmHWM"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--millions", type=float, default=20.0, help="index entries, in millions")
    ap.add_argument("--dir", default=None, help="where to write the database (default: a temporary directory)")
    ap.add_argument("--stream", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stream:
        print(json.dumps(stream(args.stream[0], args.stream[1] == "raw")))
        return

    from bkcodec import index_db

    count = int(args.millions * 1_000_000)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bkcodec-index-") as d:
        path = Path(d) / "locations"
        start = time.perf_counter()
        step = 1_000_000
        for first in range(0, count, step):
            rows = [(i // 1000, i % 1000, (i % 8) << 32 | (1028 + 64 * (i // 8))) for i in range(first, min(count, first + step))]
            index_db.write_location_index(path, rows)
        size = sum(p.stat().st_size for p in path.iterdir())
        print(f"wrote {count} entries, {size / 2**20:.0f} MiB of database in {time.perf_counter() - start:.0f} s")
        for mode in ("bkcodec", "raw"):
            out = subprocess.run([sys.executable, __file__, "--stream", str(path), mode], check=True, capture_output=True, text=True)
            r = json.loads(out.stdout)
            assert r["rows"] == count, r
            print(
                f"{mode:8s} {r['rows'] / r['seconds'] / 1e6:.2f} M rows/s; anonymous memory "
                f"{r['start_rss_anon'] / 2**20:.0f} MiB at start, {r['peak_rss_anon'] / 2**20:.0f} MiB at peak "
                f"(peak RSS {r['peak_rss'] / 2**20:.0f} MiB)"
            )
    print("database deleted")


if __name__ == "__main__":
    main()
