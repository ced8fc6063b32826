//! Inside a memory cgroup, on real processes (root: the tests make v1 or v2 cgroups under
//! their own and remove them): `status` shows the limit and the host, a guard judges by the
//! room under the limit, and a job the kernel's OOM killer ends is "doesn't fit", never
//! "fits", with the job's own exit status (137).

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use crate::support;

use std::process::{Command, Output};

use support::users::{User, NOBODY};
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
    let want = format!("Memory   256 MiB limit (cgroup {}), ", cg.cgroup_path());
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
        "a small status in 256 MiB: {free}"
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
        stderr.contains("doesn't fit: killed by the OOM killer (limit 128 MiB)"),
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
    let mb: f64 = peak.trim_end_matches(" MiB").parse().unwrap_or(0.0);
    assert!(
        peak.ends_with(" MiB") && mb >= 300.0,
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

/// Python that allocates 4 MiB every 50 ms, every page touched (80 MiB/s): under a 256 MiB
/// limit the room above the 10 % floor (about 230 MiB) lasts under 3 s.
const SLOW_ALLOCATOR: &str = "import time\nchunks = []\nfor _ in range(150):\n    \
    c = bytearray(4 << 20)\n    for i in range(0, len(c), 4096): c[i] = 1\n    \
    chunks.append(c)\n    time.sleep(0.05)\n";

#[test]
fn the_guard_stops_a_slow_allocator_before_the_oom_killer_does() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let cg = MemCgroup::named("floor-", 256);
    cg.without_swap();
    let bin = headroom_bin();
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
            SLOW_ALLOCATOR,
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

/// The JSON records of a trace file.
fn trace_records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_guard_stopped_under_the_limit_replays_to_the_same_stop() {
    // Under a memory limit the low-free rule stops at the first reading under the floor and
    // checks come faster as the room shrinks: the trace must keep the limit (and every other
    // fact the rules read) for `trace replay` to stop where the live guard stopped. In both
    // membership modes: the job's own cgroup (its OOM count and peak are the kernel's) and
    // `HEADROOM_JOB_CGROUP=off`.
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    for membership in ["own", "off"] {
        let cg = MemCgroup::named(&format!("replay-{membership}-"), 256);
        cg.without_swap();
        let trace = test_home().join(format!("cgroup-replay-{membership}.trace.jsonl"));
        let bin = headroom_bin();
        let flags = ["--kill-free", "10", "--swap-budget", "4G"];
        let mut argv = vec![bin.to_str().unwrap(), "guard", "--wait-free", "0"];
        argv.extend(flags);
        argv.extend(["--poll", "0.5s", "--trace", trace.to_str().unwrap()]);
        argv.extend(["--", "python3", "-c", SLOW_ALLOCATOR]);
        let wrapped = cg.wrap(&argv);
        let mut live = Command::new(&wrapped[0]);
        live.args(&wrapped[1..]).env("HEADROOM_HOME", test_home());
        if membership == "off" {
            live.env("HEADROOM_JOB_CGROUP", "off");
        }
        let out = live.output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{membership}: {stderr}");
        assert!(
            cg.pids().is_empty(),
            "{membership}: nothing left in the cgroup"
        );
        let records = trace_records(&trace);
        let all = records.iter().map(ToString::to_string).collect::<Vec<_>>();
        let all = all.join("\n");
        // The live stop: its event, and the reading it was taken on (the last one before).
        let (stop_t, stop) = records
            .iter()
            .filter(|r| r["type"] == "event" && r["kind"] == "guard")
            .filter_map(|r| Some((r["t"].as_f64()?, r["note"].as_str()?)))
            .map(|(t, note)| (t, serde_json::from_str::<serde_json::Value>(note).unwrap()))
            .find(|(_, note)| note["event"] == "stopped")
            .unwrap_or_else(|| panic!("{membership}: no stop in the trace:\n{all}"));
        assert_eq!(stop["reason"]["kind"], "low_free", "{membership}: {stop}");
        let judged = records
            .iter()
            .filter(|r| r["type"] == "sample")
            .filter_map(|r| r["t"].as_f64())
            .take_while(|&t| t <= stop_t + 0.0005)
            .last()
            .unwrap();
        let live_verdict = &records.iter().find(|r| r["type"] == "end").unwrap()["verdict"];
        let mut replay = support::headroom();
        replay
            .args(["trace", "replay", "--json"])
            .arg(&trace)
            .args(flags);
        let (code, said, err) = support::run_to_files(replay);
        assert_eq!(code, Some(3), "{membership}: {err}{said}\n{all}");
        let r: serde_json::Value = serde_json::from_str(&said).unwrap();
        let replay_t = r["stopped_at_seconds"].as_f64().unwrap();
        assert!(
            (replay_t - judged).abs() < 1e-6,
            "{membership}: live stopped on the reading at {judged} s, its replay at {replay_t} \
             s\n{said}\n{all}"
        );
        assert_eq!(r["reason"], stop["reason"], "{membership}: {said}\n{all}");
        // The verdict up to the stop (the live one goes on to the job's end).
        let same = [
            "fits",
            "ended",
            "swap_start_bytes",
            "swap_growth_bytes",
            "oom_killed",
        ];
        for field in same {
            assert_eq!(
                r["verdict"][field], live_verdict[field],
                "{membership}: {field}: {said}\n{live_verdict}"
            );
        }
    }
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

/// One past run of `key`, imported: free memory fell by 35 % of 1 GiB (about 360 MiB).
fn seed_run(key: &str) {
    let trace = std::env::temp_dir().join(format!("headroom-cg-seed-{}.jsonl", std::process::id()));
    std::fs::write(
        &trace,
        "{\"type\":\"start\",\"interval\":0.5}\n\
         {\"type\":\"sample\",\"t\":0.0,\"footprint\":1000000,\"swap_used\":0,\"level\":90.0}\n\
         {\"type\":\"sample\",\"t\":1.0,\"footprint\":300000000,\"swap_used\":0,\"level\":55.0}\n\
         {\"type\":\"end\"}\n",
    )
    .unwrap();
    let bin = headroom_bin();
    for args in [
        vec!["history", "forget", key],
        vec![
            "history",
            "import",
            trace.to_str().unwrap(),
            "--key",
            key,
            "--total-memory",
            "1G",
        ],
    ] {
        let out = Command::new(&bin)
            .args(&args)
            .env("HEADROOM_HOME", test_home())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    let _ = std::fs::remove_file(trace);
}

#[test]
fn fit_answers_for_the_room_under_the_limit_not_the_hosts() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let key = format!("cg-fit-{}", std::process::id());
    seed_run(&key);
    let bin = headroom_bin();
    let bin = bin.to_str().unwrap();
    let fit = ["fit", "--key", key.as_str(), "--", "x"];
    // The host has gigabytes free: it fits.
    let out = Command::new(bin)
        .args(fit)
        .env("HEADROOM_HOME", test_home())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // Under 256 MiB it cannot.
    let cg = MemCgroup::named("fit-", 256);
    let argv: Vec<&str> = std::iter::once(bin).chain(fit).collect();
    let out = run_in(&cg, &argv);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("won't fit"), "{said}");
}

#[test]
fn wait_fit_waits_for_room_under_the_limit_and_starts_when_it_is_raised() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let key = format!("cg-wait-{}", std::process::id());
    seed_run(&key);
    let cg = MemCgroup::named("wait-", 256);
    let started = std::env::temp_dir().join(format!("headroom-cg-started-{}", std::process::id()));
    let _ = std::fs::remove_file(&started);
    let bin = headroom_bin();
    let marker = started.to_str().unwrap();
    let wrapped = cg.wrap(&[
        bin.to_str().unwrap(),
        "guard",
        "--wait-fit",
        "--key",
        &key,
        "--start-timeout",
        "60s",
        "--",
        "touch",
        marker,
    ]);
    let mut guard = Command::new(&wrapped[0])
        .args(&wrapped[1..])
        .env("HEADROOM_HOME", test_home())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        guard.try_wait().unwrap().is_none() && !started.exists(),
        "started with about 360 MiB needed under a 256 MiB limit"
    );
    cg.set_limit(2048);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = guard.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still waiting with 2 GiB"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(guard.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(started.exists(), "{stderr}");
    assert!(
        stderr.contains("needs"),
        "the waiting line says what it waits for:\n{stderr}"
    );
    let _ = std::fs::remove_file(&started);
}

#[test]
fn a_cgroup_that_cannot_be_read_gives_a_note_and_the_hosts_numbers() {
    // Permission denied for real: `nobody` inside a cgroup whose folder is root's alone.
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let cg = MemCgroup::named("denied-", 256);
    let nobody = User::new(NOBODY);
    use std::os::unix::fs::PermissionsExt;
    let cg_dir = cg.procs_file().parent().unwrap().to_path_buf();
    std::fs::set_permissions(&cg_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Inside the cgroup, then `nobody`.
    let as_nobody = |args: &[&str]| {
        let cmd = nobody_headroom(&nobody, args);
        let mut argv = vec![cmd.get_program().to_owned()];
        argv.extend(cmd.get_args().map(ToOwned::to_owned));
        let argv: Vec<&str> = argv.iter().map(|a| a.to_str().unwrap()).collect();
        let wrapped = cg.wrap(&argv);
        Command::new(&wrapped[0])
            .args(&wrapped[1..])
            .env("HEADROOM_HOME", &nobody.home)
            .output()
            .unwrap()
    };
    let out = as_nobody(&["status", "--top", "1"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    let note = said
        .lines()
        .find(|l| l.starts_with("Note     "))
        .unwrap_or_else(|| panic!("no note:\n{said}"));
    assert!(
        note.contains("ermission denied") && note.ends_with("the numbers are the host's"),
        "{note}"
    );
    assert!(
        said.lines().next().unwrap().contains(" total, "),
        "the host's memory: {said}"
    );
    let out = as_nobody(&["status", "--json", "--top", "1"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["system"]["cgroup"].is_null(), "{}", json["system"]);
    assert!(
        json["system"]["cgroup_note"]
            .as_str()
            .is_some_and(|n| n.contains("ermission denied")),
        "{}",
        json["system"]
    );
    // A guard says so once before its run, and its trace's start record keeps it.
    let trace = nobody.home.join("t.jsonl");
    let out = as_nobody(&[
        "guard",
        "--wait-free",
        "0",
        "--trace",
        trace.to_str().unwrap(),
        "--",
        "true",
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches("the run is judged by the host's numbers")
            .count(),
        1,
        "{stderr}"
    );
    let start: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(start["memory_scope"], "host", "{start}");
    assert!(start["cgroup_note"].as_str().is_some(), "{start}");
    std::fs::set_permissions(&cg_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `headroom ARGS` as `nobody` (`support::users`), its files under its home and the job
/// cgroup allowed.
fn nobody_headroom(kit: &User, args: &[&str]) -> Command {
    let mut cmd = kit.headroom(args);
    cmd.env("HEADROOM_HOME", &kit.home)
        .env_remove("HEADROOM_JOB_CGROUP");
    cmd
}

/// The unified (cgroup v2) hierarchy of this host, if one is mounted.
fn unified_mount() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| std::path::PathBuf::from(f[1]))
    })
}

#[test]
fn a_user_given_a_v2_cgroup_runs_the_job_in_one_of_its_own_frozen_and_stopped_whole() {
    // As systemd delegates a unified subtree to a user on a hybrid host: `nobody` owns a
    // v2 cgroup (no memory controller here) and may not touch the v1 memory hierarchy. The
    // guard makes the job a v2 cgroup without the memory controller: every process the job
    // forks is in it, the v2 freezer pauses it (an outside SIGCONT does not undo it), a stop
    // ends it whole, and nothing is left behind.
    use support::guard::{sleep_tag, WAIT};
    use support::{live_with_tag, wait_until};
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let Some(unified) = unified_mount() else {
        assert!(std::env::var_os("CI").is_none(), "CI hosts mount cgroup2");
        eprintln!("SKIPPED: no cgroup2 hierarchy is mounted here");
        return;
    };
    let delegated = unified.join(format!("headroom-test-delegated-{}", std::process::id()));
    std::fs::create_dir(&delegated).unwrap();
    for file in [
        "",
        "cgroup.procs",
        "cgroup.threads",
        "cgroup.subtree_control",
    ] {
        std::os::unix::fs::chown(delegated.join(file), Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let kit = User::new(NOBODY);
    let home = kit.home.clone();
    let nobody = |args: &[&str]| nobody_headroom(&kit, args);
    let tag = sleep_tag(40);
    let script = format!("setsid sleep {tag} & (sleep {tag} &) ; exec sleep {tag}");
    let guard_argv = nobody(&[
        "guard",
        "--wait-free",
        "0",
        "--poll",
        "0.2s",
        "--grace",
        "2s",
        "-v",
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stdout = home.join("guard.json");
    let stderr = home.join("guard.stderr");
    let mut argv = vec![guard_argv.get_program().to_owned()];
    argv.extend(guard_argv.get_args().map(ToOwned::to_owned));
    let mut guard = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {} && exec \"$@\"",
            delegated.join("cgroup.procs").display()
        ))
        .arg("sh")
        .args(&argv)
        .env("HEADROOM_HOME", &home)
        .env_remove("HEADROOM_JOB_CGROUP")
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&stderr).unwrap_or_default();
    let me = guard.id();
    let sleeps = || -> Vec<u32> {
        live_with_tag(&tag)
            .into_iter()
            .filter(|&p| p != me)
            .collect()
    };
    assert!(wait_until(WAIT, || sleeps().len() == 3), "{}", said());
    let job_path = cgroup_of(sleeps()[0], "").unwrap();
    let delegated_path = format!("/{}", delegated.file_name().unwrap().to_string_lossy());
    assert!(
        job_path.starts_with(&format!("{delegated_path}/headroom-job-{me}-")),
        "{job_path}\n{}",
        said()
    );
    for pid in sleeps() {
        assert_eq!(
            cgroup_of(pid, "").unwrap(),
            job_path,
            "every worker is in it"
        );
    }
    let job_dir = unified.join(job_path.trim_start_matches('/'));
    let events = job_dir.join("cgroup.events");
    let leader = sleeps()
        .into_iter()
        .find(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| s.rsplit(") ").next().map(str::to_string))
                .and_then(|rest| rest.split(' ').nth(1).map(str::to_string))
                == Some(me.to_string())
        })
        .unwrap();
    let control = |verb: &str| {
        let out = nobody(&[verb, &leader.to_string()]).output().unwrap();
        assert!(out.status.success(), "{verb}: {}", text(&out.stderr));
    };
    control("pause");
    assert!(
        wait_until(WAIT, || frozen(&events, "frozen 1")),
        "{}",
        said()
    );
    for pid in sleeps() {
        // SAFETY: kill has no memory-safety preconditions; these are the test's sleeps.
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    }
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert!(frozen(&events, "frozen 1"), "a SIGCONT thawed the job");
    control("resume");
    assert!(
        wait_until(WAIT, || frozen(&events, "frozen 0")),
        "{}",
        said()
    );
    control("stop");
    let ended = wait_until(WAIT, || guard.try_wait().unwrap().is_some());
    assert!(ended, "{}", said());
    assert_eq!(guard.wait().unwrap().code(), Some(3), "{}", said());
    assert!(
        wait_until(WAIT, || sleeps().is_empty()),
        "the setsid and double-forked sleeps too"
    );
    assert!(
        wait_until(WAIT, || !job_dir.exists()),
        "{} was left behind",
        job_dir.display()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stdout).unwrap()).unwrap();
    assert_eq!(json["tracking"]["by"], "cgroup", "{json}");
    assert_eq!(json["tracking"]["memory"], false, "{json}");
    assert_eq!(json["tracking"]["cgroup"], job_path.as_str(), "{json}");
    let _ = std::fs::remove_dir(&delegated);
}

#[test]
fn serve_inside_a_limited_cgroup_reports_the_limit_with_its_scope() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let cg = MemCgroup::named("serve-", 256);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bin = headroom_bin();
    let listen = format!("127.0.0.1:{port}");
    let wrapped = cg.wrap(&[
        bin.to_str().unwrap(),
        "serve",
        "--listen",
        &listen,
        "--interval",
        "0.2s",
    ]);
    let mut serve = Command::new(&wrapped[0])
        .args(&wrapped[1..])
        .env("HEADROOM_HOME", test_home())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let scrape = || support::scrape_metrics(&listen);
    let mut body = None;
    assert!(
        support::wait_until(std::time::Duration::from_secs(20), || {
            body = scrape();
            body.is_some()
        }),
        "serve never answered"
    );
    let _ = serve.kill();
    let _ = serve.wait();
    let body = body.unwrap();
    let scope = format!(
        "headroom_memory_scope_info{{scope=\"cgroup\",cgroup=\"{}\",limit_file=\"memory.",
        cg.cgroup_path()
    );
    assert!(body.contains(&scope), "{scope}\n{body}");
    let total = body
        .lines()
        .find_map(|l| l.strip_prefix("headroom_memory_total_bytes "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert_eq!(total, Some((256 * MIB) as f64), "{body}");
    let host = body
        .lines()
        .find_map(|l| l.strip_prefix("headroom_host_memory_total_bytes "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(
        host > (1u64 << 30) as f64,
        "the host's memory beside it: {body}"
    );
}

#[test]
fn a_nested_guards_job_is_the_outer_jobs_too() {
    // `headroom guard -- headroom guard -- cmd`, as a script that guards its own steps inside
    // a guarded CI job: the inner job's cgroup is a child of the outer job's, whose members
    // are its whole subtree. The outer guard sees the inner job's processes, pauses and
    // stops them (they ignore SIGTERM: only the outer's SIGKILL ends them, before the inner
    // guard's own grace is over), and leaves no cgroup behind. Both membership modes.
    use support::guard::{
        control, job_file_members, leader_of, members, sleep_tag, Guard, Leftovers, QUICK_GUARD,
        WAIT,
    };
    use support::{cgroup_dirs_of, cgroup_frozen, proc_state, wait_until};
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let bin = headroom_bin();
    for (n, own_cgroup) in [true, false].into_iter().enumerate() {
        let tag = sleep_tag(45 + n as u32);
        let script = format!("trap '' TERM; sleep {tag} & sleep {tag} & wait");
        let mut args = QUICK_GUARD.to_vec();
        args.extend(["--", bin.to_str().unwrap()]);
        args.extend(["guard", "--wait-free", "0", "--poll", "0.2s", "--"]);
        args.extend(["sh", "-c", &script]);
        let mut outer = if own_cgroup {
            Guard::start_in_own_cgroup(&args, &format!("nested-{n}"))
        } else {
            Guard::start(&args, &format!("nested-{n}"))
        };
        let me = outer.pid();
        let _leftovers = Leftovers {
            tag: tag.clone(),
            guard: me,
        };
        let sleeps = || -> Vec<u32> {
            members(&tag, me)
                .into_iter()
                .filter(|&p| {
                    std::fs::read(format!("/proc/{p}/cmdline"))
                        .is_ok_and(|c| c.starts_with(b"sleep\0"))
                })
                .collect()
        };
        assert!(
            wait_until(WAIT, || sleeps().len() == 2),
            "{}",
            outer.stderr()
        );
        let inner_guard = leader_of(&outer);
        let outer_cgroups = cgroup_dirs_of(inner_guard);
        let inner_cgroups = cgroup_dirs_of(sleeps()[0]);
        if own_cgroup {
            assert!(
                inner_cgroups.iter().all(|d| outer_cgroups.iter().any(|o| d.starts_with(o) && d != o)),
                "the inner job's cgroup is a child of the outer's: {inner_cgroups:?} {outer_cgroups:?}"
            );
        }
        assert!(
            wait_until(WAIT, || {
                let listed = job_file_members(inner_guard);
                sleeps().iter().all(|p| listed.contains(p))
            }),
            "own cgroup {own_cgroup}: the outer job does not name the inner job's processes: {:?} of {:?}",
            job_file_members(inner_guard),
            sleeps()
        );
        let (code, err) = control("pause", inner_guard);
        assert_eq!(code, Some(0), "{err}");
        let held = || {
            if own_cgroup {
                cgroup_frozen(&inner_cgroups)
            } else {
                sleeps().iter().all(|&p| proc_state(p) == Some('T'))
            }
        };
        assert!(
            wait_until(WAIT, held),
            "own cgroup {own_cgroup}: the inner job runs on"
        );
        let (code, err) = control("resume", inner_guard);
        assert_eq!(code, Some(0), "{err}");
        assert!(wait_until(WAIT, || !held()), "{}", outer.stderr());
        let (code, err) = control("stop", inner_guard);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(outer.wait(), Some(3), "{}", outer.stderr());
        let left = members(&tag, me);
        assert!(
            left.is_empty(),
            "own cgroup {own_cgroup}: {left:?} run after the outer guard's stop: {}",
            outer.stderr()
        );
        if own_cgroup {
            assert!(
                outer_cgroups
                    .iter()
                    .chain(&inner_cgroups)
                    .all(|d| !d.exists()),
                "left behind: {outer_cgroups:?} {inner_cgroups:?}"
            );
        }
    }
}
