//! `headroom guard`, `watch` and `trace` without root: exit codes, signals, busy patterns,
//! bad input (every invalid flag exits 2 naming the flag), and the trace commands on the
//! real macOS fixture traces.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{headroom, live_with_tag, tag, wait_until};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("core/tests/fixtures/macos-traces")
        .join(rel)
}

fn code(args: &[&str]) -> (Option<i32>, String, String) {
    let out = headroom().args(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn exit_codes_follow_stageload_guard() {
    let (c, _, err) = code(&[
        "guard",
        "--wait-free",
        "101",
        "--start-timeout",
        "2s",
        "--",
        "true",
    ]);
    assert_eq!(c, Some(4), "{err}");
    assert!(err.contains("never found room"), "{err}");
    let (c, _, err) = code(&["guard", "--", "/nonexistent/command"]);
    assert_eq!(c, Some(127), "{err}");
    let (c, _, _) = code(&["guard", "--", "sh", "-c", "exit 7"]);
    assert_eq!(c, Some(7));
    let (c, _, _) = code(&["guard", "--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(c, Some(128 + 9));
    let (c, out, err) = code(&["guard", "--json", "--", "true"]);
    assert_eq!(c, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"]["fits"], true);
    assert_eq!(
        v["verdict"]["ended"],
        serde_json::json!({"kind": "exited", "code": 0})
    );
}

#[test]
fn busy_processes_hold_the_start() {
    let mut busy = Command::new("sleep").arg("3777").spawn().unwrap();
    let (c, _, err) = code(&[
        "guard",
        "--busy",
        "^sleep 3777$",
        "--quiet-for",
        "1s",
        "--start-timeout",
        "1500ms",
        "--",
        "true",
    ]);
    let _ = busy.kill();
    let _ = busy.wait();
    assert_eq!(c, Some(4), "{err}");
    assert!(err.contains("busy: sleep 3777"), "{err}");
    // A pattern matching only the guard's own command line never holds it.
    let (c, _, err) = code(&[
        "guard",
        "--busy",
        "guard --busy",
        "--start-timeout",
        "2s",
        "--",
        "true",
    ]);
    assert_eq!(c, Some(0), "{err}");
}

fn spawn_guard(args: &[&str]) -> std::process::Child {
    headroom()
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions; pid is a child we started.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn a_signal_to_the_guard_stops_the_command_first() {
    let tag = tag("sigterm");
    let mut guard = spawn_guard(&["guard", "--", "sh", "-c", &format!("sleep 300; : {tag}")]);
    let gid = guard.id();
    // The guard's own command line has the tag too: wait for the command itself.
    assert!(wait_until(Duration::from_secs(10), || live_with_tag(&tag)
        .iter()
        .any(|&p| p != gid)));
    signal(guard.id(), libc::SIGTERM);
    let status = guard.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(wait_until(Duration::from_secs(5), || live_with_tag(&tag).is_empty()));
}

#[test]
fn a_second_signal_kills_at_once() {
    let tag = tag("second");
    let script = format!("trap '' TERM; while :; do sleep 1; done; : {tag}");
    let mut guard = spawn_guard(&["guard", "--grace", "60s", "--", "sh", "-c", &script]);
    let gid = guard.id();
    assert!(wait_until(Duration::from_secs(10), || live_with_tag(&tag)
        .iter()
        .any(|&p| p != gid)));
    // Let the shell install its trap.
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    signal(guard.id(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    signal(guard.id(), libc::SIGINT);
    let status = guard.wait().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "waited for the 60 s grace"
    );
    assert_eq!(status.code(), Some(128 + libc::SIGINT));
    assert!(wait_until(Duration::from_secs(5), || live_with_tag(&tag).is_empty()));
}

#[test]
fn an_ignored_signal_stays_ignored() {
    let exe = env!("CARGO_BIN_EXE_headroom");
    let mut guard = Command::new("sh")
        .args(["-c", &format!("trap '' HUP; exec {exe} guard -- sleep 2")])
        .env("HEADROOM_HOME", support::test_home())
        .env("HEADROOM_JOB_CGROUP", "off")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    signal(guard.id(), libc::SIGHUP);
    let status = guard.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "SIGHUP was ignored, sleep 2 finished"
    );
}

#[test]
fn invalid_flags_exit_2_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["guard", "--swap-budget", "8X", "--", "true"],
            "--swap-budget",
        ),
        (
            &["guard", "--swap-budget", "-1G", "--", "true"],
            "--swap-budget",
        ),
        (
            &["guard", "--swap-limit", "lots", "--", "true"],
            "--swap-limit",
        ),
        (
            &["guard", "--kill-free", "101", "--", "true"],
            "--kill-free",
        ),
        (&["guard", "--kill-free", "-1", "--", "true"], "--kill-free"),
        (&["guard", "--wait-free", "-5", "--", "true"], "--wait-free"),
        (
            &["guard", "--wait-free", "half", "--", "true"],
            "--wait-free",
        ),
        (&["guard", "--busy", "(", "--", "true"], "--busy"),
        (&["guard", "--quiet-for", "5x", "--", "true"], "--quiet-for"),
        (
            &["guard", "--start-timeout", "soon", "--", "true"],
            "--start-timeout",
        ),
        (&["guard", "--poll", "0", "--", "true"], "--poll"),
        (&["guard", "--poll", "1y", "--", "true"], "--poll"),
        (&["guard", "--grace", "-1s", "--", "true"], "--grace"),
        (
            &["guard", "--fits-tolerance", "x", "--", "true"],
            "--fits-tolerance",
        ),
        (
            &["guard", "--notify-step", "1Q", "--", "true"],
            "--notify-step",
        ),
        (&["guard", "--trace"], "--trace"),
        (&["guard"], "<CMD>"),
        (&["guard", "sleep", "1"], "-- <CMD>"),
        (&["guard", "--"], "<CMD>"),
        (&["watch"], "<PID>"),
        (&["watch", "abc"], "<PID>"),
        (&["watch", "4000000"], "<PID>"),
        (&["watch", "1", "--swap-budget", "x"], "--swap-budget"),
        (&["trace", "plot", "t.jsonl", "-o", "t.jpg"], "--output"),
        (
            &["trace", "replay", "t.jsonl", "--kill-free", "200"],
            "--kill-free",
        ),
    ];
    for (args, flag) in cases {
        let (c, _, err) = code(args);
        assert_eq!(c, Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?} should name {flag}: {err}");
    }
}

#[test]
fn watch_refuses_to_guard_pid_1_and_ourselves() {
    let (c, _, err) = code(&["watch", "1", "--guard"]);
    assert_eq!(c, Some(2), "{err}");
    assert!(
        err.contains("never signalled") || err.contains("not to us"),
        "{err}"
    );
}

#[test]
fn watch_gives_a_verdict_when_the_process_ends() {
    let mut job = Command::new("sleep").arg("1").spawn().unwrap();
    let pid = job.id().to_string();
    let reaper = std::thread::spawn(move || job.wait());
    let (c, _, err) = code(&["watch", &pid, "--poll", "100ms"]);
    let _ = reaper.join();
    assert_eq!(c, Some(0), "{err}");
    assert!(err.contains("sleep 1: fits: swap +"), "{err}");
}

#[test]
fn trace_summary_reproduces_the_published_table() {
    let (c, out, err) = code(&[
        "trace",
        "summary",
        fixture("qwen-image-2026-10-06/eager-1.trace.jsonl")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("decode           43.57 GiB"), "{out}");
    assert!(out.contains("setup            31.40 GiB"), "{out}");
    let (c, out, _) = code(&[
        "trace",
        "summary",
        "--json",
        fixture("qwen-image-2026-10-06/staged-1.trace.jsonl")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(c, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["swap_rise_bytes"], 0);
    assert_eq!(v["stages"][3]["stage"], "decode");
}

#[test]
fn trace_replay_stops_eager_and_spares_staged() {
    let (c, out, err) = code(&[
        "trace",
        "replay",
        fixture("qwen-image-2026-10-06/eager-1.trace.jsonl")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(c, Some(3), "{err}");
    assert!(out.contains("in stage decode"), "{out}");
    assert!(out.contains("verdict: doesn't fit"), "{out}");
    for f in [
        "qwen-image-2026-10-06/staged-1.trace.jsonl",
        "pixal3d-2026-10-05/staged-1.trace.jsonl",
    ] {
        let (c, out, _) = code(&["trace", "replay", fixture(f).to_str().unwrap()]);
        assert_eq!(c, Some(0), "{f}: {out}");
        assert!(out.contains("would not stop it"), "{out}");
    }
}

#[test]
fn bad_traces_name_file_and_line_and_cut_lines_are_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        std::fs::read_to_string(fixture("qwen-image-2026-10-06/staged-1.trace.jsonl")).unwrap();
    let cut = dir.path().join("cut.jsonl");
    let lines: Vec<&str> = good.lines().collect();
    std::fs::write(
        &cut,
        format!("{}\n{}", lines[..50].join("\n"), &lines[50][..20]),
    )
    .unwrap();
    let (c, out, err) = code(&["trace", "summary", cut.to_str().unwrap()]);
    assert_eq!(c, Some(0), "{err}");
    assert!(err.contains("cut off"), "{err}");
    assert!(out.contains("samples"), "{out}");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, format!("{}\nnot json\n{}\n", lines[0], lines[1])).unwrap();
    let (c, _, err) = code(&["trace", "summary", bad.to_str().unwrap()]);
    assert_eq!(c, Some(2), "bad input exits 2");
    assert!(err.contains(&format!("{}:2:", bad.display())), "{err}");
    let (c, _, err) = code(&["trace", "summary", "/nonexistent.jsonl"]);
    assert_eq!(c, Some(2));
    assert!(err.contains("/nonexistent.jsonl"), "{err}");
}

#[test]
fn the_command_reference_documents_every_flag_and_command() {
    let reference = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/commands.md");
    let docs = std::fs::read_to_string(reference).unwrap();
    let (_, top, _) = code(&["--help"]);
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.contains(&"resume"), "{top}");
    for command in commands {
        assert!(
            docs.contains(&format!("headroom {command}")) || docs.contains(&format!("|{command}")),
            "docs/commands.md lacks `headroom {command}`"
        );
    }
    for command in ["guard", "watch"] {
        let (_, help, _) = code(&[command, "--help"]);
        let flags: Vec<&str> = help
            .split(|c: char| c.is_whitespace() || c == ',' || c == '=')
            .filter(|w| {
                w.starts_with("--")
                    && w.len() > 2
                    && w[2..].chars().all(|c| c.is_ascii_lowercase() || c == '-')
            })
            .filter(|w| !matches!(*w, "--help" | "--verbose" | "--version"))
            .collect();
        assert!(flags.len() >= 10, "{command} --help: {flags:?}");
        for flag in flags {
            assert!(
                docs.contains(&format!("`{flag}")),
                "docs/commands.md lacks {flag} of {command}"
            );
        }
    }
}

#[test]
fn a_job_whose_main_thread_exits_first_runs_until_its_last_thread_and_keeps_its_status() {
    // The main thread of a multi-threaded program can end before the others (and does, for
    // a moment, in every multi-threaded exit): /proc shows the process as a zombie while its
    // other threads run. It is still running; its exit status comes when the last thread
    // ends. Both membership modes: its own cgroup (as root) and by processes.
    let hog = support::hog_path().display().to_string();
    for cgroup in ["on", "off"] {
        let started = Instant::now();
        let out = headroom()
            .env("HEADROOM_JOB_CGROUP", cgroup)
            .args([
                "guard",
                "--wait-free",
                "0",
                "--poll",
                "0.2s",
                "--json",
                "--",
            ])
            .args([hog.as_str(), "8M", "--main-exits-first", "2"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(7), "cgroup {cgroup}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["verdict"]["ended"],
            serde_json::json!({"kind": "exited", "code": 7}),
            "cgroup {cgroup}: not vanished"
        );
        assert!(
            started.elapsed() >= Duration::from_secs(2),
            "guarded until its last thread ended"
        );
    }
}
