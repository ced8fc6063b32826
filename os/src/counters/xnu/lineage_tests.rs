//! Who belongs to a job on a Mac (issue 29): what xnu keeps of a process's origin and what
//! escapes, run on the fake Mac. No subreaper there: an orphan goes to launchd; its
//! forked-from id (`p_puniqueid`) survives re-parenting but an exec after it names launchd
//! (`pinsertchild` from `cloneproc`), and it names a parent only if that parent was seen. The
//! guard's mark in the command's environment (`HEADROOM_JOB`, read with `KERN_PROCARGS2`)
//! survives both.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use crate::counters::xnu::fake_tests::FakeMac;
use crate::counters::xnu::reader::XnuReader;
use crate::counters::CounterSource;
use crate::members::{Members, LINEAGE_EVERY};
use headroom_model::counters::JOB_MARK_ENV;
use headroom_model::process::ProcessIdentity;

const USER: u32 = 501;
const MARK: &str = "4242.1700000100000000";

/// A Mac with the user's guard, and the command it started: its own group, marked.
fn command() -> (XnuReader<FakeMac>, u32) {
    let mac = FakeMac::new(USER);
    let guard = mac.spawn_user(USER, "headroom");
    let leader = mac.spawn(guard, "python3");
    mac.own_group(leader);
    mac.set_env(
        leader,
        &["HOME=/Users/me", &format!("{JOB_MARK_ENV}=1.2:{MARK}")],
    );
    (XnuReader::on(mac), leader)
}

fn members(reader: &XnuReader<FakeMac>, leader: u32, mark: bool) -> Members {
    let id = ProcessIdentity {
        pid: leader,
        start_time: reader.process_state(leader).unwrap().start_time,
    };
    let members = Members::of_command(id, None);
    if mark {
        members.with_mark(MARK.to_string())
    } else {
        members
    }
}

/// Enough looks for the lineage search to have run.
fn look(reader: &XnuReader<FakeMac>, members: &mut Members) -> Vec<u32> {
    for _ in 0..=LINEAGE_EVERY {
        members.discover(reader);
    }
    let mut pids: Vec<u32> = members.live().iter().map(|m| m.id.pid).collect();
    pids.sort_unstable();
    pids
}

/// The command double-forks a worker out of its group: the middle process exits before the
/// guard ever looks, so the worker, re-parented to launchd, names a parent nobody saw.
fn double_fork(reader: &XnuReader<FakeMac>, leader: u32) -> u32 {
    let middle = reader.kernel().spawn(leader, "sh");
    reader.kernel().own_group(middle);
    let worker = reader.kernel().spawn(middle, "worker");
    reader.kernel().exit(middle);
    assert_eq!(reader.kernel().get(worker).unwrap().ppid, 1, "re-parented");
    worker
}

#[test]
fn a_worker_whose_middle_parent_was_never_seen_is_found_by_the_jobs_mark() {
    let (reader, leader) = command();
    let mut unmarked = members(&reader, leader, false);
    let mut marked = members(&reader, leader, true);
    let worker = double_fork(&reader, leader);
    assert_eq!(
        look(&reader, &mut unmarked),
        vec![leader],
        "the lineage alone misses it"
    );
    assert_eq!(look(&reader, &mut marked), vec![leader, worker]);
}

#[test]
fn an_orphan_that_execs_names_launchd_and_is_still_found_by_the_mark() {
    let (reader, leader) = command();
    let mut unmarked = members(&reader, leader, false);
    let mut marked = members(&reader, leader, true);
    let parent = reader.kernel().spawn(leader, "sh");
    reader.kernel().own_group(parent);
    let worker = reader.kernel().spawn(parent, "worker");
    reader.kernel().own_group(worker);
    // Both see the parent, so its unique id is known; then it exits and the worker execs.
    assert_eq!(look(&reader, &mut unmarked), vec![leader, parent, worker]);
    look(&reader, &mut marked);
    reader.kernel().exit(parent);
    let mut fresh_unmarked = members(&reader, leader, false);
    let before = reader.lineage(worker).unwrap().unwrap().1;
    reader.kernel().exec(worker, "python3");
    let (_, after) = reader.lineage(worker).unwrap().unwrap();
    assert_ne!(before, after, "exec re-inserted it under launchd");
    assert_eq!(
        after,
        reader.lineage(1).unwrap().unwrap().0,
        "launchd's unique id"
    );
    // A guard that had seen the parent still knows the worker (a member stays one); one that
    // looks only now finds it by the mark alone.
    assert!(look(&reader, &mut unmarked).contains(&worker));
    assert_eq!(look(&reader, &mut fresh_unmarked), vec![leader]);
    let mut fresh_marked = members(&reader, leader, true);
    assert_eq!(look(&reader, &mut fresh_marked), vec![leader, worker]);
}

#[test]
fn a_worker_that_clears_its_environment_out_of_sight_escapes_as_documented() {
    let (reader, leader) = command();
    let mut marked = members(&reader, leader, true);
    let worker = double_fork(&reader, leader);
    reader.kernel().set_env(worker, &[]); // `env -i`
    assert_eq!(look(&reader, &mut marked), vec![leader]);
}

#[test]
fn an_older_process_carrying_the_same_mark_is_no_member() {
    // Only a process that started after the job can be of it: an older one (a shell that
    // exported the variable) is not taken for one.
    let mac = FakeMac::new(USER);
    let guard = mac.spawn_user(USER, "headroom");
    let older = mac.spawn_user(USER, "zsh");
    mac.set_env(older, &[&format!("{JOB_MARK_ENV}={MARK}")]);
    let leader = mac.spawn(guard, "python3");
    mac.own_group(leader);
    let reader = XnuReader::on(mac);
    let mut marked = members(&reader, leader, true);
    assert_eq!(look(&reader, &mut marked), vec![leader]);
}
