//! The job engine: one driver of every watched or guarded job, for `headroom guard`,
//! `headroom watch` and the menu-bar app alike.
//!
//! A job is a set of processes ([`MemberSet`]) judged on one clock (the sampler's). The
//! engine owns the whole run: it observes each sample, produces the events and their wording,
//! decides stops and pauses (pure policy), spaces the checks of guarded jobs (faster near the
//! budget), and writes the verdict. It makes no OS calls itself: callers carry out its
//! [`Action`]s (show an event, stop members with [`crate::enforce::stop_members`], then report
//! back with [`Engine::stop_done`]; pause or resume them with
//! [`crate::enforce::pause_members`] and [`crate::enforce::resume_members`]). [`drive`] runs
//! one job to its end for the CLI; the app feeds the same engine from its ticker.
//!
//! Files: this one holds the types callers see (modes, statuses, actions, specs, views);
//! `jobs.rs` the [`Engine`] (every job, and the requests on them); `job.rs` one job's life;
//! `records.rs` what persistence saves; `words.rs` the wording of events; `drive/` the CLI's
//! driver.

pub mod drive;
mod job;
mod jobs;
mod records;
pub mod words;

pub use jobs::Engine;
pub use records::{FinishedJob, SavedJob};

use std::time::Duration;

use serde::Serialize;

use crate::members::MemberSet;
use crate::policy::{JobEvent, Limits, OnBudget, StopReason, Verdict};
use crate::stages::StageFigures;

/// How long a job that ended stays listed (the app's Jobs, the terminal guards' job files);
/// its verdict stays in the history database's "Recent verdicts".
pub const FINISHED_KEEP: Duration = Duration::from_secs(3600);

/// Default time between checks (and trace samples): `--poll`.
pub const DEFAULT_POLL: Duration = Duration::from_millis(500);

/// Watch (notify and judge) or guard (also stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobMode {
    /// Notifications and a verdict.
    Watch,
    /// As watch, and stopped past its budget.
    Guard,
}

/// Where a job is in its life (also in the job files of `headroom guard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Being watched.
    Running,
    /// Paused by its guard (SIGSTOP) until resumed.
    Paused,
    /// A stop is under way.
    Stopping,
    /// Stopped by its guard.
    Stopped,
    /// Ended on its own.
    Finished,
}

/// Something the caller must do.
#[derive(Debug, Clone)]
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
    /// Stop every member of a job ([`crate::enforce::stop_members`]), then call
    /// [`Engine::stop_done`] with the report.
    Stop {
        /// The job.
        job_id: u64,
        /// Its members.
        members: MemberSet,
        /// Why.
        reason: StopReason,
    },
    /// Pause every member of a job ([`crate::enforce::pause_members`]).
    Pause {
        /// The job.
        job_id: u64,
        /// Its members.
        members: MemberSet,
    },
    /// Continue every member of a paused job ([`crate::enforce::resume_members`]).
    Resume {
        /// The job.
        job_id: u64,
        /// Its members.
        members: MemberSet,
    },
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
}

/// A job as the UI shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobView {
    /// Job id.
    pub id: u64,
    /// Process id of the process the job is named by.
    pub pid: u32,
    /// Command line.
    pub command: String,
    /// Watch or guard.
    pub mode: JobMode,
    /// Running, stopping, stopped, finished.
    pub state: JobStatus,
    /// Swap growth since the job was picked.
    pub swap_growth_bytes: u64,
    /// The budget (guards only).
    pub swap_budget_bytes: Option<u64>,
    /// Peak footprint seen.
    pub peak_footprint_bytes: Option<u64>,
    /// The verdict, once it ended.
    pub verdict: Option<Verdict>,
    /// When it was picked, ms since the epoch.
    pub started_at_ms: i64,
    /// Its stages so far, as its processes marked them.
    pub stages: Vec<StageFigures>,
    /// What passing the budget does (guards).
    pub on_budget: OnBudget,
    /// Pauses so far.
    pub pauses: u32,
    /// Since when it is paused, ms since the epoch (while paused).
    pub paused_since_ms: Option<i64>,
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
mod tests;
