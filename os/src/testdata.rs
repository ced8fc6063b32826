//! Synthetic data shared by tests and benchmarks of every crate (not part of the API): the
//! OS layer's part (`headroom_core::testdata` adds a day of history).

use std::path::{Path, PathBuf};

use crate::counters::{PressureLevel, SystemCounters};

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

/// A 48 GB machine with `swap_used_bytes` of 64 GB swap in use and `free_percent` free:
/// for tests of code that consumes counters.
pub fn system_counters(swap_used_bytes: u64, free_percent: f64) -> SystemCounters {
    SystemCounters {
        total_bytes: 48 << 30,
        free_percent,
        pressure: Some(PressureLevel::Normal),
        swap_used_bytes,
        swap_total_bytes: 64 << 30,
        compressed_bytes: Some(1 << 30),
        ..SystemCounters::default()
    }
}
