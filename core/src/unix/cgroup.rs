//! A job's own cgroup (Linux), as `systemd-run --scope` makes one: created beneath
//! Headroom's own cgroups where Headroom may create cgroups (root, or a delegated subtree),
//! joined by the command between fork and exec (so nothing it forks is ever outside),
//! frozen and thawed atomically (v1 `freezer.state`, v2 `cgroup.freeze`: a `SIGCONT` from
//! outside does not undo it), removed when the job is over.
//!
//! Where the memory controller cannot be handed down (v2's no-internal-processes rule
//! while Headroom's cgroup holds processes; a hybrid host whose v1 memory hierarchy is
//! root's while systemd delegated a unified subtree to the user), the job still gets a v2
//! cgroup without it: membership and the freezer are v2's own, its memory is its members'.
//!
//! `cgroup.kill` (v2) is not used: it would kill a member of another user, which the
//! safety rules never do; the stop signals each member, and the cgroup makes the list exact.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::counters::{JobCgroup, OwnDirs};

/// Why no own cgroup could be made (the job then runs tracked by its processes).
pub type Refused = String;

/// Makes cgroup `name` beneath `own` for one job: with the memory controller where
/// Headroom may, else a v2 cgroup without it (membership and the freezer only: v2's own),
/// else why neither.
pub fn create(own: &OwnDirs, name: &str) -> Result<JobCgroup, Refused> {
    match with_memory(own, name) {
        Ok(job) => Ok(job),
        Err(why) => match &own.bare_v2 {
            Some((dir, path)) => bare_v2(dir, path, name).map_err(|e| format!("{why}; {e}")),
            None => Err(why),
        },
    }
}

fn made(dir: &Path) -> Result<(), Refused> {
    fs::create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// A v2 cgroup `name` in our v2 cgroup `dir` (`path`), without the memory controller.
fn bare_v2(dir: &Path, path: &str, name: &str) -> Result<JobCgroup, Refused> {
    let job_dir = dir.join(name);
    made(&job_dir)?;
    Ok(JobCgroup {
        version: 2,
        path: format!("{}/{name}", path.trim_end_matches('/')),
        memory_dir: job_dir,
        freezer_dir: None,
        memory: false,
    })
}

/// Cgroup `name` beneath `own` with the memory controller (and the v1 freezer).
fn with_memory(own: &OwnDirs, name: &str) -> Result<JobCgroup, Refused> {
    let memory_dir = own.memory_dir.join(name);
    if own.version == 2 {
        // The child gets the memory controller only if our own cgroup hands it down, which
        // the kernel refuses while our cgroup holds processes (unless it is the root).
        let control = own.memory_dir.join("cgroup.subtree_control");
        let has = fs::read_to_string(&control).unwrap_or_default();
        if !has.split_whitespace().any(|c| c == "memory") {
            fs::write(&control, "+memory").map_err(|e| {
                format!(
                    "cannot give a job cgroup the memory controller ({}: {e}; the kernel \
                     refuses while our own cgroup holds a process, Headroom included)",
                    control.display()
                )
            })?;
        }
        made(&memory_dir)?;
    } else {
        made(&memory_dir)?;
    }
    let freezer_dir = match &own.freezer_dir {
        Some(freezer) if own.version == 1 => {
            let dir = freezer.join(name);
            match made(&dir) {
                Ok(()) => Some(dir),
                Err(e) => {
                    let _ = fs::remove_dir(&memory_dir);
                    return Err(e);
                }
            }
        }
        _ => None,
    };
    Ok(JobCgroup {
        version: own.version,
        path: format!("{}/{name}", own.path.trim_end_matches('/')),
        memory_dir,
        freezer_dir,
        memory: true,
    })
}

/// The `cgroup.procs` files a process joins to be in `cgroup` (memory, and the v1 freezer).
fn procs_files(cgroup: &JobCgroup) -> Vec<PathBuf> {
    let mut files = vec![cgroup.memory_dir.join("cgroup.procs")];
    files.extend(cgroup.freezer_dir.as_ref().map(|d| d.join("cgroup.procs")));
    files
}

/// Makes `command` join `cgroup` in the child, between fork and exec: what it forks is in
/// the cgroup from its first instruction. A failed join fails the spawn.
pub fn join_at_spawn(command: &mut Command, cgroup: &JobCgroup) -> io::Result<()> {
    let files: Vec<CString> = procs_files(cgroup)
        .into_iter()
        .map(|p| CString::new(p.as_os_str().as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(io::Error::other)?;
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe calls (getpid, open, write, close) on memory prepared before the
    // fork; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let mut digits = [0u8; 20];
            let text = decimal(libc::getpid().unsigned_abs(), &mut digits);
            for file in &files {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let written = libc::write(fd, text.as_ptr().cast(), text.len());
                libc::close(fd);
                if written < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        })
    };
    Ok(())
}

/// `n` in decimal in `buf`, without allocating.
fn decimal(mut n: u32, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Freezes (`true`) or thaws `cgroup`.
pub fn set_frozen(cgroup: &JobCgroup, frozen: bool) -> io::Result<()> {
    match (cgroup.version, &cgroup.freezer_dir) {
        (2, _) => fs::write(
            cgroup.memory_dir.join("cgroup.freeze"),
            if frozen { "1" } else { "0" },
        ),
        (_, Some(freezer)) => fs::write(
            freezer.join("freezer.state"),
            if frozen { "FROZEN" } else { "THAWED" },
        ),
        _ => Err(io::Error::new(io::ErrorKind::Unsupported, "no freezer")),
    }
}

/// True when `cgroup` can be frozen.
pub fn can_freeze(cgroup: &JobCgroup) -> bool {
    cgroup.version == 2 || cgroup.freezer_dir.is_some()
}

/// Removes `cgroup` once it is empty (the kernel refuses while a process is in it): tries
/// for up to a second, as exited members leave it.
pub fn remove(cgroup: &JobCgroup) {
    let dirs = cgroup
        .freezer_dir
        .iter()
        .chain(std::iter::once(&cgroup.memory_dir));
    for dir in dirs {
        for _ in 0..50 {
            match fs::remove_dir(dir) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decimal;

    #[test]
    fn pids_in_decimal() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(7, &mut buf), b"7");
        assert_eq!(decimal(4_294_967_295, &mut buf), b"4294967295");
    }
}
