"""The benchmarks keep working: benches/compare.py --quick runs and prints the
expected shape, its pure-Python baseline decoder is correct, and every asv
benchmark runs once. No timing is asserted anywhere."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bkcodec

BENCHES = Path(__file__).resolve().parent.parent / "benches"
sys.path.insert(0, str(BENCHES))

_spec = importlib.util.spec_from_file_location("bkcodec_bench_compare", BENCHES / "compare.py")
compare = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)
work = importlib.import_module("benchmarks._workloads")

STATUSES = {"PASS", "MISS", "INFO"}


def run_compare(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCHES / "compare.py"), "--quick", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


@pytest.fixture(scope="module")
def quick_json() -> dict:
    return json.loads(run_compare("--json").stdout)


def test_quick_json_has_every_target_and_well_formed_lines(quick_json):
    results = quick_json["comparisons"]
    keys = [r["key"] for r in results]
    assert len(keys) == len(set(keys))
    # Every recorded target shows up, measured or skipped with a reason.
    assert set(compare.TARGETS) <= set(keys)
    for r in results:
        if r["status"] == "SKIP":
            assert r["reason"]
            continue
        assert r["status"] in STATUSES
        assert r["ours"] > 0 and r["baseline"] > 0
        assert r["ratio"] == pytest.approx(r["ours"] / r["baseline"])
        assert (r["target"] is None) == (r["status"] == "INFO")
        assert (r["key"] in compare.TARGETS) == (r["target"] is not None)
    assert quick_json["quick"] is True
    assert quick_json["machine"]["bkcodec"]
    assert quick_json["machine"]["cpu"]
    # The file lines name their page-cache state and the floors they were held to.
    files = [r for r in results if r["key"].startswith("read-entry-log") and r["status"] != "SKIP"]
    assert {r["details"]["page_cache"] for r in files} == set(work.PAGE_CACHE_STATES)
    for r in files:
        assert {"mmap+numpy sum"} < set(r["details"]["floors_gb_per_s"])
        assert r["baseline"] == pytest.approx(max(r["details"]["floors_gb_per_s"].values()))


def test_quick_text_prints_one_line_per_comparison(quick_json):
    # A second run: statuses may differ from the JSON run's, the shape may not.
    lines = run_compare().stdout.strip().splitlines()
    body = [line for line in lines[:-1] if line.strip()]
    assert len(body) == len(quick_json["comparisons"])
    for line, r in zip(body, quick_json["comparisons"]):
        assert line.startswith(r["name"])
        if r["status"] == "SKIP":
            assert re.search(r"\bSKIP\b", line) and r["reason"] in line
        elif r["target"] is None:
            assert re.search(r"\d\.\d\dx .* INFO  bkcodec \S+ ", line), line
        else:
            assert re.search(r"\d\.\d\dx  target >= .* (PASS|MISS)  ", line), line
    assert re.fullmatch(
        r"\d+ PASS, \d+ MISS, \d+ s(, load average [\d.]+ on \d+ cpus)?, CPU \S.*?(; missed: \S.*)?", lines[-1]
    ), lines[-1]


def test_strict_exit_code_follows_the_misses():
    proc = subprocess.run(
        [sys.executable, str(BENCHES / "compare.py"), "--quick", "--json", "--strict"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    missed = any(r["status"] == "MISS" for r in json.loads(proc.stdout)["comparisons"])
    assert proc.returncode == (1 if missed else 0), proc.stderr


# The baseline decoder must be a real decoder, or the ratio against it means nothing.


@pytest.mark.parametrize("format_version", [1, 2])
@pytest.mark.parametrize("payload_size", [0, 64, 20_000])
def test_python_decoder_agrees_with_decode_entries(format_version, payload_size):
    entries = work.entries(50, payload_size, "crc32c", format_version)
    ours = bkcodec.decode_entries(list(entries), digest_type="crc32c", password=b"bench").to_pydict()
    theirs = compare.python_decode_crc32c(entries)
    for name, values in theirs.items():
        if name == "payload":
            values = [bytes(v) for v in values]
        assert values == ours[name], name


def test_python_decoder_detects_a_flipped_bit():
    entries = list(work.entries(8, 64))
    damaged = bytearray(entries[5])
    damaged[-1] ^= 0x10
    entries[5] = bytes(damaged)
    with pytest.raises(compare.PythonEntryError, match="row 5: CRC-32C digest mismatch"):
        compare.python_decode_crc32c(entries)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (b"", "empty entry"),
        (bytes(35), "truncated V1 entry"),
        (b"\xa3" + bytes(40), "truncated V2 entry"),
        (b"\xb3" + bytes(60), "unsupported entry format version 3"),
        (b"\xa1" + bytes(60), "digest type 1 is not CRC-32C"),
    ],
)
def test_python_decoder_rejects_malformed_entries(entry, message):
    with pytest.raises(compare.PythonEntryError, match=message):
        compare.python_decode_crc32c([entry])


@pytest.mark.parametrize("codec", ["lz4", "none"])
def test_pulsar_python_decoder_agrees_with_decode_messages(codec):
    import pyarrow as pa

    import bkcodec.pulsar

    pulsar_work = importlib.import_module("benchmarks._pulsar")
    entries = pulsar_work.entries(3, batch=7, codec=codec)
    ours = bkcodec.pulsar.decode_messages(pa.array(entries)).to_pydict()
    theirs = pulsar_work.python_decode(entries)
    for name, values in theirs.items():
        if name in ("publish_time", "event_time"):
            values = [None if v is None else v for v in values]
            ours_values = [None if v is None else int(v.timestamp() * 1000) for v in ours[name]]
        elif name == "properties":
            ours_values = [list(v) if v is not None else None for v in ours[name]]
        else:
            ours_values = ours[name]
        assert values == ours_values, name


def test_memory_read_reads_every_word(tmp_path):
    data = bytes(range(256)) * 64
    expected = sum(int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data), 8)) % 2**64
    assert work.memory_read(data) == expected
    path = tmp_path / "words"
    path.write_bytes(data + b"\x01")  # a trailing partial word is not summed
    assert work.file_memory_read(path) == expected
    # read() into a reused buffer sums the same words, whatever the chunk size.
    for chunk in (64, 4096, 1 << 20):
        assert work.file_read(path, chunk) == expected


def test_page_cache_states_hold_the_same_log(tmp_path, monkeypatch):
    monkeypatch.setenv("BKCODEC_BENCH_DATA", str(tmp_path))
    work.entry_log_as_written.cache_clear()
    try:
        source, count = work.entry_log(64 * 1024, 1024)
        for state in work.PAGE_CACHE_STATES:
            path, n = work.entry_log_as_written(64 * 1024, 1024, state)
            assert n == count and path != source
            assert path.read_bytes() == source.read_bytes()
    finally:
        work.entry_log_as_written.cache_clear()


# asv: every benchmark of every module runs once on its first (smallest) parameters.

RUN_ONCE = """
import importlib, sys
cls = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])
grid = getattr(cls, "params", [])
if grid and not isinstance(grid[0], (list, tuple)):
    grid = [grid]  # asv's form for a single parameter
params = [values[0] for values in grid]
bench = cls()
try:
    bench.setup(*params)
except NotImplementedError as skip:  # asv's way of skipping a benchmark
    print("SKIP", skip)
    sys.exit(0)
methods = [m for m in dir(bench) if m.startswith(("time_", "track_"))]
assert methods, "no benchmarks"
for method in methods:
    value = getattr(bench, method)(*params)
    assert not method.startswith("track_") or value > 0, (method, value)
if hasattr(bench, "teardown"):
    bench.teardown(*params)
print("OK", len(methods))
"""


def benchmark_classes():
    for path in sorted((BENCHES / "benchmarks").glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = importlib.import_module(f"benchmarks.{path.stem}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and not name.startswith("_"):
                # The Spark benchmark starts a JVM: slow, and kept out of this process
                # so it cannot stop a session other tests share.
                marks = (pytest.mark.spark, pytest.mark.slow) if path.stem == "spark" else ()
                yield pytest.param(module.__name__, name, id=f"{path.stem}.{name}", marks=marks)


@pytest.mark.parametrize(("module", "name"), list(benchmark_classes()))
def test_asv_benchmark_runs_once(module, name):
    proc = subprocess.run(
        [sys.executable, "-c", RUN_ONCE, module, name],
        cwd=BENCHES,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = proc.stdout.strip().splitlines()[-1]
    if verdict.startswith("SKIP"):
        pytest.skip(verdict)
    assert verdict.startswith("OK")


@pytest.mark.skipif(shutil.which("asv", path=os.path.dirname(sys.executable)) is None, reason="asv not installed")
def test_asv_discovers_every_benchmark():
    asv = shutil.which("asv", path=os.path.dirname(sys.executable))
    proc = subprocess.run(
        [asv, "check", "-E", f"existing:{sys.executable}"],
        cwd=BENCHES,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
