//! Watched and guarded processes of the menu-bar app: per-job policy state, driven by the
//! sampler's samples, producing actions (notify, stop) for the shell to carry out.
//!
//! Pure bookkeeping: no OS calls. The app tracks each job's identity in the sampler, feeds
//! every sample to [`Jobs::on_sample`], shows [`Jobs::views`], and executes the returned
//! [`Action`]s (notifications; `guard::stop_tree` on a thread, then [`Jobs::stop_done`]).

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::history::unix_ms;
use crate::policy::{
    EndReason, EventGate, GuardConfig, JobEvent, JobState, Observation, StopReason, Verdict,
};
use crate::process::ProcessIdentity;
use crate::sampler::Sample;
use crate::store::{ActiveGuard, FinishedJob};

/// Watch (notify and judge) or guard (also stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobMode {
    /// Notifications and a verdict.
    Watch,
    /// As watch, and stopped past its budget.
    Guard,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Being watched.
    Running,
    /// A stop is under way.
    Stopping,
    /// Stopped by its guard.
    Stopped,
    /// Ended on its own.
    Finished,
}

/// Something the shell must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Show a notification about a job.
    Notify {
        /// The job.
        job_id: u64,
        /// Its command line.
        command: String,
        /// What happened.
        event: JobEvent,
    },
    /// Stop a job's process tree (SIGTERM, then SIGKILL), then call [`Jobs::stop_done`].
    Stop {
        /// The job.
        job_id: u64,
        /// The process to stop with its descendants.
        identity: ProcessIdentity,
        /// Why.
        reason: StopReason,
    },
}

/// One job.
#[derive(Debug, Clone)]
struct Job {
    id: u64,
    identity: ProcessIdentity,
    command: String,
    mode: JobMode,
    cfg: GuardConfig,
    policy: JobState,
    events: EventGate,
    status: JobStatus,
    stop_reason: Option<StopReason>,
    verdict: Option<Verdict>,
    started_at: SystemTime,
    started_since: Option<Duration>,
    growth_bytes: u64,
    ended_at: Option<SystemTime>,
}

/// A job as the UI shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobView {
    /// Job id.
    pub id: u64,
    /// Process id.
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
}

/// All jobs of the app.
#[derive(Debug, Default)]
pub struct Jobs {
    next_id: u64,
    jobs: Vec<Job>,
}

impl Jobs {
    /// Adds a job for `identity` with swap in use `swap_now_bytes`; returns its id.
    pub fn add(
        &mut self,
        identity: ProcessIdentity,
        command: String,
        mode: JobMode,
        cfg: GuardConfig,
        swap_now_bytes: u64,
    ) -> u64 {
        if let Some(existing) = self
            .jobs
            .iter_mut()
            .find(|j| j.identity == identity && j.status == JobStatus::Running)
        {
            existing.mode = existing.mode.max_mode(mode);
            existing.cfg = cfg;
            return existing.id;
        }
        self.next_id += 1;
        self.jobs.push(Job {
            id: self.next_id,
            identity,
            command,
            mode,
            cfg,
            policy: JobState::new(swap_now_bytes),
            events: EventGate::default(),
            status: JobStatus::Running,
            stop_reason: None,
            verdict: None,
            started_at: SystemTime::now(),
            started_since: None,
            growth_bytes: 0,
            ended_at: None,
        });
        self.next_id
    }

    /// Removes a job (unguard / dismiss); never stops its process. Returns its identity.
    pub fn remove(&mut self, id: u64) -> Option<ProcessIdentity> {
        let index = self.jobs.iter().position(|j| j.id == id)?;
        Some(self.jobs.remove(index).identity)
    }

    /// Identities of running jobs (to track in the sampler).
    pub fn tracked(&self) -> Vec<ProcessIdentity> {
        self.jobs
            .iter()
            .filter(|j| matches!(j.status, JobStatus::Running | JobStatus::Stopping))
            .map(|j| j.identity)
            .collect()
    }

    /// Feeds one sample; returns what to do.
    pub fn on_sample(&mut self, sample: &Sample) -> Vec<Action> {
        let Some(system) = &sample.system else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        for job in self
            .jobs
            .iter_mut()
            .filter(|j| j.status == JobStatus::Running)
        {
            let since = *job.started_since.get_or_insert(sample.since_start);
            let tracked = sample.tracked.iter().find(|t| t.identity == job.identity);
            let obs = Observation {
                t: sample.since_start.saturating_sub(since),
                swap_used_bytes: system.swap_used_bytes,
                free_percent: system.free_percent,
                footprint_bytes: tracked.and_then(|t| t.memory.map(|m| m.footprint_bytes)),
            };
            if tracked.is_some_and(|t| t.memory.is_none()) {
                job.finish(EndReason::Vanished, &mut actions);
                continue;
            }
            let guarded = job.mode == JobMode::Guard;
            let stop = job.policy.observe(guarded.then_some(&job.cfg), &obs);
            job.growth_bytes = job.policy.peak_growth_bytes();
            for event in job
                .events
                .observe(&job.cfg, guarded, job.policy.growth_bytes(&obs), &obs)
            {
                actions.push(job.notify(event));
            }
            if let Some(reason) = stop {
                job.status = JobStatus::Stopping;
                job.stop_reason = Some(reason.clone());
                actions.push(job.notify(JobEvent::Stopped {
                    reason: reason.clone(),
                }));
                actions.push(Action::Stop {
                    job_id: job.id,
                    identity: job.identity,
                    reason,
                });
            }
        }
        actions
    }

    /// The shell finished stopping job `id`; returns the final notification.
    pub fn stop_done(&mut self, id: u64) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id) {
            let reason = job.stop_reason.clone();
            if let Some(reason) = reason {
                job.finish(EndReason::Stopped { reason }, &mut actions);
                job.status = JobStatus::Stopped;
            }
        }
        actions
    }

    /// The record of a job that has ended (for the store), or `None` while it runs.
    pub fn finished_record(&self, id: u64) -> Option<FinishedJob> {
        let job = self.jobs.iter().find(|j| j.id == id)?;
        Some(FinishedJob {
            identity: job.identity,
            command: job.command.clone(),
            mode: job.mode,
            started_at_ms: unix_ms(job.started_at),
            ended_at_ms: unix_ms(job.ended_at?),
            verdict: job.verdict.clone()?,
        })
    }

    /// What to save so the job is taken up again after a restart.
    pub fn active_record(&self, id: u64) -> Option<ActiveGuard> {
        let job = self.jobs.iter().find(|j| j.id == id)?;
        Some(ActiveGuard {
            identity: job.identity,
            command: job.command.clone(),
            mode: job.mode,
            started_at_ms: unix_ms(job.started_at),
            swap_budget_bytes: job.cfg.swap_budget_bytes,
            kill_free_percent: job.cfg.kill_free_percent,
            swap_start_bytes: job.policy.swap_start_bytes(),
        })
    }

    /// Takes up a job saved before a restart (its process must still match; see
    /// `Store::restorable_guards`), keeping its start time and swap baseline.
    pub fn restore(&mut self, saved: &ActiveGuard, base: GuardConfig) -> u64 {
        let cfg = GuardConfig {
            swap_budget_bytes: saved.swap_budget_bytes,
            kill_free_percent: saved.kill_free_percent,
            ..base
        };
        let id = self.add(
            saved.identity,
            saved.command.clone(),
            saved.mode,
            cfg,
            saved.swap_start_bytes,
        );
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id) {
            job.started_at = std::time::UNIX_EPOCH
                + Duration::from_millis(u64::try_from(saved.started_at_ms).unwrap_or(0));
        }
        id
    }

    /// Jobs for the UI, newest first.
    pub fn views(&self) -> Vec<JobView> {
        self.jobs
            .iter()
            .rev()
            .map(|j| JobView {
                id: j.id,
                pid: j.identity.pid,
                command: j.command.clone(),
                mode: j.mode,
                state: j.status,
                swap_growth_bytes: j.growth_bytes,
                swap_budget_bytes: (j.mode == JobMode::Guard).then_some(j.cfg.swap_budget_bytes),
                peak_footprint_bytes: j.verdict.as_ref().and_then(|v| v.peak_footprint_bytes),
                verdict: j.verdict.clone(),
                started_at_ms: unix_ms(j.started_at),
            })
            .collect()
    }

    /// True while any running job's swap is growing (for the tray's colored icon).
    pub fn any_growing(&self) -> bool {
        self.jobs
            .iter()
            .any(|j| j.status == JobStatus::Running && j.growth_bytes > j.cfg.fits_tolerance_bytes)
    }

    /// Drops finished jobs that ended more than `keep` ago.
    pub fn prune(&mut self, now: SystemTime, keep: Duration) {
        self.jobs.retain(|j| {
            j.ended_at
                .is_none_or(|end| now.duration_since(end).unwrap_or_default() < keep)
        });
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

    fn max_mode(self, other: JobMode) -> JobMode {
        if self == JobMode::Guard || other == JobMode::Guard {
            JobMode::Guard
        } else {
            JobMode::Watch
        }
    }
}

impl Job {
    fn notify(&self, event: JobEvent) -> Action {
        Action::Notify {
            job_id: self.id,
            command: self.command.clone(),
            event,
        }
    }

    fn finish(&mut self, ended: EndReason, actions: &mut Vec<Action>) {
        let mut verdict = self.policy.verdict(self.cfg.fits_tolerance_bytes, ended);
        verdict.duration = SystemTime::now()
            .duration_since(self.started_at)
            .unwrap_or(verdict.duration);
        self.verdict = Some(verdict.clone());
        self.status = JobStatus::Finished;
        self.ended_at = Some(SystemTime::now());
        actions.push(self.notify(JobEvent::Finished { verdict }));
    }
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
