//! Files and typed input that are not what Headroom wrote (issue 33): every number a trace
//! holds is bounded where the trace is read, and a value out of bounds is an error naming the
//! file and its line (exit 2), never a panic or a nonsense figure; a size too large for any
//! machine is refused once, naming its flag.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::fs;
use std::path::Path;

use support::{headroom, run_to_files};

const START: &str = r#"{"type":"start","interval":0.5}"#;
const SAMPLE: &str = r#"{"type":"sample","t":0,"footprint":1,"swap_used":0,"level":50}"#;

/// Runs `headroom ARGS` to its end: (exit code, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = headroom();
    cmd.args(args);
    run_to_files(cmd)
}

/// Every command that reads a trace, over `file`.
fn readers(file: &Path, out: &Path) -> Vec<Vec<String>> {
    let f = file.display().to_string();
    let key = format!("bad-trace-{}", std::process::id());
    vec![
        vec!["trace".into(), "summary".into(), f.clone()],
        vec!["trace".into(), "replay".into(), f.clone()],
        vec![
            "trace".into(),
            "plot".into(),
            f.clone(),
            "-o".into(),
            out.display().to_string(),
        ],
        vec!["history".into(), "import".into(), f, "--key".into(), key],
    ]
}

#[test]
fn every_number_a_trace_holds_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let sample = |footprint: &str, swap: &str, level: &str| {
        format!(
            r#"{{"type":"sample","t":1,"footprint":{footprint},"swap_used":{swap},"level":{level}}}"#
        )
    };
    let max = "18446744073709551615";
    // (name, the lines, the bad line's number)
    let cases: Vec<(&str, Vec<String>, usize)> = vec![
        (
            "interval-1e300",
            vec![r#"{"type":"start","interval":1e300}"#.into(), SAMPLE.into()],
            1,
        ),
        (
            "interval-1e20",
            vec![r#"{"type":"start","interval":1e20}"#.into(), SAMPLE.into()],
            1,
        ),
        (
            "interval-negative",
            vec![r#"{"type":"start","interval":-2}"#.into(), SAMPLE.into()],
            1,
        ),
        (
            "level-high",
            vec![START.into(), SAMPLE.into(), sample("1", "0", "1e308")],
            3,
        ),
        (
            "level-low",
            vec![START.into(), SAMPLE.into(), sample("1", "0", "-1e308")],
            3,
        ),
        (
            "swap-max",
            vec![START.into(), SAMPLE.into(), sample("1", max, "50")],
            3,
        ),
        (
            "footprint-max",
            vec![START.into(), sample(max, "0", "50")],
            2,
        ),
        (
            "total-memory-max",
            vec![
                r#"{"type":"start","interval":0.5,"total_memory":18446744073709551615}"#.into(),
                SAMPLE.into(),
            ],
            1,
        ),
        (
            "swap-start-max",
            vec![
                r#"{"type":"start","interval":0.5,"swap_start":18446744073709551615}"#.into(),
                SAMPLE.into(),
            ],
            1,
        ),
        (
            "memory-limit-max",
            vec![
                START.into(),
                format!(
                    r#"{{"type":"sample","t":1,"footprint":1,"swap_used":0,"level":50,"memory_limit":{max}}}"#
                ),
            ],
            2,
        ),
        (
            "event-seconds",
            vec![
                START.into(),
                SAMPLE.into(),
                r#"{"type":"event","kind":"load","t":0.5,"seconds":1e300}"#.into(),
            ],
            3,
        ),
        // Records out of place: what one run's writer never writes.
        (
            "t-goes-back",
            vec![START.into(), sample("1", "0", "50"), SAMPLE.into()],
            3,
        ),
        (
            "after-the-end",
            vec![
                START.into(),
                SAMPLE.into(),
                r#"{"type":"end"}"#.into(),
                sample("1", "0", "50"),
            ],
            4,
        ),
        (
            "second-start",
            vec![START.into(), SAMPLE.into(), START.into()],
            3,
        ),
    ];
    for (name, lines, bad) in cases {
        let file = dir.path().join(format!("{name}.jsonl"));
        fs::write(&file, lines.join("\n") + "\n").unwrap();
        let out = dir.path().join(format!("{name}.svg"));
        for args in readers(&file, &out) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, stdout, err) = run(&args);
            assert!(!err.contains("panicked"), "{name}: {args:?}: {err}");
            assert_eq!(code, Some(2), "{name}: {args:?}: {stdout}{err}");
            assert!(
                err.contains(&format!("{}:{bad}: ", file.display())),
                "{name}: {args:?}: the file and line are named: {err}"
            );
        }
    }
}

#[test]
fn a_size_no_machine_has_is_refused_once_naming_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("good.jsonl");
    fs::write(&file, format!("{START}\n{SAMPLE}\n")).unwrap();
    let key = format!("huge-total-{}", std::process::id());
    for huge in ["18446744073709551615", "8000000T"] {
        let (code, _, err) = run(&[
            "history",
            "import",
            file.to_str().unwrap(),
            "--key",
            &key,
            "--total-memory",
            huge,
        ]);
        assert_eq!(code, Some(2), "--total-memory {huge}: {err}");
        assert!(err.contains("--total-memory"), "{err}");
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "one error line: {err}"
        );
    }
    let (_, out, _) = run(&["history", "--json"]);
    assert!(!out.contains(&key), "nothing was recorded: {out}");
}

#[test]
fn a_trace_without_samples_is_bad_input_and_a_long_one_plots_small() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, format!("{START}\n")).unwrap();
    let svg = dir.path().join("empty.svg");
    for args in readers(&empty, &svg).into_iter().take(3) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("no samples"), "{args:?}: {err}");
    }
    // 200,000 samples (a day and a half at 0.5 s) with one spike: the chart is drawn from a
    // bounded series, and keeps the spike.
    let long = dir.path().join("long.jsonl");
    let mut text = format!("{START}\n");
    for i in 0..200_000u64 {
        let swap = if i == 123_457 { 9u64 << 30 } else { 1 << 30 };
        text.push_str(&format!(
            "{{\"type\":\"sample\",\"t\":{},\"footprint\":{},\"swap_used\":{swap},\"level\":50}}\n",
            i as f64 * 0.5,
            2u64 << 30
        ));
    }
    fs::write(&long, text).unwrap();
    let svg = dir.path().join("long.svg");
    let (code, _, err) = run(&[
        "trace",
        "plot",
        long.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let size = fs::metadata(&svg).unwrap().len();
    assert!(size < 2 << 20, "a {size}-byte chart");
    let (code, out, err) = run(&["trace", "summary", long.to_str().unwrap(), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["swap_peak_bytes"].as_u64(), Some(9 << 30), "{out}");
    // The chart is drawn from the bounded series, which keeps the spike.
    let text = fs::read_to_string(&svg).unwrap();
    assert!(text.contains("+8.0 GiB, peak 9.0 GiB"), "the spike is lost");
}

#[test]
fn a_summary_and_a_replay_judge_from_the_same_start() {
    // The guard's swap at the start (read before the job) is the baseline of both.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.jsonl");
    let gib = 1u64 << 30;
    let lines = [
        format!(
            r#"{{"type":"start","interval":0.5,"swap_start":{}}}"#,
            4 * gib
        ),
        format!(
            r#"{{"type":"sample","t":0,"footprint":1,"swap_used":{},"level":50}}"#,
            gib
        ),
        format!(
            r#"{{"type":"sample","t":0.5,"footprint":1,"swap_used":{},"level":50}}"#,
            3 * gib
        ),
    ];
    fs::write(&file, lines.join("\n") + "\n").unwrap();
    let f = file.to_str().unwrap();
    let (code, out, err) = run(&["trace", "summary", f, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (code, out, err) = run(&["trace", "replay", f, "--json", "--swap-budget", "100G"]);
    assert_eq!(code, Some(0), "{err}");
    let replay: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        summary["swap_rise_bytes"], replay["verdict"]["swap_growth_bytes"],
        "{summary} {replay}"
    );
}
