//! Tests for job files in a temporary folder.

use super::*;
use crate::drive::Sink;
use headroom_os::counters::Counters;
use headroom_rules::engine::JobStatus;
use headroom_rules::policy::EndReason;

const NOW_MS: i64 = 1_700_000_000_000;
const HOUR_MS: i64 = 3_600_000;

fn job(pid: u32, state: JobStatus, updated_at_ms: i64) -> JobFile {
    JobFile {
        pid,
        start_time: 4242,
        command: "python generate.py".into(),
        started_at_ms: updated_at_ms - 10_000 + i64::from(pid),
        updated_at_ms,
        swap_budget_bytes: 8 << 30,
        swap_start_bytes: 1 << 30,
        swap_growth_bytes: 300 << 20,
        peak_footprint_bytes: Some(18 << 30),
        footprint_bytes: Some(17 << 30),
        state,
        verdict: (state == JobStatus::Finished).then(|| Verdict {
            processes: 1,
            fits_tolerance_bytes: 64 << 20,
            stages: Vec::new(),
            tight: None,
            fits: true,
            swap_growth_bytes: 300 << 20,
            swap_start_bytes: 1 << 30,
            peak_footprint_bytes: Some(18 << 30),
            lowest_free_percent: Some(22.0),
            in_use_taken_bytes: None,
            duration: Duration::from_secs(10),
            ended: EndReason::Exited { code: 0 },
            pauses: 0,
            paused: Duration::ZERO,
            oom_killed: None,
        }),
        on_budget: OnBudget::Stop,
        pauses: 0,
        guard: None,
        members: Vec::new(),
        unguarded: false,
        mode: headroom_rules::engine::JobMode::Guard,
        paused_since_ms: None,
        resumed_at_ms: None,
        resumes_by_itself: false,
        yields: false,
        cgroup: None,
    }
}

/// The engine's view of guarded job `id` over process `pid` (start time 3), pausing at an
/// 8 GiB budget; it yields while it runs.
fn guarded_view(id: u64, pid: u32, state: JobStatus) -> headroom_rules::engine::JobView {
    headroom_rules::engine::JobView {
        id,
        pid,
        start_time: 3,
        command: format!("job {id}"),
        mode: headroom_rules::engine::JobMode::Guard,
        state,
        swap_start_bytes: 0,
        free_start_percent: None,
        in_use_start_bytes: None,
        swap_growth_bytes: 0,
        swap_budget_bytes: Some(8 << 30),
        peak_footprint_bytes: None,
        footprint_bytes: None,
        taken_bytes: None,
        verdict: None,
        started_at_ms: NOW_MS + i64::from(pid),
        stages: Vec::new(),
        current_stage: None,
        on_budget: OnBudget::Pause,
        pauses: 0,
        paused_since_ms: None,
        resumed_at_ms: None,
        resumes_by_itself: false,
        yields: state == JobStatus::Running,
        members: vec![ProcessIdentity { pid, start_time: 3 }],
        refused: Vec::new(),
        cgroup: None,
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn write_creates_dir_and_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state/jobs");
    let j = job(77, JobStatus::Running, NOW_MS);
    let path = j.write_atomic(&dir).unwrap();
    assert_eq!(path, dir.join("77-4242.json"));
    assert_eq!(path, j.path_in(&dir));
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"state\": \"running\""), "{text}");
    let mut updated = j.clone();
    updated.swap_growth_bytes = 1 << 30;
    updated.write_atomic(&dir).unwrap();
    assert_eq!(
        names(&dir),
        vec!["77-4242.json"],
        "replaced in place, no temp left"
    );
    assert_eq!(
        list_at(&dir, NOW_MS, |_| true, |_| true),
        vec![updated.clone()]
    );
    updated.remove(&dir).unwrap();
    updated.remove(&dir).unwrap(); // already gone: fine
    assert!(names(&dir).is_empty());
}

#[test]
fn missing_dir_has_no_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(list_at(&tmp.path().join("nope"), NOW_MS, |_| true, |_| true).is_empty());
}

#[test]
fn corrupt_and_foreign_files_are_skipped_not_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let good = job(1, JobStatus::Running, NOW_MS);
    good.write_atomic(dir).unwrap();
    fs::write(dir.join("2-1.json"), "{ not json").unwrap();
    fs::write(dir.join("3-1.json"), "{\"pid\": 3}").unwrap();
    fs::write(dir.join("notes.txt"), "hello").unwrap();
    fs::write(dir.join(".4-1.json.tmp-9-0"), "partial").unwrap();
    fs::create_dir(dir.join("5-1.json")).unwrap(); // unreadable as a file
    assert_eq!(list_at(dir, NOW_MS, |_| true, |_| true), vec![good]);
    assert_eq!(
        names(dir).len(),
        6,
        "the app does not delete what it cannot read"
    );
}

#[test]
fn stale_files_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let recent_finish = job(10, JobStatus::Finished, NOW_MS - HOUR_MS / 2);
    let old_finish = job(11, JobStatus::Finished, NOW_MS - 2 * HOUR_MS);
    let crashed = job(12, JobStatus::Running, NOW_MS - 5_000);
    let crashed_stopping = job(13, JobStatus::Stopping, NOW_MS - 5_000);
    let long_running = job(14, JobStatus::Running, NOW_MS - 3 * HOUR_MS);
    let waiting = job(15, JobStatus::Running, NOW_MS);
    for j in [
        &recent_finish,
        &old_finish,
        &crashed,
        &crashed_stopping,
        &long_running,
        &waiting,
    ] {
        j.write_atomic(dir).unwrap();
    }
    let alive = |id: &ProcessIdentity| [14, 15].contains(&id.pid);
    let listed = list_at(dir, NOW_MS, alive, |_| false);
    let pids: Vec<u32> = listed.iter().map(|j| j.pid).collect();
    // Oldest first: 14 started 3 h ago, then 10, then 15.
    assert_eq!(pids, vec![14, 10, 15]);
    assert_eq!(
        names(dir),
        vec!["10-4242.json", "14-4242.json", "15-4242.json"]
    );
    // A finished job's process being gone is expected: it is kept for its verdict.
    assert!(listed[1].verdict.is_some());
}

#[test]
fn list_with_real_counters() {
    let tmp = tempfile::tempdir().unwrap();
    let counters = Counters::new();
    let Ok(me) = ProcessIdentity::of(&counters, std::process::id()) else {
        eprintln!("process identity unsupported here; skipping");
        return;
    };
    let now_ms = unix_ms(SystemTime::now());
    let mut mine = job(me.pid, JobStatus::Running, now_ms);
    mine.start_time = me.start_time;
    let mut recycled = mine.clone();
    recycled.start_time = me.start_time.wrapping_add(1);
    mine.write_atomic(tmp.path()).unwrap();
    recycled.write_atomic(tmp.path()).unwrap();
    assert_eq!(JobFile::list(tmp.path(), &counters), vec![mine.clone()]);
    assert!(!recycled.path_in(tmp.path()).exists());
    assert_eq!(mine.identity(), me);
}

#[test]
fn peer_files_give_other_guards_running_jobs_and_their_footprints() {
    // What a guard on a Mac weighs its share of memory in use against: the running and
    // paused jobs of other live guards with the footprint their files hold; a finished job,
    // one without a footprint and the reader's own are left out.
    let tmp = tempfile::tempdir().unwrap();
    let counters = Counters::new();
    let Ok(me) = ProcessIdentity::of(&counters, std::process::id()) else {
        eprintln!("process identity unsupported here; skipping");
        return;
    };
    let now_ms = unix_ms(SystemTime::now());
    // The leaders are this process (alive) under pids that differ only in the file name:
    // each file is a job of guard `me` whose own leader is `me` too.
    let file = |state: JobStatus, footprint_bytes: Option<u64>| JobFile {
        guard: Some(me),
        footprint_bytes,
        start_time: me.start_time,
        ..job(me.pid, state, now_ms)
    };
    let running = file(JobStatus::Running, Some(3 << 30));
    running.write_atomic(tmp.path()).unwrap();
    let mut peers = PeerFiles::new(
        tmp.path().to_path_buf(),
        me.pid.wrapping_add(1),
        Counters::new(),
    );
    let read = peers.peers();
    assert_eq!(
        read.others,
        vec![OtherJob {
            leader: me,
            footprint_bytes: 3 << 30,
            read_at_ms: now_ms,
        }]
    );
    file(JobStatus::Paused, Some(5 << 30))
        .write_atomic(tmp.path())
        .unwrap();
    assert_eq!(peers.peers().others[0].footprint_bytes, 5 << 30);
    for gone in [
        file(JobStatus::Finished, Some(5 << 30)),
        file(JobStatus::Running, None),
    ] {
        gone.write_atomic(tmp.path()).unwrap();
        assert!(peers.peers().others.is_empty(), "{:?}", gone.state);
    }
    running.write_atomic(tmp.path()).unwrap();
    let mut own = PeerFiles::new(tmp.path().to_path_buf(), me.pid, Counters::new());
    assert!(own.peers().others.is_empty(), "the reader's own jobs");
}

#[test]
fn a_job_whose_guard_is_gone_is_unguarded_while_a_member_lives() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ident = |pid| ProcessIdentity {
        pid,
        start_time: 4242,
    };
    let with_guard = |pid: u32, guard: u32, members: &[u32]| JobFile {
        guard: Some(ident(guard)),
        members: members.iter().map(|&m| ident(m)).collect(),
        ..job(pid, JobStatus::Paused, NOW_MS)
    };
    // Guard 100 lives; guard 101 and 102 are gone (SIGKILL).
    let guarded = with_guard(20, 100, &[20, 21]);
    let orphaned = with_guard(22, 101, &[22, 23]);
    let gone = with_guard(24, 102, &[24, 25]);
    for j in [&guarded, &orphaned, &gone] {
        j.write_atomic(dir).unwrap();
    }
    // The leaders are gone (the kernel's SIGHUP of an orphaned group); member 23 lives.
    let alive = |id: &ProcessIdentity| [100, 21, 23].contains(&id.pid);
    let listed = list_at(dir, NOW_MS, alive, |_| false);
    let states: Vec<(u32, &str)> = listed.iter().map(|j| (j.pid, j.state_word())).collect();
    assert_eq!(states, vec![(20, "paused"), (22, "unguarded")]);
    assert!(!gone.path_in(dir).exists(), "nothing of it lives: stale");
}

#[test]
fn the_publisher_writes_the_engines_view_and_names_the_guard() {
    let tmp = tempfile::tempdir().unwrap();
    let guard = ProcessIdentity {
        pid: 7,
        start_time: 77,
    };
    let mut publisher = Publisher::new(tmp.path().to_path_buf(), guard);
    let view = headroom_rules::engine::JobView {
        swap_start_bytes: 1,
        swap_growth_bytes: 2,
        peak_footprint_bytes: Some(5),
        ..guarded_view(1, 30, JobStatus::Running)
    };
    publisher.started(&view).unwrap();
    let read = || -> JobFile {
        let path = tmp.path().join("30-3.json");
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    };
    let file = read();
    assert_eq!(file.guard, Some(guard));
    assert_eq!(file.members, view.members);
    assert_eq!(file.swap_budget_bytes, 8 << 30);
    // Paused with a new member: written at once (it must be resumable without the guard).
    let paused = headroom_rules::engine::JobView {
        state: JobStatus::Paused,
        members: vec![
            view.members[0],
            ProcessIdentity {
                pid: 31,
                start_time: 3,
            },
        ],
        ..view.clone()
    };
    let sample = headroom_rules::sample::Sample {
        aimed: false,
        seq: 1,
        at: SystemTime::now(),
        since_start: Duration::ZERO,
        system: None,
        tracked: Vec::new(),
        error: None,
    };
    publisher.sample(&sample, &paused).unwrap();
    assert_eq!(read().state, JobStatus::Paused);
    assert_eq!(read().members.len(), 2);
}

#[test]
fn the_publishers_thread_is_woken_only_for_the_samples_its_file_is_due_for() {
    // The gate runs on the driver's thread at every check: a sample goes to the job file's
    // thread when its state changed (at once), its members changed (within MEMBERS_EVERY)
    // or its figures changed and PUBLISH_EVERY has passed, never when nothing changed.
    let tmp = tempfile::tempdir().unwrap();
    let guard = ProcessIdentity {
        pid: 7,
        start_time: 77,
    };
    let mut gate = Publisher::new(tmp.path().to_path_buf(), guard)
        .sample_gate()
        .unwrap();
    let running = guarded_view(1, 30, JobStatus::Running);
    assert!(gate.wants(&running), "the first");
    assert!(!gate.wants(&running), "nothing changed");
    let grown = headroom_rules::engine::JobView {
        swap_growth_bytes: 5 << 20,
        ..running.clone()
    };
    assert!(!gate.wants(&grown), "figures: not before PUBLISH_EVERY");
    let born = headroom_rules::engine::JobView {
        members: vec![
            running.members[0],
            ProcessIdentity {
                pid: 31,
                start_time: 3,
            },
        ],
        ..grown.clone()
    };
    assert!(!gate.wants(&born), "members: not before MEMBERS_EVERY");
    std::thread::sleep(MEMBERS_EVERY + Duration::from_millis(50));
    assert!(gate.wants(&born), "members, once MEMBERS_EVERY has passed");
    let paused = headroom_rules::engine::JobView {
        state: JobStatus::Paused,
        ..born.clone()
    };
    assert!(gate.wants(&paused), "a state change: at once");
    let paused_fewer = headroom_rules::engine::JobView {
        members: running.members.clone(),
        ..paused.clone()
    };
    assert!(
        gate.wants(&paused_fewer),
        "members of a paused job: at once"
    );
    assert!(!gate.wants(&paused_fewer));
}

#[test]
fn the_board_writes_every_job_of_the_app_and_removes_those_let_go() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let app = ProcessIdentity {
        pid: 9,
        start_time: 99,
    };
    let read = |pid: u32| -> Option<JobFile> {
        let bytes = fs::read(dir.join(format!("{pid}-3.json"))).ok()?;
        Some(serde_json::from_slice(&bytes).unwrap())
    };
    let mut board = Board::new(dir.to_path_buf(), app);
    // (the engine's views, then the files: pid and state, each naming the app)
    type Step = (Vec<headroom_rules::engine::JobView>, Vec<(u32, JobStatus)>);
    let table: Vec<Step> = vec![
        (
            vec![
                guarded_view(1, 30, JobStatus::Running),
                guarded_view(2, 31, JobStatus::Running),
            ],
            vec![(30, JobStatus::Running), (31, JobStatus::Running)],
        ),
        // A pause is written at once, not after PUBLISH_EVERY.
        (
            vec![
                guarded_view(1, 30, JobStatus::Running),
                guarded_view(2, 31, JobStatus::Paused),
            ],
            vec![(30, JobStatus::Running), (31, JobStatus::Paused)],
        ),
        // Job 1 let go: its file goes.
        (
            vec![guarded_view(2, 31, JobStatus::Paused)],
            vec![(31, JobStatus::Paused)],
        ),
        // Process 31 let go and picked again (job 3): the new job keeps its file.
        (
            vec![guarded_view(3, 31, JobStatus::Running)],
            vec![(31, JobStatus::Running)],
        ),
        (Vec::new(), Vec::new()),
    ];
    for (step, (views, files)) in table.into_iter().enumerate() {
        board.publish(&views);
        let listed: Vec<(u32, JobStatus)> = list_at(dir, NOW_MS, |_| true, |_| true)
            .iter()
            .map(|f| (f.pid, f.state))
            .collect();
        let mut listed_sorted = listed.clone();
        listed_sorted.sort_by_key(|(pid, _)| *pid);
        assert_eq!(listed_sorted, files, "step {step}");
        for (pid, _) in &files {
            let file = read(*pid).unwrap();
            assert!(file.guarded_by(app.pid), "step {step}: names the app");
            assert!(!file.guarded_by(app.pid + 1));
        }
    }
    assert!(names(dir).is_empty(), "{:?}", names(dir));
}

#[cfg(target_os = "linux")]
#[test]
fn a_job_without_guard_lives_while_its_cgroup_holds_a_process_and_leaves_no_cgroup() {
    // A guard killed outright, every process its file listed gone: the job lives on while
    // its own cgroup holds a process (what it forked since), and once the cgroup is empty
    // the reader that finds the file stale removes the cgroup with it. A cgroup the file
    // names that does not bear its guard's name is never removed.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("jobs");
    let cgroups = tmp.path().join("cgroups");
    let guard = ProcessIdentity {
        pid: 101,
        start_time: 1,
    };
    let file = |pid: u32, name: &str| {
        let memory_dir = cgroups.join(name);
        fs::create_dir_all(memory_dir.join("beneath")).unwrap();
        JobFile {
            guard: Some(guard),
            members: vec![ProcessIdentity {
                pid: pid + 1,
                start_time: 4242,
            }],
            cgroup: Some(JobCgroup {
                version: 2,
                memory_dir,
                freezer_dir: None,
                path: format!("/{name}"),
                memory: false,
            }),
            ..job(pid, JobStatus::Running, NOW_MS)
        }
    };
    let ours = file(30, "headroom-job-101-0");
    let forged = file(32, "system.slice");
    for f in [&ours, &forged] {
        f.write_atomic(&dir).unwrap();
    }
    let nothing_lives = |_: &ProcessIdentity| false;
    let listed = list_at(&dir, NOW_MS, nothing_lives, |_| true);
    let states: Vec<(u32, &str)> = listed.iter().map(|j| (j.pid, j.state_word())).collect();
    assert_eq!(
        states,
        vec![(30, "unguarded")],
        "the forged cgroup counts for nothing"
    );
    assert!(cgroups.join("system.slice").exists(), "never removed");
    let listed = list_at(&dir, NOW_MS, nothing_lives, |_| false);
    assert!(listed.is_empty());
    assert!(!ours.path_in(&dir).exists());
    assert!(
        !cgroups.join("headroom-job-101-0").exists(),
        "the empty cgroup (and the one beneath) is left behind"
    );
    assert!(cgroups.join("system.slice/beneath").exists());
}
