//! What the job engine hands to persistence: a finished job with its verdict, and a running
//! watch or guard to take up again after a restart. Plain data; `headroom_core::store` writes them.

use serde::{Deserialize, Serialize};

use super::JobMode;
use crate::policy::{OnBudget, Verdict};
use headroom_model::process::ProcessIdentity;

/// A job that ended, with its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinishedJob {
    /// The job's root process.
    pub identity: ProcessIdentity,
    /// Its command line.
    pub command: String,
    /// Watched or guarded.
    pub mode: JobMode,
    /// When watching began, ms since the Unix epoch.
    pub started_at_ms: i64,
    /// When it ended, ms since the Unix epoch.
    pub ended_at_ms: i64,
    /// The verdict.
    pub verdict: Verdict,
}

/// A finished run as the run history records it, the same for every driver (the terminal's
/// guard and watch, the app): the job with its verdict, and how its run started (its key,
/// the memory at its start). `headroom_core::store::Store::record_finished` writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedRun {
    /// The job and its verdict.
    pub job: FinishedJob,
    /// Its key and the memory it started with.
    pub start: RunStart,
}

/// What the run history keeps of a job beyond its verdict, as the engine knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    /// The key its run is recorded under ([`super::JobSpec::history_key`]).
    pub key: String,
    /// Free memory at its start, percent, once seen.
    pub free_start_percent: Option<f64>,
    /// Memory in use at its start, bytes, where the kernel counts it (macOS).
    #[serde(default)]
    pub in_use_start_bytes: Option<u64>,
}

/// A watch or guard that was running, to take up again after Headroom restarts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedJob {
    /// The watched process; restore only while it is still alive (same start time).
    pub identity: ProcessIdentity,
    /// Its command line.
    pub command: String,
    /// Watched or guarded.
    pub mode: JobMode,
    /// When watching began, ms since the Unix epoch.
    pub started_at_ms: i64,
    /// The guard's swap budget (a watch stores the default it would be guarded with).
    pub swap_budget_bytes: u64,
    /// The guard's free-memory floor, percent.
    pub kill_free_percent: f64,
    /// Swap in use when watching began: growth is measured from here, also after a restart.
    pub swap_start_bytes: u64,
    /// The boot it was saved in (`Counters::boot_id`): start times count from boot, so after
    /// a reboot the identity may name an unrelated process and the guard is dropped.
    pub boot_id: String,
    /// What passing the budget does.
    pub on_budget: OnBudget,
    /// Pauses so far.
    pub pauses: u32,
    /// Since when it is paused (ms since the epoch), while paused: a job still stopped is
    /// taken up as paused.
    pub paused_since_ms: Option<i64>,
    /// The key named for its run history, if one was ([`super::JobSpec::key`]).
    #[serde(default)]
    pub key: Option<String>,
    /// Free memory at its start, percent, once seen: what its run took is measured from it.
    #[serde(default)]
    pub free_start_percent: Option<f64>,
    /// Memory in use at its start, bytes, where the kernel counts it (macOS): its need is the
    /// rise from there, also after a restart.
    #[serde(default)]
    pub in_use_start_bytes: Option<u64>,
}
