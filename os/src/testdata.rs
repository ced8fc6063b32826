//! What tests of every crate share of the OS layer (compiled for tests and with the
//! `testdata` feature only): the property tests' case count, and the files set aside.

use std::path::{Path, PathBuf};

/// Cases per property test of the parsers: `HEADROOM_FUZZ_CASES`, 200 by default
/// (`scripts/fuzz-parsers` sets many more).
pub fn fuzz_cases() -> u32 {
    std::env::var("HEADROOM_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(200)
}

/// Files in `dir` that [`crate::paths::move_aside`] put there (`*.corrupt-*`), sorted.
pub fn moved_aside(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().contains(".corrupt-"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
