//! The job engine: one decider for every watched or guarded job, for `headroom guard`,
//! `headroom watch`, `trace replay` and the menu-bar app alike.
//!
//! A job is a set of processes judged on one clock (the sampler's). The engine owns the
//! whole run: it observes each sample, produces the events and their wording, decides
//! stops and pauses (pure policy), spaces the checks of guarded jobs (faster near the
//! budget), and writes the verdict. It makes no OS call and reads no clock: samples and
//! requests bring the time ([`Moment`]), and callers carry out its [`Action`]s through
//! [`Effects`] with [`carry_out`], which reports back what each signal did.
//!
//! **Enforcement is verified, not assumed.** A stop is done when a complete, fresh look at
//! the job (the next sample's members) finds no member alive: until then every check
//! signals what is left (a member born during the stop gets SIGTERM, the grace's end brings
//! SIGKILL), and a stop that cannot hold (a member the safety rules refuse, one that
//! survives SIGKILL) ends the job as not stopped, said at once and in the verdict. A pause
//! is done when every member is seen stopped: a member not yet paused is paused, one
//! continued from outside makes the job run again (its budget applies).
//!
//! Files: this one holds the types callers see (modes, statuses, actions, specs, views);
//! `jobs.rs` the [`Engine`] (every job, and the requests on them); `job.rs` one job's life;
//! `phase.rs` the pause and the stop under way and their verification; `execute.rs` the
//! effects a job may have and the one [`carry_out`]; `records.rs` what persistence saves.
//! The wording of events is not here: `headroom_core::words`, which the CLI and the app
//! both read.

mod aim;
mod execute;
mod interrupt;
mod job;
mod jobs;
mod phase;
mod records;

pub use execute::{carry_out, Effects};
pub use jobs::{Engine, RequestError};
pub use phase::PAUSE_SETTLE;
pub use records::{FinishedJob, FinishedRun, RunStart, SavedJob};

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::policy::order::Peer;
use crate::policy::{JobEvent, Limits, OnBudget, Verdict};
use crate::stages::StageFigures;
use headroom_model::counters::SystemCounters;
use headroom_model::effects::JobSignal;
use headroom_model::process::ProcessIdentity;

/// How long a job that ended stays listed (the app's Jobs, the terminal guards' job files);
/// its verdict stays in the history database's "Recent verdicts".
pub const FINISHED_KEEP: Duration = Duration::from_secs(3600);

/// How often a job being stopped is checked: is every member gone yet?
pub const STOP_CHECK: Duration = Duration::from_millis(50);

/// A point in time as the engine sees it: the wall clock (dates, durations, pauses) and the
/// sampler's monotonic clock (the job's time axis, the stop's grace), both read by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    /// Wall-clock time.
    pub at: SystemTime,
    /// Time on the sampler's clock ([`crate::sample::Sample::since_start`]).
    pub clock: Duration,
}

/// Watch (notify and judge) or guard (also stop).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobMode {
    /// Notifications and a verdict.
    #[default]
    Watch,
    /// As watch, and stopped past its budget.
    Guard,
}

/// Where a job is in its life (also in the job files of `headroom guard`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Being watched.
    #[default]
    Running,
    /// Paused by its guard (SIGSTOP) until resumed.
    Paused,
    /// A stop is under way.
    Stopping,
    /// Stopped by its guard (or a stop that could not hold: see the verdict).
    Stopped,
    /// Ended on its own.
    Finished,
}

/// Something the caller must do (see [`carry_out`]). (An event is the larger variant; an
/// action lives for one `carry_out` only.)
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Action {
    /// Show an event of a job (a notification, a line on stderr, a trace event).
    Notify {
        /// The job.
        job_id: u64,
        /// Its command line.
        command: String,
        /// What happened.
        event: JobEvent,
    },
    /// Send `signal` to these members of a job, then report with
    /// [`Engine::signalled`].
    Signal {
        /// The job.
        job_id: u64,
        /// What to send.
        signal: JobSignal,
        /// To whom, parents first (the members the engine last saw alive).
        members: Vec<ProcessIdentity>,
    },
    /// Ask another guard's job to pause in this job's place (the youngest pauses first:
    /// [`crate::policy::order`]), then report with [`Engine::room_made`]. Jobs of the same
    /// engine are paused by the engine itself and never come out as this action.
    MakeRoom {
        /// The job whose budget was crossed.
        job_id: u64,
        /// The younger job to ask.
        peer: Peer,
    },
}

/// The memory a job starts from, as its driver read it before the job ran (or a saved job
/// recorded it): what its swap growth and its need are measured from. The one way a job's
/// start is given to the engine ([`Engine::add`]; [`Engine::restore`] builds one from the
/// saved figures).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StartMemory {
    /// Swap in use.
    pub swap_used_bytes: u64,
    /// System free memory, percent, where it was read.
    pub free_percent: Option<f64>,
    /// Memory in use (macOS's page counts), where it was read.
    pub in_use_bytes: Option<u64>,
}

impl StartMemory {
    /// What one reading of the system says.
    pub fn of(system: &SystemCounters) -> Self {
        StartMemory {
            swap_used_bytes: system.swap_used_bytes,
            free_percent: Some(system.free_percent),
            in_use_bytes: system.in_use_bytes,
        }
    }

    /// Swap in use alone (a trace that recorded nothing else of its start).
    pub fn swap(swap_used_bytes: u64) -> Self {
        StartMemory {
            swap_used_bytes,
            free_percent: None,
            in_use_bytes: None,
        }
    }
}

/// What a new job is.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The command line shown for it.
    pub command: String,
    /// Watch or guard.
    pub mode: JobMode,
    /// Its budget and thresholds.
    pub limits: Limits,
    /// The check interval the user set (`--poll`, the app's sample interval); guarded jobs
    /// are checked faster near their budget.
    pub poll: Duration,
    /// The shortest check the source of samples can give: [`crate::policy::MIN_CHECK_INTERVAL`]
    /// live; a recorded trace's own interval in a replay (a look-ahead shorter than the next
    /// sample would project too little).
    pub min_check: Duration,
    /// Time between SIGTERM and SIGKILL when it is stopped (`--grace`).
    pub grace: Duration,
    /// Headroom started it (`headroom guard -- cmd`): an interrupted driver stops it. A
    /// picked process (watch, the app) is left running, continued if it was paused.
    pub owned: bool,
    /// The key its run is recorded under when the user named one (`--key`, the app's Guard
    /// form); `None`: its command line's ([`crate::fit::key_of_command_line`]).
    pub key: Option<String>,
}

impl JobSpec {
    /// The key its run is recorded under: the one named, else its command line's.
    pub fn history_key(&self) -> String {
        self.key
            .clone()
            .unwrap_or_else(|| crate::fit::key_of_command_line(&self.command))
    }

    /// A job of `command` (a picked process: not owned), checked every `poll`, with the
    /// default grace and the live sampler's fastest check.
    pub fn new(command: String, mode: JobMode, limits: Limits, poll: Duration) -> Self {
        JobSpec {
            command,
            mode,
            limits,
            poll,
            min_check: crate::policy::MIN_CHECK_INTERVAL,
            grace: crate::defaults::GRACE,
            owned: false,
            key: None,
        }
    }
}

/// A job as the UI shows it (and as the job files and sinks receive it).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobView {
    /// Job id.
    pub id: u64,
    /// Process id of the process the job is named by.
    pub pid: u32,
    /// Its start-time token.
    pub start_time: u64,
    /// Command line.
    pub command: String,
    /// Watch or guard.
    pub mode: JobMode,
    /// Running, paused, stopping, stopped, finished.
    pub state: JobStatus,
    /// Swap in use when it started.
    pub swap_start_bytes: u64,
    /// Free memory when it started, percent, where known: what its run is measured from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_start_percent: Option<f64>,
    /// Memory in use (page counts) when it started, where the OS counts it (macOS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_use_start_bytes: Option<u64>,
    /// Swap growth since the job was picked.
    pub swap_growth_bytes: u64,
    /// The budget (guards only).
    pub swap_budget_bytes: Option<u64>,
    /// Peak footprint seen.
    pub peak_footprint_bytes: Option<u64>,
    /// Its footprint at the last reading (what other guards weigh their share of memory in
    /// use against, [`crate::policy::share`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint_bytes: Option<u64>,
    /// What it has taken so far as its need counts it (`crate::fit`): its share of the rise
    /// of memory in use where the kernel counts pages in use (macOS, at least its footprint,
    /// [`crate::policy::share`]), else its peak footprint. What the
    /// queue's reservation for it is used up by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_bytes: Option<u64>,
    /// The verdict, once it ended.
    pub verdict: Option<Verdict>,
    /// When it was picked, ms since the epoch.
    pub started_at_ms: i64,
    /// Its stages so far, as its processes marked them (one per name).
    pub stages: Vec<StageFigures>,
    /// The stage it is in now, if it marked one.
    pub current_stage: Option<String>,
    /// What passing the budget does (guards).
    pub on_budget: OnBudget,
    /// Pauses so far.
    pub pauses: u32,
    /// Since when it is paused, ms since the epoch (while paused).
    pub paused_since_ms: Option<i64>,
    /// When it was last resumed, ms since the epoch.
    pub resumed_at_ms: Option<i64>,
    /// It resumes by itself once memory is back (`--resume-free`).
    pub resumes_by_itself: bool,
    /// An older guarded job may pause it to make room now: a running guard that pauses at
    /// its budget and has pauses left ([`crate::policy::order`]).
    pub yields: bool,
    /// Its live members at the last check.
    pub members: Vec<ProcessIdentity>,
    /// Members the safety rules kept a signal from, and why.
    pub refused: Vec<(u32, String)>,
    /// Its own cgroup, where it has one (Linux): what its job file names, so that the job
    /// can be paused, resumed and stopped should its guard die.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<headroom_model::counters::JobCgroup>,
}

impl JobStatus {
    /// True once the job has ended (stopped by its guard, or on its own).
    pub fn ended(self) -> bool {
        matches!(self, JobStatus::Stopped | JobStatus::Finished)
    }

    /// `running`, `paused`, `stopping`, `stopped` or `finished`, as the page and the metrics
    /// spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Paused => "paused",
            JobStatus::Stopping => "stopping",
            JobStatus::Stopped => "stopped",
            JobStatus::Finished => "finished",
        }
    }
}

impl JobMode {
    /// `watch` or `guard`, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            JobMode::Watch => "watch",
            JobMode::Guard => "guard",
        }
    }

    /// The mode named by [`JobMode::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "watch" => Some(JobMode::Watch),
            "guard" => Some(JobMode::Guard),
            _ => None,
        }
    }
}

#[cfg(test)]
mod aim_tests;
#[cfg(test)]
mod cgroup_tests;
#[cfg(test)]
mod interrupt_tests;
#[cfg(test)]
mod order_tests;
#[cfg(test)]
mod quiet_tests;
#[cfg(test)]
mod tests;
