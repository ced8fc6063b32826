//! The memory numbers as plain data: what the system and each process hold at one instant
//! ([`SystemCounters`], [`ProcessMemory`]), what a process is doing ([`RunState`]), a job's
//! cgroup ([`JobCgroup`]) and the pressure level. `headroom-os` reads them from the OS
//! (its `counters::CounterSource`); every layer above reads them as values.

use serde::{Deserialize, Serialize};

/// The environment variable a guard marks the command it starts with (see
/// `headroom_os::counters::CounterSource::carries_job_mark`).
pub const JOB_MARK_ENV: &str = "HEADROOM_JOB";

/// True when the value of [`JOB_MARK_ENV`] in `env` (`NAME=value` strings) names `mark`.
pub fn env_names_job_mark<S: AsRef<str>>(env: &[S], mark: &str) -> bool {
    let prefix = format!("{JOB_MARK_ENV}=");
    env.iter()
        .filter_map(|entry| entry.as_ref().strip_prefix(&prefix))
        .any(|value| value.split(':').any(|m| m == mark))
}

/// System-wide memory pressure, as the OS reports it.
///
/// macOS: `kern.memorystatus_vm_pressure_level` 1/2/4. Linux: derived from PSI
/// (`/proc/pressure/memory`) `avg10`: `full` ≥ [`PSI_CRITICAL_FULL_AVG10`] is critical,
/// else `some` ≥ [`PSI_WARN_SOME_AVG10`] is warn, else normal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PressureLevel {
    /// No pressure.
    Normal,
    /// The OS is reclaiming memory; jobs are slowed.
    Warn,
    /// The OS is close to running out.
    Critical,
}

/// PSI `full avg10` (percent of the last 10 s in which all tasks were stalled on memory) at or
/// above which Linux pressure counts as critical.
pub const PSI_CRITICAL_FULL_AVG10: f64 = 10.0;
/// PSI `some avg10` (percent of the last 10 s in which some task was stalled on memory) at or
/// above which Linux pressure counts as warn.
pub const PSI_WARN_SOME_AVG10: f64 = 10.0;

impl PressureLevel {
    /// Maps PSI `some`/`full` `avg10` percentages to a level (thresholds documented above).
    pub fn from_psi(some_avg10: f64, full_avg10: f64) -> Self {
        if full_avg10 >= PSI_CRITICAL_FULL_AVG10 {
            PressureLevel::Critical
        } else if some_avg10 >= PSI_WARN_SOME_AVG10 {
            PressureLevel::Warn
        } else {
            PressureLevel::Normal
        }
    }

    /// Maps macOS `kern.memorystatus_vm_pressure_level` (1 normal, 2 warn, 4 critical).
    pub fn from_macos_level(level: u32) -> Option<Self> {
        match level {
            1 => Some(PressureLevel::Normal),
            2 => Some(PressureLevel::Warn),
            4 => Some(PressureLevel::Critical),
            _ => None,
        }
    }

    /// A word for people.
    pub fn as_str(self) -> &'static str {
        match self {
            PressureLevel::Normal => "normal",
            PressureLevel::Warn => "warn",
            PressureLevel::Critical => "critical",
        }
    }
}

/// System-wide memory counters at one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemCounters {
    /// Physical memory (macOS `hw.memsize`, Linux `MemTotal`).
    pub total_bytes: u64,
    /// Free memory in percent: Linux `MemAvailable / MemTotal`; macOS
    /// `kern.memorystatus_level`, Apple's "free percentage" of [`Self::usable_bytes`]: active,
    /// inactive, free and speculative pages, so it does not fall while a job fills RAM with
    /// pages it touches (they move from free to active). Good for a glance and a floor; what
    /// a job needs and the room for one come from [`Self::in_use_bytes`] where it is known.
    pub free_percent: f64,
    /// The memory the kernel hands out, where it is less than `total_bytes` (macOS
    /// `hw.memsize_usable`, the level's denominator): what a percentage of the level is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable_bytes: Option<u64>,
    /// Memory in use as Activity Monitor counts it, from the kernel's page counts (macOS: app
    /// memory (internal - purgeable) + wired + the compressor's pages); `None` where the OS
    /// keeps no such count (Linux, whose free memory counts what a job touches already).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_use_bytes: Option<u64>,
    /// Pressure level; `None` where the OS does not report it (Linux without PSI).
    pub pressure: Option<PressureLevel>,
    /// Swap in use (macOS `vm.swapusage` used; Linux `SwapTotal - SwapFree`).
    pub swap_used_bytes: u64,
    /// Swap configured or currently allocated (macOS grows swap files on demand).
    pub swap_total_bytes: u64,
    /// Memory held by the compressor (macOS) or the zswap pool (Linux `Zswap`), if any.
    pub compressed_bytes: Option<u64>,
    /// Wired memory (macOS `wire_count`; Linux `Unevictable`).
    pub wired_bytes: Option<u64>,
    /// App memory (macOS `internal - purgeable`; Linux `AnonPages`).
    pub app_bytes: Option<u64>,
    /// The part of free memory that is reclaimable cache (Linux: `MemAvailable − MemFree`
    /// at the last full read): what a light check adds to the free RAM `sysinfo(2)` gives.
    #[serde(default)]
    pub reclaimable_bytes: Option<u64>,
    /// Bytes swapped in since boot (macOS `swapins`; Linux `pswpin`), × page size.
    pub swapped_in_bytes: u64,
    /// Bytes swapped out since boot (macOS `swapouts`; Linux `pswpout`), × page size.
    pub swapped_out_bytes: u64,
    /// Bytes paged in since boot (macOS `pageins` × page size; Linux `pgpgin`).
    pub paged_in_bytes: u64,
    /// Bytes paged out since boot (macOS `pageouts` × page size; Linux `pgpgout`).
    pub paged_out_bytes: u64,
    /// Processes the kernel's OOM killer has killed since boot, host-wide, cgroup OOMs
    /// included (Linux `/proc/vmstat` `oom_kill`, kernel 4.13+; macOS: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    /// The memory cgroup Headroom runs in, when its limit binds (Linux). Then
    /// `total_bytes`, `free_percent` and (where the cgroup accounts swap) the swap fields
    /// are the cgroup's, and the host's are kept in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<Box<CgroupMemory>>,
    /// Why the cgroup could not be read, when it could not (the numbers are then the host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_note: Option<String>,
}

impl SystemCounters {
    /// What a percentage of [`Self::free_percent`] is of: the usable memory where it is
    /// known (macOS), else the total.
    pub fn level_base_bytes(&self) -> u64 {
        self.usable_bytes.unwrap_or(self.total_bytes)
    }

    /// `percent` of [`Self::level_base_bytes`], bytes: a free floor, a level turned into bytes.
    pub fn percent_bytes(&self, percent: f64) -> u64 {
        crate::units::percent_of_bytes(percent, self.level_base_bytes())
    }

    /// The memory a new job has room in now, bytes: what is not in use where the kernel's
    /// page counts say what is (macOS: free memory and cached files), else the free
    /// percentage of the memory (Linux `MemAvailable`; a cgroup's room under its limit).
    pub fn room_bytes(&self) -> u64 {
        match self.in_use_bytes {
            Some(used) => self.level_base_bytes().saturating_sub(used),
            None => self.percent_bytes(self.free_percent),
        }
    }
}

/// A cgroup Headroom made for one job (Linux: `headroom guard` where it may create cgroups):
/// nothing the job forks can leave it. Made and frozen by `headroom_os::unix::cgroup`, read by
/// `headroom_os::counters::CounterSource::job_cgroup`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCgroup {
    /// cgroup version, 1 or 2.
    pub version: u8,
    /// Its memory cgroup's directory (v2: its one directory).
    pub memory_dir: std::path::PathBuf,
    /// Its v1 freezer cgroup's directory (v2 freezes in `memory_dir`); `None` without one.
    pub freezer_dir: Option<std::path::PathBuf>,
    /// Its path as `/proc/PID/cgroup` names it (the memory hierarchy's).
    pub path: String,
    /// True when it has the memory controller: its memory, swap, peak and OOM count are the
    /// kernel's. A v2 cgroup made without it (the controller could not be handed down)
    /// still makes membership exact and freezes; its memory is its members'.
    pub memory: bool,
}

/// Our own cgroups, where a job's own cgroup is made beneath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnDirs {
    /// 1 or 2.
    pub version: u8,
    /// Our memory cgroup's directory (v2: our cgroup).
    pub memory_dir: std::path::PathBuf,
    /// Its path as `/proc/self/cgroup` names it.
    pub path: String,
    /// Our v1 freezer cgroup's directory, if the freezer is mounted (v2 has one built in).
    pub freezer_dir: Option<std::path::PathBuf>,
    /// A v2 cgroup of ours where a job's cgroup can be made without the memory controller
    /// (membership and the freezer are v2's own): our v2 cgroup, or on a hybrid host our
    /// cgroup in its unified hierarchy (where systemd delegates to a user). Its directory
    /// and its path as `/proc/self/cgroup` names it.
    pub bare_v2: Option<(std::path::PathBuf, String)>,
}

/// What a job's own cgroup holds now.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobCgroupState {
    /// Every process in it (`cgroup.procs`): the job's members, exactly.
    pub pids: Vec<u32>,
    /// True when it is frozen (v1 `freezer.state` FROZEN; v2 `cgroup.events` `frozen 1`).
    pub frozen: bool,
    /// The kernel's high-water mark of its memory (`memory.peak`, `max_usage_in_bytes`).
    pub peak_bytes: Option<u64>,
    /// OOM kills in it (v2 `memory.events` `oom_kill`, v1 `memory.oom_control` `oom_kill`).
    pub oom_kills: Option<u64>,
    /// Its working set now: usage less the inactive file cache (`memory.current` or
    /// `memory.usage_in_bytes`, less `inactive_file`), as the kubelet counts it.
    pub working_set_bytes: Option<u64>,
    /// Its swap now, where the kernel accounts it (v2 `memory.swap.current`; v1
    /// `memory.memsw.usage_in_bytes` less usage).
    pub swap_bytes: Option<u64>,
}

/// A memory cgroup whose limit binds: a container's, a CI job's, a pod's, a Slurm job's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupMemory {
    /// cgroup version, 1 or 2.
    pub version: u8,
    /// The cgroup Headroom is in, as `/proc/self/cgroup` names it.
    pub path: String,
    /// The cgroup on its path to the root whose limit is the smallest (itself or an ancestor).
    pub limit_path: String,
    /// The file that sets that limit (`memory.max`, `memory.high`, `memory.limit_in_bytes`).
    pub limit_file: String,
    /// The effective limit, bytes.
    pub limit_bytes: u64,
    /// The working set under the limit: usage less the inactive file cache (as the kubelet
    /// counts it), bytes.
    pub used_bytes: u64,
    /// The inactive file cache left out of `used_bytes` (the kernel reclaims it first).
    pub reclaimable_bytes: u64,
    /// Swap the cgroup holds, where the kernel accounts it (v2 `memory.swap.current`, v1
    /// `memsw` less memory).
    pub swap_used_bytes: Option<u64>,
    /// The cgroup's swap limit, where set.
    pub swap_limit_bytes: Option<u64>,
    /// OOM kills in the cgroup (v2 `memory.events`, v1 `memory.oom_control`).
    pub oom_kills: Option<u64>,
    /// The kernel's high-water mark of its usage (`memory.peak`, `max_usage_in_bytes`).
    pub peak_bytes: Option<u64>,
    /// The host's memory.
    pub host_total_bytes: u64,
    /// The host's free memory, percent.
    pub host_free_percent: f64,
    /// The host's swap in use.
    pub host_swap_used_bytes: u64,
    /// Memory pressure of Headroom's own cgroup (v2 `memory.pressure`: stalls of its tasks,
    /// reclaim at the limit included), where the kernel keeps it; v1 has none.
    #[serde(default)]
    pub pressure: Option<PressureLevel>,
    /// The host's memory pressure (`/proc/pressure/memory`).
    #[serde(default)]
    pub host_pressure: Option<PressureLevel>,
}

impl CgroupMemory {
    /// Room left under the limit, percent of it.
    pub fn free_percent(&self) -> f64 {
        if self.limit_bytes == 0 {
            return 0.0;
        }
        let room = self.limit_bytes.saturating_sub(self.used_bytes);
        (room as f64 * 100.0 / self.limit_bytes as f64).clamp(0.0, 100.0)
    }
}

/// What a process is doing, as far as enforcement cares: a stop or pause is verified by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Running, runnable or asleep: it can go on allocating, and a stop signal stops it at
    /// once (the kernel wakes an interruptible sleeper for it).
    Running,
    /// Running, but waiting in the kernel where no signal interrupts it (Linux `D`: disk or
    /// swap I/O, a page fault under pressure): a stop signal takes effect only once it leaves
    /// the wait, and it can go on allocating then.
    Waiting,
    /// Stopped by a signal (SIGSTOP, SIGTSTP, …) or by a tracer.
    Stopped,
    /// In `exit`: the kernel has committed it to exit (SIGKILL, `exit`); it runs none of
    /// its code again and is freeing its memory, shown running meanwhile (a paused job killed
    /// from outside is not one that runs again). Still a member until it is a zombie: its
    /// exit status comes only then.
    Exiting,
    /// Exited and not reaped yet (a zombie): it holds no memory and cannot be signalled.
    Dead,
}

/// `PROC_FLAG_INEXIT` (xnu `sys/proc_info.h`).
const MACOS_PROC_FLAG_INEXIT: u32 = 4;
/// `PF_EXITING` (Linux `include/linux/sched.h`).
const LINUX_PF_EXITING: u64 = 0x4;

impl RunState {
    /// A Linux `/proc/PID/stat` state letter: `T`/`t` stopped, `Z`/`X` dead, `D` waiting,
    /// else running.
    pub fn from_linux(letter: u8) -> Self {
        match letter {
            b'T' | b't' => RunState::Stopped,
            b'Z' | b'X' => RunState::Dead,
            b'D' => RunState::Waiting,
            _ => RunState::Running,
        }
    }

    /// A macOS `pbi_status`/`pbsi_status` (`sys/proc.h`: `SSTOP` 4, `SZOMB` 5) with its
    /// `pbi_flags`/`pbsi_flags`: `PROC_FLAG_INEXIT` (4, `sys/proc_info.h`) is exiting
    /// before it is a zombie, whatever the status (xnu sets it once the process is in `exit`).
    pub fn from_macos(status: u32, flags: u32) -> Self {
        match status {
            5 => RunState::Dead,
            _ if flags & MACOS_PROC_FLAG_INEXIT != 0 => RunState::Exiting,
            4 => RunState::Stopped,
            _ => RunState::Running,
        }
    }

    /// A Linux `/proc/PID/stat` state letter with its `flags` (field 9) and `num_threads`
    /// (field 20): `PF_EXITING` (0x4, `linux/sched.h`) is exiting until it is a zombie,
    /// whatever the letter (a killed process freeing its memory shows `R` or `D`). A zombie
    /// with other threads is not dead either: its main thread has exited and the others are
    /// still running or exiting (a multi-threaded program in `exit_group`, whose exit status
    /// comes only once every thread is gone): exiting.
    pub fn from_linux_stat(letter: u8, flags: u64, threads: u32) -> Self {
        match RunState::from_linux(letter) {
            RunState::Dead if threads > 1 => RunState::Exiting,
            RunState::Dead => RunState::Dead,
            _ if flags & LINUX_PF_EXITING != 0 => RunState::Exiting,
            run => run,
        }
    }
}

/// A process's start-time token and run state, read together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessState {
    /// See [`ProcessInfo::start_time`]; 0 when the OS would not say (another user's process
    /// on macOS without root): such a process can never be signalled.
    pub start_time: u64,
    /// What it is doing.
    pub run: RunState,
}

/// Identity and metadata of one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Parent process id (0 when it has none).
    pub ppid: u32,
    /// Process group id.
    pub pgid: u32,
    /// Real user id.
    pub uid: u32,
    /// Start time as an opaque, exact token (Linux: clock ticks since boot from
    /// `/proc/PID/stat`; macOS: microseconds since the epoch). Together with the pid it
    /// identifies the process: a recycled pid has another start time.
    pub start_time: u64,
    /// Short name (`comm`).
    pub name: String,
    /// Command line, arguments joined by spaces; empty for kernel threads or when hidden.
    pub command: String,
}

impl ProcessInfo {
    /// What to show for the process: its command line, or its name when the command line
    /// is empty (kernel threads, hidden ones).
    pub fn display_command(&self) -> &str {
        if self.command.is_empty() {
            &self.name
        } else {
            &self.command
        }
    }
}

/// Memory of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessMemory {
    /// Process id.
    pub pid: u32,
    /// Footprint: what Activity Monitor shows (macOS `ri_phys_footprint`; Linux
    /// `RssAnon + RssShmem`). Drops when pages are compressed or swapped.
    pub footprint_bytes: u64,
    /// Resident set size (macOS `ri_resident_size`; Linux `VmRSS`).
    pub resident_bytes: u64,
    /// Swapped-out memory of this process where the OS has it (Linux `VmSwap`; macOS: none).
    pub swap_bytes: Option<u64>,
    /// Lifetime peak footprint where the OS has it (macOS `ri_lifetime_max_phys_footprint`;
    /// Linux: none; `VmHWM` is a peak of RSS, not of footprint).
    pub peak_footprint_bytes: Option<u64>,
}

/// One row of a fast all-process footprint scan: enough to sort, show and build trees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FootprintRow {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Real user id.
    pub uid: u32,
    /// Short name (`comm`).
    pub name: String,
    /// Memory numbers.
    pub memory: ProcessMemory,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psi_thresholds() {
        assert_eq!(PressureLevel::from_psi(0.0, 0.0), PressureLevel::Normal);
        assert_eq!(PressureLevel::from_psi(9.99, 0.0), PressureLevel::Normal);
        assert_eq!(PressureLevel::from_psi(10.0, 0.0), PressureLevel::Warn);
        assert_eq!(PressureLevel::from_psi(50.0, 9.9), PressureLevel::Warn);
        assert_eq!(PressureLevel::from_psi(50.0, 10.0), PressureLevel::Critical);
    }

    #[test]
    fn run_states_of_both_kernels() {
        // (macOS status, pbi_flags, what it is): PROC_FLAG_INEXIT wins over any status.
        let table = [
            (2, 0, RunState::Running),
            (3, 0x10, RunState::Running),
            (4, 0x10, RunState::Stopped),
            (5, 0, RunState::Dead),
            (2, 0x14, RunState::Exiting),
            (4, 0x4, RunState::Exiting),
            (5, 0x4, RunState::Dead),
        ];
        for (status, flags, expected) in table {
            assert_eq!(
                RunState::from_macos(status, flags),
                expected,
                "{status} {flags:#x}"
            );
        }
        assert_eq!(RunState::from_linux_stat(b'R', 0x4, 1), RunState::Exiting);
        assert_eq!(RunState::from_linux_stat(b'Z', 0x4, 1), RunState::Dead);
        assert_eq!(RunState::from_linux_stat(b'Z', 0x4, 3), RunState::Exiting);
        assert_eq!(
            RunState::from_linux_stat(b'T', 0x400000, 2),
            RunState::Stopped
        );
        assert_eq!(RunState::from_linux_stat(b'S', 0, 1), RunState::Running);
        assert_eq!(RunState::from_linux_stat(b'D', 0, 1), RunState::Waiting);
        assert_eq!(RunState::from_linux_stat(b'D', 0x4, 1), RunState::Exiting);
    }

    #[test]
    fn macos_levels() {
        assert_eq!(
            PressureLevel::from_macos_level(1),
            Some(PressureLevel::Normal)
        );
        assert_eq!(
            PressureLevel::from_macos_level(2),
            Some(PressureLevel::Warn)
        );
        assert_eq!(
            PressureLevel::from_macos_level(4),
            Some(PressureLevel::Critical)
        );
        assert_eq!(PressureLevel::from_macos_level(3), None);
    }
}
