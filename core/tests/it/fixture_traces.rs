//! The real macOS traces in `tests/fixtures/macos-traces` (recorded on an M5 Pro with the
//! stageload meter): our summaries reproduce the published figures (`summary.json`), and the
//! guard policy replayed over them stops the eager Qwen-Image run and none of the staged runs.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use headroom_core::drive::{replay, Replay};
use headroom_core::summary::summarize;
use headroom_core::trace::read_trace;
use headroom_rules::engine::{JobMode, JobSpec};
use headroom_rules::policy::{Limits, StopReason};
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

/// `trace replay` of a fixture: the driver's loop on the trace, checking at its 0.5 s.
fn replay_file(path: &str, limits: &Limits) -> Replay {
    let trace = read_trace(&fixtures().join(path)).unwrap();
    let poll = std::time::Duration::from_millis(500);
    let spec = JobSpec {
        min_check: poll,
        ..JobSpec::new(String::new(), JobMode::Guard, limits.clone(), poll)
    };
    replay(&trace, spec).unwrap()
}

#[test]
fn replay_stops_eager_qwen_in_the_decode() {
    let r = replay_file(
        "qwen-image-2026-10-06/eager-1.trace.jsonl",
        &Limits::default(),
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
        &Limits::default(),
    );
    assert!(r.stopped_at_seconds.is_some(), "{r:?}");
}

#[test]
fn replay_lets_staged_runs_finish() {
    for path in [
        "qwen-image-2026-10-06/staged-1.trace.jsonl",
        "pixal3d-2026-10-05/staged-1.trace.jsonl",
    ] {
        let r = replay_file(path, &Limits::default());
        assert_eq!(r.stopped_at_seconds, None, "{path}: {r:?}");
        assert!(r.verdict.fits, "{path}: {}", r.verdict);
    }
}

#[test]
fn replay_with_a_small_budget_stops_pixal3d_eager() {
    let limits = Limits {
        swap_budget_bytes: 1 << 30,
        ..Limits::default()
    };
    let r = replay_file("pixal3d-2026-10-05/eager-1.trace.jsonl", &limits);
    assert!(r.stopped_at_seconds.is_some());
}

/// Per-stage swap growth computed here from the raw JSON lines, independently of the
/// summary code: each stage event opens a window `[t, next stage)`; its growth is the highest
/// `swap_used` in the window minus the last `swap_used` before it (or the window's first).
fn raw_stage_growth(path: &Path) -> Vec<(String, u64)> {
    let mut samples: Vec<(f64, u64)> = Vec::new();
    let mut marks: Vec<(String, f64)> = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match (v["type"].as_str(), v["kind"].as_str()) {
            (Some("sample"), _) => {
                samples.push((v["t"].as_f64().unwrap(), v["swap_used"].as_u64().unwrap()))
            }
            (Some("event"), Some("stage")) => marks.push((
                v["stage"].as_str().unwrap().to_string(),
                v["t"].as_f64().unwrap(),
            )),
            _ => {}
        }
    }
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    marks.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut out = Vec::new();
    for (i, (name, start)) in marks.iter().enumerate() {
        let end = marks.get(i + 1).map_or(f64::INFINITY, |m| m.1);
        let window: Vec<u64> = samples
            .iter()
            .filter(|s| s.0 >= *start && s.0 < end)
            .map(|s| s.1)
            .collect();
        let Some(&first_in) = window.first() else {
            out.push((name.clone(), 0));
            continue;
        };
        let before = samples
            .iter()
            .rev()
            .find(|s| s.0 < *start)
            .map_or(first_in, |s| s.1);
        let peak = window.iter().copied().max().unwrap_or(before);
        out.push((name.clone(), peak.saturating_sub(before)));
    }
    out
}

#[test]
fn per_stage_swap_growth_matches_the_raw_samples() {
    let mut with_growth = 0;
    for rel in [
        "qwen-image-2026-10-06/eager-1.trace.jsonl",
        "qwen-image-2026-10-06/staged-1.trace.jsonl",
        "pixal3d-2026-10-05/eager-1.trace.jsonl",
        "pixal3d-2026-10-05/staged-1.trace.jsonl",
    ] {
        let path = fixtures().join(rel);
        let want = raw_stage_growth(&path);
        assert!(!want.is_empty(), "{rel} has stage events");
        let s = summarize(&read_trace(&path).unwrap()).unwrap();
        // The summary also has the implicit first stage (samples before the first mark).
        let implicit = usize::from(s.stage_swap.len() == want.len() + 1);
        assert!(implicit == 0 || s.stage_swap[0].stage == "setup", "{rel}");
        let got: Vec<(String, u64)> = s
            .stage_swap
            .iter()
            .skip(implicit)
            .map(|f| (f.stage.clone(), f.swap_growth_bytes))
            .collect();
        assert_eq!(got, want, "{rel}");
        with_growth += want.iter().filter(|w| w.1 > 64 << 20).count();
    }
    assert!(with_growth > 0, "some stage of the real traces grew swap");
}

/// The free floor's default (`--kill-free`, [`headroom_rules::defaults::KILL_FREE_PERCENT`])
/// checked against every recorded run: when did free memory (`kern.memorystatus_level`)
/// first fall under it, and what had swap done by then. A floor must never stop a run that
/// fits; in these runs it is a last resort, under the swap budget ("What free % means on a
/// Mac" in docs/safety.md has the table this prints). None of the traces has the kernel's
/// pressure level, so no pressure floor can be checked against them.
#[test]
fn the_free_floor_never_fires_on_a_run_that_fits() {
    use headroom_rules::defaults::{FITS_TOLERANCE_BYTES, KILL_FREE_PERCENT};
    let mut traces: Vec<PathBuf> = Vec::new();
    let mut folders = vec![fixtures()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.to_string_lossy().ends_with(".trace.jsonl") {
                traces.push(path);
            }
        }
    }
    traces.sort();
    assert!(traces.len() >= 5, "{traces:?}");
    for path in traces {
        let trace = read_trace(&path).unwrap();
        assert!(trace.samples.iter().all(|s| s.pressure.is_none()));
        let start = trace.samples[0].swap_used;
        let growth = |s: &headroom_core::trace::SampleRecord| s.swap_used.saturating_sub(start);
        let peak = trace.samples.iter().map(growth).max().unwrap();
        let lowest = trace
            .samples
            .iter()
            .map(|s| s.level)
            .fold(f64::MAX, f64::min);
        let crossed = trace.samples.iter().find(|s| s.level < KILL_FREE_PERCENT);
        let name = path.strip_prefix(fixtures()).unwrap().display().to_string();
        match crossed {
            Some(s) => {
                println!(
                    "{name}: under {KILL_FREE_PERCENT}% at {:.1} s, swap +{:.2} GiB by then (peak +{:.2} GiB)",
                    s.t,
                    growth(s) as f64 / GIB,
                    peak as f64 / GIB
                );
                assert!(
                    growth(s) > FITS_TOLERANCE_BYTES,
                    "{name}: the floor fired on a run that had not swapped"
                );
            }
            None => println!(
                "{name}: never under {KILL_FREE_PERCENT}% (lowest {lowest}%), swap peak +{:.2} GiB",
                peak as f64 / GIB
            ),
        }
    }
}
