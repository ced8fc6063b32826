//! What a real Mac would do to Headroom, run here: the macOS reader
//! ([`crate::counters::xnu::reader::XnuReader`]) on a fake process table with macOS's rules
//! ([`crate::counters::xnu::fake_tests::FakeMac`]), under the membership, the stop, the pause
//! and the boot id. Each test names the defect of issue 21 it proves fixed.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use std::time::Duration;

use crate::counters::xnu::fake_tests::{FakeMac, Run, HOST_STATS_REAL_PER_WINDOW, PAGE_BYTES};
use crate::counters::xnu::reader::{Xnu, XnuReader};
use crate::counters::CounterSource;
use crate::enforce::{signal_each, Refusal, Safety};
use crate::members::{Members, LINEAGE_EVERY};
use headroom_model::counters::RunState;
use headroom_model::effects::JobSignal;
use headroom_model::process::ProcessIdentity;

const USER: u32 = 501;

/// A Mac with the user's guard (pid returned) running under launchd.
fn mac() -> (XnuReader<FakeMac>, u32) {
    let mac = FakeMac::new(USER);
    let guard = mac.spawn_user(USER, "headroom");
    (XnuReader::on(mac), guard)
}

fn id(reader: &XnuReader<FakeMac>, pid: u32) -> ProcessIdentity {
    ProcessIdentity {
        pid,
        start_time: reader.process_state(pid).unwrap().start_time,
    }
}

fn safety(reader: &XnuReader<FakeMac>, guard: u32) -> Safety {
    Safety::of(id(reader, guard), Vec::new(), USER)
}

/// A command the guard started: its own process group, led by the returned pid.
fn command(reader: &XnuReader<FakeMac>, guard: u32) -> (u32, Members) {
    let leader = reader.kernel().spawn(guard, "python3");
    reader.kernel().own_group(leader);
    (leader, Members::of_command(id(reader, leader), None))
}

fn member_pids(members: &Members) -> Vec<u32> {
    let mut pids: Vec<u32> = members.live().iter().map(|m| m.id.pid).collect();
    pids.sort_unstable();
    pids
}

fn live_ids(members: &Members) -> Vec<ProcessIdentity> {
    members.live().iter().map(|m| m.id).collect()
}

#[test]
fn the_boot_id_stays_when_the_clock_is_set() {
    // Defect 1: `kern.boottime` moves when the clock is set; the id must not.
    let (reader, _) = mac();
    let before = reader.boot_id().unwrap();
    let mut boottime = [0u8; 16];
    reader
        .kernel()
        .sysctl("kern.boottime", &mut boottime)
        .unwrap();
    reader.kernel().set_clock(1_250_000);
    let mut moved = [0u8; 16];
    reader.kernel().sysctl("kern.boottime", &mut moved).unwrap();
    assert_ne!(boottime, moved, "the model moves kern.boottime");
    assert_eq!(reader.boot_id().unwrap(), before);
    assert_eq!(before, "6A1B2C3D-4E5F-4071-8293-A4B5C6D7E8F9");
}

#[test]
fn a_command_that_exits_at_once_keeps_its_start_time() {
    // Defect 4: a zombie leader read with `arg = 0` was gone, its start time 0.
    let (reader, guard) = mac();
    let leader = reader.kernel().spawn(guard, "true");
    let started = reader.kernel().get(leader).unwrap().start_micros;
    reader.kernel().exit(leader);
    assert_eq!(reader.kernel().get(leader).unwrap().run, Run::Zombie);
    assert_eq!(reader.start_time_even_exited(leader).unwrap(), started);
    let state = reader.process_state(leader).unwrap();
    assert_eq!(state.run, RunState::Dead);
    assert!(
        reader.identity(leader).unwrap_err().is_gone(),
        "a zombie is no live identity"
    );
    assert!(reader.start_time(leader).unwrap_err().is_gone());
    reader.kernel().reap(leader);
    assert!(reader.start_time_even_exited(leader).unwrap_err().is_gone());
}

#[test]
fn an_orphan_of_the_command_is_found_by_its_group() {
    // Defect 3: no subreaper; a worker whose parent exited between two looks was lost.
    let (reader, guard) = mac();
    let (leader, mut members) = command(&reader, guard);
    let parent = reader.kernel().spawn(leader, "sh");
    let worker = reader.kernel().spawn(parent, "worker");
    reader.kernel().exit(parent); // before any look: the worker goes to launchd
    assert_eq!(reader.kernel().get(worker).unwrap().ppid, 1);
    members.discover(&reader);
    assert_eq!(member_pids(&members), vec![leader, worker]);
    // And the stop reaches it.
    let report = signal_each(
        &reader,
        reader.kernel(),
        &safety(&reader, guard),
        &live_ids(&members),
        JobSignal::Terminate,
    );
    assert_eq!(report.reached.len(), 2, "{report:?}");
    assert!(
        reader.kernel().get(worker).is_none(),
        "launchd reaped the stopped worker"
    );
    assert_eq!(members.discover(&reader), 0, "nothing of the job is left");
}

#[test]
fn a_setsid_worker_whose_parent_exited_is_found_by_lineage() {
    // Defect 3: `setsid` leaves the group; the parent's unique id stays with the worker.
    let (reader, guard) = mac();
    let (leader, mut members) = command(&reader, guard);
    let parent = reader.kernel().spawn(leader, "sh");
    members.discover(&reader);
    assert_eq!(member_pids(&members), vec![leader, parent]);
    let daemon = reader.kernel().spawn(parent, "daemon");
    reader.kernel().with(daemon, |p| p.pgid = daemon); // setsid()
    reader.kernel().exit(parent);
    let found = (0..=LINEAGE_EVERY).any(|_| {
        members.discover(&reader);
        member_pids(&members).contains(&daemon)
    });
    assert!(
        found,
        "the setsid worker was not found: {:?}",
        member_pids(&members)
    );
    assert_eq!(member_pids(&members), vec![leader, daemon]);
}

#[test]
fn a_process_that_is_no_member_is_not_taken_for_one() {
    // The lineage search must not sweep in strangers: launchd's other children stay out.
    let (reader, guard) = mac();
    let (leader, mut members) = command(&reader, guard);
    let stranger = reader.kernel().spawn_user(USER, "Safari");
    let _its_child = reader.kernel().spawn(stranger, "WebContent");
    for _ in 0..=LINEAGE_EVERY {
        members.discover(&reader);
    }
    assert_eq!(member_pids(&members), vec![leader]);
}

#[test]
fn a_member_of_another_uid_is_reported_never_signalled() {
    // A setuid child of another effective uid: EPERM on PROC_PIDTBSDINFO. It stays a member
    // (from the short answer, start time unknown) and the stop says it was refused.
    let (reader, guard) = mac();
    let (leader, mut members) = command(&reader, guard);
    let setuid = reader.kernel().spawn(leader, "sudo");
    reader.kernel().with(setuid, |p| p.uid = 0);
    let under = reader.kernel().spawn(setuid, "helper");
    members.discover(&reader);
    assert_eq!(member_pids(&members), vec![leader, setuid, under]);
    let unknown = members
        .live()
        .iter()
        .find(|m| m.id.pid == setuid)
        .unwrap()
        .id;
    assert_eq!(unknown.start_time, 0, "EPERM: the start time is unknown");
    let report = signal_each(
        &reader,
        reader.kernel(),
        &safety(&reader, guard),
        &live_ids(&members),
        JobSignal::Terminate,
    );
    let refused: Vec<u32> = report.refused.iter().map(|r| r.id.pid).collect();
    assert_eq!(refused, vec![setuid, under], "{report:?}");
    assert!(
        report.refused[0].why.contains("cannot be identified"),
        "{report:?}"
    );
    assert_eq!(reader.kernel().get(setuid).unwrap().run, Run::Running);
    // The helper of the other uid is that uid's: its owner is read from the short answer.
    let helper = reader.kernel().get(under).unwrap();
    assert_eq!((helper.uid, helper.run), (0, Run::Running));
    assert_eq!(
        Safety::of(id(&reader, guard), Vec::new(), USER).check(&reader, &unknown),
        Err(Refusal::Unidentified(setuid))
    );
}

#[test]
fn a_recycled_pid_is_never_signalled() {
    // Sequential pids wrap: a member's pid may name another process later.
    let (reader, guard) = mac();
    let (leader, mut members) = command(&reader, guard);
    let worker = reader.kernel().spawn(leader, "worker");
    members.discover(&reader);
    let old = id(&reader, worker);
    reader.kernel().exit(worker);
    reader.kernel().reap(worker);
    reader.kernel().next_pid_is(worker);
    let stranger = reader.kernel().spawn_user(USER, "Mail");
    assert_eq!(stranger, worker, "the pid was handed out again");
    let report = signal_each(
        &reader,
        reader.kernel(),
        &safety(&reader, guard),
        &[old],
        JobSignal::Kill,
    );
    assert_eq!(report.gone, vec![old], "{report:?}");
    assert_eq!(reader.kernel().get(stranger).unwrap().run, Run::Running);
    members.discover(&reader);
    assert_eq!(
        member_pids(&members),
        vec![leader],
        "the new process is no member"
    );
}

#[test]
fn a_pause_is_seen_and_so_is_a_continue_from_outside() {
    let (reader, guard) = mac();
    let (leader, mut members) = command(&reader, guard);
    let worker = reader.kernel().spawn(leader, "worker");
    members.discover(&reader);
    let safety = safety(&reader, guard);
    let paused = signal_each(
        &reader,
        reader.kernel(),
        &safety,
        &live_ids(&members),
        JobSignal::Pause,
    );
    assert_eq!(paused.reached.len(), 2);
    members.discover(&reader);
    assert!(members.live().iter().all(|m| m.state == RunState::Stopped));
    reader.kernel().with(worker, |p| p.run = Run::Running); // kill -CONT from a terminal
    members.discover(&reader);
    let worker_state = members
        .live()
        .iter()
        .find(|m| m.id.pid == worker)
        .unwrap()
        .state;
    assert_eq!(
        worker_state,
        RunState::Running,
        "the reader sees pbi_status"
    );
    // A stop of a paused job: SIGTERM stays pending until the SIGCONT that follows it.
    let stop = signal_each(
        &reader,
        reader.kernel(),
        &safety,
        &live_ids(&members),
        JobSignal::Terminate,
    );
    assert_eq!(stop.reached.len(), 2);
    assert!(
        reader.kernel().get(worker).is_none(),
        "the worker was re-parented and reaped"
    );
    assert_eq!(
        reader.kernel().get(leader).unwrap().run,
        Run::Zombie,
        "ours to reap"
    );
    assert_eq!(members.discover(&reader), 0);
}

#[test]
fn a_paused_member_killed_from_outside_is_gone_while_it_frees_its_memory() {
    // Force Quit of a paused job: SIGKILL wakes it, and while xnu frees its memory it is
    // SRUN with PROC_FLAG_INEXIT: exiting, never a member that runs again (a member still
    // until it is a zombie, whose exit status comes then).
    let (reader, guard) = mac();
    let (leader, mut members) = command(&reader, guard);
    let worker = reader.kernel().spawn(leader, "worker");
    members.discover(&reader);
    let safety = safety(&reader, guard);
    signal_each(
        &reader,
        reader.kernel(),
        &safety,
        &live_ids(&members),
        JobSignal::Pause,
    );
    members.discover(&reader);
    assert!(members.live().iter().all(|m| m.state == RunState::Stopped));
    reader.kernel().with(worker, |p| p.run = Run::Exiting);
    members.discover(&reader);
    let states: Vec<(u32, RunState)> = members.live().iter().map(|m| (m.id.pid, m.state)).collect();
    assert_eq!(
        states,
        vec![(leader, RunState::Stopped), (worker, RunState::Exiting)],
        "{states:?}"
    );
}

/// Memory in use as the page model holds it now, bytes: what a fresh answer would say.
fn in_use_now(reader: &XnuReader<FakeMac>) -> u64 {
    let c = reader.kernel().memory(|m| m.counts());
    (c.internal - c.purgeable + c.wired + c.compressor) * PAGE_BYTES
}

/// Samples ten times a second for 3 s while a job touches memory, `others` third-party
/// monitors polling `host_statistics64` before each sample: what the model held before the
/// first touch and at each sample, and what each sample read of memory in use.
fn sample_while_touching(reader: &XnuReader<FakeMac>, others: u32) -> (Vec<u64>, Vec<u64>) {
    let job = reader.kernel().spawn(1, "python3");
    let (mut truths, mut reads) = (vec![in_use_now(reader)], Vec::new());
    for _ in 0..30 {
        for _ in 0..others {
            reader.kernel().other_monitor_polls();
        }
        reader.kernel().touch(job, 100 << 20);
        let truth = reader.kernel().memory(|m| m.counts());
        let s = reader.read_system().unwrap();
        // Swap and the level are sysctls: fresh at every sample, whatever the cache does.
        assert_eq!(s.free_percent, truth.level as f64);
        assert_eq!(s.swap_used_bytes, truth.swap_used_bytes);
        truths.push(in_use_now(reader));
        reads.push(s.in_use_bytes.unwrap());
        reader.kernel().advance(Duration::from_millis(100));
    }
    (truths, reads)
}

/// True when each read is what the model held at most `samples` samples before it (its own
/// sample is `truths[i + 1]`).
fn each_at_most_behind(truths: &[u64], reads: &[u64], samples: usize) -> bool {
    reads.iter().enumerate().all(|(i, read)| {
        let since = (i + 1).saturating_sub(samples);
        truths[since..=i + 1].contains(read)
    })
}

#[test]
fn page_counts_are_asked_once_a_second_and_swap_and_the_level_at_every_sample() {
    // Defect 5 of issue 21, with issue 29's correction: xnu's budget of 2-10 real answers a
    // second and its cached answer are shared by every third-party process. Sampling at 10 a
    // second, Headroom asks once a second, and each of its answers is a real one.
    let (reader, _) = mac();
    let (truths, reads) = sample_while_touching(&reader, 0);
    let (real, cached) = reader.kernel().host_calls();
    assert_eq!((real, cached), (3, 0), "once a second over 3 s, each real");
    // Each reading is the model's at the last real answer: at most a second old.
    assert!(each_at_most_behind(&truths, &reads, 9));
    assert!(
        !each_at_most_behind(&truths, &reads, 0),
        "not asked at each sample"
    );
    // Asked ten times within a second, the answers past the window's budget are the cache's.
    reader.kernel().advance(Duration::from_secs(1));
    for _ in 0..10 {
        reader.kernel().host_vm_info().unwrap();
    }
    let (real_after, cached_after) = reader.kernel().host_calls();
    let real_in_window = real_after - real;
    assert!(
        HOST_STATS_REAL_PER_WINDOW.contains(&real_in_window),
        "{real_in_window} real answers"
    );
    assert_eq!(cached_after - cached, 10 - real_in_window);
}

#[test]
fn another_monitor_spending_the_budget_leaves_the_page_counts_a_second_old_at_most() {
    let (reader, _) = mac();
    let (truths, reads) = sample_while_touching(&reader, 12);
    assert!(
        reader.kernel().host_calls().1 > 0,
        "the other monitors hit the cache"
    );
    // Whoever got the last real answer, the snapshot is of the same second: never older.
    assert!(each_at_most_behind(&truths, &reads, 10));
}

#[test]
fn the_process_list_shows_other_users_without_what_it_may_not_read() {
    let (reader, guard) = mac();
    let root_daemon = reader.kernel().spawn(1, "mds");
    let footprints = reader.scan_footprints().unwrap();
    let pids: Vec<u32> = footprints.iter().map(|r| r.pid).collect();
    assert!(pids.contains(&guard));
    assert!(!pids.contains(&root_daemon), "EPERM across uids: skipped");
    let listed = reader.list_processes().unwrap();
    let mine = listed.iter().find(|p| p.pid == guard).unwrap();
    assert_eq!(mine.command, "headroom");
    let theirs = listed.iter().find(|p| p.pid == root_daemon).unwrap();
    assert_eq!(
        (theirs.uid, theirs.start_time),
        (0, 0),
        "from the short answer"
    );
    assert_eq!((theirs.name.as_str(), theirs.command.as_str()), ("mds", ""));
}
