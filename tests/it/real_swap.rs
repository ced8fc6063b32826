//! End to end on real swap (root): a swap file, a memory cgroup with a 64 MiB limit, and the
//! hog inside it. The hog's footprint stays at the limit while swap grows (the footprint
//! illusion, for real); `guard` and `watch` must see it and act, and touch nothing else.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use headroom_os::counters::{CounterSource, Counters};
use support::*;

#[test]
fn the_footprint_illusion_is_real() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let tag = tag("illusion");
    let argv = hog_argv("400M", &tag, &[]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let wrapped = rig.cgroup.wrap(&argv);
    let swap_before = swap_used_bytes();
    let mut hog = Command::new(&wrapped[0])
        .args(&wrapped[1..])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let grew = wait_until(Duration::from_secs(90), || {
        swap_used_bytes() >= swap_before + (250 << 20)
    });
    let counters = Counters::new();
    let mem = counters.process_memory(hog.id());
    let _ = hog.kill();
    let _ = hog.wait();
    assert!(
        grew,
        "swap did not grow by 250 MiB (before {swap_before}, now {})",
        swap_used_bytes()
    );
    let mem = mem.unwrap();
    // Resident footprint held at the cgroup limit, the rest swapped: 400 MiB "looks like" ≤ 80.
    assert!(
        mem.footprint_bytes <= (LIMIT_MIB + 16) << 20,
        "footprint {}",
        mem.footprint_bytes
    );
    assert!(
        mem.swap_bytes.unwrap_or(0) >= 250 << 20,
        "process swap {:?}",
        mem.swap_bytes
    );
    rig.bystander.assert_alive();
}

#[test]
fn guard_stops_a_hog_over_budget_with_its_children() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let tag = tag("guard-stop");
    let argv = hog_in_cgroup(&rig, "400M", &tag, &["--children", "2"]);
    let out = headroom()
        .args([
            "guard",
            "--swap-budget",
            "100M",
            "--grace",
            "2s",
            "--json",
            "--",
        ])
        .args(&argv)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("doesn't fit"), "{stderr}");
    assert!(stderr.contains("stopping"), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["exit_code"], 3);
    assert_eq!(summary["verdict"]["fits"], false);
    assert_eq!(summary["verdict"]["ended"]["kind"], "stopped");
    // Stopped within its budget: growth at the stop is at most the budget plus what one
    // check at 100 ms can add.
    let growth = summary["verdict"]["swap_growth_bytes"].as_u64().unwrap();
    assert!(growth < 400 << 20, "growth {growth}");
    assert!(
        wait_until(Duration::from_secs(5), || live_with_tag(&tag).is_empty()),
        "hogs left: {:?}",
        live_with_tag(&tag)
    );
    rig.bystander.assert_alive();
}

#[test]
fn guard_lets_a_small_job_finish_and_says_it_fits() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let tag = tag("guard-fits");
    let argv = hog_argv("50M", &tag, &["--hold", "2"]);
    let out = headroom()
        .args(["guard", "--json", "--"])
        .args(&argv)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(": fits: swap +"), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["verdict"]["fits"], true);
    assert!(summary["verdict"]["peak_footprint_bytes"].as_u64().unwrap() >= 50 << 20);
    rig.bystander.assert_alive();
}

#[test]
fn watch_reports_growth_and_does_not_fit() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let tag = tag("watch");
    let mut hog = spawn_hog(&rig, "400M", &tag, &["--delay", "1500", "--hold", "4"]);
    let out = headroom()
        .args([
            "watch",
            &hog.id().to_string(),
            "--notify-step",
            "100M",
            "--poll",
            "200ms",
        ])
        .output()
        .unwrap();
    let _ = hog.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("swap grew"), "{stderr}");
    assert!(stderr.contains("doesn't fit: swap +"), "{stderr}");
    rig.bystander.assert_alive();
}

#[test]
fn watch_guard_stops_the_process_tree() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let tag = tag("watch-guard");
    let mut hog = spawn_hog(&rig, "400M", &tag, &["--children", "2", "--delay", "1500"]);
    let out = headroom()
        .args([
            "watch",
            &hog.id().to_string(),
            "--guard",
            "--swap-budget",
            "100M",
            "--grace",
            "2s",
        ])
        .output()
        .unwrap();
    let status = hog.wait().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(!status.success(), "the hog was stopped by a signal");
    assert!(
        wait_until(Duration::from_secs(5), || live_with_tag(&tag).is_empty()),
        "hogs left: {:?}",
        live_with_tag(&tag)
    );
    rig.bystander.assert_alive();
}

/// `headroom guard` over `script` run by `sh -c` inside the rig's cgroup (`$HOG` names the
/// hog); returns exit code, stderr and the `--json` summary.
fn guard_script(
    rig: &Rig,
    flags: &[&str],
    script: &str,
    tag: &str,
) -> (Option<i32>, String, serde_json::Value) {
    let wrapped = rig.cgroup.wrap(&["sh", "-c", script, tag]);
    let mut cmd = headroom();
    cmd.args(["guard", "--wait-free", "0", "--json"])
        .args(flags)
        .arg("--")
        .args(&wrapped)
        .env("HOG", hog_path());
    let (code, stdout, stderr) = run_to_files(cmd);
    let summary = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (code, stderr, summary)
}

/// Guards `script` (which starts a hog that leaves the job's way: `{HOG}` and `{TAG}` are
/// filled in) with a 100M budget: the hog must be stopped within budget, every process of it
/// gone, the bystander alive. Returns the `--json` summary.
fn guard_stops_a_stray_hog(name: &str, script: &str) -> serde_json::Value {
    let mut rig = rig();
    let tag = tag(name);
    let script = script.replace("{TAG}", &tag).replace("{HOG}", "\"$HOG\"");
    let (code, stderr, summary) = guard_script(
        &rig,
        &["--swap-budget", "100M", "--grace", "2s"],
        &script,
        &tag,
    );
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(summary["verdict"]["ended"]["kind"], "stopped", "{summary}");
    let growth = summary["verdict"]["swap_growth_bytes"].as_u64().unwrap();
    assert!(growth < 300 << 20, "growth {growth}");
    assert!(
        wait_until(Duration::from_secs(5), || live_with_tag(&tag).is_empty()),
        "the {name} survived: {:?}",
        live_with_tag(&tag)
    );
    rig.bystander.assert_alive();
    summary
}

#[test]
fn guard_stops_a_setsid_worker_that_grows_swap() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    // The worker leaves the job's process group and session; its parent exits at once.
    guard_stops_a_stray_hog("setsid-hog", "setsid {HOG} 400M --tag {TAG} & exit 0");
}

#[test]
fn guard_stops_a_double_forked_daemon_that_grows_swap() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    // A subshell forks the hog and exits: the hog is an orphan, re-parented.
    let summary = guard_stops_a_stray_hog("daemon-hog", "( {HOG} 400M --tag {TAG} & ) ; exit 0");
    assert!(
        summary["verdict"]["processes"].as_u64().unwrap() >= 2,
        "{summary}"
    );
}

#[test]
fn faster_checks_near_the_budget_are_all_in_the_trace() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let tag = tag("one-clock");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    // ~350 MiB of swap growth against a 600M budget: near it the guard checks faster than
    // the 0.3 s poll, and the trace keeps every one of those checks on its one clock.
    let argv = hog_in_cgroup(&rig, "420M", &tag, &["--hold", "2"]);
    let started = std::time::Instant::now();
    let out = headroom()
        .args([
            "guard",
            "--wait-free",
            "0",
            "--swap-budget",
            "600M",
            "--poll",
            "0.3s",
        ])
        .arg("--trace")
        .arg(&trace)
        .arg("--")
        .args(&argv)
        .output()
        .unwrap();
    let wall = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let ts: Vec<f64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        // The checks of the run: the reading that saw it end (no process left, written just
        // before the `end` record) is the machine's, not a check.
        .filter(|v| v["type"] == "sample" && v["processes"] != 0)
        .map(|v| v["t"].as_f64().unwrap())
        .collect();
    assert!(ts.len() >= 5, "{text}");
    // Never closer than the fastest check, never further apart than the poll (and the
    // time a reading takes), and the faster checks are there.
    let mut short = 0;
    for w in ts.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap >= 0.09,
            "t {} then {}: closer than a check\n{text}",
            w[0],
            w[1]
        );
        assert!(
            gap <= 0.3 + 0.25,
            "t {} then {}: a check missing\n{text}",
            w[0],
            w[1]
        );
        short += usize::from(gap < 0.25);
    }
    assert!(short > 0, "no faster check in the trace\n{text}");
    let last = *ts.last().unwrap();
    assert!(
        last >= wall - 1.5 && last <= wall,
        "last t {last} for a {wall} s run"
    );
    // The summary of that trace covers the whole run.
    let summary = headroom()
        .args(["trace", "summary", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&summary.stdout).unwrap();
    let duration = s["duration_seconds"]
        .as_f64()
        .unwrap_or_else(|| panic!("{s}"));
    assert!(
        duration >= wall - 1.5,
        "summary duration {duration} for a {wall} s run: {s}"
    );
    rig.bystander.assert_alive();
}

#[test]
fn the_verdict_names_the_stage_that_grew_swap() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("stages.jsonl");
    // load 20 MiB and work 30 MiB fit in the 64 MiB cgroup; decode adds 300 MiB and passes
    // a 150M budget.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/stages.py");
    let wrapped = rig
        .cgroup
        .wrap(&["python3", script, "20", "30", "300", "--hold", "1.5"]);
    let mut cmd = headroom();
    cmd.args([
        "guard",
        "--wait-free",
        "0",
        "--swap-budget",
        "150M",
        "--json",
    ])
    .arg("--trace")
    .arg(&trace)
    .arg("--")
    .args(&wrapped);
    let (code, stdout, stderr) = run_to_files(cmd);
    assert_eq!(code, Some(3), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let stages = v["verdict"]["stages"].as_array().unwrap();
    let names: Vec<&str> = stages
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["load", "work", "decode"], "{v}");
    let decode = stages[2]["swap_growth_bytes"].as_u64().unwrap();
    assert!(decode > 64 << 20, "decode grew {decode}: {v}");
    let verdict_line = stderr.lines().find(|l| l.contains("doesn't fit")).unwrap();
    assert!(verdict_line.contains("(decode +"), "{verdict_line}");
    assert!(!verdict_line.contains("load +"), "{verdict_line}");
    // The trace has the three stage events, and its summary the same attribution.
    let text = std::fs::read_to_string(&trace).unwrap();
    let marks = text
        .lines()
        .filter(|l| l.contains(r#""kind":"stage""#))
        .count();
    assert_eq!(marks, 3, "{text}");
    let out = headroom()
        .args(["trace", "summary", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let decode_in_trace = s["stage_swap"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["stage"] == "decode")
        .unwrap_or_else(|| panic!("{s}"));
    assert!(
        decode_in_trace["swap_growth_bytes"].as_u64().unwrap() > 64 << 20,
        "{s}"
    );
    rig.bystander.assert_alive();
}

#[test]
fn guard_stops_a_hog_that_is_the_thousandth_child() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    // 999 sleeps first: the hog's pid is past the first page of the children file. Only the
    // hog runs in the rig's cgroup (999 sleeps would not fit in its 64 MiB).
    let mut rig = rig();
    let tag = tag("thousandth-hog");
    let sleep = format!("600.{}", std::process::id());
    let script = format!(
        "for i in $(seq 999); do sleep {sleep} & done; \
         sh -c 'echo $$ > {procs} && exec \"$HOG\" 400M --tag {tag}' & wait",
        procs = rig.cgroup.procs_file().display()
    );
    let mut cmd = headroom();
    cmd.args([
        "guard",
        "--wait-free",
        "0",
        "--json",
        "--swap-budget",
        "100M",
        "--grace",
        "2s",
    ])
    .args(["--", "sh", "-c", &script])
    .env("HOG", hog_path());
    let (code, stdout, stderr) = run_to_files(cmd);
    let left = |t: &str| live_with_tag(t).len();
    let gone = wait_until(Duration::from_secs(10), || left(&tag) + left(&sleep) == 0);
    assert_eq!(code, Some(3), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        gone,
        "after the stop {} hogs and {} sleeps run on",
        left(&tag),
        left(&sleep)
    );
    let growth = summary["verdict"]["swap_growth_bytes"].as_u64().unwrap();
    assert!(growth < 300 << 20, "growth {growth}");
    assert!(
        summary["verdict"]["processes"].as_u64().unwrap() >= 1001,
        "{summary}"
    );
    assert!(
        summary["stop"]["survivors"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "{summary}"
    );
    rig.bystander.assert_alive();
}

#[test]
fn guard_stops_a_hog_while_nobody_reads_its_output() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    // `headroom guard ... 2>&1 | less`, and the reader stopped reading: the job fills the
    // pipe, so every line the guard writes would block. The stop must not wait for them.
    let mut rig = rig();
    let tag = tag("stalled-output");
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new fds into the array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    use std::os::fd::FromRawFd;
    // SAFETY: both fds were just created and are owned here.
    let (mut read_end, write_end) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    let script = format!("yes {tag} | head -c 300000 >&2 & exec \"$HOG\" 500M --tag {tag}");
    let wrapped = rig.cgroup.wrap(&["sh", "-c", &script]);
    let swap_start = swap_used_bytes();
    let mut guard = headroom()
        .args([
            "guard",
            "--wait-free",
            "0",
            "--swap-budget",
            "100M",
            "--grace",
            "2s",
        ])
        .arg("--")
        .args(&wrapped)
        .env("HOG", hog_path())
        .stdin(Stdio::null())
        .stdout(write_end.try_clone().unwrap())
        .stderr(write_end)
        .spawn()
        .unwrap();
    let me = guard.id();
    let hogs = || {
        live_with_tag(&tag)
            .into_iter()
            .filter(|&p| p != me)
            .collect::<Vec<_>>()
    };
    assert!(wait_until(Duration::from_secs(10), || !hogs().is_empty()));
    let mut peak = 0;
    let stopped = wait_until(Duration::from_secs(60), || {
        peak = peak.max(swap_used_bytes().saturating_sub(swap_start));
        hogs().is_empty()
    });
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = std::io::Read::read_to_end(&mut read_end, &mut out);
        out
    });
    let code = guard.wait().unwrap().code();
    let out = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    assert!(
        stopped,
        "the hog ran on while the output was not read (swap +{} MiB)",
        peak >> 20
    );
    assert!(peak < 300 << 20, "swap grew {} MiB", peak >> 20);
    assert_eq!(code, Some(3), "{}", out.lines().last().unwrap_or_default());
    rig.bystander.assert_alive();
}

#[test]
fn a_live_guards_own_trace_replayed_stops_where_it_stopped() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    // `trace replay` is the guard's own loop fed by the trace, which holds every reading the
    // live guard judged: with the same flags it stops where the live guard stopped.
    let mut rig = rig();
    let tag = tag("replay-agrees");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("live.jsonl");
    let argv = hog_in_cgroup(&rig, "500M", &tag, &[]);
    let flags = ["--swap-budget", "150M", "--poll", "0.5s"];
    let mut cmd = headroom();
    cmd.args(["guard", "--wait-free", "0", "--grace", "2s"])
        .args(flags)
        .arg("--trace")
        .arg(&trace)
        .arg("--")
        .args(&argv);
    let (code, _, stderr) = run_to_files(cmd);
    assert_eq!(code, Some(3), "{stderr}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let live_stop = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| {
            v["type"] == "event"
                && v["note"]
                    .as_str()
                    .is_some_and(|n| n.contains("\"stopped\""))
        })
        .and_then(|v| v["t"].as_f64())
        .unwrap_or_else(|| panic!("no stop event in the trace:\n{text}"));
    let mut replay = headroom();
    replay
        .args(["trace", "replay", "--json"])
        .arg(&trace)
        .args(&flags[..2]);
    let (code, out, err) = run_to_files(replay);
    assert_eq!(code, Some(3), "{err}{out}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    let replay_stop = r["stopped_at_seconds"].as_f64().unwrap();
    // The same readings judged by the same rules: the stop on the same sample (the live
    // event is written after the signal, a few ms after its reading).
    assert!(
        (replay_stop - live_stop).abs() <= 0.1,
        "live stopped at {live_stop} s, its replay at {replay_stop} s\n{text}"
    );
    // Without its flags: the trace keeps the limits the run was judged under (a 150 MiB
    // budget, not the default 8 GiB), so the replay stops on the same sample...
    let mut own = headroom();
    own.args(["trace", "replay", "--json"]).arg(&trace);
    let (code, out, err) = run_to_files(own);
    assert_eq!(code, Some(3), "{err}{out}");
    assert!(
        err.contains("the run's own limits: swap budget 150 MiB"),
        "{err}"
    );
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["stopped_at_seconds"].as_f64(), Some(replay_stop));
    // ...and a flag given takes the place of the run's own, and says so.
    let mut wider = headroom();
    wider
        .args(["trace", "replay", "--json", "--swap-budget", "100G"])
        .arg(&trace);
    let (code, out, err) = run_to_files(wider);
    assert_eq!(code, Some(0), "{err}{out}");
    assert!(err.contains("--swap-budget given"), "{err}");
    rig.bystander.assert_alive();
}
