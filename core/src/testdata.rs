//! A day of history for tests and benchmarks (compiled for tests and with the `testdata`
//! feature only).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
