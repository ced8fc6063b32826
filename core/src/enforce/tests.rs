//! Tests of stopping real processes: trees, groups, TERM-ignoring children, refusals.

#![allow(clippy::unwrap_used)] // helpers of tests: a panic is a failed test

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use super::*;
use crate::counters::CounterSource;
use crate::members::Members;
use crate::process::tree_pids;

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

fn never() -> bool {
    false
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

/// Stops `root` and its descendants as the engine stops a job of one process: the safety
/// check on the root, then [`stop_members`] on its members.
fn stop_tree(
    counters: &Counters,
    safety: &Safety,
    root: ProcessIdentity,
    grace: Duration,
    escalate: &dyn Fn() -> bool,
) -> Result<StopReport, Refusal> {
    safety.check(counters, &root)?;
    let members = MemberSet::new(Members::of_process(root));
    Ok(stop_members(counters, safety, &members, grace, escalate))
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
    assert!(stop_tree(&c, &safety, recycled, Duration::ZERO, &never).is_err());
    assert!(id.is_alive(&c), "a refused stop touched nothing");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn refuses_other_users() {
    let c = Counters::new();
    let mut safety = Safety::new(&c);
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let id = ProcessIdentity::of(&c, child.id()).unwrap();
    safety.uid = safety.uid.wrapping_add(1);
    assert!(matches!(
        safety.check(&c, &id),
        Err(Refusal::OtherUser { .. })
    ));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn stop_tree_terms_descendants_and_kills_term_ignorers() {
    let c = Counters::new();
    let safety = Safety::new(&c);
    // A shell that ignores TERM, with a child that ignores TERM too, and a normal one.
    let mut root = spawn_sh(
        "trap '' TERM; sh -c \"trap '' TERM; sleep 60\" & sleep 60 & wait",
        false,
    );
    let pids = wait_for_children(&c, root.id(), 3);
    let bystander = Command::new("sleep").arg("30").spawn().unwrap();
    let id = ProcessIdentity::of(&c, root.id()).unwrap();
    let report = stop_tree(&c, &safety, id, Duration::from_millis(300), &never).unwrap();
    let _ = root.wait();
    assert!(report.terminated.contains(&root.id()), "{report:?}");
    assert!(
        report.killed.contains(&root.id()),
        "TERM was ignored: {report:?}"
    );
    assert!(report.survivors.is_empty(), "{report:?}");
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists() || c.process_info(pid).is_err(),
            "{pid} survived"
        );
    }
    let mut bystander = bystander;
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "bystander must live"
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}

#[test]
fn stop_members_escalates_after_grace() {
    let mut child = spawn_sh("trap '' TERM; sleep 60 & sleep 60 & wait", true);
    let c = Counters::new();
    let pids = wait_for_children(&c, child.id(), 2);
    let set = members_of(&c, &child);
    let t0 = Instant::now();
    let report = stop_members(
        &c,
        &Safety::new(&c),
        &set,
        Duration::from_millis(200),
        &never,
    );
    let _ = child.wait();
    for pid in &pids {
        assert!(report.terminated.contains(pid), "{report:?}");
    }
    // The ignored TERM is inherited: every member needed the SIGKILL.
    for pid in &pids {
        assert!(report.killed.contains(pid), "{report:?}");
    }
    assert!(report.survivors.is_empty());
    assert!(report.signalled());
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert!(group_ends(child.id()));
}

#[test]
fn stop_members_without_escalation_when_term_works() {
    let mut child = spawn_sh("sleep 60 & sleep 60 & wait", true);
    let c = Counters::new();
    wait_for_children(&c, child.id(), 2);
    let set = members_of(&c, &child);
    let report = stop_members(&c, &Safety::new(&c), &set, Duration::from_secs(5), &never);
    let _ = child.wait();
    assert_eq!(report.terminated.len(), 3, "{report:?}");
    assert!(report.killed.is_empty(), "{report:?}");
    assert!(group_ends(child.id()));
}

#[test]
fn escalate_sends_kill_at_once() {
    let mut child = spawn_sh("trap '' TERM; sleep 60 & wait", true);
    let c = Counters::new();
    wait_for_children(&c, child.id(), 1);
    let set = members_of(&c, &child);
    let t0 = Instant::now();
    let report = stop_members(&c, &Safety::new(&c), &set, Duration::from_secs(30), &|| {
        true
    });
    let _ = child.wait();
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(report.killed.contains(&child.id()), "{report:?}");
}

#[test]
fn a_job_that_ended_before_the_stop_was_not_stopped() {
    let mut child = spawn_sh("sleep 0.3; exit 7", true);
    let c = Counters::new();
    let set = members_of(&c, &child);
    let _ = child.wait();
    let report = stop_members(&c, &Safety::new(&c), &set, Duration::from_secs(1), &never);
    assert!(!report.signalled(), "{report:?}");
}
