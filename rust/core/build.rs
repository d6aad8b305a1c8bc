//! Whether the golden corpus (files written by BookKeeper itself) is here. Tests
//! that read it are marked `#[cfg_attr(not(golden_corpus), ignore = ...)]`: without
//! the corpus they are reported as ignored, not passed; with `BKCODEC_REQUIRE_GOLDEN`
//! set (CI) they run, and fail if it is missing.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(golden_corpus)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=BKCODEC_GOLDEN");
    println!("cargo::rerun-if-env-changed=BKCODEC_REQUIRE_GOLDEN");
    let dir = std::env::var_os("BKCODEC_GOLDEN").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("../../../shared/golden")
    });
    if dir.is_dir() {
        // Appearing or going away later is noticed too.
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    if dir.is_dir() || std::env::var_os("BKCODEC_REQUIRE_GOLDEN").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=golden_corpus");
    }
}
