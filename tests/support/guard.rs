//! A `headroom guard` (or `watch`) running in the background for a test, its stderr in a
//! file, and what tests ask of it: its job's processes and their states, control requests
//! from "another terminal", the job's socket.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use super::{headroom, live_with_tag, proc_state, run_to_files, test_home, wait_until};

/// How long a guard test waits for anything.
pub const WAIT: Duration = Duration::from_secs(15);

/// A guard in the background; killed (SIGKILL) when dropped.
pub struct Guard {
    pub child: Child,
    pub stderr: PathBuf,
}

impl Guard {
    /// Starts `headroom ARGS` with stdin and stdout closed and stderr in a file named after
    /// `name`.
    pub fn start(args: &[&str], name: &str) -> Guard {
        Self::spawn(headroom(), args, name)
    }

    /// [`Guard::start`] with the job in a cgroup of its own (where the guard may make one):
    /// the other tests turn it off to prove the process tracking.
    pub fn start_in_own_cgroup(args: &[&str], name: &str) -> Guard {
        let mut cmd = headroom();
        cmd.env_remove("HEADROOM_JOB_CGROUP");
        Self::spawn(cmd, args, name)
    }

    fn spawn(mut cmd: std::process::Command, args: &[&str], name: &str) -> Guard {
        let stderr = test_home().join(format!("{name}.stderr"));
        let child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Guard { child, stderr }
    }

    /// The guard's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it wrote on stderr so far.
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits (up to [`WAIT`]) for the guard's exit code (128+N for a signal).
    pub fn wait(&mut self) -> Option<i32> {
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

    /// True once stderr holds `needle` (waits up to [`WAIT`]).
    pub fn said(&self, needle: &str) -> bool {
        wait_until(WAIT, || self.stderr().contains(needle))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The parent pid of `pid`.
pub fn ppid(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `headroom VERB PID` (resume, pause, stop) to its end: exit code and stderr.
pub fn control(verb: &str, pid: u32) -> (Option<i32>, String) {
    let (code, _, err) = run_to_files({
        let mut cmd = headroom();
        cmd.args([verb, &pid.to_string()]);
        cmd
    });
    (code, err)
}

/// The processes whose command line holds `tag`, but `guard` (whose own command line holds
/// the tag too).
pub fn members(tag: &str, guard: u32) -> Vec<u32> {
    live_with_tag(tag)
        .into_iter()
        .filter(|&p| p != guard)
        .collect()
}

/// True when `tag` has processes and all of them are in `state` (`T` stopped).
pub fn all_in_state(tag: &str, guard: u32, state: char) -> bool {
    let pids = members(tag, guard);
    !pids.is_empty() && pids.iter().all(|&p| proc_state(p) == Some(state))
}

/// True when no process of `tag` is stopped.
pub fn none_stopped(tag: &str, guard: u32) -> bool {
    members(tag, guard)
        .iter()
        .all(|&p| proc_state(p) != Some('T'))
}

/// A `sleep` argument that is also a unique tag for `live_with_tag`: `3600.<digits>`.
pub fn sleep_tag(n: u32) -> String {
    format!("3600.{}{:03}", std::process::id(), n)
}

/// The job's socket of the guard with pid `guard`, wherever this version keeps it.
pub fn socket_of(guard: u32) -> Option<PathBuf> {
    let home = test_home();
    [
        home.join("run").join(format!("{guard}.sock")),
        home.join("state/marks").join(format!("{guard}.sock")),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// Sends SIGCONT to each pid (a `kill -CONT` from outside Headroom).
pub fn continue_from_outside(pids: &[u32]) {
    for &pid in pids {
        // SAFETY: kill has no memory-safety preconditions; the pids are the test's own.
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    }
}
