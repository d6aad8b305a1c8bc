"""The wheel users install: the one `scripts/run setup` built into dist/ for this
Python is manylinux2014 (glibc 2.17) x86_64, stripped, and works when installed into a
fresh virtualenv with no Rust toolchain on PATH. `scripts/run wheel` runs the same
check for every CPython 3.10-3.13 wheel it builds. bkcodec-spark builds a wheel too.
"""

from __future__ import annotations

import importlib.util
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DIST = REPO / "dist"
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"

_spec = importlib.util.spec_from_file_location("bkcodec_wheel_smoke", REPO / "scripts" / "wheel_smoke.py")
wheel_smoke = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wheel_smoke)


@pytest.fixture(scope="module")
def wheel() -> Path:
    # This machine's: `scripts/run wheel` puts an aarch64 cp311 wheel beside the x86_64 one.
    found = sorted(DIST.glob(f"bkcodec-*-{TAG}-{TAG}-*_{platform.machine()}.whl"))
    if not found:
        pytest.skip(f"no {TAG} wheel in {DIST} (scripts/run setup or scripts/run wheel builds it)")
    return found[-1]


def test_wheel_is_manylinux2014_and_stripped(wheel):
    assert "manylinux2014_x86_64" in wheel.name and "manylinux_2_17_x86_64" in wheel.name
    with zipfile.ZipFile(wheel) as zf:
        (module,) = [i for i in zf.infolist() if i.filename.endswith(".so")]
    assert module.file_size < 20 * 2**20, f"{module.filename}: {module.file_size / 2**20:.1f} MiB"
    auditwheel = Path(sys.executable).with_name("auditwheel")
    if not auditwheel.exists():
        pytest.skip("auditwheel is not installed (scripts/run setup installs it)")
    shown = " ".join(subprocess.run([str(auditwheel), "show", str(wheel)], capture_output=True, text=True, check=True).stdout.split())
    assert 'platform tag: "manylinux_2_17_x86_64"' in shown, shown


def test_wheel_works_in_a_fresh_venv_without_rust(wheel):
    said = wheel_smoke.smoke(wheel)
    assert f"works on Python {sys.version_info[0]}.{sys.version_info[1]}." in said and "bkcodec 0." in said


def test_spark_package_builds_a_wheel(tmp_path):
    pytest.importorskip("setuptools", reason="setuptools builds bkcodec-spark (scripts/run setup installs it)")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO / "udfs"), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    (built,) = tmp_path.glob("bkcodec_spark-*.whl")
    with zipfile.ZipFile(built) as zf:
        names = zf.namelist()
    assert "bkcodec_spark/__init__.py" in names and "bkcodec_spark/datasource.py" in names


def test_spark_jar_native_library_runs_on_glibc_2_17(tmp_path):
    """The JNI library inside the jar is linked as the wheel is (zig, glibc 2.17), so the
    jar runs on the executors the wheel runs on."""
    jar = REPO / "target" / "bkcodec-spark.jar"
    if not jar.exists():
        pytest.skip(f"no {jar} (scripts/run setup builds it when a JDK is present)")
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    with zipfile.ZipFile(jar) as zf:
        (name,) = [n for n in zf.namelist() if n.startswith("native/linux-x86_64/") and n.endswith(".so")]
        library = tmp_path / Path(name).name
        library.write_bytes(zf.read(name))
    symbols = subprocess.run([objdump, "-T", str(library)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", symbols)}
    assert versions, symbols[:2000]
    assert max(versions) <= (2, 17), f"{name} needs glibc {'.'.join(map(str, max(versions)))}"
