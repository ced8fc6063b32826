//! The job model of `headroom guard` and `watch`, with real processes and without root:
//! nothing is started before the guard is ready, a job is all of its processes, thread ids
//! are refused, queued guards do not wait on each other, and a stop is a stop only when a
//! signal reached the job.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{headroom, live_with_tag, run_to_files, tag, test_home, wait_until};

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = headroom();
    cmd.args(args);
    run_to_files(cmd)
}

#[test]
fn an_unwritable_trace_starts_nothing() {
    let tag = tag("unwritable-trace");
    let (c, _, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--trace",
        "/nonexistent/t.jsonl",
        "--",
        "sh",
        "-c",
        "sleep 30; exit 0",
        &tag,
    ]);
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("--trace /nonexistent/t.jsonl"), "{err}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        live_with_tag(&tag).is_empty(),
        "the command was started and left unguarded"
    );
}

#[test]
fn a_background_child_keeps_the_job_running() {
    let tag = tag("background");
    let started = Instant::now();
    let (c, out, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--json",
        "--",
        "sh",
        "-c",
        "sleep 2 & echo started",
        &tag,
    ]);
    assert_eq!(c, Some(0), "{err}");
    assert!(out.contains("started"), "{out}");
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "the guard returned while the background child ran: {:?}",
        started.elapsed()
    );
    let json = &out[out.find('{').unwrap()..];
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["verdict"]["processes"], 2, "{v}");
    assert!(err.contains("2 processes"), "{err}");
}

#[test]
fn a_setsid_worker_is_stopped_with_the_job() {
    // The worker leaves the process group (setsid) and its parent exits at once: only a
    // job that remembers every member can stop it. The guard stops on --kill-free 100.
    let tag = tag("setsid");
    let (c, _, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--kill-free",
        "100",
        "--grace",
        "1s",
        "--",
        "sh",
        "-c",
        "setsid sleep 60 & sleep 60 & wait",
        &tag,
    ]);
    assert_eq!(c, Some(3), "{err}");
    // `setsid sleep` has no tag in its command line: find it as a sleep 60 in its own session.
    assert!(wait_until(Duration::from_secs(3), || live_with_tag(&tag).is_empty()));
    assert!(
        !orphan_sleep_60_exists(),
        "the setsid worker survived the stop: {err}"
    );
}

/// A `sleep 60` that is its own session leader (the setsid worker), still alive.
fn orphan_sleep_60_exists() -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(") ")
            .map(|(_, rest)| rest.split(' ').collect())
            .unwrap_or_default();
        let own_session = fields.get(3) == e.file_name().to_str().as_ref();
        let zombie = fields.first() == Some(&"Z");
        cmdline == b"sleep\x0060\x00" && own_session && !zombie
    })
}

#[test]
fn a_double_forked_daemon_is_a_member() {
    let tag = tag("daemon");
    // The subshell forks the daemon and exits: it is re-parented, still a member.
    let (c, _, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--json",
        "--",
        "sh",
        "-c",
        "( sleep 1.5 & ) ; exit 5",
        &tag,
    ]);
    assert_eq!(c, Some(5), "the command's own exit code: {err}");
    assert!(err.contains("processes"), "{err}");
}

#[test]
fn a_thread_id_is_refused() {
    // A thread of this test process: an ancestor of the headroom it runs. Guarding it would
    // signal the whole thread group.
    let worker = std::thread::spawn(|| std::thread::sleep(Duration::from_secs(5)));
    let me = std::process::id();
    let tid = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&t| t != me)
        .unwrap();
    let (c, _, err) = run(&["watch", &tid.to_string(), "--guard", "--kill-free", "100"]);
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("thread"), "{err}");
    drop(worker);
}

#[test]
fn queued_busy_guards_do_not_wait_on_each_other() {
    let tag = tag("queued");
    let guard = || {
        headroom()
            .args([
                "guard",
                "--wait-free",
                "0",
                "--busy",
                &tag,
                "--quiet-for",
                "0s",
                "--start-timeout",
                "20s",
                "--poll",
                "0.1s",
                "--",
                "sh",
                "-c",
                "sleep 1",
                &tag,
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let started = Instant::now();
    let (a, b) = (guard(), guard());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for out in [&a, &b] {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_job_that_exits_as_it_is_stopped_keeps_its_exit_code() {
    // --kill-free 100 stops at the second check; the job exits on its own around then. Either
    // a signal reached it (exit 3, "stopped") or it ended first and keeps its own code 7:
    // never "stopped" without a signal.
    for delay in ["0.15", "0.2", "0.25", "0.3"] {
        let (c, out, err) = run(&[
            "guard",
            "--wait-free",
            "0",
            "--kill-free",
            "100",
            "--poll",
            "0.1s",
            "--json",
            "--",
            "sh",
            "-c",
            &format!("sleep {delay}; exit 7"),
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let signalled = v["stop"]["terminated"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
            || v["stop"]["killed"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
        match c {
            Some(3) => assert!(signalled, "stopped without a signal: {v} {err}"),
            Some(7) => assert_eq!(v["verdict"]["ended"]["kind"], "exited", "{v}"),
            other => panic!("exit {other:?}: {err}"),
        }
    }
}

#[test]
fn job_files_go_to_headroom_home_and_are_pruned() {
    let jobs = test_home().join("state/jobs");
    // 25 old finished jobs: the next guard keeps the newest 20 at most.
    std::fs::create_dir_all(&jobs).unwrap();
    for i in 0..25u32 {
        let file = serde_json::json!({
            "pid": 900_000 + i, "start_time": 1, "command": "old", "started_at_ms": 1000 + i64::from(i),
            "updated_at_ms": 4_000_000_000_000i64, "swap_budget_bytes": 1, "swap_start_bytes": 0,
            "swap_growth_bytes": 0, "peak_footprint_bytes": null, "state": "finished",
            "verdict": null
        });
        std::fs::write(
            jobs.join(format!("{}-1.json", 900_000 + i)),
            file.to_string(),
        )
        .unwrap();
    }
    let (c, _, err) = run(&["guard", "--wait-free", "0", "--", "true"]);
    assert_eq!(c, Some(0), "{err}");
    let names: Vec<String> = std::fs::read_dir(&jobs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    // Other tests share this HEADROOM_HOME: whatever else is there, the five oldest go.
    for i in 0..5 {
        let name = format!("{}-1.json", 900_000 + i);
        assert!(!names.contains(&name), "{name} was kept: {names:?}");
    }
    let finished = names.iter().filter(|n| n.starts_with("9000")).count();
    assert!(finished <= 20, "{finished} old finished files kept");
}

#[test]
fn a_one_sample_burst_that_fits_is_not_stopped_in_replay() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("burst.jsonl");
    let mut lines = vec![r#"{"type":"start","interval":0.5}"#.to_string()];
    for k in 0..20u64 {
        let swap: u64 = if k < 10 { 0 } else { 150 << 20 };
        lines.push(format!(
            r#"{{"type":"sample","t":{},"footprint":0,"swap_used":{swap},"level":50}}"#,
            k as f64 * 0.5
        ));
    }
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let (c, out, err) = run(&[
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--swap-budget",
        "200M",
    ]);
    assert_eq!(
        c,
        Some(0),
        "a burst that stays within budget was stopped: {out}{err}"
    );
}

#[test]
fn watch_keeps_a_process_that_outlives_its_parent() {
    // sh starts a background sleep, then exits: watch follows the sleep until it ends.
    let mut sh = Command::new("sh")
        .args(["-c", "sleep 1.5 & sleep 0.5; exit 0"])
        .spawn()
        .unwrap();
    let pid = sh.id().to_string();
    let watcher = headroom()
        .args(["watch", &pid, "--json", "--poll", "0.1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    sh.wait().unwrap();
    let out = watcher.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "the watch ended with the parent: {v}"
    );
    assert_eq!(v["verdict"]["processes"], 3, "{v}");
}

#[test]
fn a_full_disk_mid_run_drops_the_trace_and_keeps_guarding() {
    // A 64 KiB tmpfs holds the trace; the job fills it (the trace then fails once its last
    // page is full). The trace fails mid-run: the guard
    // says so and goes on to the job's end and verdict.
    let Some(_lock) = support::real_swap_lock() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    let small = support::SmallTmpfs::mount(&mnt, "64k");
    let trace = mnt.join("t.jsonl");
    let fill = mnt.join("fill");
    let out = headroom()
        .args(["guard", "--wait-free", "0", "--poll", "0.1s", "--trace"])
        .arg(&trace)
        .args(["--", "sh", "-c"])
        .arg(format!(
            "sleep 0.5; dd if=/dev/zero of={} bs=4k 2>/dev/null; sleep 3; exit 0",
            fill.display()
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    drop(small);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("the trace") && err.contains("failed"),
        "no word of the failed trace: {err}"
    );
    assert!(err.contains(": fits: swap +"), "no verdict: {err}");
}

#[test]
fn serve_beside_three_guards_recording_at_once_sees_each_job_and_spoils_no_trace() {
    // Not tried before (issue 42): `headroom serve` scraping while three guards write their
    // traces and job files in the same Headroom folder. Every scrape answers; each job shows
    // with its own label while it runs; every trace reads whole afterwards.
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut serve = Command::new(support::headroom_bin())
        .args(["serve", "--listen", &listen, "--interval", "0.2s"])
        .env("HEADROOM_HOME", home.path())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let scrape = || support::scrape_metrics(&listen);
    assert!(
        wait_until(Duration::from_secs(20), || scrape().is_some()),
        "serve never answered"
    );
    let traces: Vec<_> = (0..3)
        .map(|i| home.path().join(format!("t{i}.jsonl")))
        .collect();
    let guards: Vec<_> = traces
        .iter()
        .map(|trace| {
            let mut cmd = Command::new(support::headroom_bin());
            support::default_keys(&mut cmd);
            cmd.env("HEADROOM_HOME", home.path())
                .env("HEADROOM_JOB_CGROUP", "off")
                .args(["guard", "--wait-free", "0", "--poll", "0.1s", "--trace"])
                .arg(trace)
                .args(["--", "sleep", "3"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let leaders = |body: &str| -> std::collections::HashSet<String> {
        body.lines()
            .filter(|l| l.starts_with("headroom_job_state{"))
            .filter_map(|l| {
                l.split("job=\"")
                    .nth(1)?
                    .split('"')
                    .next()
                    .map(str::to_string)
            })
            .collect()
    };
    let mut seen = std::collections::HashSet::new();
    let mut scrapes = 0;
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let body = scrape().expect("every scrape answers while the guards write");
        seen.extend(leaders(&body));
        scrapes += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    for g in guards {
        let out = g.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(seen.len() >= 3, "{scrapes} scrapes saw jobs {seen:?}");
    for trace in &traces {
        let (c, out, err) = run(&["trace", "summary", "--json", trace.to_str().unwrap()]);
        assert_eq!(c, Some(0), "{}: {err}", trace.display());
        let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(summary["samples"].as_u64().unwrap_or(0) > 5, "{summary}");
        assert_eq!(summary["ended"], true, "{summary}");
    }
}
