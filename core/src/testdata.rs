//! Synthetic data shared by tests and benchmarks (not part of the API).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::counters::{PressureLevel, SystemCounters};
use crate::history::{History, METRICS};

const GIB: f64 = (1u64 << 30) as f64;

/// 24 h of readings at 5 s: free % swinging, swap growing from 4 to 10 GB, compressed with
/// gaps, a watched job every other 2000 samples. Returns the history and its "now".
pub fn day_of_history() -> (History, SystemTime) {
    let mut history = History::default();
    let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let steps: u32 = 24 * 3600 / 5;
    for i in 0..steps {
        let f = f64::from(i);
        let job = (i / 2000) % 2 == 1;
        let values: [Option<f64>; METRICS] = [
            Some(50.0 + 40.0 * (f / 900.0).sin()),
            Some(4.0 * GIB + f / f64::from(steps) * 6.0 * GIB),
            (i % 3000 > 200).then_some(2.0 * GIB + (f / 500.0).cos() * GIB),
            job.then_some(10.0 * GIB + (f / 50.0).sin() * GIB),
        ];
        history.add(start + Duration::from_secs(u64::from(i) * 5), values);
    }
    (history, start + Duration::from_secs(u64::from(steps) * 5))
}

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
        usable_bytes: None,
        in_use_bytes: None,
        total_bytes: 48 << 30,
        free_percent,
        pressure: Some(PressureLevel::Normal),
        swap_used_bytes,
        swap_total_bytes: 64 << 30,
        compressed_bytes: Some(1 << 30),
        wired_bytes: None,
        app_bytes: None,
        swapped_in_bytes: 0,
        swapped_out_bytes: 0,
        paged_in_bytes: 0,
        paged_out_bytes: 0,
        oom_kills: None,
        cgroup: None,
        cgroup_note: None,
    }
}
