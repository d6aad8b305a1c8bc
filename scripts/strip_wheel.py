"""Strips the extension modules of built wheels, keeping their debug info apart.

The release profile keeps line tables (`debug = 1`) for profiling, which makes the
module several times larger than its code. For each wheel given, every `.so` is
split with binutils' objcopy: its debug info (and symbol table) goes to
`<debug-dir>/<wheel name>/<module>.debug`, and the module in the wheel is stripped
and given a `.gnu_debuglink` to that file, so profilers and debuggers find it when
it sits beside the module or in a debug directory they search. The wheel is
repacked in place (its RECORD rewritten by `wheel pack`). A wheel for another
architecture takes that architecture's objcopy (`--objcopy aarch64-linux-gnu-objcopy`).

    python scripts/strip_wheel.py dist/*.whl --debug-dir dist/debug
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def strip_wheel(wheel: Path, debug_dir: Path, objcopy: str = "objcopy") -> list[tuple[Path, int, int]]:
    """Strips `wheel` in place; returns (module, size before, size after) for each `.so`."""
    sizes = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "wheel", "unpack", str(wheel), "-d", tmp], check=True, capture_output=True)
        (unpacked,) = Path(tmp).iterdir()
        for module in sorted(unpacked.rglob("*.so")):
            before = module.stat().st_size
            debug = debug_dir / wheel.name.removesuffix(".whl") / (module.name + ".debug")
            debug.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([objcopy, "--only-keep-debug", str(module), str(debug)], check=True)
            subprocess.run([objcopy, "--strip-all", f"--add-gnu-debuglink={debug}", str(module)], check=True)
            sizes.append((module.relative_to(unpacked), before, module.stat().st_size))
        packed = Path(tmp) / "packed"
        packed.mkdir()
        subprocess.run([sys.executable, "-m", "wheel", "pack", str(unpacked), "-d", str(packed)], check=True, capture_output=True)
        (result,) = packed.iterdir()
        if result.name != wheel.name:
            raise RuntimeError(f"repacking {wheel.name} gave {result.name}")
        shutil.move(str(result), wheel)
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--debug-dir", type=Path, required=True)
    parser.add_argument("--objcopy", default="objcopy", help="binutils' objcopy for the wheels' architecture")
    args = parser.parse_args(argv)
    if not shutil.which(args.objcopy):
        print(f"{args.objcopy} (binutils) not found: wheels left unstripped", file=sys.stderr)
        return 1
    for wheel in args.wheels:
        for module, before, after in strip_wheel(wheel, args.debug_dir, args.objcopy):
            print(f"{wheel.name}: {module} {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB (debug info in {args.debug_dir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
