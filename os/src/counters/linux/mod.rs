//! Linux counters from `/proc`.
//!
//! Every reader takes its root (`/proc` by default) so tests run on fixture trees. Files are
//! read into one reused buffer and parsed by hand: `/proc/PID/status` alone gives name, parent,
//! uid and memory, so an all-process footprint scan opens one file per process. (The `procfs`
//! crate parses every field into a map; `docs/benchmarks.md` has the comparison.)
//!
//! Sources: `meminfo` (MemTotal, MemAvailable, SwapTotal/SwapFree, Zswap, Unevictable,
//! AnonPages), `pressure/memory` (PSI, optional), `vmstat` (pswpin/pswpout pages,
//! pgpgin/pgpgout KiB), `PID/status` (RssAnon + RssShmem = footprint, VmRSS, VmSwap),
//! `PID/stat` (ppid, pgrp, start time), `PID/cmdline`, `PID/task/TID/children`.

use headroom_model::counters::CgroupMemory;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

mod cgroup;
mod kept;
mod parse;
mod read;
mod system;

use self::cgroup::Location;
pub use self::cgroup::{subtree as cgroup_subtree, Found};
use self::parse::{is_dead, parse_cmdline, parse_pid_list, parse_stat, parse_status, Stat};
use self::read::{at_path, pid_text, with_file, with_kept_file};
#[cfg(test)]
use self::system::under_limit;
use super::{
    CounterSource, FootprintRow, JobCgroup, JobCgroupState, OwnDirs, ProcessInfo, ProcessMemory,
    ProcessState, Result, RunState, SystemCounters,
};
use crate::error::CounterError;

/// The Linux counter reader, rooted at a `/proc` directory.
#[derive(Debug, Clone)]
pub struct Counters {
    proc_root: PathBuf,
    page_size_bytes: u64,
    /// The host root the cgroup files are under (`/`), if cgroups are read.
    cgroup_root: Option<PathBuf>,
    /// Where our memory cgroup is, found at the first read.
    own_cgroup: Arc<OnceLock<std::result::Result<Option<Location>, String>>>,
}

impl Default for Counters {
    fn default() -> Self {
        Self::new()
    }
}

fn system_page_size_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on error, handled below.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

impl Counters {
    /// A reader of the real `/proc` and of our memory cgroup.
    pub fn new() -> Self {
        Self::with_root("/")
    }

    /// A reader of a `/proc`-like tree at `root`, without cgroups (fixtures in tests).
    pub fn with_proc_root(root: impl Into<PathBuf>) -> Self {
        Counters {
            proc_root: root.into(),
            page_size_bytes: system_page_size_bytes(),
            cgroup_root: None,
            own_cgroup: Arc::new(OnceLock::new()),
        }
    }

    /// A reader of a whole host tree at `root`: `root/proc`, and the cgroup mounts its
    /// `mountinfo` names under `root` (a recorded `/sys/fs/cgroup` in tests).
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Counters {
            cgroup_root: Some(root.clone()),
            ..Self::with_proc_root(root.join("proc"))
        }
    }

    /// The memory cgroup of process `pid` (`None`: ours), read now: a limit that binds, none,
    /// or why it could not be read.
    pub fn memory_cgroup(&self, pid: Option<u32>, host_total_bytes: u64) -> Found {
        let Some(root) = &self.cgroup_root else {
            return Found::Unlimited;
        };
        let located = match pid {
            None => self
                .own_cgroup
                .get_or_init(|| cgroup::locate(root, "self"))
                .clone(),
            Some(pid) => cgroup::locate(root, &pid.to_string()),
        };
        match located {
            Ok(Some(location)) => cgroup::read_memory(&location, host_total_bytes),
            Ok(None) => Found::Unlimited,
            Err(note) => Found::Unreadable(note),
        }
    }

    /// Our own cgroup whose limit bound at the last reading (`last`), for a light check.
    fn own_usage(&self, last: &CgroupMemory) -> Found {
        let Some(root) = &self.cgroup_root else {
            return Found::Unlimited;
        };
        match self.own_cgroup.get_or_init(|| cgroup::locate(root, "self")) {
            Ok(Some(location)) => cgroup::read_usage(location, last),
            Ok(None) => Found::Unlimited,
            Err(note) => Found::Unreadable(note.clone()),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.proc_root.join(rel)
    }

    fn pid_path(&self, pid: u32, file: &str) -> PathBuf {
        let mut p = self.proc_root.join(pid.to_string());
        p.push(file);
        p
    }

    /// Pids of every process under the root, in directory order.
    fn pids(&self) -> Result<Vec<u32>> {
        let dir = std::fs::read_dir(&self.proc_root)
            .map_err(|e| CounterError::from_io(e, self.proc_root.display().to_string(), None))?;
        Ok(dir
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .collect())
    }

    /// `/proc/PID/stat`, whatever the process's state; `kept` for a member's, read at every
    /// check (see [`kept`]).
    fn stat(&self, pid: u32, kept: bool) -> Result<Stat> {
        let mut digits = [0; 10];
        at_path(
            &self.proc_root,
            &[pid_text(pid, &mut digits), "stat"],
            |path| {
                let parse = |b: &[u8]| {
                    parse_stat(b).ok_or_else(|| CounterError::Parse {
                        what: path.display().to_string(),
                        detail: "unexpected format".into(),
                    })
                };
                if kept {
                    with_kept_file(path, Some(pid), parse)
                } else {
                    with_file(path, Some(pid), parse)
                }
            },
        )
    }

    /// `/proc/PID/stat` of a process that has not exited (a zombie whose threads are all
    /// gone is `Gone`; one whose main thread ended first lives on in its other threads).
    fn live_stat(&self, pid: u32) -> Result<Stat> {
        let stat = self.stat(pid, false)?;
        if is_dead(stat.state) && stat.threads <= 1 {
            return Err(CounterError::Gone { pid });
        }
        Ok(stat)
    }

    /// The memory of process `pid` whose main thread has ended: a live thread's status
    /// (`/proc/PID/task/TID/status`) holds the process's memory; `Gone` once none is left.
    fn live_thread_memory(&self, pid: u32) -> Result<ProcessMemory> {
        let tasks = self.pid_path(pid, "task");
        let gone = || CounterError::Gone { pid };
        let entries = std::fs::read_dir(&tasks).map_err(|_| gone())?;
        for tid in entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
            let path = tasks.join(tid.to_string()).join("status");
            let Ok(status) = with_file(&path, Some(pid), |b| Ok(parse_status(b))) else {
                continue;
            };
            if !is_dead(status.state) {
                return Ok(status.memory(pid));
            }
        }
        Err(gone())
    }

    /// Fallback for kernels without `children` files: every process whose parent is `pid`.
    fn child_pids_by_scan(&self, pid: u32) -> Result<Vec<u32>> {
        Ok(self
            .scan_footprints()?
            .into_iter()
            .filter(|row| row.ppid == pid)
            .map(|row| row.pid)
            .collect())
    }
}

impl CounterSource for Counters {
    /// True when this reader reads the live system's `/proc` (a fixture's pids name no
    /// process here).
    fn live_processes(&self) -> bool {
        self.proc_root == Path::new("/proc")
    }

    /// `cgroup.procs`, the freezer's state, and the kernel's peak and OOM count of a job's
    /// own cgroup.
    fn job_cgroup(&self, job: &JobCgroup) -> Result<JobCgroupState> {
        cgroup::job_state(job)
    }

    /// Our own cgroup directories (memory, and the v1 freezer), found under the root.
    fn own_cgroup_dirs(&self) -> std::result::Result<Option<OwnDirs>, String> {
        match &self.cgroup_root {
            Some(root) => cgroup::own_dirs(root),
            None => Ok(None),
        }
    }

    /// System-wide counters: `meminfo`, `vmstat`, and PSI where the kernel has it.
    fn read_system(&self) -> Result<SystemCounters> {
        system::full(&self.proc_root, self.page_size_bytes, |total_bytes| {
            self.memory_cgroup(None, total_bytes)
        })
    }

    /// Swap and free memory (`sysinfo(2)` on the live system, else `meminfo`; and our
    /// cgroup's usage where its limit binds); the rest as `last` had it.
    fn read_system_light(&self, last: &SystemCounters) -> Result<SystemCounters> {
        let live = self.live_processes();
        system::light(&self.proc_root, live, last, |bound| self.own_usage(bound))
    }

    /// Every process with identity and command line; processes that vanish or refuse access
    /// mid-scan are skipped.
    fn list_processes(&self) -> Result<Vec<ProcessInfo>> {
        let pids = self.pids()?;
        Ok(pids
            .into_iter()
            .filter_map(|pid| match self.process_info(pid) {
                Ok(info) => Some(info),
                Err(e) => {
                    tracing::trace!(pid, error = %e, "skipped process");
                    None
                }
            })
            .collect())
    }

    /// One process's identity (`stat`, `status`) and command line (`cmdline`).
    fn process_info(&self, pid: u32) -> Result<ProcessInfo> {
        let mut info = self.identity(pid)?;
        info.command = with_file(&self.pid_path(pid, "cmdline"), Some(pid), |b| {
            Ok(parse_cmdline(b))
        })
        .unwrap_or_default();
        Ok(info)
    }

    /// One process's identity and owner (`stat`, `status`), without the command line: what
    /// the safety check before a signal reads. A thread id is refused (`NotAProcess`).
    fn identity(&self, pid: u32) -> Result<ProcessInfo> {
        let stat = self.live_stat(pid)?;
        let status = with_file(&self.pid_path(pid, "status"), Some(pid), |b| {
            Ok(parse_status(b))
        })?;
        // `/proc/TID` exists for every thread too, though `readdir` hides it.
        if let Some(tgid) = status.tgid.filter(|&tgid| tgid != pid) {
            return Err(CounterError::NotAProcess { pid, tgid });
        }
        Ok(ProcessInfo {
            pid,
            ppid: stat.ppid,
            pgid: stat.pgrp,
            uid: status.uid.unwrap_or(u32::MAX),
            start_time: stat.start_ticks,
            name: stat.comm,
            command: String::new(),
        })
    }

    /// Every pid under the root (one directory read; no file of any process opened).
    fn all_pids(&self) -> Result<Vec<u32>> {
        self.pids()
    }

    /// The start time from `/proc/PID/stat`, read afresh (not kept: a search over every
    /// process asks this of processes that are no members).
    fn start_time_even_exited(&self, pid: u32) -> Result<u64> {
        Ok(self.stat(pid, false)?.start_ticks)
    }

    /// `/proc/PID/environ` (as the process started: the kernel shows the environment it
    /// was exec'd with; only our own user's processes, or every one as root) names `mark` in
    /// [`headroom_model::counters::JOB_MARK_ENV`].
    fn carries_job_mark(&self, pid: u32, mark: &str) -> Result<bool> {
        with_file(&self.pid_path(pid, "environ"), Some(pid), |b| {
            let env: Vec<std::borrow::Cow<'_, str>> = b
                .split(|&c| c == 0)
                .filter(|v| v.starts_with(headroom_model::counters::JOB_MARK_ENV.as_bytes()))
                .map(String::from_utf8_lossy)
                .collect();
            Ok(headroom_model::counters::env_names_job_mark(&env, mark))
        })
    }

    /// Start time and state from `/proc/PID/stat` alone: the cheap check run on every
    /// member at every tick, and before every signal. A zombie is [`RunState::Dead`]; a
    /// process in `exit` before that (`PF_EXITING`) is [`RunState::Exiting`].
    fn process_state(&self, pid: u32) -> Result<ProcessState> {
        let stat = self.stat(pid, true)?;
        Ok(ProcessState {
            start_time: stat.start_ticks,
            run: RunState::from_linux_stat(stat.state, stat.flags, stat.threads),
        })
    }

    /// This boot's id (`sys/kernel/random/boot_id`): start times count from boot, so an
    /// identity saved under another boot id names nothing.
    fn boot_id(&self) -> Result<String> {
        let path = self.path("sys/kernel/random/boot_id");
        with_file(&path, None, |b| {
            Ok(String::from_utf8_lossy(b.trim_ascii()).into_owned())
        })
    }

    /// One process's memory from `/proc/PID/status`. A zombie (exited, not yet reaped) is
    /// `Gone`: it holds no memory and can no longer be stopped.
    fn process_memory(&self, pid: u32) -> Result<ProcessMemory> {
        let mut digits = [0; 10];
        let status = at_path(
            &self.proc_root,
            &[pid_text(pid, &mut digits), "status"],
            |path| with_kept_file(path, Some(pid), |b| Ok(parse_status(b))),
        )?;
        if status.exited() {
            return Err(CounterError::Gone { pid });
        }
        if is_dead(status.state) {
            // Its main thread ended first: the memory is the other threads' (the leader's
            // status has none).
            return self.live_thread_memory(pid);
        }
        Ok(status.memory(pid))
    }

    /// Footprint of every process, one `status` read each; vanished processes are skipped.
    fn scan_footprints(&self) -> Result<Vec<FootprintRow>> {
        let pids = self.pids()?;
        let mut rows = Vec::with_capacity(pids.len());
        let mut path = self.proc_root.clone();
        for pid in pids {
            path.push(pid.to_string());
            path.push("status");
            match with_file(&path, Some(pid), |b| Ok(parse_status(b))) {
                Ok(status) if status.exited() => {}
                Ok(status) => rows.push(FootprintRow {
                    pid,
                    ppid: status.ppid,
                    uid: status.uid.unwrap_or(u32::MAX),
                    memory: status.memory(pid),
                    name: status.name,
                }),
                Err(e) => tracing::trace!(pid, error = %e, "skipped process"),
            }
            path.pop();
            path.pop();
        }
        Ok(rows)
    }

    /// Direct children of `pid`, from `/proc/PID/task/*/children` (every thread's children).
    fn child_pids(&self, pid: u32) -> Result<Vec<u32>> {
        let task_dir = self.pid_path(pid, "task");
        let tasks = std::fs::read_dir(&task_dir)
            .map_err(|e| CounterError::from_io(e, task_dir.display().to_string(), Some(pid)))?;
        let mut children = Vec::new();
        for task in tasks.filter_map(|t| t.ok()) {
            let path = task.path().join("children");
            match with_kept_file(&path, Some(pid), |b| Ok(parse_pid_list(b))) {
                Ok(mut list) => children.append(&mut list),
                Err(CounterError::Gone { .. }) => {
                    // Either the thread ended, or the kernel lacks CONFIG_PROC_CHILDREN.
                    if !path.parent().is_some_and(Path::exists) {
                        continue;
                    }
                    return self.child_pids_by_scan(pid);
                }
                Err(e) => return Err(e),
            }
        }
        children.sort_unstable();
        children.dedup();
        Ok(children)
    }
}

#[cfg(test)]
mod tests;
