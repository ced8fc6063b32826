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
//! A job's cgroup is a subtree: a guard run inside the job makes its own job's cgroup inside
//! it. Its members are the processes of the whole subtree (`counters`), freezing it freezes
//! the subtree (the kernel's rule), a stop thaws every cgroup of it ([`thaw_all`]), and
//! [`remove`] removes it children first.
//!
//! `cgroup.kill` (v2) is not used: it would kill a member of another user, which the
//! safety rules never do; the stop signals each member, and the cgroup makes the list exact.
//!
//! A job cgroup is named after the guard that made it ([`job_name`]): whoever takes over a
//! job whose guard is gone acts only on a cgroup its job file names that bears that guard's
//! name ([`named_for`]).

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::counters::cgroup_subtree;
use headroom_model::counters::{JobCgroup, OwnDirs};

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

/// Thaws `cgroup` and every cgroup beneath it (a job frozen there by its own guard, or by a
/// guard that is gone): a frozen process handles no signal, not even SIGKILL (v1).
pub fn thaw_all(cgroup: &JobCgroup) -> io::Result<()> {
    let (top, file, thawed) = match (cgroup.version, &cgroup.freezer_dir) {
        (2, _) => (&cgroup.memory_dir, "cgroup.freeze", "0"),
        (_, Some(freezer)) => (freezer, "freezer.state", "THAWED"),
        _ => return Err(io::Error::new(io::ErrorKind::Unsupported, "no freezer")),
    };
    let mut result = Ok(());
    for (n, dir) in cgroup_subtree(top).iter().enumerate() {
        let wrote = fs::write(dir.join(file), thawed);
        if n == 0 {
            result = wrote;
        }
    }
    result
}

/// Removes `cgroup` and every cgroup beneath it, children first, once they are empty (the
/// kernel refuses while a process is in one): tries for up to `patience`, as exited members
/// leave. True when nothing of it is left.
pub fn remove(cgroup: &JobCgroup, patience: Duration) -> bool {
    let tops = cgroup
        .freezer_dir
        .iter()
        .chain(std::iter::once(&cgroup.memory_dir));
    let mut removed = true;
    for top in tops {
        removed &= remove_tree(top, patience);
    }
    removed
}

/// Removes cgroup `top` and every cgroup beneath it, children first, each tried for up to
/// `patience` ([`remove_dir`]); true when nothing of it is left.
fn remove_tree(top: &Path, patience: Duration) -> bool {
    let mut dirs = cgroup_subtree(top);
    dirs.reverse();
    let mut removed = true;
    for dir in dirs {
        removed &= remove_dir(&dir, patience);
    }
    removed
}

/// Removes the job cgroups beside where `own` makes ours whose guard is gone and that hold
/// no process: a guard killed outright (SIGKILL) cannot remove its job's cgroup, and a job that
/// then ends by itself leaves no Headroom process to. Kept: a cgroup whose guard's pid is
/// there (its guard, another user's hidden by `hidepid`, or a process that took the pid: kept
/// a little longer, never removed early; [`pid_exists`](crate::unix::signals::pid_exists)),
/// one made less than [`ORPHAN_AGE`] ago (a guard in another pid namespace, between making
/// its cgroup and starting its job), and one that holds a process (the kernel refuses; a
/// takeover needs it). How many were removed.
pub fn remove_orphans(own: &OwnDirs) -> usize {
    let parents = [Some(own.memory_dir.as_path()), own.freezer_dir.as_deref()]
        .into_iter()
        .chain(std::iter::once(
            own.bare_v2.as_ref().map(|(dir, _)| dir.as_path()),
        ))
        .flatten();
    let mut removed = 0;
    for parent in parents {
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(guard_pid) = name.to_str().and_then(guard_of) else {
                continue;
            };
            let dir = entry.path();
            let old = fs::metadata(&dir)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|made| made.elapsed().ok())
                .is_some_and(|age| age >= ORPHAN_AGE);
            if !old || crate::unix::signals::pid_exists(guard_pid) {
                continue;
            }
            // A cgroup that holds a process stays (EBUSY).
            if remove_tree(&dir, Duration::ZERO) {
                removed += 1;
            }
        }
    }
    removed
}

/// How old a job cgroup must be before [`remove_orphans`] may take it for its dead guard's.
pub const ORPHAN_AGE: Duration = Duration::from_secs(5);

/// The pid of the guard a job cgroup's name says made it ([`job_name`]).
fn guard_of(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(JOB_PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n))
        .then(|| pid.parse().ok())
        .flatten()
}

/// Removes the empty cgroup `dir`, trying again for up to `patience`; true once it is gone.
fn remove_dir(dir: &Path, patience: Duration) -> bool {
    let tries = patience.as_millis() / RETRY.as_millis();
    for n in 0..=tries {
        match fs::remove_dir(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(_) if n < tries => std::thread::sleep(RETRY),
            Err(_) => {}
        }
    }
    false
}

/// How long the guard that made a job's cgroup waits for its last members to leave it when
/// the job ends.
pub const REMOVE_WAIT: Duration = Duration::from_secs(1);

/// How often [`remove`] tries again.
const RETRY: Duration = Duration::from_millis(20);

/// The name of the `n`th job cgroup the guard with pid `guard_pid` makes.
pub fn job_name(guard_pid: u32, n: u32) -> String {
    format!("{JOB_PREFIX}{guard_pid}-{n}")
}

const JOB_PREFIX: &str = "headroom-job-";

/// True when `cgroup` bears the name of a job cgroup made by the guard with pid `guard_pid`
/// ([`job_name`]), in each of its directories: the only cgroups a job file may make anyone
/// freeze, thaw or remove.
pub fn named_for(cgroup: &JobCgroup, guard_pid: u32) -> bool {
    let prefix = format!("{JOB_PREFIX}{guard_pid}-");
    let ours = |dir: &Path| {
        dir.is_absolute()
            && dir.components().all(|c| {
                matches!(
                    c,
                    std::path::Component::Normal(_) | std::path::Component::RootDir
                )
            })
            && dir
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(&prefix))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    ours(&cgroup.memory_dir) && cgroup.freezer_dir.as_deref().is_none_or(ours)
}

#[cfg(test)]
mod tests {
    use super::{decimal, guard_of, job_name, named_for};
    use headroom_model::counters::JobCgroup;

    #[test]
    fn a_job_cgroup_names_its_guard() {
        assert_eq!(guard_of(&job_name(41, 3)), Some(41));
        for other in [
            "headroom-job-41",
            "headroom-job--3",
            "headroom-job-4x-0",
            "job-41-0",
            "headroom-job-41-0/x",
            "headroom-job-99999999999-0",
        ] {
            assert_eq!(guard_of(other), None, "{other}");
        }
    }

    #[test]
    fn only_a_cgroup_named_after_its_guard_is_the_jobs() {
        let job = |memory: &str, freezer: Option<&str>| JobCgroup {
            version: 1,
            memory_dir: memory.into(),
            freezer_dir: freezer.map(Into::into),
            path: "/x".into(),
            memory: true,
        };
        let name = job_name(41, 0);
        assert_eq!(name, "headroom-job-41-0");
        let memory = format!("/sys/fs/cgroup/memory/lab/{name}");
        let freezer = format!("/sys/fs/cgroup/freezer/{name}");
        assert!(named_for(&job(&memory, Some(&freezer)), 41));
        assert!(named_for(&job(&memory, None), 41));
        assert!(
            !named_for(&job(&memory, Some(&freezer)), 4),
            "another guard's"
        );
        assert!(!named_for(
            &job(&memory, Some("/sys/fs/cgroup/freezer/system.slice")),
            41
        ));
        assert!(!named_for(
            &job("/sys/fs/cgroup/memory/system.slice", None),
            41
        ));
        assert!(!named_for(
            &job("/sys/fs/cgroup/headroom-job-41-0/..", None),
            41
        ));
        assert!(!named_for(&job("headroom-job-41-0", None), 41), "relative");
        assert!(!named_for(
            &job("/sys/fs/cgroup/headroom-job-41-x", None),
            41
        ));
    }

    #[test]
    fn pids_in_decimal() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(7, &mut buf), b"7");
        assert_eq!(decimal(4_294_967_295, &mut buf), b"4294967295");
    }
}
