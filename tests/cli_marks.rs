//! Stage marks with real processes: `headroom mark` inside a guarded job, from a watched
//! job, outside any job, with bad names, with a guard that is gone, and from a process that
//! is not the job's; the marks become stage events in the trace and per-stage figures in
//! the verdict.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use headroom_core::marks::send_mark;
use support::{headroom, headroom_bin, run_to_files, test_home, wait_until};

/// `PATH` with the headroom under test first, for scripts that call `headroom mark`.
fn path_with_headroom() -> String {
    format!(
        "{}:{}",
        headroom_bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = headroom();
    cmd.args(args).env("PATH", path_with_headroom());
    run_to_files(cmd)
}

#[test]
fn marks_from_the_job_become_stages() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let (c, out, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--poll",
        "0.1s",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "headroom mark load && sleep 0.4 && headroom mark 'work it' && sleep 0.4",
    ]);
    assert_eq!(c, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let stages: Vec<&str> = v["verdict"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["load", "work it"], "{v}");
    assert!(err.contains("stage load begins"), "{err}");
    // stageload's own stage events, in order, on the trace's clock.
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["type"] == "event" && v["kind"] == "stage")
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["stage"], "load");
    assert_eq!(events[1]["stage"], "work it");
    let (t0, t1) = (
        events[0]["t"].as_f64().unwrap(),
        events[1]["t"].as_f64().unwrap(),
    );
    assert!(t1 - t0 >= 0.35, "{t0} {t1}");
    // trace summary shows the same stages.
    let (c, out, err) = run(&["trace", "summary", trace.to_str().unwrap()]);
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("work it"), "{out}");
}

#[test]
fn mark_outside_a_job_and_bad_names_exit_2() {
    let cases: [(&[&str], &str); 3] = [
        (&["mark", "decode"], "not inside a job"),
        (&["mark", ""], "cannot be empty"),
        (&["mark", &"x".repeat(10_000)], "at most 200 bytes"),
    ];
    for (args, needle) in cases {
        let mut cmd = headroom();
        cmd.args(args).env_remove("HEADROOM_MARK");
        let (c, _, err) = run_to_files(cmd);
        assert_eq!(c, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_closed_channel_is_a_clear_error_and_the_job_goes_on() {
    // The mark fails (nothing listens there); the job itself is unaffected.
    let (c, out, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--",
        "sh",
        "-c",
        "HEADROOM_MARK=/nonexistent/x.sock headroom mark late; echo mark-rc=$?; exit 0",
    ]);
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("mark-rc=2"), "{out}");
    assert!(err.contains("the guard of this job is gone"), "{err}");
}

#[test]
fn a_process_outside_the_job_cannot_mark_it() {
    let guard = headroom()
        .args(["guard", "--wait-free", "0", "--json", "--", "sleep", "1.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let socket = test_home().join("run").join(format!("{}.sock", guard.id()));
    assert!(wait_until(Duration::from_secs(5), || socket.exists()));
    // This test process is not a process of the job: refused, by the kernel's word.
    let refused = send_mark(&socket, "intruder").unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("not a process of a job Headroom watches here"),
        "{refused}"
    );
    let out = guard.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["verdict"].get("stages").is_none(), "{v}");
    assert!(!socket.exists(), "the socket is removed at the end");
}

#[test]
fn a_watched_job_marks_through_the_watch() {
    // The script has no HEADROOM_MARK: `headroom mark` finds the watch that watches it.
    let mut job = Command::new("sh")
        .args([
            "-c",
            "sleep 0.6; headroom mark first; echo first=$?; sleep 0.4; headroom mark second; sleep 0.3",
        ])
        .env("PATH", path_with_headroom())
        .env("HEADROOM_HOME", test_home())
        .env("HEADROOM_JOB_CGROUP", "off")
        .env_remove("HEADROOM_MARK")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = job.id().to_string();
    let watch = headroom()
        .args(["watch", &pid, "--json", "--poll", "0.1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let job_out = {
        use std::io::Read;
        let mut s = String::new();
        job.stdout.take().unwrap().read_to_string(&mut s).unwrap();
        s
    };
    job.wait().unwrap();
    let out = watch.wait_with_output().unwrap();
    assert!(job_out.contains("first=0"), "{job_out}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stages: Vec<&str> = v["verdict"]["stages"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["first", "second"], "{v}");
}

#[test]
fn trace_plot_labels_each_stage_with_the_swap_it_added() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("qwen.svg");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/core/tests/fixtures/macos-traces/qwen-image-2026-10-06/eager-1.trace.jsonl"
    );
    let (c, _, err) = run(&["trace", "plot", fixture, "-o", svg.to_str().unwrap()]);
    assert_eq!(c, Some(0), "{err}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("\ndecode +"), "no growth on the decode label");
    assert!(
        text.contains("\nencode\n"),
        "a stage that added nothing keeps its name alone"
    );
}
