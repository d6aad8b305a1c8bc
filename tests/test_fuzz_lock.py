"""rust/fuzz is a workspace of its own with its own Cargo.lock. It must hold
bkcodec-core's dependencies at the main Cargo.lock's versions, so that `cargo fuzz run`
(docs/fuzzing.md) fuzzes what ships and leaves the tracked lock file unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

if sys.version_info < (3, 11):
    pytest.skip("tomllib is Python 3.11+", allow_module_level=True)
import tomllib


def closure(lock: Path, root: str) -> set[tuple[str, str]]:
    """(name, version) of `root` and everything it depends on, as `lock` resolves it."""
    packages = tomllib.loads(lock.read_text())["package"]
    by_name: dict[str, list[dict]] = {}
    for p in packages:
        by_name.setdefault(p["name"], []).append(p)

    def find(spec: str) -> dict:
        name, _, version = spec.partition(" ")
        candidates = [p for p in by_name[name] if not version or p["version"] == version]
        assert len(candidates) == 1, (lock, spec)
        return candidates[0]

    seen: set[tuple[str, str]] = set()
    todo = [find(root)]
    while todo:
        p = todo.pop()
        key = (p["name"], p["version"])
        if key in seen:
            continue
        seen.add(key)
        todo += [find(d) for d in p.get("dependencies", [])]
    return seen


FIX = "run `cargo update --workspace --manifest-path rust/fuzz/Cargo.toml` and commit rust/fuzz/Cargo.lock"


def test_the_fuzz_lock_file_holds_the_core_at_the_main_lock_files_versions():
    # The main lock also resolves the core's dev-dependencies and the bindings'
    # features, so it holds more; whatever the fuzz lock holds, it holds alike.
    main = closure(REPO / "Cargo.lock", "bkcodec-core")
    fuzz = closure(REPO / "rust" / "fuzz" / "Cargo.lock", "bkcodec-core")
    assert fuzz <= main, f"versions not in Cargo.lock: {sorted(fuzz - main)}; {FIX}"


def test_the_fuzz_lock_file_has_every_dependency_of_the_core():
    manifest = tomllib.loads((REPO / "rust" / "core" / "Cargo.toml").read_text())
    needed = {
        (spec.get("package", name) if isinstance(spec, dict) else name)
        for name, spec in manifest["dependencies"].items()
        if not (isinstance(spec, dict) and spec.get("optional"))
    }
    packages = tomllib.loads((REPO / "rust" / "fuzz" / "Cargo.lock").read_text())["package"]
    core = next(p for p in packages if p["name"] == "bkcodec-core")
    locked = {d.partition(" ")[0] for d in core.get("dependencies", [])}
    assert needed <= locked, f"not locked: {sorted(needed - locked)}; {FIX}"
