//! The real macOS traces in `tests/fixtures/macos-traces` (recorded on an M5 Pro with the
//! stageload meter): our summaries reproduce the published figures (`summary.json`), and the
//! guard policy replayed over them stops the eager Qwen-Image run and none of the staged runs.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use headroom_core::policy::{GuardConfig, StopReason};
use headroom_core::summary::{replay, summarize};
use headroom_core::trace::read_trace;
use serde_json::Value;

const GIB: f64 = (1u64 << 30) as f64;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/macos-traces")
}

fn published(folder: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(folder).join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn gb(bytes: u64) -> f64 {
    (bytes as f64 / GIB * 100.0).round() / 100.0
}

/// Checks one trace against column `index` of mode `mode` in the published summary.
fn check(folder: &str, file: &str, mode: &str, index: usize) {
    let trace = read_trace(&fixtures().join(folder).join(file)).unwrap();
    let s = summarize(&trace).unwrap();
    let pubd = &published(folder)["modes"][mode];
    assert_eq!(
        gb(s.peak_footprint_bytes),
        pubd["peak_footprint_gb"][index].as_f64().unwrap(),
        "{folder}/{file} peak"
    );
    assert_eq!(
        gb(s.swap_rise_bytes),
        pubd["swap_rise_gb"][index].as_f64().unwrap(),
        "{folder}/{file} swap rise"
    );
    let seconds = (s.duration_seconds * 10.0).round() / 10.0;
    assert_eq!(
        seconds,
        pubd["seconds"][index].as_f64().unwrap(),
        "{folder}/{file} seconds"
    );
    let stages = pubd["stages"][index].as_object().unwrap();
    for (name, want) in stages {
        let got = s.stages.iter().find(|p| &p.stage == name);
        match want.as_f64() {
            Some(want) => {
                let got = got.and_then(|p| p.peak_footprint_bytes).map(gb);
                assert_eq!(got, Some(want), "{folder}/{file} stage {name}");
            }
            None => assert!(
                got.is_none_or(|p| p.peak_footprint_bytes.is_none()),
                "{folder}/{file} stage {name} has no samples"
            ),
        }
    }
    assert_eq!(
        s.stages.len(),
        stages.len(),
        "{folder}/{file}: {:?}",
        s.stages
    );
}

#[test]
fn qwen_eager_matches_published_table() {
    check("qwen-image-2026-10-06", "eager-1.trace.jsonl", "eager", 0);
}

#[test]
fn qwen_staged_matches_published_table() {
    check("qwen-image-2026-10-06", "staged-1.trace.jsonl", "staged", 0);
}

#[test]
fn pixal3d_eager_matches_published_table() {
    check("pixal3d-2026-10-05", "eager-1.trace.jsonl", "eager", 0);
}

#[test]
fn pixal3d_staged_matches_published_table() {
    check("pixal3d-2026-10-05", "staged-1.trace.jsonl", "staged", 0);
}

#[test]
fn qwen_first_attempt_grew_swap_from_8_6_to_18_5_gb() {
    let trace =
        read_trace(&fixtures().join("qwen-image-2026-10-06/first-attempt/eager-1.trace.jsonl"))
            .unwrap();
    let s = summarize(&trace).unwrap();
    assert_eq!((s.swap_start_bytes as f64 / GIB * 10.0).round() / 10.0, 8.6);
    assert_eq!((s.swap_peak_bytes as f64 / GIB * 10.0).round() / 10.0, 18.5);
}

fn replay_file(path: &str, cfg: &GuardConfig) -> headroom_core::summary::Replay {
    let trace = read_trace(&fixtures().join(path)).unwrap();
    replay(&trace, cfg).unwrap()
}

#[test]
fn replay_stops_eager_qwen_in_the_decode() {
    let r = replay_file(
        "qwen-image-2026-10-06/eager-1.trace.jsonl",
        &GuardConfig::default(),
    );
    assert_eq!(r.stage.as_deref(), Some("decode"), "{r:?}");
    let t = r.stopped_at_seconds.unwrap();
    // The real guard stopped it at the end of the trace (118.4 s), 10 s into the decode.
    assert!((117.0..=118.5).contains(&t), "stopped at {t}");
    assert!(matches!(
        r.reason,
        Some(StopReason::SwapBudget { .. } | StopReason::SwapBudgetProjected { .. })
    ));
    assert!(!r.verdict.fits);
}

#[test]
fn replay_stops_the_first_attempt_while_loading() {
    let r = replay_file(
        "qwen-image-2026-10-06/first-attempt/eager-1.trace.jsonl",
        &GuardConfig::default(),
    );
    assert!(r.stopped_at_seconds.is_some(), "{r:?}");
}

#[test]
fn replay_lets_staged_runs_finish() {
    for path in [
        "qwen-image-2026-10-06/staged-1.trace.jsonl",
        "pixal3d-2026-10-05/staged-1.trace.jsonl",
    ] {
        let r = replay_file(path, &GuardConfig::default());
        assert_eq!(r.stopped_at_seconds, None, "{path}: {r:?}");
        assert!(r.verdict.fits, "{path}: {}", r.verdict);
    }
}

#[test]
fn replay_with_a_small_budget_stops_pixal3d_eager() {
    let cfg = GuardConfig {
        swap_budget_bytes: 1 << 30,
        ..GuardConfig::default()
    };
    let r = replay_file("pixal3d-2026-10-05/eager-1.trace.jsonl", &cfg);
    assert!(r.stopped_at_seconds.is_some());
}
