"""Checks a built aarch64 bkcodec wheel on an x86-64 machine, under user-mode emulation:
Debian bookworm's arm64 CPython 3.11 (unpacked into a sysroot by `scripts/run`) runs
under `qemu-aarch64-static`, so only the cp311 wheel is checked here.

    python scripts/wheel_smoke_aarch64.py dist/bkcodec-*-cp311-*aarch64.whl \
        --sysroot target/aarch64-sysroot

The wheel and its dependencies' aarch64 wheels (pyarrow, rich; from the package index
or pip's cache) are installed into a temporary directory. Then, in one emulated process
per CRC-32C path the build has (the CPU's own first, then each forced through
`BKCODEC_CRC_PATH`): `import bkcodec`, the golden corpus's entries decoded with their
digests verified against the manifests (and the corrupted ones refused as BookKeeper's
verifier refused them), an entry log read, and CRC-32Cs of buffers of many lengths and
alignments, which must agree across every path and with each path called alone.

Without qemu or the sysroot's interpreter the check is skipped with the reason printed
(exit 0). The corpus is read from `../shared/golden` (or `$BKCODEC_GOLDEN`); without it
the rest still runs, saying so, unless `BKCODEC_REQUIRE_GOLDEN=1` makes that a failure,
as in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(os.environ.get("BKCODEC_GOLDEN", REPO.parent / "shared" / "golden"))

# Runs in the emulated interpreter: argv = site dir, golden corpus ("": none), path
# expected in use ("": the CPU's own). Prints one JSON object.
CHECK = r"""
import ctypes, hashlib, json, platform, random, site, struct, sys
site.addsitedir(sys.argv[1])
from pathlib import Path
import pyarrow as pa
import bkcodec
from bkcodec import _bkcodec as native

expected_path = sys.argv[3]
assert platform.machine() == "aarch64", platform.machine()
assert sys.argv[1] in bkcodec.__file__, bkcodec.__file__
in_use, paths = native._crc_path(), native._crc_paths()
# What the emulated CPU offers crc-fast's kernel (AT_HWCAP: CRC32 bit 7, PMULL bit 4).
getauxval = ctypes.CDLL(None).getauxval
getauxval.restype, getauxval.argtypes = ctypes.c_ulong, [ctypes.c_ulong]
hwcap = getauxval(16)
cpu = {"CRC32": bool(hwcap >> 7 & 1), "PMULL": bool(hwcap >> 4 & 1)}
assert in_use == (expected_path or in_use) and in_use in paths, (in_use, expected_path, paths)
PASSWORD = "secret"

def sha256(b):
    return hashlib.sha256(b).hexdigest()

def load(golden, name):
    rows = [json.loads(l) for l in (golden / "entries" / f"{name}.jsonl").read_text().splitlines() if l.strip()]
    data, pos, recs = (golden / "entries" / f"{name}.entries").read_bytes(), 0, []
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        recs.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    assert len(rows) == len(recs), name
    return list(zip(rows, recs))

# The corpus's entries and an entry log, decoded and verified: a line per kind.
def golden_checks(golden):
    counts = {}
    for digest in ["CRC32", "CRC32C", "HMAC", "DUMMY"]:
        pairs = load(golden, digest)
        for row, data in pairs:
            e = bkcodec.decode_entry(data, digest_type=digest, password=PASSWORD,
                                     ledger_id=row["verify_ledger_id"], entry_id=row["verify_entry_id"])
            assert (e.ledger_id, e.entry_id) == (row["ledger_id"], row["entry_id"]), row["index"]
            assert (e.last_add_confirmed, e.length) == (row["last_add_confirmed"], row["length"]), row["index"]
            assert e.digest_ok is True and e.digest.hex() == row["digest_hex"], row["index"]
            assert sha256(e.payload) == row["payload_sha256"] == row["verify_returned_payload_sha256"], row["index"]
            assert bkcodec.encode_entry(row["ledger_id"], row["entry_id"], row["last_add_confirmed"], row["length"],
                                        e.payload, digest_type=digest, password=PASSWORD) == data, row["index"]
        refused, corrupt = 0, load(golden, digest + ".corrupt")
        for row, data in corrupt:
            try:
                bkcodec.decode_entry(data, digest_type=row.get("verify_digest_type", digest),
                                     password=row.get("verify_password", PASSWORD),
                                     ledger_id=row["verify_ledger_id"], entry_id=row["verify_entry_id"])
                ok = True
            except bkcodec.BookKeeperFormatError:
                ok = False
            assert ok == row["verify_ok"], (digest, row["index"], row.get("corruption"))
            refused += not ok
        batch = bkcodec.decode_entries(pa.array([d for _, d in pairs], pa.binary()), digest_type=digest,
                                       password=PASSWORD, on_error="flag")
        assert batch.column("error").null_count == len(pairs), digest
        counts[digest] = f"{len(pairs)} entries verified, {refused} of {len(corrupt)} corrupted ones refused as by BookKeeper"

    log_rows = [json.loads(l) for l in (golden / "entrylogs" / "multi_ledger.jsonl").read_text().splitlines() if l.strip()]
    log_file = golden / "entrylogs" / next(r for r in log_rows if r["record"] == "file")["path"]
    expected = sorted((r["entry_pos"] - 4, r["payload_sha256"]) for r in log_rows if r["record"] == "entry")
    table = bkcodec.read_entry_log(log_file).read_all()
    assert all(table.column("digest_ok").to_pylist()), "entry log digests"
    got = sorted(zip(table.column("offset").to_pylist(), (sha256(p) for p in table.column("payload").to_pylist())))
    assert got == expected, "entry log rows"
    counts["entry log"] = f"{table.num_rows} entries of {log_file.name} verified"
    return counts

counts = golden_checks(Path(sys.argv[2])) if sys.argv[2] else {}

# Lengths about the paths' block sizes and thresholds, at every alignment to 16.
data = random.Random(311).randbytes((1 << 20) + 64)
crcs, alone = [], {p: getattr(native, "_crc32c_" + p.replace("-", "_")) for p in paths}
for length in [0, 1, 3, 7, 8, 15, 16, 31, 63, 64, 127, 255, 256, 257, 511, 1023, 1024, 4093, 4096, 16384, 65536 + 13, 1 << 20]:
    for offset in range(16):
        part = memoryview(data)[offset : offset + length]
        value = 0 if offset % 2 == 0 else (length * 2654435761 + offset) & 0xFFFFFFFF
        crc = bkcodec.crc32c(part, value)
        others = {p: f(part, value) for p, f in alone.items()}
        assert set(others.values()) == {crc}, (length, offset, crc, others)
        crcs.append(crc)
assert bkcodec.crc32c(b"123456789") == 0xE3069283
print(json.dumps({"python": sys.version.split()[0], "cpu": cpu, "path": in_use, "paths": paths, "golden": counts,
                  "crcs": crcs}))
"""


def skip(reason: str) -> int:
    print(f"aarch64 smoke test skipped: {reason}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--sysroot", type=Path, required=True)
    args = parser.parse_args(argv)
    # Lines in order with the subprocesses' output when piped.
    sys.stdout.reconfigure(line_buffering=True)
    sysroot = args.sysroot.resolve()
    qemu = shutil.which("qemu-aarch64-static")
    python = sysroot / "usr" / "bin" / "python3.11"
    if qemu is None:
        return skip("qemu-aarch64-static not found (Debian: apt-get install qemu-user-static)")
    if not python.exists():
        return skip(f"no arm64 CPython 3.11 at {python} (scripts/run unpacks Debian's there)")
    golden = str(GOLDEN) if GOLDEN.is_dir() else ""
    if not golden:
        message = f"golden corpus not found at {GOLDEN} (set BKCODEC_GOLDEN to point elsewhere)"
        if os.environ.get("BKCODEC_REQUIRE_GOLDEN"):
            print(f"aarch64 smoke test failed: {message}", file=sys.stderr)
            return 1
        print(f"{message}: the emulated check runs without it")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "BKCODEC_CRC_PATH"))}
    with tempfile.TemporaryDirectory(prefix="bkcodec-aarch64-") as tmp:
        target = Path(tmp, "site")
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", str(target),
             "--platform", "manylinux2014_aarch64", "--python-version", "3.11", "--implementation", "cp",
             "--abi", "cp311", "--only-binary", ":all:", str(args.wheel.resolve())],
            check=True, env=env,
        )
        print(f"installed {args.wheel.name} and its aarch64 dependencies ({time.monotonic() - started:.0f}s)")

        def emulated(*python_args: str, crc_path: str = "") -> str:
            run_env = dict(env, **({"BKCODEC_CRC_PATH": crc_path} if crc_path else {}))
            # -I: none of this machine's Python settings; the site directory is added by the check.
            command = [qemu, "-L", str(sysroot), str(python), "-I", *python_args]
            done = subprocess.run(command, env=run_env, cwd=tmp, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stdout + done.stderr, file=sys.stderr)
                raise SystemExit(f"the emulated check failed{' with BKCODEC_CRC_PATH=' + crc_path if crc_path else ''}")
            return done.stdout

        started = time.monotonic()
        own = json.loads(emulated("-c", CHECK, str(target), golden, ""))
        print(f"bkcodec imports on emulated aarch64 CPython {own['python']}: the CPU's CRC-32C path is "
              f"{own['path']!r}, the build has {own['paths']} ({time.monotonic() - started:.0f}s)")
        print("  the emulated CPU has " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in own["cpu"].items()))
        for what, count in own["golden"].items():
            print(f"  golden {what}: {count}")
        for path in own["paths"]:
            started = time.monotonic()
            forced = json.loads(emulated("-c", CHECK, str(target), golden, path, crc_path=path))
            if forced["crcs"] != own["crcs"] or forced["golden"] != own["golden"]:
                print(f"the {path} path disagrees with the {own['path']} path", file=sys.stderr)
                return 1
            print(f"  BKCODEC_CRC_PATH={path}: in use, {'golden corpus verified, ' if golden else ''}{len(forced['crcs'])} CRC-32Cs "
                  f"equal to the {own['path']} path's and to every path called alone ({time.monotonic() - started:.0f}s)")
        # The command line, through the module (pip --target writes no usable launcher).
        version = emulated("-c", "import site, sys; site.addsitedir(sys.argv[1]); "
                           "from bkcodec.cli import main; sys.exit(main(['--version']))", str(target)).strip()
        print(f"the command says {version!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
