"""Installs a built bkcodec wheel into a fresh virtualenv, with no Rust toolchain on
PATH and no source builds allowed, and checks it works there: `import bkcodec`, an
entry decoded, an entry log written and read back, and the `bkcodec` command.

    python3.12 scripts/wheel_smoke.py dist/bkcodec-0.1.0-cp312-*.whl

The interpreter running this script is the one the venv is made from. Dependencies
(pyarrow, rich) come from the package index or pip's cache, as binary wheels.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = r"""
import os, shutil, sys, tempfile
import bkcodec

assert shutil.which("cargo") is None and shutil.which("rustc") is None, "a Rust toolchain is on PATH"
assert "site-packages" in bkcodec.__file__, bkcodec.__file__
entry = bkcodec.encode_entry(3, 0, -1, 5, b"hello", digest_type="crc32c")
assert bytes(bkcodec.decode_entry(entry, digest_type="crc32c").payload) == b"hello"
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "0.log")
    with bkcodec.EntryLogWriter(path) as w:
        for i in range(10):
            w.add_entry(bkcodec.encode_entry(3, i, i - 1, 5 * (i + 1), b"entry", digest_type="crc32c"))
    table = bkcodec.read_entry_log(path).read_all()
    assert table.num_rows == 10 and table.column("digest_ok").to_pylist() == [True] * 10, table
from importlib.metadata import version
print(f"bkcodec {version('bkcodec')} works on Python {sys.version.split()[0]}")
"""


def without_rust(path: str) -> str:
    """PATH less every directory that holds cargo or rustc."""
    keep = [d for d in path.split(os.pathsep) if d and not any(Path(d, t).exists() for t in ("cargo", "rustc"))]
    return os.pathsep.join(keep)


def smoke(wheel: Path, python: str = sys.executable) -> str:
    """Runs the check; returns what it printed. Raises CalledProcessError on failure."""
    with tempfile.TemporaryDirectory(prefix="bkcodec-wheel-") as tmp:
        venv = Path(tmp, "venv")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CARGO", "RUSTUP", "VIRTUAL_ENV", "PYTHON"))}
        env["PATH"] = without_rust(env.get("PATH", ""))
        subprocess.run([python, "-m", "venv", str(venv)], check=True, env=env)
        vpy = str(venv / "bin" / "python")
        subprocess.run(
            [vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--only-binary", ":all:", str(wheel)],
            check=True,
            env=env,
        )
        env["PATH"] = os.pathsep.join([str(venv / "bin"), env["PATH"]])
        out = subprocess.run([vpy, "-c", CHECK], check=True, env=env, cwd=tmp, capture_output=True, text=True).stdout
        version = subprocess.run(["bkcodec", "--version"], check=True, env=env, capture_output=True, text=True).stdout
        return f"{out.strip()}; the command says {version.strip()!r}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    print(smoke(Path(argv[0]).resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
