//! The cgroup reader on a recorded cgroup v2 host (`os/tests/fixtures/cgroup-v2`: a pod
//! limited to 256 MiB with a container under it, and an OOM-killed job) and on trees made
//! here: v1, hybrid mounts, `max`, unreadable and nonsense files.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use std::fs;
use std::path::{Path, PathBuf};

use super::parse::{cgroup_paths, memory_mounts, parse_limit, stat_value, MountKind};
use super::*;

const MIB: u64 = 1 << 20;
const HOST: u64 = 1024 * MIB; // the recording VM's memory

/// A copy of the recorded v2 host, to change.
fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(fixture().join("."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(copied.success());
    dir
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cgroup-v2")
}

fn limited(found: Found) -> CgroupMemory {
    match found {
        Found::Limited(memory) => memory,
        other => panic!("no limit found: {other:?}"),
    }
}

#[test]
fn a_recorded_pod_limit_binds_its_container() {
    let location = locate(&fixture(), "self").unwrap().unwrap();
    assert_eq!(location.version, 2);
    assert_eq!(location.path, "/kubepods.slice/pod1234/ctr-abcd");
    assert_eq!(
        location.levels.len(),
        4,
        "ctr, pod, slice, root: {location:?}"
    );
    let memory = limited(read_memory(&location, HOST));
    // The container's memory.high (384 MiB) is above the pod's memory.max: the pod binds.
    assert_eq!(memory.limit_path, "/kubepods.slice/pod1234");
    assert_eq!(memory.limit_file, "memory.max");
    assert_eq!(memory.limit_bytes, 256 * MIB);
    assert_eq!(
        memory.used_bytes, 105_693_184,
        "the pod's memory.current, no inactive file"
    );
    assert_eq!(
        (memory.swap_used_bytes, memory.swap_limit_bytes),
        (Some(0), Some(0))
    );
    assert_eq!(memory.peak_bytes, Some(106_156_032));
    assert_eq!(memory.oom_kills, Some(0));
    let free = memory.free_percent();
    assert!((free - 60.63).abs() < 0.01, "{free}");
    // The pressure is the container's own (its memory.pressure: no stall recorded).
    assert_eq!(
        memory.pressure,
        Some(headroom_model::counters::PressureLevel::Normal)
    );
}

#[test]
fn under_a_v2_limit_the_pressure_is_the_cgroups_own() {
    let dir = fixture_copy();
    let ctr = dir
        .path()
        .join("sys/fs/cgroup/kubepods.slice/pod1234/ctr-abcd");
    // Stalled at its limit while the host is calm.
    fs::write(
        ctr.join("memory.pressure"),
        "some avg10=22.50 avg60=8.00 avg300=2.00 total=991\n\
         full avg10=3.10 avg60=1.00 avg300=0.20 total=120\n",
    )
    .unwrap();
    let location = locate(dir.path(), "self").unwrap().unwrap();
    let memory = limited(read_memory(&location, HOST));
    assert_eq!(
        memory.pressure,
        Some(headroom_model::counters::PressureLevel::Warn)
    );
    let host = headroom_model::testdata::system_counters(0, 90.0);
    let seen = crate::counters::linux::under_limit(host.clone(), memory);
    assert_eq!(
        seen.pressure,
        Some(headroom_model::counters::PressureLevel::Warn)
    );
    assert_eq!(seen.cgroup.unwrap().host_pressure, host.pressure);
    // Refused (psi=0 answers EOPNOTSUPP; here a folder in its place): unknown, and the
    // limit still read.
    fs::remove_file(ctr.join("memory.pressure")).unwrap();
    fs::create_dir(ctr.join("memory.pressure")).unwrap();
    let memory = limited(read_memory(&location, HOST));
    assert_eq!((memory.pressure, memory.limit_bytes), (None, 256 * MIB));
}

#[test]
fn the_recorded_oom_kill_and_peak_of_a_job_cgroup() {
    let job = fixture().join("sys/fs/cgroup/job");
    let location = Location {
        version: 2,
        path: "/job".into(),
        levels: vec![job, fixture().join("sys/fs/cgroup")],
    };
    let memory = limited(read_memory(&location, HOST));
    assert_eq!(memory.limit_bytes, 128 * MIB);
    assert_eq!(memory.limit_path, "/job");
    assert_eq!(memory.oom_kills, Some(1));
    assert_eq!(
        memory.peak_bytes,
        Some(128 * MIB),
        "the kernel's high-water mark"
    );
}

#[test]
fn a_limit_at_or_above_the_hosts_memory_binds_nothing() {
    let location = locate(&fixture(), "self").unwrap().unwrap();
    assert_eq!(read_memory(&location, 200 * MIB), Found::Unlimited);
}

#[test]
fn proc_cgroup_lines_of_v1_v2_and_hybrid_hosts() {
    let hybrid = "9:name=systemd:/\n6:freezer:/\n4:memory:/process_api/86ab\n0::/\n";
    assert_eq!(
        cgroup_paths(hybrid),
        (Some("/process_api/86ab".into()), Some("/".into()))
    );
    assert_eq!(
        cgroup_paths("0::/user.slice/x.scope\n"),
        (None, Some("/user.slice/x.scope".into()))
    );
    assert_eq!(
        cgroup_paths("4:cpu,memory:/a:b\n"),
        (Some("/a:b".into()), None)
    );
    assert_eq!(cgroup_paths("garbage\n"), (None, None));
}

#[test]
fn mountinfo_finds_v2_and_v1_memory_and_unescapes() {
    let text = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
41 31 0:38 /docker/ab12 /sys/fs/cgroup/unified\\040dir rw - cgroup2 cgroup2 rw
";
    let mounts = memory_mounts(text);
    assert_eq!(mounts.len(), 2, "{mounts:?}");
    assert_eq!(mounts[0].kind, MountKind::V1Memory);
    assert_eq!(mounts[0].point, "/sys/fs/cgroup/memory");
    assert_eq!(mounts[1].kind, MountKind::V2);
    assert_eq!(mounts[1].root, "/docker/ab12");
    assert_eq!(mounts[1].point, "/sys/fs/cgroup/unified dir");
}

#[test]
fn limits_and_key_value_files() {
    assert_eq!(parse_limit("max\n"), Some(None));
    assert_eq!(parse_limit("268435456\n"), Some(Some(256 * MIB)));
    assert_eq!(parse_limit("-1"), None);
    assert_eq!(parse_limit(""), None);
    let events = "low 0\nhigh 0\nmax 35\noom 1\noom_kill 1\noom_group_kill 0\n";
    assert_eq!(stat_value(events, "oom_kill"), Some(1));
    assert_eq!(stat_value(events, "oom"), Some(1));
    assert_eq!(stat_value(events, "missing"), None);
    let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
    assert_eq!(stat_value(v1, "oom_kill"), Some(3));
}

/// A v1 host tree under `root`: our memory cgroup `/lab/job` limited at `/lab`.
fn v1_tree(root: &Path, lab_limit: &str) -> PathBuf {
    let proc_self = root.join("proc/self");
    fs::create_dir_all(&proc_self).unwrap();
    fs::write(proc_self.join("cgroup"), "4:memory:/lab/job\n0::/\n").unwrap();
    fs::write(
        proc_self.join("mountinfo"),
        "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
         41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
    )
    .unwrap();
    let unified = root.join("sys/fs/cgroup/unified");
    fs::create_dir_all(&unified).unwrap();
    fs::write(unified.join("cgroup.controllers"), "").unwrap(); // an empty v2: hybrid
    let top = root.join("sys/fs/cgroup/memory");
    let job = top.join("lab/job");
    fs::create_dir_all(&job).unwrap();
    let none = "9223372036854771712\n"; // v1's "no limit"
    fs::write(top.join("memory.limit_in_bytes"), none).unwrap();
    fs::write(top.join("lab/memory.limit_in_bytes"), lab_limit).unwrap();
    fs::write(
        top.join("lab/memory.usage_in_bytes"),
        format!("{}\n", 100 * MIB),
    )
    .unwrap();
    fs::write(
        top.join("lab/memory.stat"),
        format!("cache 1\ntotal_inactive_file {}\n", 20 * MIB),
    )
    .unwrap();
    fs::write(
        top.join("lab/memory.max_usage_in_bytes"),
        format!("{}\n", 150 * MIB),
    )
    .unwrap();
    fs::write(
        top.join("lab/memory.oom_control"),
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
    )
    .unwrap();
    fs::write(job.join("memory.limit_in_bytes"), none).unwrap();
    top
}

#[test]
fn a_v1_limit_on_a_hybrid_host() {
    let dir = tempfile::tempdir().unwrap();
    v1_tree(dir.path(), &format!("{}\n", 256 * MIB));
    let location = locate(dir.path(), "self").unwrap().unwrap();
    assert_eq!(
        location.version, 1,
        "the empty v2 hierarchy has no memory controller"
    );
    let memory = limited(read_memory(&location, 24 << 30));
    assert_eq!(memory.limit_path, "/lab");
    assert_eq!(memory.limit_file, "memory.limit_in_bytes");
    assert_eq!(memory.limit_bytes, 256 * MIB);
    assert_eq!(
        memory.used_bytes,
        80 * MIB,
        "usage less the inactive file cache"
    );
    assert_eq!(memory.reclaimable_bytes, 20 * MIB);
    assert_eq!(
        (memory.swap_used_bytes, memory.swap_limit_bytes),
        (None, None),
        "no memsw"
    );
    assert_eq!(memory.oom_kills, Some(2));
    assert_eq!(memory.peak_bytes, Some(150 * MIB));
}

#[test]
fn bad_cgroup_files_give_a_note_never_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let top = v1_tree(dir.path(), "lots\n");
    let location = locate(dir.path(), "self").unwrap().unwrap();
    let Found::Unreadable(note) = read_memory(&location, 24 << 30) else {
        panic!("a nonsense limit was taken");
    };
    assert!(
        note.contains("lab/memory.limit_in_bytes") && note.contains("lots"),
        "{note}"
    );
    // A file that cannot be read (here a directory in its place).
    fs::remove_file(top.join("lab/memory.limit_in_bytes")).unwrap();
    fs::create_dir(top.join("lab/memory.limit_in_bytes")).unwrap();
    let Found::Unreadable(note) = read_memory(&location, 24 << 30) else {
        panic!("an unreadable limit was skipped");
    };
    assert!(note.contains("cannot read"), "{note}");
    // In a memory cgroup whose hierarchy is not mounted here (a container without
    // /sys/fs/cgroup): said, with the cgroup, never taken for "no limit".
    fs::write(dir.path().join("proc/self/mountinfo"), "").unwrap();
    let note = locate(dir.path(), "self").unwrap_err();
    assert!(
        note.contains("memory cgroup /lab") && note.contains("not mounted"),
        "{note}"
    );
    // A v2 host whose hierarchy is hidden, the same.
    fs::write(
        dir.path().join("proc/self/cgroup"),
        "0::/kubepods/pod1/c2\n",
    )
    .unwrap();
    let note = locate(dir.path(), "self").unwrap_err();
    assert!(note.contains("cgroup /kubepods/pod1/c2"), "{note}");
    // In no memory cgroup (the root, or no memory controller anywhere): the host, no note.
    fs::write(dir.path().join("proc/self/cgroup"), "4:memory:/\n0::/\n").unwrap();
    assert_eq!(locate(dir.path(), "self").unwrap(), None);
    fs::write(dir.path().join("proc/self/cgroup"), "3:cpu:/x\n").unwrap();
    assert_eq!(locate(dir.path(), "self").unwrap(), None);
    // No /proc/PID/cgroup (an old kernel, a sandbox): said, not guessed.
    fs::remove_file(dir.path().join("proc/self/cgroup")).unwrap();
    assert!(locate(dir.path(), "self")
        .unwrap_err()
        .contains("cannot read"));
}

#[test]
fn the_counters_take_the_limit_and_keep_the_host() {
    let memory = limited(read_memory(
        &locate(&fixture(), "self").unwrap().unwrap(),
        HOST,
    ));
    let host = headroom_model::testdata::system_counters(5 * MIB, 90.0);
    let seen = crate::counters::linux::under_limit(host.clone(), memory);
    assert_eq!(seen.total_bytes, 256 * MIB);
    assert!((seen.free_percent - 60.63).abs() < 0.01);
    assert_eq!(
        (seen.swap_used_bytes, seen.swap_total_bytes),
        (0, 0),
        "swap.max 0"
    );
    let cgroup = seen.cgroup.unwrap();
    assert_eq!(cgroup.host_free_percent, 90.0);
    assert_eq!(cgroup.host_swap_used_bytes, 5 * MIB);
    assert_eq!(cgroup.host_total_bytes, HOST);
}

#[test]
fn a_recorded_v2_job_cgroup_read_as_a_jobs_own() {
    // The job's own cgroup on a v2 host (after its OOM kill): its processes, freezer state,
    // the kernel's peak, the OOM count from its own `memory.events`, and its usage now.
    let job = headroom_model::counters::JobCgroup {
        version: 2,
        memory_dir: fixture().join("sys/fs/cgroup/job"),
        freezer_dir: None,
        path: "/job".into(),
        memory: true,
    };
    let state = job_state(&job).unwrap();
    assert!(state.pids.is_empty(), "{:?}", state.pids);
    assert!(!state.frozen);
    assert_eq!(state.peak_bytes, Some(128 * MIB));
    assert_eq!(state.oom_kills, Some(1));
    assert_eq!(state.working_set_bytes, Some(0));
    assert_eq!(state.swap_bytes, Some(0));
    // A job cgroup that is gone is an error, not an empty job.
    let gone = headroom_model::counters::JobCgroup {
        memory_dir: fixture().join("sys/fs/cgroup/no-such-job"),
        ..job
    };
    assert!(job_state(&gone).is_err());
}

#[test]
fn our_dirs_on_a_hybrid_host_and_on_a_v2_host() {
    // Hybrid: v1 memory for the memory controller, the unified hierarchy for a cgroup
    // without it (where systemd delegates to a user).
    let dir = tempfile::tempdir().unwrap();
    v1_tree(dir.path(), "max\n");
    fs::write(
        dir.path().join("proc/self/cgroup"),
        "4:memory:/lab/job\n0::/user.slice/user-1000.slice/app.scope\n",
    )
    .unwrap();
    let own = own_dirs(dir.path()).unwrap().unwrap();
    assert_eq!(own.version, 1);
    assert_eq!(
        own.memory_dir,
        dir.path().join("sys/fs/cgroup/memory/lab/job")
    );
    assert_eq!(
        own.bare_v2,
        Some((
            dir.path()
                .join("sys/fs/cgroup/unified/user.slice/user-1000.slice/app.scope"),
            "/user.slice/user-1000.slice/app.scope".to_string()
        ))
    );
    // The recorded v2 host: its own cgroup serves for both.
    let own = own_dirs(&fixture()).unwrap().unwrap();
    assert_eq!(own.version, 2);
    assert_eq!(
        own.bare_v2,
        Some((
            own.memory_dir.clone(),
            "/kubepods.slice/pod1234/ctr-abcd".to_string()
        ))
    );
}

#[test]
fn the_counters_read_a_whole_recorded_v2_host_from_its_root() {
    // `Counters::with_root` over the recorded host (its /proc and /sys/fs/cgroup), as the
    // /proc readers take theirs: `read_system` answers with the pod's limit, the host beside.
    use crate::counters::CounterSource;
    let dir = fixture_copy();
    // The recording kept meminfo; vmstat and PSI come from the recorded modern /proc.
    let modern = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc-modern");
    fs::copy(modern.join("vmstat"), dir.path().join("proc/vmstat")).unwrap();
    fs::create_dir_all(dir.path().join("proc/pressure")).unwrap();
    fs::copy(
        modern.join("pressure/memory"),
        dir.path().join("proc/pressure/memory"),
    )
    .unwrap();
    let system = crate::counters::linux::Counters::with_root(dir.path())
        .read_system()
        .unwrap();
    assert_eq!(system.total_bytes, 256 * MIB);
    assert!(
        (system.free_percent - 60.63).abs() < 0.01,
        "{}",
        system.free_percent
    );
    let cgroup = system.cgroup.unwrap();
    assert_eq!(cgroup.limit_path, "/kubepods.slice/pod1234");
    assert_eq!(cgroup.host_total_bytes, 983_744 * 1024);
    assert_eq!(
        system.pressure,
        Some(headroom_model::counters::PressureLevel::Normal)
    );
    assert_eq!(system.cgroup_note, None);
}

#[test]
fn a_light_read_of_our_cgroup_takes_its_usage_now_and_its_limit_as_it_was() {
    // Between full checks only the usage, the inactive file cache and the swap of the
    // cgroup whose limit bound are read; the limit (and its OOM count, peak, pressure) are
    // the last full read's, read again at the next one.
    use crate::counters::CounterSource;
    let dir = fixture_copy();
    let modern = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc-modern");
    fs::copy(modern.join("vmstat"), dir.path().join("proc/vmstat")).unwrap();
    let counters = crate::counters::linux::Counters::with_root(dir.path());
    let full = counters.read_system().unwrap();
    let pod = dir.path().join("sys/fs/cgroup/kubepods.slice/pod1234");
    fs::write(pod.join("memory.current"), format!("{}\n", 200 * MIB)).unwrap();
    fs::write(pod.join("memory.swap.current"), format!("{}\n", 3 * MIB)).unwrap();
    fs::write(pod.join("memory.max"), format!("{}\n", 320 * MIB)).unwrap();
    let light = counters.read_system_light(&full).unwrap();
    let cgroup = light.cgroup.as_ref().unwrap();
    assert_eq!(cgroup.used_bytes, 200 * MIB, "its usage now");
    assert_eq!(cgroup.swap_used_bytes, Some(3 * MIB), "its swap now");
    assert_eq!(
        cgroup.limit_bytes,
        256 * MIB,
        "its limit as the full read had it"
    );
    assert_eq!(light.total_bytes, 256 * MIB);
    assert!((light.free_percent - 100.0 * 56.0 / 256.0).abs() < 0.01);
    assert_eq!(light.oom_kills, full.oom_kills);
    // The next full read takes the new limit.
    let next = counters.read_system().unwrap();
    assert_eq!(next.cgroup.unwrap().limit_bytes, 320 * MIB);
}
