//! Pausing a guarded job with real processes, without root: `headroom pause`, `resume` and
//! `stop` from another "terminal", and a guard ended by a signal while its job is paused.
//! Whatever happens, no process of the job is left stopped (state T) or running unguarded.
//! (Pausing at the budget on real swap is in `real_swap_pause.rs`.)

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

mod support;

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{
    headroom, hog_path, live_with_tag, proc_state, run_to_files, tag, test_home, wait_until,
};

const WAIT: Duration = Duration::from_secs(15);

/// A `headroom guard` (or `watch`) running in the background, its stderr in a file.
struct Guard {
    child: Child,
    stderr: PathBuf,
}

impl Guard {
    fn start(args: &[&str], name: &str) -> Guard {
        let stderr = test_home().join(format!("{name}.stderr"));
        let child = headroom()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Guard { child, stderr }
    }

    fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for the guard's exit code.
    fn wait(&mut self) -> Option<i32> {
        let mut code = None;
        let ended = wait_until(WAIT, || match self.child.try_wait() {
            Ok(Some(status)) => {
                code = Some(status.code().unwrap_or_else(|| {
                    use std::os::unix::process::ExitStatusExt;
                    128 + status.signal().unwrap_or(0)
                }));
                true
            }
            _ => false,
        });
        assert!(ended, "the guard did not end: {}", self.stderr());
        code
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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

fn ppid(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn control(verb: &str, pid: u32) -> (Option<i32>, String) {
    let (code, _, err) = run_to_files({
        let mut cmd = headroom();
        cmd.args([verb, &pid.to_string()]);
        cmd
    });
    (code, err)
}

/// The hogs of `tag`: its processes but `guard` (whose command line holds the tag too).
fn hogs(tag: &str, guard: u32) -> Vec<u32> {
    live_with_tag(tag)
        .into_iter()
        .filter(|&p| p != guard)
        .collect()
}

fn all_in_state(tag: &str, guard: u32, state: char) -> bool {
    let pids = hogs(tag, guard);
    !pids.is_empty() && pids.iter().all(|&p| proc_state(p) == Some(state))
}

fn none_stopped(tag: &str, guard: u32) -> bool {
    hogs(tag, guard).iter().all(|&p| proc_state(p) != Some('T'))
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
