//! Several `--on-budget pause` guards under pressure on real swap (root; the swap lab of
//! `support`): the youngest job is paused first and resumed first (`policy::order`). Three
//! guards, started a second apart; the oldest job grows swap, the two younger ones hold a
//! little memory. Every state change of the three jobs is watched in `/proc` from outside:
//! no job is ever paused while a younger one runs, nor resumed while a younger one is
//! paused; the youngest is the first paused; each is paused at least once; none is left
//! stopped.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::guard::{control, Guard};
use support::*;

/// A change of state of a job's process, seen from outside.
#[derive(Debug, Clone, Copy)]
struct Change {
    /// Which job: 0 the oldest, 2 the youngest.
    job: usize,
    /// Stopped (`T`) after it, or running.
    stopped: bool,
    at: Duration,
}

/// Watches the states of `pids` every 10 ms until `done`; returns every change.
fn watch_states(pids: [u32; 3], done: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Change>> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut last = [false; 3];
        let mut changes = Vec::new();
        while !done.load(Ordering::SeqCst) {
            for (job, &pid) in pids.iter().enumerate() {
                let Some(state) = proc_state(pid) else {
                    continue;
                };
                let stopped = state == 'T';
                if stopped != last[job] {
                    last[job] = stopped;
                    changes.push(Change {
                        job,
                        stopped,
                        at: start.elapsed(),
                    });
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        changes
    })
}

/// The states of the three jobs after each change, checked against the order: a job is
/// paused only once every younger one is, and resumed only once every younger one runs.
fn check_order(changes: &[Change]) {
    let mut stopped = [false; 3];
    for change in changes {
        let younger = (change.job + 1)..3;
        if change.stopped {
            assert!(
                younger.clone().all(|y| stopped[y]),
                "job {} paused while a younger one ran: {changes:?}",
                change.job
            );
        } else {
            assert!(
                younger.clone().all(|y| !stopped[y]),
                "job {} resumed while a younger one was paused: {changes:?}",
                change.job
            );
        }
        stopped[change.job] = change.stopped;
    }
    // One resume per calm period (2 s) at most: each is given time to show its effect.
    let resumes: Vec<Duration> = changes
        .iter()
        .filter(|c| !c.stopped)
        .map(|c| c.at)
        .collect();
    for pair in resumes.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(1500),
            "two resumes within a calm period: {changes:?}"
        );
    }
}

#[test]
fn several_pausing_guards_pause_the_youngest_first_and_resume_it_first() {
    let Some(_lock) = real_swap_lock() else {
        return;
    };
    let mut rig = rig();
    let base = tag("order");
    let tags: Vec<String> = (0..3).map(|k| format!("{base}-{k}")).collect();
    let flags = [
        "--wait-free",
        "0",
        "--swap-budget",
        "60M",
        "--on-budget",
        "pause",
        "--max-pauses",
        "3",
        "--resume-free",
        "1",
        "--resume-calm",
        "2s",
        "--grace",
        "2s",
    ];
    // The oldest grows swap (slowly, from when the other two have started); the younger two
    // hold 8 MiB each.
    let hogs = [
        hog_in_cgroup(
            &rig,
            "400M",
            &tags[0],
            &["--delay", "3000", "--step-ms", "8", "--hold", "1"],
        ),
        hog_in_cgroup(&rig, "8M", &tags[1], &["--hold", "600"]),
        hog_in_cgroup(&rig, "8M", &tags[2], &["--hold", "600"]),
    ];
    let mut guards: Vec<Guard> = Vec::new();
    for (k, argv) in hogs.iter().enumerate() {
        let mut args = vec!["guard"];
        args.extend(flags);
        args.push("--");
        args.extend(argv.iter().map(String::as_str));
        guards.push(Guard::start(&args, &tags[k]));
        std::thread::sleep(Duration::from_secs(1));
    }
    let pid_of = |k: usize| {
        let mut pid = None;
        wait_until(Duration::from_secs(10), || {
            pid = live_with_tag(&tags[k]).into_iter().find(|&p| {
                p != guards[k].pid()
                    && std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == hog_path())
            });
            pid.is_some()
        });
        pid.unwrap_or_else(|| panic!("no hog for job {k}: {}", guards[k].stderr()))
    };
    let pids = [pid_of(0), pid_of(1), pid_of(2)];
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch_states(pids, Arc::clone(&done));
    // The oldest ends once it has all its memory (paused and resumed on the way).
    let ended = wait_until(Duration::from_secs(120), || {
        guards[0].child.try_wait().ok().flatten().is_some()
    });
    // The younger ones resume in their turn, then are stopped from "another terminal".
    let calm = wait_until(Duration::from_secs(30), || {
        pids[1..].iter().all(|&p| proc_state(p) != Some('T'))
    });
    done.store(true, Ordering::SeqCst);
    let changes = watcher.join().unwrap();
    let said: Vec<String> = guards.iter().map(Guard::stderr).collect();
    assert!(ended, "the oldest job never ended: {said:#?}");
    assert!(
        calm,
        "the younger ones stayed paused: {changes:?} {said:#?}"
    );
    // Stopped before any check, so that a failure leaves nothing behind.
    let stops: Vec<_> = pids[1..].iter().map(|&pid| control("stop", pid)).collect();
    eprintln!(
        "changes: {changes:?}\noldest: {}\nyoungest: {}",
        said[0], said[2]
    );
    check_order(&changes);
    let first = changes
        .iter()
        .find(|c| c.stopped)
        .expect("nothing was paused");
    assert_eq!(first.job, 2, "the youngest is paused first: {changes:?}");
    for job in 0..3 {
        assert!(
            changes.iter().any(|c| c.job == job && c.stopped),
            "job {job} was never paused: {changes:?} {said:#?}"
        );
    }
    for (code, err) in stops {
        assert_eq!(code, Some(0), "{err}");
    }
    // The older ones went on past a crossing at least once, a younger job paused instead.
    assert!(
        said[..2]
            .iter()
            .any(|s| s.contains("goes on, a new budget counts")),
        "{said:#?}"
    );
    assert_eq!(guards[0].wait(), Some(0), "{}", said[0]);
    for guard in &mut guards[1..] {
        assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
    }
    assert!(
        wait_until(Duration::from_secs(5), || tags
            .iter()
            .all(|t| live_with_tag(t).is_empty())),
        "left behind"
    );
    rig.bystander.assert_alive();
}
