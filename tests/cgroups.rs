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

/// The v1 or v2 cgroup path of `pid` for `controller` ("" for v2).
fn cgroup_of(pid: u32, controller: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|line| {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let hit = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        hit.then(|| path.to_string())
    })
}

/// The file that says whether the job's cgroup is frozen, and the word that says it is.
fn freezer_state(pid: u32) -> Option<(std::path::PathBuf, &'static str)> {
    match cgroup_of(pid, "freezer") {
        Some(path) => Some((
            std::path::Path::new("/sys/fs/cgroup/freezer")
                .join(path.trim_start_matches('/'))
                .join("freezer.state"),
            "FROZEN",
        )),
        None => Some((
            std::path::Path::new("/sys/fs/cgroup")
                .join(cgroup_of(pid, "")?.trim_start_matches('/'))
                .join("cgroup.events"),
            "frozen 1",
        )),
    }
}

fn frozen(file: &std::path::Path, word: &str) -> bool {
    std::fs::read_to_string(file).is_ok_and(|t| t.contains(word))
}

#[test]
fn a_job_in_a_cgroup_of_its_own_is_frozen_thawed_and_stopped_whole() {
    use support::guard::{control, Guard, WAIT};
    use support::{hog_path, live_with_tag, tag, wait_until};
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let tag = tag("own-cgroup");
    let hog = format!("{} 1M --hold 120 --tag {tag}", hog_path().display());
    // A setsid worker, a double-forked one, and the leader itself.
    let script = format!("setsid {hog} & ({hog} &) ; exec {hog}");
    let mut guard = Guard::start_in_own_cgroup(
        &[
            "guard",
            "--wait-free",
            "0",
            "--poll",
            "0.2s",
            "--grace",
            "2s",
            "-v",
            "--",
            "sh",
            "-c",
            &script,
        ],
        &tag,
    );
    let me = guard.child.id();
    let hogs = || -> Vec<u32> {
        live_with_tag(&tag)
            .into_iter()
            .filter(|&p| p != me)
            .collect()
    };
    assert!(wait_until(WAIT, || hogs().len() == 3), "{}", guard.stderr());
    let memory_path = cgroup_of(hogs()[0], "memory")
        .or_else(|| cgroup_of(hogs()[0], ""))
        .unwrap();
    assert!(
        memory_path.contains(&format!("headroom-job-{me}-")),
        "{memory_path}\n{}",
        guard.stderr()
    );
    for pid in hogs() {
        let path = cgroup_of(pid, "memory")
            .or_else(|| cgroup_of(pid, ""))
            .unwrap();
        assert_eq!(path, memory_path, "every worker is in the job's cgroup");
    }
    // The leader: the hog the guard started (its parent is the guard).
    let leader = hogs()
        .into_iter()
        .find(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| s.rsplit(") ").next().map(str::to_string))
                .and_then(|rest| rest.split(' ').nth(1).map(str::to_string))
                == Some(me.to_string())
        })
        .unwrap();
    let (state_file, word) = freezer_state(leader).unwrap();
    assert!(
        state_file
            .to_string_lossy()
            .contains(&format!("headroom-job-{me}-")),
        "the job's own freezer: {}",
        state_file.display()
    );
    let (code, err) = control("pause", leader);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        wait_until(WAIT, || frozen(&state_file, word)),
        "{}",
        guard.stderr()
    );
    assert!(
        wait_until(WAIT, || guard.stderr().contains("paused")),
        "{}",
        guard.stderr()
    );
    // A SIGCONT from outside does not undo the freezer: the job stays paused.
    for pid in hogs() {
        // SAFETY: kill has no memory-safety preconditions; these are the test's hogs.
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    }
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert!(frozen(&state_file, word), "a SIGCONT thawed the job");
    assert!(
        !guard.stderr().contains("resumed from outside"),
        "{}",
        guard.stderr()
    );
    let (code, err) = control("resume", leader);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        wait_until(WAIT, || !frozen(&state_file, word)),
        "{}",
        guard.stderr()
    );
    let (code, err) = control("stop", leader);
    assert_eq!(code, Some(0), "{err}");
    let exit = guard.wait();
    assert_eq!(exit, Some(3), "stopped by the guard: {}", guard.stderr());
    assert!(
        wait_until(WAIT, || hogs().is_empty()),
        "the setsid and double-forked workers too"
    );
    let dir = std::path::Path::new(if cgroup_of(me, "memory").is_some() {
        "/sys/fs/cgroup/memory"
    } else {
        "/sys/fs/cgroup"
    })
    .join(memory_path.trim_start_matches('/'));
    assert!(
        wait_until(WAIT, || !dir.exists()),
        "{} was left behind",
        dir.display()
    );
    assert!(!state_file.exists(), "the freezer cgroup was left behind");
}

#[test]
fn the_peak_of_an_allocation_faster_than_the_checks_is_the_kernels() {
    use support::headroom;
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    // 300 MiB touched and freed in a fraction of a second: between two checks.
    let hog = "b = bytearray(300 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n";
    let out = headroom()
        .env_remove("HEADROOM_JOB_CGROUP")
        .args([
            "guard",
            "--wait-free",
            "0",
            "--poll",
            "2s",
            "--",
            "python3",
            "-c",
            hog,
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let peak = stderr
        .split("peak footprint ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_default()
        .to_string();
    let mb: f64 = peak.trim_end_matches(" MB").parse().unwrap_or(0.0);
    assert!(
        peak.ends_with(" MB") && mb >= 300.0,
        "peak footprint {peak:?}\n{stderr}"
    );
}

#[test]
fn json_and_the_trace_say_how_members_were_found_and_where_it_ran() {
    use support::headroom;
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let cg = MemCgroup::named("json-", 512);
    let trace = test_home().join("cgroup-json.trace.jsonl");
    let bin = headroom_bin();
    let trace_arg = trace.display().to_string();
    let out = run_in(
        &cg,
        &[
            bin.to_str().unwrap(),
            "guard",
            "--wait-free",
            "0",
            "--json",
            "--trace",
            &trace_arg,
            "--",
            "true",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tracking"]["by"], "cgroup", "{json}");
    let own = json["tracking"]["cgroup"].as_str().unwrap();
    assert!(
        own.starts_with(&format!("{}/headroom-job-", cg.cgroup_path())),
        "{own}"
    );
    let first = std::fs::read_to_string(&trace).unwrap();
    let start: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(start["memory_scope"], "cgroup", "{start}");
    assert_eq!(start["total_memory"].as_u64(), Some(512 * MIB));
    assert_eq!(start["cgroup"].as_str(), Some(cg.cgroup_path().as_str()));
    // Turned off: tracked by its processes, and why.
    let out = headroom()
        .args(["guard", "--wait-free", "0", "--json", "--", "true"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tracking"]["by"], "processes", "{json}");
    assert!(json["tracking"]["why"]
        .as_str()
        .unwrap()
        .contains("HEADROOM_JOB_CGROUP=off"));
}

#[test]
fn the_guard_stops_a_slow_allocator_before_the_oom_killer_does() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let cg = MemCgroup::named("floor-", 256);
    cg.without_swap();
    let bin = headroom_bin();
    // 80 MiB/s: the room above the 10 % floor (about 230 MiB) lasts under 3 s.
    let hog = "import time\nchunks = []\nfor _ in range(150):\n    c = bytearray(4 << 20)\n    \
               for i in range(0, len(c), 4096): c[i] = 1\n    chunks.append(c)\n    time.sleep(0.05)\n";
    let out = run_in(
        &cg,
        &[
            bin.to_str().unwrap(),
            "guard",
            "--wait-free",
            "0",
            "--",
            "python3",
            "-c",
            hog,
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stopped by the guard\n{stderr}");
    assert!(
        stderr.contains("doesn't fit") && !stderr.contains("OOM killer"),
        "{stderr}"
    );
    assert!(stderr.contains("free"), "{stderr}");
}

#[test]
fn a_job_in_its_own_cgroup_is_measured_by_the_kernels_numbers_while_it_runs() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    // 150 MiB written to tmpfs under a 64 MiB limit: shared memory charged to the job's
    // cgroup, most of it pushed to swap. No process has it in its resident size or its
    // VmSwap, so the members' sum would show a job of a few MB with no swap; the cgroup's
    // own numbers (working set, accounted swap) show it whole.
    let _swap = support::SwapFile::on(1024);
    let cg = MemCgroup::named("usage-", 64);
    let shm = format!("/dev/shm/headroom-usage-{}", std::process::id());
    let trace = test_home().join("cgroup-usage.trace.jsonl");
    let bin = headroom_bin();
    let script = format!("head -c 150M /dev/zero > {shm} && sleep 3; rm -f {shm}");
    let trace_arg = trace.display().to_string();
    let out = run_in(
        &cg,
        &[
            bin.to_str().unwrap(),
            "guard",
            "--wait-free",
            "0",
            "--kill-free",
            "0",
            "--swap-budget",
            "4G",
            "--poll",
            "0.5s",
            "--json",
            "--trace",
            &trace_arg,
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let _ = std::fs::remove_file(&shm);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["tracking"]["by"], "cgroup", "{json}");
    let samples: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["type"] == "sample")
        .collect();
    let most = |field: &str| {
        samples
            .iter()
            .filter_map(|s| s[field].as_u64())
            .max()
            .unwrap_or(0)
    };
    let (memory, swap) = (most("footprint"), most("process_swap"));
    eprintln!(
        "largest working set {} MiB, swap {} MiB",
        memory >> 20,
        swap >> 20
    );
    assert!(memory >= 32 * MIB, "working set {} MiB", memory >> 20);
    assert!(
        memory + swap >= 140 * MIB,
        "memory + swap {} MiB",
        (memory + swap) >> 20
    );
    assert!(swap >= 60 * MIB, "swap {} MiB", swap >> 20);
}
