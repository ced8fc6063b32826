//! What a guard does with members it may not signal, with real processes as root (no swap
//! needed): a member that dropped to another uid is refused by the safety rules, and the
//! guard must say so at once, in the verdict and in its exit code, never "stopped" or
//! "ended"; and an identity is (pid, start time) everywhere, so a member that got the pid of
//! one of Headroom's dead ancestors is still stopped.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::guard::{control, members, sleep_tag, WAIT};
use support::{headroom, headroom_bin, proc_state, run_to_files, test_home, wait_until};

/// True when these tests can run; in CI (`CI` set) not being root is a failure.
fn root() -> bool {
    support::users::root("setpriv, ns_last_pid")
}

const NOBODY: &str = "65534";

fn kill_all(pids: &[u32]) {
    for &pid in pids {
        // SAFETY: kill has no memory-safety preconditions; the pids are the test's sleeps.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

#[test]
fn a_member_of_another_user_is_reported_and_not_taken_for_stopped() {
    if !root() {
        return;
    }
    let tag = sleep_tag(20);
    let script = format!(
        "setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups sleep {tag} & exec sleep {tag}"
    );
    let mut cmd = headroom();
    cmd.args([
        "guard",
        "--wait-free",
        "0",
        "--kill-free",
        "99.9",
        "--grace",
        "1s",
    ])
    .args(["--json", "--", "sh", "-c", &script]);
    let (code, out, err) = run_to_files(cmd);
    let left = support::live_with_tag(&tag);
    kill_all(&left);
    assert_eq!(code, Some(6), "not every member was stopped, yet: {err}");
    assert_eq!(
        left.len(),
        1,
        "our own sleep must be stopped, nobody's cannot be: {left:?}"
    );
    let refused = left[0];
    assert!(
        err.lines().any(|l| l.contains("warning")
            && l.contains(&refused.to_string())
            && l.contains(NOBODY)),
        "no warning names the refused member: {err}"
    );
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["verdict"]["ended"]["kind"], "not_stopped", "{json}");
    assert_eq!(json["exit_code"], 6, "{json}");
    let survivors = json["stop"]["survivors"].as_array().unwrap();
    assert!(survivors.iter().any(|s| s == refused), "{json}");
    assert!(
        !err.contains("exited with code") && !err.contains(", ended"),
        "{err}"
    );
}

#[test]
fn a_job_all_of_another_user_is_never_called_ended() {
    if !root() {
        return;
    }
    let tag = sleep_tag(21);
    let mut cmd = headroom();
    cmd.args([
        "guard",
        "--wait-free",
        "0",
        "--kill-free",
        "99.9",
        "--grace",
        "1s",
        "--",
    ])
    .args([
        "setpriv",
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
    ])
    .args(["--clear-groups", "sleep", &tag]);
    let (code, _, err) = run_to_files(cmd);
    let left = support::live_with_tag(&tag);
    kill_all(&left);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(code, Some(6), "{err}");
    assert!(err.contains("warning"), "{err}");
}

#[test]
fn a_member_with_a_dead_ancestors_pid_is_still_stopped() {
    if !root() {
        return;
    }
    // An ancestor of the guard exits; a member of the job is then born with its pid
    // (ns_last_pid). A check by pid alone takes the member for Headroom's ancestor and
    // refuses to stop it; by (pid, start time) it is a member like any other.
    for attempt in 0..10 {
        let tag = sleep_tag(30 + attempt);
        let fifo = test_home().join(format!("reuse-{attempt}.fifo"));
        let _ = fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let job = format!("read x < {}; sleep {tag} & wait", fifo.display());
        // The ancestor: a shell that starts the guard in the background and exits.
        let script = format!(
            "'{}' guard --wait-free 0 --poll 0.2s --grace 1s -- sh -c '{job}' >/dev/null 2>&1 & sleep 1",
            headroom_bin().display()
        );
        let mut ancestor = Command::new("sh")
            .args(["-c", &script])
            .env("HEADROOM_HOME", test_home())
            .env("HEADROOM_JOB_CGROUP", "off")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let ancestor_pid = ancestor.id();
        ancestor.wait().unwrap();
        // The next pid handed out is the ancestor's.
        fs::write(
            "/proc/sys/kernel/ns_last_pid",
            (ancestor_pid - 1).to_string(),
        )
        .unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .unwrap()
            .write_all(b"go\n")
            .unwrap();
        let mut sleep_pid = None;
        assert!(wait_until(WAIT, || {
            sleep_pid = members(&tag, 0).into_iter().find(|&p| {
                fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0"))
            });
            sleep_pid.is_some()
        }));
        let sleep_pid = sleep_pid.unwrap();
        let leader = support::guard::ppid(sleep_pid).unwrap();
        if sleep_pid != ancestor_pid {
            // Another process took the pid first: try again.
            assert_eq!(control("stop", leader).0, Some(0));
            assert!(wait_until(WAIT, || proc_state(sleep_pid).is_none()));
            continue;
        }
        let (code, err) = control("stop", leader);
        assert_eq!(code, Some(0), "{err}");
        let stopped = wait_until(Duration::from_secs(10), || proc_state(sleep_pid).is_none());
        kill_all(&[sleep_pid]);
        assert!(
            stopped,
            "the member with the dead ancestor's pid {sleep_pid} was not stopped"
        );
        return;
    }
    panic!("never got a member with the ancestor's pid in 10 attempts");
}
