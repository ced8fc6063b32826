//! Stage marks with real processes: `headroom mark` inside a guarded job, from a watched
//! job, outside any job, with bad names, with a guard that is gone, and from a process that
//! is not the job's; the marks become stage events in the trace and per-stage figures in
//! the verdict.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use headroom_core::socket::send_mark;
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
fn a_stage_ended_is_charged_nothing_after_its_end() {
    // `load` for 0.3 s, ended, then 1.5 s in no stage; then `tail`, briefly.
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
        "headroom mark load && sleep 0.3 && headroom mark --end && sleep 1.5 \
         && headroom mark tail && sleep 0.2",
    ]);
    assert_eq!(c, Some(0), "{err}");
    assert!(err.contains("stage load ends"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let seconds = |stages: &serde_json::Value, name: &str| {
        stages
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == name)
            .and_then(|s| s["seconds"].as_f64())
            .unwrap_or_else(|| panic!("{name} in {stages}"))
    };
    let load = seconds(&v["verdict"]["stages"], "load");
    // Before, the 1.5 s after the end was charged to `load` too.
    assert!((0.25..1.2).contains(&load), "load: {load} s\n{v}");
    // The trace says so (its own kind), and its summary charges the same.
    let ends: Vec<_> = trace_records(&trace, "event")
        .into_iter()
        .filter(|e| e["kind"] == "stage_end")
        .collect();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["stage"], "load");
    let (c, out, err) = run(&["trace", "summary", "--json", trace.to_str().unwrap()]);
    assert_eq!(c, Some(0), "{err}");
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    let load = seconds(&summary["stage_swap"], "load");
    assert!(
        (0.2..1.2).contains(&load),
        "summary's load: {load} s\n{summary}"
    );
    // No mark to end, or both at once: exit 2, and the flag is named.
    let (c, _, err) = run(&["mark", "--end", "x"]);
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("--end"), "{err}");
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

/// A Python job that opens a version-2 session with its guard (`HEADROOM_MARK`), sends each
/// line of the JSON list in the file `argv[1]` and waits for its answer, prints the answers
/// as one JSON list, then sleeps `argv[2]` seconds.
const SESSION_JOB: &str = r#"
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["HEADROOM_MARK"])
r = s.makefile("rb")
s.sendall(b'{"hello":2}\n')
r.readline()
answers = []
for line in json.load(open(sys.argv[1])):
    s.sendall(line.encode() + b"\n")
    answers.append(r.readline().decode().strip())
print(json.dumps(answers), flush=True)
time.sleep(float(sys.argv[2]))
"#;

/// Runs [`SESSION_JOB`] under a guard checking every `poll`, tracing to `trace`: the guard's
/// exit code, the job's answers and the guard's stderr.
fn guard_session_job(
    trace: &std::path::Path,
    poll: &str,
    lines: &[String],
    sleep_secs: f64,
) -> (Option<i32>, Vec<String>, String) {
    let file = trace.with_extension("lines.json");
    std::fs::write(&file, serde_json::to_string(lines).unwrap()).unwrap();
    let lines = file.to_str().unwrap();
    let (c, out, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--poll",
        poll,
        "--trace",
        trace.to_str().unwrap(),
        "--",
        "python3",
        "-c",
        SESSION_JOB,
        lines,
        &sleep_secs.to_string(),
    ]);
    let answers = out
        .lines()
        .find_map(|l| serde_json::from_str::<Vec<String>>(l).ok())
        .unwrap_or_else(|| panic!("no answers: {out} {err}"));
    (c, answers, err)
}

/// The trace's records of `type`, in order.
fn trace_records(trace: &std::path::Path, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

#[test]
fn marks_never_delay_the_regular_checks() {
    // A training loop marks the same three names at every step: 300 marks in a burst, then
    // 3 s of work. Each mark takes a fresh look, and the regular checks go on on the clock's
    // schedule after them (each extra look used to push the schedule one interval on: 300
    // marks left the job unchecked for the rest of its run).
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let names = ["forward", "backward", "optimizer"];
    let lines: Vec<String> = (0..300)
        .map(|i| format!("{{\"stage\":\"{}\"}}", names[i % 3]))
        .collect();
    let (c, answers, err) = guard_session_job(&trace, "0.25s", &lines, 3.0);
    assert_eq!(c, Some(0), "{err}");
    assert!(answers.iter().all(|a| a == "ok"), "{answers:?}");
    // The terminal shows each stage once and says that the rest repeat: not 300 lines.
    let stage_lines = err.lines().filter(|l| l.contains("stage ")).count();
    assert!(stage_lines <= 4, "{stage_lines} stage lines: {err}");
    assert!(err.contains("stages that repeat are not shown"), "{err}");
    let marked: Vec<f64> = trace_records(&trace, "event")
        .iter()
        .filter(|e| e["kind"] == "stage")
        .filter_map(|e| e["t"].as_f64())
        .collect();
    assert_eq!(marked.len(), 300);
    let (first_mark, last_mark) = (marked[0], marked.iter().copied().fold(0.0, f64::max));
    // A mark from a member the last look saw is taken at once: no look of its own (300
    // marks used to be 300 full looks).
    let looks_while_marking = trace_records(&trace, "sample")
        .iter()
        .filter_map(|s| s["t"].as_f64())
        .filter(|t| (first_mark..=last_mark).contains(t))
        .count();
    let regular = ((last_mark - first_mark) / 0.25).ceil() as usize + 2;
    assert!(
        looks_while_marking <= regular,
        "{looks_while_marking} looks in {:.3} s of marks",
        last_mark - first_mark
    );
    let after: Vec<f64> = trace_records(&trace, "sample")
        .iter()
        .filter_map(|s| s["t"].as_f64())
        .filter(|t| *t > last_mark)
        .collect();
    // 3 s at 0.25 s: about 12 regular checks; no gap longer than two intervals and a half.
    assert!(
        after.len() >= 8,
        "{} checks after the marks: {after:?}",
        after.len()
    );
    let gaps = std::iter::once(after[0] - last_mark).chain(after.windows(2).map(|w| w[1] - w[0]));
    for gap in gaps {
        assert!(gap <= 0.625, "a {gap:.3} s gap between checks: {after:?}");
    }
}

#[test]
fn a_report_out_of_bounds_is_refused_and_the_trace_stays_readable() {
    // What the guard writes from a member's report, its own readers read: sizes and times
    // past the bounds a trace holds are refused where the line comes in.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let lines = [
        r#"{"event":{"kind":"load","name":"x","nbytes":18446744073709551615,"seconds":1e308}}"#,
        r#"{"event":{"kind":"load","name":"x","nbytes":1000}}"#,
        r#"{"event":{"kind":"load","name":"x","seconds":1e308}}"#,
        r#"{"event":{"kind":"release","name":"x","nbytes":18446744073709551615}}"#,
        r#"{"event":{"kind":"load","name":"y","nbytes":5000000,"seconds":2.5}}"#,
    ]
    .map(String::from);
    let (c, answers, err) = guard_session_job(&trace, "0.1s", &lines, 0.3);
    assert_eq!(c, Some(0), "{err}");
    assert_eq!(answers.len(), 5, "{answers:?}");
    // The good reports, each on its line (ten a second are shown).
    assert!(
        err.contains("loaded x") && err.contains("loaded y"),
        "{err}"
    );
    for (i, why) in [(0, "seconds: 1e308"), (2, "seconds: 1e308"), (3, "nbytes")] {
        assert!(
            answers[i].starts_with("error: ") && answers[i].contains(why),
            "line {i}: {answers:?}"
        );
    }
    assert_eq!((answers[1].as_str(), answers[4].as_str()), ("ok", "ok"));
    let loads: Vec<serde_json::Value> = trace_records(&trace, "event")
        .into_iter()
        .filter(|e| e["kind"] == "load")
        .collect();
    assert_eq!(
        loads.len(),
        2,
        "only the good reports reach the trace: {loads:?}"
    );
    let trace_arg = trace.to_str().unwrap();
    let svg = dir.path().join("t.svg");
    for args in [
        vec!["trace", "summary", trace_arg],
        vec!["trace", "replay", trace_arg, "--swap-budget", "1G"],
        vec!["trace", "plot", trace_arg, "-o", svg.to_str().unwrap()],
    ] {
        let (c, out, err) = run(&args);
        assert_eq!(c, Some(0), "{args:?}: {out} {err}");
    }
}

#[test]
fn a_flood_of_reports_is_summed_on_the_terminal() {
    // 2,000 events in a few seconds reach the trace, each; the terminal shows ten a second
    // and counts the rest.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let lines: Vec<String> = (0..2000)
        .map(|i| format!("{{\"event\":{{\"kind\":\"mark\",\"note\":\"step {i}\"}}}}"))
        .collect();
    let (c, answers, err) = guard_session_job(&trace, "0.5s", &lines, 0.2);
    assert_eq!(c, Some(0), "{err}");
    assert!(answers.iter().all(|a| a == "ok"), "{answers:?}");
    let marks = trace_records(&trace, "event")
        .iter()
        .filter(|e| e["kind"] == "mark")
        .count();
    assert_eq!(marks, 2000);
    assert!(
        err.lines().count() < 40,
        "{} lines: {err}",
        err.lines().count()
    );
    // Every output keeps up and finishes (the job file is not written once per event).
    assert!(!err.contains("could not be finished"), "{err}");
    let not_shown: u64 = err
        .lines()
        .filter_map(|l| {
            l.split(": ")
                .last()?
                .strip_suffix(" more events (not shown)")
        })
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    let shown = err.lines().filter(|l| l.contains("step ")).count() as u64;
    assert_eq!(shown + not_shown, 2000, "{err}");
}
