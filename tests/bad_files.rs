//! Files and typed input that are not what Headroom wrote (issue 33): every number a trace
//! holds is bounded where the trace is read, and a value out of bounds is an error naming the
//! file and its line (exit 2), never a panic or a nonsense figure; a size too large for any
//! machine is refused once, naming its flag.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod support;

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
