//! Quiet checks with real processes (`headroom_rules::policy::quiet`): the guard of a job
//! that sits still in a cgroup of its own holds most of its readings (the next check that
//! moves, or ten seconds, hands them on), and its trace still holds every reading, in
//! order, at its own time.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support::{headroom, real_swap_lock};

#[test]
fn a_still_job_is_checked_quietly_and_its_trace_holds_every_reading() {
    // Root, for the job's own cgroup (and one at a time with the real-swap tests, whose
    // memory moves would end quiet checks).
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let out = headroom()
        .env_remove("HEADROOM_JOB_CGROUP")
        .env("HEADROOM_LOG", "headroom_core::drive::live=debug")
        .args(["guard", "--wait-free", "0", "--poll", "0.1s", "--trace"])
        .arg(&trace)
        .args(["--", "sleep", "12"])
        .output()
        .unwrap();
    let stderr = plain(&String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Each hand-over says how many readings were held.
    let held: Vec<u64> = stderr
        .lines()
        .filter(|l| l.contains("quiet checks: held readings judged now"))
        .filter_map(|l| l.split("readings=").nth(1))
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let times: Vec<f64> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "sample")
        .filter_map(|v| v["t"].as_f64())
        .collect();
    // About 120 checks; most of a still job's are quiet (the first ones, full checks and
    // any moment the machine's free memory moves are not). Without quiet checks, none is.
    let quiet: u64 = held.iter().sum();
    assert!(
        quiet as f64 >= times.len() as f64 / 2.0,
        "{quiet} of {} readings held ({held:?}): {stderr}",
        times.len()
    );
    // None is held longer than ten seconds.
    assert!(held.iter().all(|&n| n <= 101), "{held:?}");
    // Every reading is in the trace, at its own time: no gap longer than two checks and a
    // half while the job ran.
    assert!(times.len() >= 90, "{} readings: {times:?}", times.len());
    for pair in times.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap > 0.0, "out of order: {times:?}");
        assert!(gap <= 0.25, "a {gap:.3} s gap between readings: {times:?}");
    }
}

/// `text` without its terminal colours (`ESC [ ... m`).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
