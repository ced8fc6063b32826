//! Inside a memory cgroup, on real processes (root: the tests make v1 or v2 cgroups under
//! their own and remove them): `status` shows the limit and the host, a guard judges by the
//! room under the limit, and a job the kernel's OOM killer ends is "doesn't fit", never
//! "fits", with the job's own exit status (137).

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

mod support;

use std::process::{Command, Output};

use support::{headroom_bin, real_swap_lock, test_home, MemCgroup};

const MIB: u64 = 1 << 20;

/// Runs `argv` inside `cg` (the headroom under test included) with the tests' home.
fn run_in(cg: &MemCgroup, argv: &[&str]) -> Output {
    let wrapped = cg.wrap(argv);
    Command::new(&wrapped[0])
        .args(&wrapped[1..])
        .env("HEADROOM_HOME", test_home())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn status_inside_a_limited_cgroup_shows_the_limit_and_the_host() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let cg = MemCgroup::named("status-", 256);
    let bin = headroom_bin();
    let bin = bin.to_str().unwrap();
    let out = run_in(&cg, &[bin, "status", "--top", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let line = stdout.lines().next().unwrap();
    let want = format!("Memory   256 MB limit (cgroup {}), ", cg.cgroup_path());
    assert!(line.starts_with(&want), "{line}\nwanted {want}");
    assert!(
        line.contains("% free of it; host ") && line.contains("% free, pressure"),
        "{line}"
    );
    let out = run_in(&cg, &[bin, "status", "--json", "--top", "1"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let system = &json["system"];
    assert_eq!(system["total_bytes"].as_u64(), Some(256 * MIB), "{system}");
    assert_eq!(system["cgroup"]["limit_bytes"].as_u64(), Some(256 * MIB));
    assert_eq!(
        system["cgroup"]["path"].as_str(),
        Some(cg.cgroup_path().as_str())
    );
    let free = system["free_percent"].as_f64().unwrap();
    assert!(
        free > 50.0 && free <= 100.0,
        "a small status in 256 MB: {free}"
    );
    let host_total = system["cgroup"]["host_total_bytes"].as_u64().unwrap();
    assert!(host_total > 1 << 30, "the host is kept: {host_total}");
    // Outside the cgroup: the host, no cgroup.
    let out = Command::new(bin)
        .args(["status", "--json", "--top", "1"])
        .env("HEADROOM_HOME", test_home())
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["system"]["cgroup"].is_null(), "{}", json["system"]);
}

#[test]
fn a_job_the_oom_killer_ends_does_not_fit() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let cg = MemCgroup::named("oom-", 128);
    cg.without_swap();
    let bin = headroom_bin();
    // 600 MiB at once, every page touched: far faster than any check, the OOM killer ends
    // it at 128 MiB. The floor is off so only the kernel can end it.
    let hog = "b = bytearray(600 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n";
    let out = run_in(
        &cg,
        &[
            bin.to_str().unwrap(),
            "guard",
            "--wait-free",
            "0",
            "--kill-free",
            "0",
            "--",
            "python3",
            "-c",
            hog,
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(137),
        "the job's own status\n{stderr}"
    );
    assert!(
        stderr.contains("doesn't fit: killed by the OOM killer (limit 128 MB)"),
        "{stderr}"
    );
    assert!(!stderr.contains("fits:"), "{stderr}");
    assert!(cg.pids().is_empty(), "nothing left in the cgroup");
}
