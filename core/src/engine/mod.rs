//! The job engine: one driver of every watched or guarded job, for `headroom guard`,
//! `headroom watch` and the menu-bar app alike.
//!
//! A job is a set of processes ([`MemberSet`]) judged on one clock (the sampler's). The
//! engine owns the whole run: it observes each sample, produces the events and their wording,
//! decides stops and pauses (pure policy), spaces the checks of guarded jobs (faster near the budget),
//! and writes the verdict. It makes no OS calls itself: callers carry out its [`Action`]s
//! (show an event, stop members with [`crate::enforce::stop_members`], then report back with
//! [`Engine::stop_done`]; pause or resume them with [`crate::enforce::pause_members`] and
//! [`crate::enforce::resume_members`]). [`drive`] runs one job to its end for the CLI; the app feeds the
//! same engine from its ticker.

pub mod drive;
mod records;
pub mod words;

pub use records::{FinishedJob, SavedJob};

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::enforce::StopReport;
use crate::members::MemberSet;
use crate::policy::{
    check_interval, EndReason, EventGate, JobEvent, Ledger, Limits, Observation, OnBudget,
    StopReason, Verdict, CALM_TOLERANCE_BYTES,
};
use crate::process::ProcessIdentity;
use crate::sampler::Sample;
use crate::stages::{Reading, StageFigures, StageTracker};
use crate::units::unix_ms;

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
    pub cfg: Limits,
    /// The check interval the user set (`--poll`, the app's sample interval); guarded jobs
    /// are checked faster near their budget.
    pub poll: Duration,
}

/// One job.
#[derive(Debug, Clone)]
struct Job {
    id: u64,
    members: MemberSet,
    spec: JobSpec,
    policy: Ledger,
    events: EventGate,
    status: JobStatus,
    stop_reason: Option<StopReason>,
    verdict: Option<Verdict>,
    started_at: SystemTime,
    started_since: Option<Duration>,
    growth_bytes: u64,
    ended_at: Option<SystemTime>,
    /// How the job's leader ended, once known (the exit status of a command we started).
    exit: Option<EndReason>,
    /// The interval until this job's next check.
    check: Duration,
    /// Its stages, as marked.
    stages: StageTracker,
    /// Its pauses so far.
    pauses: Pauses,
    /// The latest good observation.
    last: Option<Observation>,
}

/// The pauses of a job.
#[derive(Debug, Clone, Default)]
struct Pauses {
    /// How many.
    count: u32,
    /// Paused time of the pauses that ended.
    total: Duration,
    /// The pause under way: since when (wall clock), and the calm watch for a resume by
    /// itself.
    current: Option<(SystemTime, Calm)>,
}

/// Whether swap has stopped growing, for a resume by itself.
#[derive(Debug, Clone, Copy)]
struct Calm {
    /// Swap in use it is compared against.
    swap_bytes: u64,
    /// When swap last grew past the tolerance (job clock).
    since: Duration,
}

impl Pauses {
    /// Paused time so far, the pause under way included.
    fn total(&self, now: SystemTime) -> Duration {
        let current = self.current.map_or(Duration::ZERO, |(at, _)| {
            now.duration_since(at).unwrap_or_default()
        });
        self.total + current
    }
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

/// Every job of one process (the app's, or the one job of a CLI run).
#[derive(Debug, Default)]
pub struct Engine {
    next_id: u64,
    jobs: Vec<Job>,
}

impl Engine {
    /// Adds a job over `members` with swap in use `swap_now_bytes`; returns its id. A process
    /// that already has a running job keeps it: watch never weakens a guard (its budget
    /// stays), guard turns a watch into a guard with the new budget.
    pub fn add(&mut self, members: MemberSet, spec: JobSpec, swap_now_bytes: u64) -> u64 {
        let root = members.root();
        if let Some(existing) = self
            .jobs
            .iter_mut()
            .find(|j| j.members.root() == root && j.live())
        {
            if spec.mode == JobMode::Guard {
                existing.spec.mode = JobMode::Guard;
                existing.spec.cfg = spec.cfg;
            }
            return existing.id;
        }
        self.next_id += 1;
        self.jobs.push(Job {
            id: self.next_id,
            members,
            check: spec.poll,
            spec,
            policy: Ledger::new(swap_now_bytes),
            events: EventGate::default(),
            status: JobStatus::Running,
            stop_reason: None,
            verdict: None,
            started_at: SystemTime::now(),
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

    /// Pauses running job `id` on request (the app, a notification's "Pause now"); the
    /// pause counts toward `max_pauses`. Nothing for a job that is not running.
    pub fn pause(&mut self, id: u64) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.running_mut(id, JobStatus::Running) {
            job.pause(None, &mut actions);
        }
        actions
    }

    /// Continues paused job `id` on request, with a new budget from swap in use now.
    pub fn resume(&mut self, id: u64) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.running_mut(id, JobStatus::Paused) {
            job.resume(None, &mut actions);
        }
        actions
    }

    /// Stops running or paused job `id` on request; the caller carries out the stop and
    /// reports with [`Engine::stop_done`].
    pub fn stop(&mut self, id: u64) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id && j.live()) {
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

    /// Removes a job (unguard / dismiss); never stops its processes. Returns its root.
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

    /// Ends running job `id` now, because its last member is gone (seen between samples);
    /// returns the verdict event.
    pub fn members_gone(&mut self, id: u64) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id && j.live()) {
            let ended = job.exit.clone().unwrap_or(EndReason::Vanished);
            job.finish(ended, &mut actions);
        }
        actions
    }

    /// Ends job `id` with `ended` (the guard itself was interrupted); returns the verdict.
    pub fn end(&mut self, id: u64, ended: EndReason) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self
            .jobs
            .iter_mut()
            .find(|j| j.id == id && j.verdict.is_none())
        {
            job.finish(ended, &mut actions);
        }
        actions
    }

    /// The caller finished stopping job `id`; returns the verdict event. The job counts as
    /// stopped only when a signal reached a member: a job that ended on its own between the
    /// check and the stop keeps its own end (exit status).
    pub fn stop_done(&mut self, id: u64, report: &StopReport) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.jobs.iter_mut().find(|j| j.id == id) {
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
            swap_budget_bytes: job.spec.cfg.swap_budget_bytes,
            kill_free_percent: job.spec.cfg.kill_free_percent,
            swap_start_bytes: job.policy.swap_start_bytes(),
            boot_id: boot_id.to_string(),
            on_budget: job.spec.cfg.on_budget,
            pauses: job.pauses.count,
            paused_since_ms: job.pauses.current.map(|(at, _)| unix_ms(at)),
        })
    }

    /// Takes up a job saved before a restart (its process must still match; see
    /// `Store::restorable_guards`), keeping its start time and swap baseline.
    pub fn restore(&mut self, saved: &SavedJob, members: MemberSet, base: JobSpec) -> u64 {
        let spec = JobSpec {
            command: saved.command.clone(),
            mode: saved.mode,
            cfg: Limits {
                swap_budget_bytes: saved.swap_budget_bytes,
                kill_free_percent: saved.kill_free_percent,
                on_budget: saved.on_budget,
                ..base.cfg
            },
            poll: base.poll,
        };
        let id = self.add(members, spec, saved.swap_start_bytes);
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
                    .then_some(j.spec.cfg.swap_budget_bytes),
                peak_footprint_bytes: j.verdict.as_ref().and_then(|v| v.peak_footprint_bytes),
                verdict: j.verdict.clone(),
                started_at_ms: unix_ms(j.started_at),
                stages: j.stages.stages().to_vec(),
                on_budget: j.spec.cfg.on_budget,
                pauses: j.pauses.count,
                paused_since_ms: j.pauses.current.map(|(at, _)| unix_ms(at)),
            })
            .collect()
    }

    /// True while any running job's swap is growing (for the tray's colored icon).
    pub fn any_growing(&self) -> bool {
        self.jobs.iter().any(|j| {
            j.status == JobStatus::Running && j.growth_bytes > j.spec.cfg.fits_tolerance_bytes
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

impl Job {
    /// Running or paused: not ended, no stop under way.
    fn live(&self) -> bool {
        matches!(self.status, JobStatus::Running | JobStatus::Paused)
    }

    fn notify(&self, event: JobEvent) -> Action {
        Action::Notify {
            job_id: self.id,
            command: self.spec.command.clone(),
            event,
        }
    }

    /// One sample for a running job: the stop rules, events, the next check interval.
    fn observe(&mut self, sample: &Sample, actions: &mut Vec<Action>) {
        let root = self.members.root();
        let tracked = sample.tracked.iter().find(|t| t.identity == root);
        if tracked.is_some_and(|t| t.memory.is_none()) {
            // No member lives any more. (A failed read never gets here: only death does.)
            let ended = self.exit.clone().unwrap_or(EndReason::Vanished);
            self.finish(ended, actions);
            return;
        }
        let Some(system) = &sample.system else {
            return; // a failed read: the job goes on, judged at the next good sample
        };
        let since = *self.started_since.get_or_insert(sample.since_start);
        let obs = Observation {
            t: sample.since_start.saturating_sub(since),
            swap_used_bytes: system.swap_used_bytes,
            free_percent: system.free_percent,
            footprint_bytes: tracked.and_then(|t| t.memory.map(|m| m.footprint_bytes)),
            compressed_bytes: system.compressed_bytes,
        };
        self.last = Some(obs);
        if self.status == JobStatus::Paused {
            self.observe_paused(&obs, actions);
            return;
        }
        let guarded = self.spec.mode == JobMode::Guard;
        let growth = self.policy.budget_growth_bytes(&obs);
        if guarded {
            // Look ahead to the next check, spaced by how close the budget is.
            self.check = check_interval(
                &self.spec.cfg,
                growth,
                obs.swap_used_bytes,
                self.policy.rate_bytes_per_second(),
                self.spec.poll,
            );
        }
        let mut cfg = self.spec.cfg.clone();
        cfg.lookahead = self.check;
        let stop = self.policy.observe(guarded.then_some(&cfg), &obs);
        self.record(&obs);
        let total = self.policy.growth_bytes(&obs);
        for event in self.events.observe(&cfg, guarded, (total, growth), &obs) {
            // A warning "will be stopped at the budget" is stale when it is stopped now.
            if stop.is_some() && matches!(event, JobEvent::Warning { .. }) {
                continue;
            }
            actions.push(self.notify(event));
        }
        if guarded {
            self.check = check_interval(
                &cfg,
                growth,
                obs.swap_used_bytes,
                self.policy.rate_bytes_per_second(),
                self.spec.poll,
            );
        }
        match stop {
            Some(reason)
                if self.spec.cfg.on_budget == OnBudget::Pause
                    && self.pauses.count < self.spec.cfg.max_pauses =>
            {
                self.pause(Some(reason), actions);
            }
            Some(reason) => self.stop(reason, actions),
            None => {}
        }
    }

    /// A paused job's sample: figures for the verdict (no stop rule: it is not running),
    /// and a resume by itself once free memory is back and swap has stopped growing.
    fn observe_paused(&mut self, obs: &Observation, actions: &mut Vec<Action>) {
        self.policy.observe(None, obs);
        self.record(obs);
        let Some((_, calm)) = self.pauses.current.as_mut() else {
            return;
        };
        // (u64::MAX: restored after a restart, nothing to compare with yet.)
        let grew = obs.swap_used_bytes > calm.swap_bytes.saturating_add(CALM_TOLERANCE_BYTES);
        if calm.swap_bytes == u64::MAX || grew {
            *calm = Calm {
                swap_bytes: obs.swap_used_bytes,
                since: obs.t,
            };
        } else {
            calm.swap_bytes = calm.swap_bytes.min(obs.swap_used_bytes);
        }
        let calm_for = obs.t.saturating_sub(calm.since);
        let cfg = &self.spec.cfg;
        if let Some(free) = cfg.resume_free_percent {
            if obs.free_percent >= free && calm_for >= cfg.resume_calm {
                self.resume(Some(obs.free_percent), actions);
            }
        }
    }

    /// Records `obs` in the stage figures and the peak growth (after the policy saw it).
    fn record(&mut self, obs: &Observation) {
        self.stages.observe(&Reading {
            t_seconds: obs.t.as_secs_f64(),
            swap_used_bytes: obs.swap_used_bytes,
            footprint_bytes: obs.footprint_bytes,
            free_percent: obs.free_percent,
        });
        self.growth_bytes = self.policy.peak_growth_bytes();
    }

    /// Pauses the job: on a crossing (`reason`), or on request.
    fn pause(&mut self, reason: Option<StopReason>, actions: &mut Vec<Action>) {
        let t = self.last.map_or(Duration::ZERO, |o| o.t);
        let swap = self
            .last
            .map_or(self.policy.swap_start_bytes(), |o| o.swap_used_bytes);
        self.status = JobStatus::Paused;
        self.pauses.count += 1;
        let calm = Calm {
            swap_bytes: swap,
            since: t,
        };
        self.pauses.current = Some((SystemTime::now(), calm));
        actions.push(self.notify(JobEvent::Paused {
            reason,
            growth_bytes: self.growth_bytes,
            pause: self.pauses.count,
            max_pauses: self.spec.cfg.max_pauses.max(self.pauses.count),
        }));
        actions.push(Action::Pause {
            job_id: self.id,
            members: self.members.clone(),
        });
    }

    /// Continues the paused job with a new budget from swap in use now; `free_percent` when
    /// free memory brought it back by itself.
    fn resume(&mut self, free_percent: Option<f64>, actions: &mut Vec<Action>) {
        let Some((since, _)) = self.pauses.current.take() else {
            return;
        };
        let paused = SystemTime::now().duration_since(since).unwrap_or_default();
        self.pauses.total += paused;
        let swap = self
            .last
            .map_or(self.policy.swap_start_bytes(), |o| o.swap_used_bytes);
        self.policy.rebase(swap);
        self.events.rearm();
        self.status = JobStatus::Running;
        self.check = self.spec.poll.min(self.check);
        actions.push(self.notify(JobEvent::Resumed {
            free_percent,
            paused,
            swap_used_bytes: swap,
        }));
        actions.push(Action::Resume {
            job_id: self.id,
            members: self.members.clone(),
        });
    }

    /// Starts stopping the job (the caller signals, then calls [`Engine::stop_done`]).
    fn stop(&mut self, reason: StopReason, actions: &mut Vec<Action>) {
        if let Some((since, _)) = self.pauses.current.take() {
            self.pauses.total += SystemTime::now().duration_since(since).unwrap_or_default();
        }
        self.status = JobStatus::Stopping;
        self.stop_reason = Some(reason.clone());
        actions.push(self.notify(JobEvent::Stopped {
            reason: reason.clone(),
        }));
        actions.push(Action::Stop {
            job_id: self.id,
            members: self.members.clone(),
            reason,
        });
    }

    fn finish(&mut self, ended: EndReason, actions: &mut Vec<Action>) {
        let mut verdict = self
            .policy
            .verdict(self.spec.cfg.fits_tolerance_bytes, ended);
        verdict.duration = SystemTime::now()
            .duration_since(self.started_at)
            .unwrap_or(verdict.duration);
        verdict.processes = self.members.ever();
        if verdict.fits {
            verdict.tight = self.policy.tightness(&self.spec.cfg);
        }
        verdict.stages = self.stages.stages().to_vec();
        verdict.pauses = self.pauses.count;
        verdict.paused = self.pauses.total(SystemTime::now());
        self.pauses.current = None;
        self.verdict = Some(verdict.clone());
        self.status = JobStatus::Finished;
        self.ended_at = Some(SystemTime::now());
        actions.push(self.notify(JobEvent::Finished { verdict }));
    }
}

#[cfg(test)]
mod tests;
