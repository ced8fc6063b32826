//! A run's verdict for tests and benchmarks (compiled for tests and with the `testdata`
//! feature only).

use std::time::Duration;

use crate::policy::{EndReason, Verdict};

/// A run that took `footprint` at its peak and grew swap by `growth`, 60 s long, ended as
/// `ended`; it fits when swap grew 64 MiB at most.
pub fn verdict(footprint: u64, growth: u64, ended: EndReason) -> Verdict {
    Verdict {
        fits: growth <= 64 << 20,
        swap_growth_bytes: growth,
        swap_start_bytes: 0,
        peak_footprint_bytes: Some(footprint),
        lowest_free_percent: None,
        in_use_taken_bytes: None,
        duration: Duration::from_secs(60),
        ended,
        processes: 1,
        fits_tolerance_bytes: 64 << 20,
        stages: Vec::new(),
        tight: None,
        pauses: 0,
        paused: Duration::ZERO,
        oom_killed: None,
    }
}
