//! What the page gets for a job: the app's own jobs, read-only ones of terminal guards (their
//! job files), and finished ones from the history database.

use headroom_core::jobfile::JobFile;
use headroom_rules::engine::{FinishedJob, JobView};
use headroom_rules::policy::Verdict;
use serde::Serialize;

use crate::state::AppState;

/// A job as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UiJob {
    id: String,
    pid: u32,
    command: String,
    mode: &'static str,
    state: &'static str,
    swap_growth_bytes: u64,
    swap_budget_bytes: Option<u64>,
    peak_footprint_bytes: Option<u64>,
    verdict: Option<UiVerdict>,
    read_only: bool,
    stages: Vec<UiStage>,
    /// `stop` or `pause`: what passing the budget does (guards).
    on_budget: &'static str,
    /// Pauses so far.
    pauses: u32,
    /// Since when it is paused, ms since the epoch.
    paused_since_ms: Option<i64>,
}

/// A stage of a job as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UiStage {
    name: String,
    swap_growth_bytes: u64,
}

/// A verdict as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UiVerdict {
    fits: bool,
    text: String,
}

impl UiVerdict {
    /// A verdict as the page shows it: whether it fits, and the sentence.
    pub fn of(verdict: &Verdict) -> UiVerdict {
        UiVerdict {
            fits: verdict.fits,
            text: verdict.to_string(),
        }
    }
}

impl UiJob {
    /// A job of `headroom guard` in a terminal, from its job file: read-only here.
    pub fn external(f: JobFile) -> UiJob {
        let state = f.state_word();
        UiJob {
            id: format!("ext-{}-{}", f.pid, f.start_time),
            pid: f.pid,
            command: f.command,
            mode: "external",
            state,
            swap_growth_bytes: f.swap_growth_bytes,
            swap_budget_bytes: Some(f.swap_budget_bytes),
            peak_footprint_bytes: f.peak_footprint_bytes,
            verdict: f.verdict.as_ref().map(UiVerdict::of),
            read_only: true,
            stages: Vec::new(),
            on_budget: f.on_budget.as_str(),
            pauses: f.pauses,
            paused_since_ms: None,
        }
    }
}

pub(super) fn ui_job(v: JobView) -> UiJob {
    UiJob {
        id: crate::jobs::page_id(v.id),
        pid: v.pid,
        command: v.command,
        mode: v.mode.as_str(),
        state: v.state.as_str(),
        swap_growth_bytes: v.swap_growth_bytes,
        swap_budget_bytes: v.swap_budget_bytes,
        peak_footprint_bytes: v.peak_footprint_bytes,
        verdict: v.verdict.as_ref().map(UiVerdict::of),
        read_only: false,
        stages: v
            .stages
            .iter()
            .map(|s| UiStage {
                name: s.stage.clone(),
                swap_growth_bytes: s.swap_growth_bytes,
            })
            .collect(),
        on_budget: v.on_budget.as_str(),
        pauses: v.pauses,
        paused_since_ms: v.paused_since_ms,
    }
}

/// How many finished jobs "Recent verdicts" shows.
pub(super) const RECENT_JOBS: usize = 10;

/// A job that ended, from the history database.
#[derive(Debug, Clone, Serialize)]
pub struct UiRecentJob {
    command: String,
    mode: &'static str,
    started_at_ms: i64,
    ended_at_ms: i64,
    verdict: UiVerdict,
}

impl UiRecentJob {
    /// A finished job as "Recent verdicts" shows it.
    pub fn of(job: &FinishedJob) -> UiRecentJob {
        UiRecentJob {
            command: job.command.clone(),
            mode: job.mode.as_str(),
            started_at_ms: job.started_at_ms,
            ended_at_ms: job.ended_at_ms,
            verdict: UiVerdict::of(&job.verdict),
        }
    }
}

/// Jobs of `headroom guard` runs in terminals, read-only (the app's own files left out).
pub(super) fn external_jobs(state: &AppState) -> Vec<UiJob> {
    JobFile::list(&state.jobs_dir(), &state.counters)
        .into_iter()
        .filter(|f| !f.guarded_by(std::process::id()))
        .map(UiJob::external)
        .collect()
}
