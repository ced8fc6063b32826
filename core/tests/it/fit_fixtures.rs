//! What a run needs and whether it fits, on the recorded Mac traces as past runs: each
//! fixture predicts itself, and each needs what its rule says (`headroom_rules::fit`, read
//! through `trace::read_trace`).

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use headroom_rules::fit::{answer, need_of, predict, PastRun, Room, Taken};
use headroom_rules::policy::{EndReason, Verdict};
use headroom_rules::testdata::verdict;

const GIB: u64 = 1 << 30;
const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn the_recorded_mac_runs_predict_themselves() {
    // Each fixture run as the one past run of its key: a run that swapped from its starting
    // free memory is predicted not to fit there; one that did not swap fits at its own.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/macos-traces");
    let total = 48 * GIB; // the M5 Pro's memory (the traces do not say)
    for (file, swapped) in [
        ("qwen-image-2026-10-06/eager-1.trace.jsonl", true),
        (
            "qwen-image-2026-10-06/first-attempt/eager-1.trace.jsonl",
            true,
        ),
        ("qwen-image-2026-10-06/staged-1.trace.jsonl", false),
        ("pixal3d-2026-10-05/eager-1.trace.jsonl", true),
        ("pixal3d-2026-10-05/staged-1.trace.jsonl", false),
    ] {
        let trace = headroom_core::trace::read_trace(&dir.join(file)).unwrap();
        let first = &trace.samples[0];
        let peak_fp = trace.samples.iter().map(|s| s.footprint).max().unwrap();
        let growth = trace.samples.iter().map(|s| s.swap_used).max().unwrap() - first.swap_used;
        let lowest = trace
            .samples
            .iter()
            .map(|s| s.level)
            .fold(f64::MAX, f64::min);
        let ran = Verdict {
            lowest_free_percent: Some(lowest),
            ..verdict(peak_fp, growth, EndReason::Exited { code: 0 })
        };
        let (need, _) = need_of(
            &ran,
            Taken::Machine {
                base_bytes: total,
                free_start_percent: first.level,
            },
        );
        let p = predict(&[PastRun {
            need_bytes: need,
            age: HOUR,
            did_not_fit: swapped,
            run_time: None,
        }])
        .unwrap();
        let free_at_start = (first.level / 100.0 * total as f64) as u64;
        let floor = total / 10;
        let room = Room {
            free_bytes: free_at_start,
            floor_bytes: floor,
        };
        let fits = answer(&p, room).is_ok();
        assert_eq!(fits, !swapped, "{file}: need {need}, free {free_at_start}");
    }
}

/// A fixture run cut at `until_seconds`, judged as `history import` judges a trace: its
/// verdict and its level at the start.
fn fixture_run(file: &str, until_seconds: f64) -> (Verdict, f64) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/macos-traces");
    let trace = headroom_core::trace::read_trace(&dir.join(file)).unwrap();
    let samples: Vec<_> = trace
        .samples
        .iter()
        .filter(|s| s.t <= until_seconds)
        .collect();
    let first = samples[0];
    let peak_footprint = samples.iter().map(|s| s.footprint).max().unwrap();
    let swap_peak = samples.iter().map(|s| s.swap_used).max().unwrap();
    let lowest = samples.iter().map(|s| s.level).fold(f64::MAX, f64::min);
    let ran = Verdict {
        lowest_free_percent: Some(lowest),
        ..verdict(
            peak_footprint,
            swap_peak - first.swap_used,
            EndReason::Exited { code: 0 },
        )
    };
    (ran, first.level)
}

#[test]
fn each_recorded_mac_run_needs_what_its_rule_says() {
    let ram = 48 * GIB; // the M5 Pro's memory (the traces do not say)
    let need = |file: &str, until: f64| {
        let (ran, start) = fixture_run(file, until);
        let taken = Taken::Machine {
            base_bytes: ram,
            free_start_percent: start,
        };
        (need_of(&ran, taken).0, ran, start)
    };
    // Filled RAM with pages it touched: footprint 0.3 → 17.7 GB in the first 59 s at a level
    // of 90 (the drop of the level alone said about 0).
    let (eager_60, ran, _) = need("pixal3d-2026-10-05/eager-1.trace.jsonl", 60.0);
    assert_eq!(ran.swap_growth_bytes, 0, "no swap in the first minute");
    assert!(eager_60 >= 15 * GIB, "{eager_60}");
    // A staged run whose footprint passed the machine's memory without swapping: compression.
    let (staged, ran, _) = need("pixal3d-2026-10-05/staged-1.trace.jsonl", f64::MAX);
    assert!(ran.peak_footprint_bytes.unwrap() > ram && ran.swap_growth_bytes == 0);
    assert!(staged < ram, "{staged}");
    // A staged run that stayed well inside memory: its footprint.
    let (qwen_staged, ran, _) = need("qwen-image-2026-10-06/staged-1.trace.jsonl", f64::MAX);
    assert_eq!(qwen_staged, ran.peak_footprint_bytes.unwrap());
    // The runs that swapped filled the RAM they found: what was free at their start, plus
    // their swap growth (never less than the drop of the level plus it).
    for file in [
        "qwen-image-2026-10-06/eager-1.trace.jsonl",
        "qwen-image-2026-10-06/first-attempt/eager-1.trace.jsonl",
        "pixal3d-2026-10-05/eager-1.trace.jsonl",
    ] {
        let (got, ran, start) = need(file, f64::MAX);
        let found = (start / 100.0 * ram as f64) as u64 + ran.swap_growth_bytes;
        let drop = start - ran.lowest_free_percent.unwrap();
        assert!(ran.swap_growth_bytes > GIB, "{file} swapped");
        assert_eq!(got, found, "{file}");
        assert!(got >= (drop / 100.0 * ram as f64) as u64 + ran.swap_growth_bytes);
    }
}
