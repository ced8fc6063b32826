//! Synthetic data for tests and benchmarks of every crate (compiled for tests and with the
//! `testdata` feature only).

use crate::counters::{PressureLevel, SystemCounters};

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
