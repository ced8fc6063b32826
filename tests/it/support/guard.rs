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

/// `headroom guard` that never starts late, checks every 0.2 s and gives 1 s of grace (the
/// command and any other flags follow).
pub const QUICK_GUARD: [&str; 7] = [
    "guard",
    "--wait-free",
    "0",
    "--poll",
    "0.2s",
    "--grace",
    "1s",
];

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

    /// [`Guard::start`] in a session of its own, as a service or a script that has exited
    /// leaves a guard: its process group is orphaned (the kernel discards a SIGTSTP there).
    pub fn start_in_new_session(args: &[&str], name: &str) -> Guard {
        use std::os::unix::process::CommandExt;
        let mut cmd = headroom();
        // SAFETY: between fork and exec only async-signal-safe calls: setsid.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
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

/// The pid of the guard's leader (its direct child), once it runs.
pub fn leader_of(guard: &Guard) -> u32 {
    let me = guard.pid();
    let mut found = None;
    assert!(
        wait_until(WAIT, || {
            found = children_of(me).into_iter().next();
            found.is_some()
        }),
        "the job did not start: {}",
        guard.stderr()
    );
    found.unwrap()
}

/// The live (not zombie) children of `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| ppid(p) == Some(pid) && proc_state(p).is_some_and(|s| s != 'Z'))
        .collect()
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

/// Whatever a failed test leaves: the processes of `tag` are killed (by pid) and the job
/// cgroups of guard `guard` thawed and removed.
pub struct Leftovers {
    pub tag: String,
    pub guard: u32,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for dir in job_cgroups_of(self.guard) {
            let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
            let _ = std::fs::write(dir.join("cgroup.freeze"), "0");
        }
        for _ in 0..20 {
            let left = members(&self.tag, self.guard);
            if left.is_empty() {
                break;
            }
            for pid in left {
                // SAFETY: kill has no memory-safety preconditions; the test's own processes.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut dirs = job_cgroups_of(self.guard);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Every cgroup directory (nested ones included) named after guard `guard`'s jobs.
pub fn job_cgroups_of(guard: u32) -> Vec<PathBuf> {
    let name = format!("headroom-job-{guard}-");
    let mut found = Vec::new();
    let mut queue = vec![PathBuf::from("/sys/fs/cgroup")];
    while let Some(dir) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if path.to_string_lossy().contains(&name) {
                found.push(path.clone());
            }
            queue.push(path);
        }
    }
    found
}

/// The pids of the members the job file of the job led by `leader` names, if it has one.
pub fn job_file_members(leader: u32) -> Vec<u32> {
    let dir = test_home().join("state").join("jobs");
    let prefix = format!("{leader}-");
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .flat_map(|json| {
            json["members"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .filter_map(|id| id["pid"].as_u64())
                        .map(|pid| pid as u32)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect()
}
