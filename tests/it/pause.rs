//! Pausing a guarded job with real processes, without root: `headroom pause`, `resume` and
//! `stop` from another "terminal", and a guard ended by a signal while its job is paused.
//! Whatever happens, no process of the job is left stopped (state T) or running unguarded.
//! (Pausing at the budget on real swap is in `real_swap_pause.rs`.)

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use support::guard::{
    all_in_state, control, members as hogs, none_stopped, ppid, sleep_tag, Guard, Leftovers,
    QUICK_GUARD, WAIT,
};
use support::{headroom, hog_path, live_with_tag, proc_state, run_to_files, tag, wait_until};

fn hog_args(tag: &str) -> Vec<String> {
    [
        hog_path().display().to_string(),
        "8M".into(),
        "--children".into(),
        "2".into(),
    ]
    .into_iter()
    .chain([
        "--hold".into(),
        "120".into(),
        "--tag".into(),
        tag.to_string(),
    ])
    .collect()
}

/// A guard over a hog with two children; returns it and the hog's (leader's) pid once all
/// three run.
fn guarded_hogs(tag: &str, extra: &[&str]) -> (Guard, u32) {
    let mut args = vec![
        "guard",
        "--wait-free",
        "0",
        "--poll",
        "0.2s",
        "--grace",
        "2s",
    ];
    args.extend(extra);
    args.push("--");
    let hog = hog_args(tag);
    args.extend(hog.iter().map(String::as_str));
    let guard = Guard::start(&args, tag);
    // (The guard's own command line holds the tag too.)
    let me = guard.child.id();
    let hogs = || live_with_tag(tag).into_iter().filter(move |&p| p != me);
    assert!(
        wait_until(WAIT, || hogs().count() == 3),
        "the hogs did not start: {}",
        guard.stderr()
    );
    let leader = hogs()
        .find(|&pid| ppid(pid) == Some(guard.child.id()))
        .unwrap();
    (guard, leader)
}

#[test]
fn pause_resume_and_stop_from_another_terminal() {
    let tag = tag("pause-resume-stop");
    let (mut guard, leader) = guarded_hogs(&tag, &[]);
    let me = guard.child.id();
    let (code, err) = control("pause", leader);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        wait_until(WAIT, || all_in_state(&tag, me, 'T')),
        "not every process paused"
    );
    assert!(
        wait_until(WAIT, || guard.stderr().contains("paused")),
        "{}",
        guard.stderr()
    );
    assert!(
        guard
            .stderr()
            .contains(&format!("headroom resume {leader}")),
        "{}",
        guard.stderr()
    );
    let (code, err) = control("pause", leader);
    assert_eq!(code, Some(2), "already paused: {err}");
    assert!(err.contains("already paused"), "{err}");

    let (code, err) = control("resume", leader);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        wait_until(WAIT, || none_stopped(&tag, me)),
        "not every process resumed"
    );
    assert_eq!(hogs(&tag, me).len(), 3);
    let (code, err) = control("resume", leader);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not paused"), "{err}");

    // Paused again, then stopped: SIGTERM reaches stopped processes through SIGCONT.
    assert_eq!(control("pause", leader).0, Some(0));
    assert!(wait_until(WAIT, || all_in_state(&tag, me, 'T')));
    let (code, err) = control("stop", leader);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
    let stderr = guard.stderr();
    assert!(stderr.contains("on request"), "{stderr}");
    assert!(stderr.contains("paused twice"), "{stderr}");
    assert!(
        wait_until(WAIT, || live_with_tag(&tag).is_empty()),
        "left: {:?}",
        live_with_tag(&tag)
    );
}

#[test]
fn a_guard_ended_by_a_signal_never_leaves_its_job_paused() {
    for (signal, name) in [
        (libc::SIGTERM, "term"),
        (libc::SIGINT, "int"),
        (libc::SIGHUP, "hup"),
    ] {
        let tag = tag(&format!("paused-guard-{name}"));
        let (mut guard, leader) = guarded_hogs(&tag, &[]);
        let me = guard.child.id();
        assert_eq!(control("pause", leader).0, Some(0));
        assert!(
            wait_until(WAIT, || all_in_state(&tag, me, 'T')),
            "{name}: not paused"
        );
        // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
        unsafe { libc::kill(guard.child.id() as i32, signal) };
        assert_eq!(
            guard.wait(),
            Some(128 + signal),
            "{name}: {}",
            guard.stderr()
        );
        assert!(
            wait_until(WAIT, || live_with_tag(&tag).is_empty()),
            "{name}: left behind (states {:?})",
            live_with_tag(&tag)
                .iter()
                .map(|&p| proc_state(p))
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_watch_ended_while_its_process_is_paused_continues_it() {
    let tag = tag("paused-watch");
    let mut hog = Command::new(hog_path())
        .args(["8M", "--hold", "120", "--tag", &tag])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = hog.id().to_string();
    let mut watch = Guard::start(
        &[
            "watch",
            &pid,
            "--guard",
            "--on-budget",
            "pause",
            "--poll",
            "0.2s",
        ],
        &tag,
    );
    let me = watch.child.id();
    assert!(
        wait_until(WAIT, || control("pause", hog.id()).0 == Some(0)),
        "{}",
        watch.stderr()
    );
    assert!(
        wait_until(WAIT, || all_in_state(&tag, me, 'T')),
        "not paused"
    );
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
    unsafe { libc::kill(watch.child.id() as i32, libc::SIGTERM) };
    assert_eq!(
        watch.wait(),
        Some(128 + libc::SIGTERM),
        "{}",
        watch.stderr()
    );
    // Left alone, as a watch leaves it, but running again.
    assert!(
        wait_until(WAIT, || none_stopped(&tag, me)),
        "still paused: {:?}",
        proc_state(hog.id())
    );
    assert!(
        hog.try_wait().unwrap().is_none(),
        "the watched process was ended"
    );
    let _ = hog.kill();
    let _ = hog.wait();
}

#[test]
fn control_requests_need_a_job_and_valid_flags() {
    let (code, err) = control("resume", 999_999_999);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no Headroom guard"), "{err}");
    let (code, _, err) = run_to_files({
        let mut cmd = headroom();
        cmd.args(["guard", "--on-budget", "maybe", "--", "true"]);
        cmd
    });
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--on-budget"), "{err}");
}

#[test]
fn a_guard_killed_outright_leaves_no_stopped_job_behind() {
    // SIGKILL cannot be caught: the kernel itself sends SIGHUP and SIGCONT to the job's
    // process group once it is orphaned with a stopped member.
    let tag = tag("paused-guard-kill");
    let (mut guard, leader) = guarded_hogs(&tag, &[]);
    let me = guard.child.id();
    assert_eq!(control("pause", leader).0, Some(0));
    assert!(
        wait_until(WAIT, || all_in_state(&tag, me, 'T')),
        "not paused"
    );
    guard.child.kill().unwrap();
    guard.child.wait().unwrap();
    assert!(
        wait_until(WAIT, || hogs(&tag, me).is_empty()),
        "left behind (states {:?})",
        hogs(&tag, me)
            .iter()
            .map(|&p| proc_state(p))
            .collect::<Vec<_>>()
    );
}

/// A quick guard over `sh -c SCRIPT` (`{tag}` in it replaced by `tag`), whose script starts
/// two `sleep TAG`, once both run; what it leaves is killed at the end.
fn two_sleeps(tag: &str, script: &str, name: &str) -> (Guard, Leftovers) {
    two_sleeps_as(tag, script, name, false)
}

/// [`two_sleeps`], the guard in a session of its own when `new_session`.
fn two_sleeps_as(tag: &str, script: &str, name: &str, new_session: bool) -> (Guard, Leftovers) {
    let script = script.replace("{tag}", tag);
    let mut args = QUICK_GUARD.to_vec();
    args.extend(["--", "sh", "-c", &script]);
    let guard = if new_session {
        Guard::start_in_new_session(&args, name)
    } else {
        Guard::start(&args, name)
    };
    let leftovers = Leftovers {
        tag: tag.to_string(),
        guard: guard.pid(),
    };
    // The two sleeps and the shell, whose command line holds the tag too.
    assert!(
        wait_until(WAIT, || hogs(tag, guard.pid()).len() == 3),
        "the job did not start: {}",
        guard.stderr()
    );
    (guard, leftovers)
}

#[test]
fn a_stop_signal_to_a_guard_outside_a_terminal_stops_its_job_too() {
    // `kill -TSTP` of a guard with no terminal: it suspends with its job paused (every
    // member stopped), never alone while the job runs on unguarded; SIGCONT continues both.
    // Also in a session of its own, where its process group is orphaned and the kernel
    // discards a SIGTSTP the guard would raise to stop itself.
    for (n, new_session) in [false, true].into_iter().enumerate() {
        let tag = sleep_tag(70 + n as u32);
        let script = "sleep {tag} & setsid sleep {tag} & wait";
        let (guard, _leftovers) = two_sleeps_as(&tag, script, "tstp", new_session);
        let me = guard.pid();
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: a signal to our own child, which is alive (dropped only at the end).
        assert_eq!(unsafe { libc::kill(me as i32, libc::SIGTSTP) }, 0);
        assert!(
            wait_until(WAIT, || proc_state(me) == Some('T')),
            "new session {new_session}: the guard did not suspend: {}",
            guard.stderr()
        );
        assert!(
            wait_until(WAIT, || all_in_state(&tag, me, 'T')),
            "new session {new_session}: the job runs on while its guard is stopped: {:?}",
            hogs(&tag, me)
                .iter()
                .map(|&p| proc_state(p))
                .collect::<Vec<_>>()
        );
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(me as i32, libc::SIGCONT) }, 0);
        assert!(
            wait_until(WAIT, || proc_state(me) != Some('T')
                && none_stopped(&tag, me)),
            "new session {new_session}: the job was not continued with its guard: {}",
            guard.stderr()
        );
    }
}

#[test]
fn stop_says_stopped_only_once_the_job_is_gone() {
    // A job that ignores SIGTERM runs through its guard's grace (1 s) before SIGKILL: `stop`
    // served by the live guard answers once no process of the job is left, as the stop of a
    // job whose guard is gone does, not at once while the job still runs.
    let tag = sleep_tag(72);
    let script = "trap '' TERM; sleep {tag} & sleep {tag} & wait";
    let (mut guard, _leftovers) = two_sleeps(&tag, script, "stop-grace");
    let me = guard.pid();
    let leader = support::guard::leader_of(&guard);
    let asked = std::time::Instant::now();
    let (code, err) = control("stop", leader);
    let left = hogs(&tag, me);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("stopped the job"), "{err}");
    assert!(
        left.is_empty(),
        "stop returned with {left:?} still running: {err}"
    );
    assert!(
        asked.elapsed() >= Duration::from_millis(900),
        "the job ignores SIGTERM: its grace passed before it was gone ({:?})",
        asked.elapsed()
    );
    assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
}
