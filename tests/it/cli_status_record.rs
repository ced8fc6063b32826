//! `headroom status` and `headroom record` against the real machine: numbers agree with
//! `/proc/meminfo` and `/proc/swaps`, and a recorded trace parses line by line.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use std::process::Command;

use serde_json::Value;

use crate::support::proc_state;

fn headroom() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_headroom"));
    // Never the real user's folders.
    cmd.env(
        "HEADROOM_HOME",
        std::env::temp_dir().join("headroom-test-home-status"),
    );
    cmd
}

fn meminfo_kib(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Sum of the Size and Used columns of `/proc/swaps`, in bytes.
fn proc_swaps_bytes() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/swaps").unwrap();
    text.lines().skip(1).fold((0, 0), |(size, used), line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (
            size + f[2].parse::<u64>().unwrap() * 1024,
            used + f[3].parse::<u64>().unwrap() * 1024,
        )
    })
}

#[test]
fn status_json_agrees_with_proc() {
    let out = headroom()
        .args(["status", "--json", "--top", "5"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sys = &v["system"];
    assert_eq!(
        sys["total_bytes"].as_u64().unwrap(),
        meminfo_kib("MemTotal") * 1024
    );
    let free = sys["free_percent"].as_f64().unwrap();
    let expected = meminfo_kib("MemAvailable") as f64 * 100.0 / meminfo_kib("MemTotal") as f64;
    assert!(
        (free - expected).abs() < 2.0,
        "free {free} vs meminfo {expected}"
    );
    let (swaps_size, swaps_used) = proc_swaps_bytes();
    assert_eq!(sys["swap_total_bytes"].as_u64().unwrap(), swaps_size);
    let used = sys["swap_used_bytes"].as_u64().unwrap();
    // /proc/swaps counts swap-cache slots that meminfo's SwapFree does not: allow 64 MiB.
    assert!(
        used.abs_diff(swaps_used) <= 64 << 20,
        "{used} vs /proc/swaps {swaps_used}"
    );
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 5);
    let footprints: Vec<u64> = procs
        .iter()
        .map(|p| p["footprint_bytes"].as_u64().unwrap())
        .collect();
    assert!(
        footprints.windows(2).all(|w| w[0] >= w[1]),
        "sorted: {footprints:?}"
    );
    assert!(footprints[0] > 0);
    for p in procs {
        let pid = p["pid"].as_u64().unwrap();
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists() || pid > 0);
    }
}

#[test]
fn status_text_is_human_readable() {
    let out = headroom().arg("status").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Memory "), "{text}");
    assert!(text.contains(" GiB total"), "{text}");
    assert!(text.contains("FOOTPRINT"), "{text}");
}

#[test]
fn record_writes_a_parseable_trace_of_a_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut job = Command::new("sleep").arg("30").spawn().unwrap();
    // Recorded once it is `sleep` and asleep: between fork and exec, and until exec has
    // faulted its first pages in (the name is set before), its memory is in flux; a cold
    // CI run's first sample read a footprint of 0 there.
    let comm = format!("/proc/{}/comm", job.id());
    let statm = format!("/proc/{}/statm", job.id());
    let asleep = || {
        let named = std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "sleep");
        let resident = std::fs::read_to_string(&statm).ok().and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|r| r.parse::<u64>().ok())
        });
        named && resident.is_some_and(|r| r > 0) && proc_state(job.id()) == Some('S')
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !asleep() {
        assert!(std::time::Instant::now() < deadline, "sleep never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = headroom()
        .args([
            "record",
            "--duration",
            "3s",
            "--pid",
            &job.id().to_string(),
            "-o",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let _ = job.kill();
    let _ = job.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["type"], "start");
    assert_eq!(records[0]["interval"], 0.5);
    assert_eq!(records.last().unwrap()["type"], "end");
    let samples: Vec<&Value> = records.iter().filter(|r| r["type"] == "sample").collect();
    assert!(samples.len() >= 6, "{} samples", samples.len());
    for s in &samples {
        assert!(
            s["footprint"].as_u64().unwrap() > 0,
            "sleep has a footprint: {s}"
        );
        assert!(s["swap_used"].is_u64() && s["level"].is_number() && s["t"].is_number());
    }
    let ts: Vec<f64> = samples.iter().map(|s| s["t"].as_f64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[1] > w[0]));
}

#[test]
fn record_stops_when_the_process_exits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    // Not reaped until the recorder is done: it must see the zombie as exited.
    let mut job = Command::new("sleep").arg("1").spawn().unwrap();
    let out = headroom()
        .args([
            "record",
            "--interval",
            "100ms",
            "--pid",
            &job.id().to_string(),
            "-o",
        ])
        .arg(&path)
        .output()
        .unwrap();
    job.wait().unwrap();
    assert!(out.status.success());
    let last = std::fs::read_to_string(&path).unwrap();
    let end: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(end["reason"], "exited");
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["record", "--interval", "0", "-o", "/tmp/x"], "--interval"),
        (
            &["record", "--interval", "fast", "-o", "/tmp/x"],
            "--interval",
        ),
        (
            &["record", "--duration", "5x", "-o", "/tmp/x"],
            "--duration",
        ),
        (&["record", "--pid", "abc", "-o", "/tmp/x"], "--pid"),
        (&["record", "--pid", "4000000000", "-o", "/tmp/x"], "--pid"),
        (&["record"], "--output"),
        (&["status", "--top=-3"], "--top"),
        (&["status", "--bogus"], "--bogus"),
    ];
    for (args, flag) in cases {
        let out = headroom().args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?} should name {flag}: {err}");
    }
}
