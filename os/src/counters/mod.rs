//! The OS boundary for memory numbers: typed counters for the system and for processes.
//!
//! [`CounterSource`] is the one interface; each OS has a backend folder that implements it for
//! its [`Counters`], selected by `cfg`:
//!
//! - `linux/`: `/proc` (`mod.rs` reads files; `parse.rs` holds the pure parsers). Readers
//!   take their root path, so tests run on fixture trees.
//! - `macos/`: sysctl, `host_statistics64`, libproc: the real kernel's calls under the
//!   macOS reader, which is [`xnu::reader`] (compiled everywhere: in tests it runs on a fake
//!   Mac with xnu's rules); [`xnu`] decodes the answers' bytes.
//! - `unsupported.rs`: every read is [`CounterError::Unsupported`], so other targets compile
//!   (`scripts/check-macos` type-checks FreeBSD for it).
//! - [`limits`]: this process's limit on open files, read and raised, and the share of it a
//!   guard holds for speed.
//!
//! Nothing outside this folder asks the OS for memory numbers; signals and job control are in
//! [`crate::unix`]. Units are in the names: `_bytes`, `_percent`. Cumulative counters
//! (`swapped_in_bytes` …) count since boot and are exported as counters only: no rate is
//! derived from them here (on macOS a repeat may be `host_statistics64`'s cache, see
//! [`xnu::HOST_STATISTICS_EVERY`]).

pub use crate::error::CounterError;
use headroom_model::counters::{
    FootprintRow, JobCgroup, JobCgroupState, OwnDirs, ProcessInfo, ProcessMemory, ProcessState,
    RunState, SystemCounters,
};

pub mod limits;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{cgroup_subtree, Counters, Found};

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::Counters;

pub mod xnu;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod unsupported;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub use unsupported::Counters;

/// Result of a counter read.
pub type Result<T> = std::result::Result<T, CounterError>;

/// What every OS backend reads. Callers bring it into scope
/// (`use headroom_os::counters::{CounterSource, Counters};`) and call it on [`Counters`].
///
/// A process that has exited (a zombie included) is [`CounterError::Gone`] unless a method
/// says otherwise; one another user owns may be [`CounterError::PermissionDenied`].
pub trait CounterSource {
    /// System-wide counters at this instant.
    fn read_system(&self) -> Result<SystemCounters>;

    /// System-wide counters for a light check (`crate::sampler`'s, between full ones): what
    /// the stop rules read at every check fresh (swap in use and free memory; under a limit
    /// that binds, the cgroup's usage and swap), the rest (page and swap counts, the OOM
    /// count, pressure, the limit itself) as `last`, a full reading or one carried from it,
    /// had them. Where the OS reads everything at once, a full read.
    fn read_system_light(&self, _last: &SystemCounters) -> Result<SystemCounters> {
        self.read_system()
    }

    /// Every process with identity and command line; processes that vanish or refuse access
    /// mid-scan are skipped.
    fn list_processes(&self) -> Result<Vec<ProcessInfo>>;

    /// One process's identity and command line (empty when the OS hides it).
    fn process_info(&self, pid: u32) -> Result<ProcessInfo>;

    /// One process's identity and owner without the command line: what the safety check
    /// before a signal reads.
    fn identity(&self, pid: u32) -> Result<ProcessInfo>;

    /// A process's start-time token and run state, read together in one cheap read (Linux
    /// `/proc/PID/stat`, macOS `PROC_PIDTBSDINFO` with zombies included): what a job's
    /// members are checked with on every tick. A zombie (exited, not reaped) is
    /// [`RunState::Dead`], not an error; a start time the OS will not give is 0 (unknown).
    fn process_state(&self, pid: u32) -> Result<ProcessState>;

    /// True when the pids this source reads name this system's live processes, so that a
    /// job's members may be watched for their exit by the kernel (Linux: pidfds), and its
    /// light checks ask that in one call instead of a read per member
    /// ([`crate::members::Members::refresh_light`]). False for a fixture's `/proc`, a test's
    /// process table, and where members are looked at by their state anyway (macOS reads it
    /// with one call, no file).
    fn live_processes(&self) -> bool {
        false
    }

    /// A live process's start-time token: the identity check run before every signal. A
    /// zombie is `Gone`.
    fn start_time(&self, pid: u32) -> Result<u64> {
        match self.process_state(pid)? {
            ProcessState {
                run: RunState::Dead,
                ..
            } => Err(CounterError::Gone { pid }),
            state => Ok(state.start_time),
        }
    }

    /// The start-time token of `pid` even if it has exited and is not reaped yet (a child of
    /// ours): the identity of a command that ended before it could be looked at.
    fn start_time_even_exited(&self, pid: u32) -> Result<u64> {
        Ok(self.process_state(pid)?.start_time)
    }

    /// This boot's id: start times count from boot, so an identity saved under another boot
    /// names nothing.
    fn boot_id(&self) -> Result<String>;

    /// One process's memory.
    fn process_memory(&self, pid: u32) -> Result<ProcessMemory>;

    /// Footprint of every process this user may read; the others are skipped.
    fn scan_footprints(&self) -> Result<Vec<FootprintRow>>;

    /// Direct children of a process.
    fn child_pids(&self, pid: u32) -> Result<Vec<u32>>;

    /// Every process of group `pgid`, zombies included, where the OS lists a group at once
    /// (macOS `proc_listpgrppids`; a live group's id is never reused, `kern_fork.c`). Without
    /// a subreaper that is how a command's orphaned workers stay found. Empty where the OS
    /// has no such listing or needs none (Linux: the driver is a subreaper).
    fn group_pids(&self, _pgid: u32) -> Result<Vec<u32>> {
        Ok(Vec::new())
    }

    /// True where [`CounterSource::lineage`] answers: members are then also found by the
    /// unique id of the parent they were forked from (macOS), however re-parented.
    fn tracks_lineage(&self) -> bool {
        false
    }

    /// `(unique id, the unique id of the parent it was forked from)` of `pid` (macOS
    /// `PROC_PIDUNIQIDENTIFIERINFO`: `p_puniqueid` does not change when it is re-parented).
    fn lineage(&self, _pid: u32) -> Result<Option<(u64, u64)>> {
        Ok(None)
    }

    /// True when `pid`'s environment carries `mark` in `JOB_MARK_ENV` (a colon-separated
    /// list: a guard inside a guard adds its own): the mark a guard gives the command it
    /// starts, inherited through fork and exec, where the OS shows another process's
    /// environment (macOS `KERN_PROCARGS2`, the same user's processes only). False where it
    /// does not, or the process cleared its environment.
    fn carries_job_mark(&self, _pid: u32, _mark: &str) -> Result<bool> {
        Ok(false)
    }

    /// Every pid, for the lineage search (cheap: one call on macOS).
    fn all_pids(&self) -> Result<Vec<u32>> {
        Ok(self.scan_footprints()?.into_iter().map(|r| r.pid).collect())
    }

    /// Our own cgroups, beneath which a job's own cgroup is made (Linux); `None` where there
    /// are none, an error saying why they could not be found.
    fn own_cgroup_dirs(&self) -> std::result::Result<Option<OwnDirs>, String> {
        Ok(None)
    }

    /// What a job's own cgroup holds now (Linux); `Unsupported` where there are no cgroups.
    fn job_cgroup(&self, cgroup: &JobCgroup) -> Result<JobCgroupState> {
        Err(CounterError::Unsupported {
            what: format!("cgroup {}", cgroup.path),
        })
    }
}
