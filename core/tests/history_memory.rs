//! Measures the heap a full 30-day [`History`] really allocates, with a counting allocator.
//!
//! The design bound is 10 MB; the figure is also printed for `docs/benchmarks.md`.

#![allow(clippy::too_many_lines, reason = "a test reads as one scenario")]
// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use headroom_core::history::History;

struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates every call to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::SeqCst);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn thirty_days_of_history_stays_under_10_mb() {
    let before = LIVE_BYTES.load(Ordering::SeqCst);
    let mut history = History::default();
    let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let day = 86_400_000u64;
    let mut at_ms = 0u64;
    let mut feed = |step_ms: u64, until_ms: u64, history: &mut History| {
        while at_ms < until_ms {
            let v = (at_ms / 1000) as f64;
            history.add(
                start + Duration::from_millis(at_ms),
                [Some(40.0), Some(v), Some(v / 2.0), Some(v * 3.0)],
            );
            at_ms += step_ms;
        }
    };
    // Fill every tier to capacity: 29 days at 1 min, then a day at 5 s, then 10 min at 0.5 s.
    feed(60_000, 29 * day, &mut history);
    feed(5_000, 30 * day - 600_000, &mut history);
    feed(500, 30 * day + 60_000, &mut history);
    let used = LIVE_BYTES.load(Ordering::SeqCst) - before;
    println!(
        "history heap for 30 days, all tiers full: {used} bytes ({:.2} MB)",
        used as f64 / 1e6
    );
    assert!(used < 10_000_000, "{used} bytes");
    let month = history.query(
        Duration::from_secs(30 * 86_400),
        start + Duration::from_millis(at_ms),
        500,
    );
    assert!(month.len() <= 500 && month.len() > 400, "{}", month.len());
}
