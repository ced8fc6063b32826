//! The engine: every job of one process (the app's, or the one job of a CLI run), and the
//! requests on them (add, pause, resume, stop, mark, samples, ends), each answered with the
//! [`Action`]s to carry out; plus the views and records the UI and the store read.

use std::time::{Duration, SystemTime};

use super::job::{Calm, Job, Pauses};
use super::records::{FinishedJob, SavedJob};
use super::{Action, JobMode, JobSpec, JobStatus, JobView};
use crate::enforce::StopReport;
use crate::members::MemberSet;
use crate::policy::{EndReason, EventGate, JobEvent, Ledger, Limits, StopReason, Verdict};
use crate::process::ProcessIdentity;
use crate::sampler::Sample;
use crate::stages::StageTracker;
use crate::units::unix_ms;

/// Every job of one process (the app's, or the one job of a CLI run).
#[derive(Debug, Default)]
pub struct Engine {
    next_id: u64,
    jobs: Vec<Job>,
}

impl Engine {
    /// Adds a job over `members` with swap in use `swap_now_bytes` at wall time `at` (the
    /// caller's clock; the engine reads none); returns its id. A process that already has a
    /// running job keeps it: watch never weakens a guard (its budget stays), guard turns a
    /// watch into a guard with the new budget.
    pub fn add(
        &mut self,
        members: MemberSet,
        spec: JobSpec,
        swap_now_bytes: u64,
        at: SystemTime,
    ) -> u64 {
        let root = members.root();
        if let Some(existing) = self
            .jobs
            .iter_mut()
            .find(|j| j.members.root() == root && j.live())
        {
            if spec.mode == JobMode::Guard {
                existing.spec.mode = JobMode::Guard;
                existing.spec.limits = spec.limits;
            }
            return existing.id;
        }
        self.next_id += 1;
        self.jobs.push(Job {
            id: self.next_id,
            members,
            check: spec.poll,
            spec,
            ledger: Ledger::new(swap_now_bytes),
            events: EventGate::default(),
            status: JobStatus::Running,
            stop_reason: None,
            verdict: None,
            started_at: at,
            seen_at: at,
            started_since: None,
            growth_bytes: 0,
            ended_at: None,
            exit: None,
            stages: StageTracker::new(Some(swap_now_bytes)),
            pauses: Pauses::default(),
            last: None,
        });
        self.next_id
    }

    /// Pauses running job `id` on request (the app, a notification's "Pause now") at wall
    /// time `at`; the pause counts toward `max_pauses`. Nothing for a job that is not running.
    pub fn pause(&mut self, id: u64, at: SystemTime) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.running_mut(id, JobStatus::Running) {
            job.saw(at);
            job.pause(None, &mut actions);
        }
        actions
    }

    /// Continues paused job `id` on request at wall time `at`, with a new budget from swap
    /// in use now.
    pub fn resume(&mut self, id: u64, at: SystemTime) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.running_mut(id, JobStatus::Paused) {
            job.saw(at);
            job.resume(None, &mut actions);
        }
        actions
    }

    /// Stops running or paused job `id` on request at wall time `at`; the caller carries out
    /// the stop and reports with [`Engine::stop_done`].
    pub fn stop(&mut self, id: u64, at: SystemTime) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id && j.live()) {
            job.saw(at);
            job.stop(StopReason::Requested, &mut actions);
        }
        actions
    }

    /// True while job `id` is paused.
    pub fn is_paused(&self, id: u64) -> bool {
        self.jobs
            .iter()
            .any(|j| j.id == id && j.status == JobStatus::Paused)
    }

    fn running_mut(&mut self, id: u64, status: JobStatus) -> Option<&mut Job> {
        self.jobs
            .iter_mut()
            .find(|j| j.id == id && j.status == status)
    }

    /// A process of job `id` marked the start of `stage` at `since_start` on the sampler's
    /// clock; returns the stage event (nothing once the job ended).
    pub fn mark(&mut self, id: u64, stage: &str, since_start: Duration) -> Vec<Action> {
        let Some(job) = self
            .jobs
            .iter_mut()
            .find(|j| j.id == id && j.status == JobStatus::Running)
        else {
            return Vec::new();
        };
        let since = *job.started_since.get_or_insert(since_start);
        let t = since_start.saturating_sub(since);
        job.stages.mark(stage, t.as_secs_f64());
        vec![job.notify(JobEvent::Stage {
            stage: stage.to_string(),
        })]
    }

    /// The job whose live members include `pid` (for a mark from that process).
    pub fn job_of(&self, pid: u32, counters: &crate::counters::Counters) -> Option<u64> {
        self.jobs
            .iter()
            .filter(|j| j.status == JobStatus::Running)
            .find(|j| j.members.discover(counters).iter().any(|m| m.pid == pid))
            .map(|j| j.id)
    }

    /// Removes a job (Unwatch, Unguard); never stops its processes. Returns its root.
    pub fn remove(&mut self, id: u64) -> Option<ProcessIdentity> {
        let index = self.jobs.iter().position(|j| j.id == id)?;
        Some(self.jobs.remove(index).members.root())
    }

    /// Member sets of running and paused jobs (to track in the sampler).
    pub fn tracked(&self) -> Vec<MemberSet> {
        self.jobs
            .iter()
            .filter(|j| j.live() || j.status == JobStatus::Stopping)
            .map(|j| j.members.clone())
            .collect()
    }

    /// The interval the sampler should tick at for these jobs: the shortest check any
    /// running job wants, or `None` without running jobs.
    pub fn check_interval(&self) -> Option<Duration> {
        self.jobs
            .iter()
            .filter(|j| j.status == JobStatus::Running)
            .map(|j| j.check)
            .min()
    }

    /// Feeds one sample; returns what to do.
    pub fn on_sample(&mut self, sample: &Sample) -> Vec<Action> {
        let mut actions = Vec::new();
        for job in self.jobs.iter_mut().filter(|j| j.live()) {
            job.observe(sample, &mut actions);
        }
        actions
    }

    /// Records how job `id`'s leader ended (the exit status of a command we started); the
    /// job itself ends when its last member does.
    pub fn set_exit(&mut self, id: u64, exit: EndReason) {
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id) {
            job.exit = Some(exit);
        }
    }

    /// Ends running job `id` at wall time `at`, because its last member is gone (seen
    /// between samples); returns the verdict event.
    pub fn members_gone(&mut self, id: u64, at: SystemTime) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id && j.live()) {
            job.saw(at);
            let ended = job.exit.clone().unwrap_or(EndReason::Vanished);
            job.finish(ended, &mut actions);
        }
        actions
    }

    /// Ends job `id` with `ended` at wall time `at` (the driver itself was interrupted);
    /// returns the verdict.
    pub fn end(&mut self, id: u64, ended: EndReason, at: SystemTime) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self
            .jobs
            .iter_mut()
            .find(|j| j.id == id && j.verdict.is_none())
        {
            job.saw(at);
            job.finish(ended, &mut actions);
        }
        actions
    }

    /// The caller finished stopping job `id`; returns the verdict event. The job counts as
    /// stopped only when a signal reached a member: a job that ended on its own between the
    /// check and the stop keeps its own end (exit status). `at`: wall time now.
    pub fn stop_done(&mut self, id: u64, report: &StopReport, at: SystemTime) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id) {
            job.saw(at);
            let reason = job.stop_reason.clone();
            match reason {
                Some(reason) if report.signalled() => {
                    job.finish(EndReason::Stopped { reason }, &mut actions);
                    job.status = JobStatus::Stopped;
                }
                _ => {
                    let ended = job.exit.clone().unwrap_or(EndReason::Vanished);
                    job.finish(ended, &mut actions);
                }
            }
        }
        actions
    }

    /// The verdict of job `id`, once it ended.
    pub fn verdict(&self, id: u64) -> Option<&Verdict> {
        self.jobs.iter().find(|j| j.id == id)?.verdict.as_ref()
    }

    /// The record of a job that has ended (for the store), or `None` while it runs.
    pub fn finished_record(&self, id: u64) -> Option<FinishedJob> {
        let job = self.jobs.iter().find(|j| j.id == id)?;
        Some(FinishedJob {
            identity: job.members.root(),
            command: job.spec.command.clone(),
            mode: job.spec.mode,
            started_at_ms: unix_ms(job.started_at),
            ended_at_ms: unix_ms(job.ended_at?),
            verdict: job.verdict.clone()?,
        })
    }

    /// What to save so the job is taken up again after a restart (in boot `boot_id`).
    pub fn active_record(&self, id: u64, boot_id: &str) -> Option<SavedJob> {
        let job = self.jobs.iter().find(|j| j.id == id)?;
        Some(SavedJob {
            identity: job.members.root(),
            command: job.spec.command.clone(),
            mode: job.spec.mode,
            started_at_ms: unix_ms(job.started_at),
            swap_budget_bytes: job.spec.limits.swap_budget_bytes,
            kill_free_percent: job.spec.limits.kill_free_percent,
            swap_start_bytes: job.ledger.swap_start_bytes(),
            boot_id: boot_id.to_string(),
            on_budget: job.spec.limits.on_budget,
            pauses: job.pauses.count,
            paused_since_ms: job.pauses.current.map(|(at, _)| unix_ms(at)),
        })
    }

    /// Takes up a job saved before a restart (its process must still match; see
    /// `Store::restorable_jobs`) at wall time `at`, keeping its start time and swap
    /// baseline.
    pub fn restore(
        &mut self,
        saved: &SavedJob,
        members: MemberSet,
        base: JobSpec,
        at: SystemTime,
    ) -> u64 {
        let spec = JobSpec {
            command: saved.command.clone(),
            mode: saved.mode,
            limits: Limits {
                swap_budget_bytes: saved.swap_budget_bytes,
                kill_free_percent: saved.kill_free_percent,
                on_budget: saved.on_budget,
                ..base.limits
            },
            poll: base.poll,
        };
        let id = self.add(members, spec, saved.swap_start_bytes, at);
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id) {
            let at = |ms: i64| {
                std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
            };
            job.started_at = at(saved.started_at_ms);
            job.pauses.count = saved.pauses;
            // Still stopped (SIGSTOP outlives us): taken up as paused, resumed on request.
            if let Some(ms) = saved.paused_since_ms {
                job.status = JobStatus::Paused;
                let calm = Calm {
                    swap_bytes: u64::MAX,
                    since: Duration::ZERO,
                };
                job.pauses.current = Some((at(ms), calm));
            }
        }
        id
    }

    /// Changes the check interval the user set for every job (the app's settings).
    pub fn set_poll(&mut self, poll: Duration) {
        for job in &mut self.jobs {
            job.spec.poll = poll;
            job.check = job.check.min(poll);
        }
    }

    /// Jobs for the UI, newest first.
    pub fn views(&self) -> Vec<JobView> {
        self.jobs
            .iter()
            .rev()
            .map(|j| JobView {
                id: j.id,
                pid: j.members.root().pid,
                command: j.spec.command.clone(),
                mode: j.spec.mode,
                state: j.status,
                swap_growth_bytes: j.growth_bytes,
                swap_budget_bytes: (j.spec.mode == JobMode::Guard)
                    .then_some(j.spec.limits.swap_budget_bytes),
                peak_footprint_bytes: j.verdict.as_ref().and_then(|v| v.peak_footprint_bytes),
                verdict: j.verdict.clone(),
                started_at_ms: unix_ms(j.started_at),
                stages: j.stages.stages().to_vec(),
                on_budget: j.spec.limits.on_budget,
                pauses: j.pauses.count,
                paused_since_ms: j.pauses.current.map(|(at, _)| unix_ms(at)),
            })
            .collect()
    }

    /// True while any running job's swap is growing (for the tray's colored icon).
    pub fn any_growing(&self) -> bool {
        self.jobs.iter().any(|j| {
            j.status == JobStatus::Running && j.growth_bytes > j.spec.limits.fits_tolerance_bytes
        })
    }

    /// Drops finished jobs that ended more than `keep` ago.
    pub fn prune(&mut self, now: SystemTime, keep: Duration) {
        self.jobs.retain(|j| {
            j.ended_at
                .is_none_or(|end| now.duration_since(end).unwrap_or_default() < keep)
        });
    }
}
