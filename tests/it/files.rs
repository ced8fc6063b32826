//! Headroom's own folders and files (issue 33): private (they hold command lines), made so
//! again when an older version left them open; only regular files are read from them, so a
//! FIFO planted among the job files or the queue's places holds nothing up.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::guard::WAIT;
use support::{headroom, wait_until};

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The files in `dir` whose name ends in `.json`.
fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn folders_and_files_are_private_and_made_so_when_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    // As an older version left them: open to every reader.
    for dir in ["", "data", "state", "state/jobs", "state/queue"] {
        fs::create_dir_all(home.join(dir)).unwrap();
        fs::set_permissions(home.join(dir), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut guard = headroom()
        .env("HEADROOM_HOME", &home)
        .args([
            "guard",
            "--wait-free",
            "0",
            "--wait-fit",
            "--",
            "sleep",
            "3",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (jobs, queue) = (home.join("state/jobs"), home.join("state/queue"));
    assert!(
        wait_until(WAIT, || !json_files(&jobs).is_empty()
            && !json_files(&queue).is_empty()),
        "no job file and place while the job runs"
    );
    for file in json_files(&jobs).iter().chain(&json_files(&queue)) {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    assert!(guard.wait().unwrap().success());
    for dir in ["", "data", "state", "state/jobs", "state/queue"] {
        assert_eq!(mode(&home.join(dir)), 0o700, "{dir}");
    }
    assert_eq!(mode(&home.join("data/history.db")), 0o600);
    for entry in fs::read_dir(&queue).unwrap().flatten() {
        assert_eq!(mode(&entry.path()), 0o600, "{}", entry.path().display());
    }
}

/// Runs `cmd` for at most `limit`: its exit code, or `None` (killed) when it did not end.
fn within(mut cmd: Command, limit: Duration) -> Option<i32> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_fifo_among_the_job_files_or_places_holds_nothing_up() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    for dir in ["state/jobs", "state/queue"] {
        fs::create_dir_all(home.join(dir)).unwrap();
        let fifo = std::ffi::CString::new(
            home.join(dir)
                .join("4242-1.json")
                .to_str()
                .unwrap()
                .as_bytes(),
        )
        .unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    }
    for args in [&["status"][..], &["queue"], &["stop", "4242"]] {
        let mut cmd = headroom();
        cmd.env("HEADROOM_HOME", &home).args(args);
        let code = within(cmd, Duration::from_secs(20));
        assert!(code.is_some(), "headroom {args:?} hung on a FIFO");
        assert_ne!(code, Some(101), "headroom {args:?} panicked");
    }
}

#[test]
fn a_job_file_that_cannot_be_written_is_said_once() {
    // A real full file system: a 64 KiB tmpfs as the state folder, filled before the run.
    let Some(_lock) = support::real_swap_lock() else {
        return; // (mounting needs root; the lock says why it skips)
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let state = home.join("state");
    let small = support::SmallTmpfs::mount(&state, "64k");
    let _ = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", state.join("fill").display()))
        .args(["bs=4k", "status=none"])
        .status();
    let out = headroom()
        .env("HEADROOM_HOME", &home)
        .args([
            "guard",
            "--wait-free",
            "0",
            "--poll",
            "0.1s",
            "--",
            "sleep",
            "2",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    drop(small);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("job file")).collect();
    assert_eq!(said.len(), 1, "said once, without -v: {err}");
    assert!(said[0].contains("cannot be written"), "{err}");
    assert!(err.contains(": fits: swap +"), "the run was judged: {err}");
}
