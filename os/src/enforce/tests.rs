//! Tests of signalling real processes under the safety rules: identities, refusals, what
//! each signal reached, and the blocking stop of the unwind path.

#![allow(clippy::unwrap_used)] // helpers of tests: a panic is a failed test

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use super::*;
use crate::counters::Counters;
use crate::members::Members;
use crate::process::tree_pids;
use crate::process::ProcessLookup;
use crate::unix::signals::Kernel;

/// True once group `pgid` is gone (its last zombies reaped by whoever adopted them).
fn group_ends(pgid: u32) -> bool {
    (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !signals::group_exists(pgid)
    })
}

fn members_of(c: &Counters, child: &Child) -> MemberSet {
    let id = ProcessIdentity::of(c, child.id()).unwrap();
    MemberSet::new(Members::of_command(id, None))
}

fn spawn_sh(script: &str, own_group: bool) -> Child {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]).stdin(Stdio::null());
    if own_group {
        cmd.process_group(0);
    }
    cmd.spawn().unwrap()
}

fn wait_for_children(counters: &Counters, pid: u32, n: usize) -> Vec<u32> {
    for _ in 0..200 {
        let pids = tree_pids(counters, pid);
        if pids.len() > n {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("children of {pid} never appeared");
}

#[test]
fn refuses_reserved_ourselves_ancestors_and_recycled() {
    let c = Counters::new();
    let safety = Safety::new(&c);
    let me = ProcessIdentity::of(&c, std::process::id()).unwrap();
    assert_eq!(safety.check(&c, &me), Err(Refusal::Ourselves(me.pid)));
    let one = ProcessIdentity {
        pid: 1,
        start_time: 0,
    };
    assert_eq!(safety.check(&c, &one), Err(Refusal::Reserved(1)));
    let parent = std::os::unix::process::parent_id();
    let p = ProcessIdentity::of(&c, parent).unwrap();
    assert_eq!(safety.check(&c, &p), Err(Refusal::OurAncestor(parent)));
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let id = ProcessIdentity::of(&c, child.id()).unwrap();
    let recycled = ProcessIdentity {
        start_time: id.start_time + 1,
        ..id
    };
    assert_eq!(safety.check(&c, &recycled), Err(Refusal::Gone(id.pid)));
    let report = signal_each(&c, &Kernel, &safety, &[recycled], JobSignal::Kill);
    assert_eq!(report.gone, vec![recycled], "{report:?}");
    assert!(id.is_alive(&c), "a refused signal touched nothing");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn an_ancestor_is_known_by_pid_and_start_time() {
    // A process that got a dead ancestor's pid is no ancestor: it may be signalled.
    let c = Counters::new();
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let id = ProcessIdentity::of(&c, child.id()).unwrap();
    let me = ProcessIdentity::of(&c, std::process::id()).unwrap();
    let dead_ancestor = ProcessIdentity {
        pid: id.pid,
        start_time: id.start_time.saturating_sub(1),
    };
    let safety = Safety::of(me, vec![dead_ancestor], signals::current_uid());
    assert!(safety.check(&c, &id).is_ok());
    let safety = Safety::of(me, vec![id], signals::current_uid());
    assert_eq!(safety.check(&c, &id), Err(Refusal::OurAncestor(id.pid)));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn an_unknown_start_time_is_never_signalled() {
    let c = Counters::new();
    let safety = Safety::new(&c);
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let unknown = ProcessIdentity {
        pid: child.id(),
        start_time: 0,
    };
    assert_eq!(
        safety.check(&c, &unknown),
        Err(Refusal::Unidentified(child.id()))
    );
    let report = signal_each(&c, &Kernel, &safety, &[unknown], JobSignal::Kill);
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn refuses_other_users_and_says_so() {
    let c = Counters::new();
    let me = ProcessIdentity::of(&c, std::process::id()).unwrap();
    let safety = Safety::of(me, Vec::new(), signals::current_uid().wrapping_add(1));
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let id = ProcessIdentity::of(&c, child.id()).unwrap();
    assert!(matches!(
        safety.check(&c, &id),
        Err(Refusal::OtherUser { .. })
    ));
    let report = signal_each(&c, &Kernel, &safety, &[id], JobSignal::Terminate);
    assert!(report.reached.is_empty());
    assert_eq!(report.refused[0].id, id);
    assert!(
        report.refused[0].why.contains("belongs to uid"),
        "{report:?}"
    );
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn pause_and_resume_reach_each_member() {
    let c = Counters::new();
    let safety = Safety::new(&c);
    let mut child = spawn_sh("sleep 60 & sleep 60 & wait", true);
    wait_for_children(&c, child.id(), 2);
    let set = members_of(&c, &child);
    let ids: Vec<ProcessIdentity> = set.discover(&c).iter().map(|m| m.id).collect();
    assert_eq!(ids.len(), 3);
    let paused = signal_each(&c, &Kernel, &safety, &ids, JobSignal::Pause);
    assert_eq!(paused.reached, ids);
    let stopped = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        set.discover(&c)
            .iter()
            .all(|m| m.state == headroom_model::counters::RunState::Stopped)
    });
    assert!(stopped, "{:?}", set.live());
    let resumed = signal_each(&c, &Kernel, &safety, &ids, JobSignal::Resume);
    assert_eq!(resumed.reached.len(), 3);
    let report = stop_members(&c, &Kernel, &safety, &set, Duration::from_secs(5));
    let _ = child.wait();
    assert!(report.survivors.is_empty(), "{report:?}");
    assert!(group_ends(child.id()));
}

#[test]
fn the_blocking_stop_kills_term_ignorers_after_the_grace() {
    let mut child = spawn_sh("trap '' TERM; sleep 60 & sleep 60 & wait", true);
    let c = Counters::new();
    let pids = wait_for_children(&c, child.id(), 2);
    let set = members_of(&c, &child);
    let bystander = Command::new("sleep").arg("30").spawn().unwrap();
    let t0 = Instant::now();
    let report = stop_members(
        &c,
        &Kernel,
        &Safety::new(&c),
        &set,
        Duration::from_millis(200),
    );
    let _ = child.wait();
    for pid in &pids {
        assert!(report.terminated.contains(pid), "{report:?}");
        // The ignored TERM is inherited: every member needed the SIGKILL.
        assert!(report.killed.contains(pid), "{report:?}");
    }
    assert!(report.survivors.is_empty());
    assert!(report.signalled());
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert!(group_ends(child.id()));
    let mut bystander = bystander;
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "bystander must live"
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}

#[test]
fn a_job_that_ended_before_the_stop_was_not_stopped() {
    let mut child = spawn_sh("sleep 0.3; exit 7", true);
    let c = Counters::new();
    let set = members_of(&c, &child);
    let _ = child.wait();
    let report = stop_members(&c, &Kernel, &Safety::new(&c), &set, Duration::from_secs(1));
    assert!(!report.signalled(), "{report:?}");
}
