//! One job's life inside the engine: what it remembers ([`Job`], its pauses), and each step
//! of it (observe a sample, pause, resume, stop, finish), each pushing the [`Action`]s the
//! caller carries out. [`super::jobs`] holds the jobs and routes requests to them.

use std::time::{Duration, SystemTime};

use super::{Action, JobMode, JobSpec, JobStatus};
use crate::members::MemberSet;
use crate::policy::{
    check_interval, EndReason, EventGate, JobEvent, Ledger, Observation, OnBudget, StopReason,
    Verdict, CALM_TOLERANCE_BYTES,
};
use crate::sampler::Sample;
use crate::stages::{Reading, StageTracker};

/// One job.
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub(super) id: u64,
    pub(super) members: MemberSet,
    pub(super) spec: JobSpec,
    pub(super) ledger: Ledger,
    pub(super) events: EventGate,
    pub(super) status: JobStatus,
    pub(super) stop_reason: Option<StopReason>,
    pub(super) verdict: Option<Verdict>,
    pub(super) started_at: SystemTime,
    pub(super) started_since: Option<Duration>,
    pub(super) growth_bytes: u64,
    pub(super) ended_at: Option<SystemTime>,
    /// Wall time of the latest sample or request the job saw (its start before the first):
    /// the job's "now" for pauses, its duration and its end. The engine reads no clock
    /// itself; callers pass the time with each request.
    pub(super) seen_at: SystemTime,
    /// How the job's leader ended, once known (the exit status of a command we started).
    pub(super) exit: Option<EndReason>,
    /// The interval until this job's next check.
    pub(super) check: Duration,
    /// Its stages, as marked.
    pub(super) stages: StageTracker,
    /// Its pauses so far.
    pub(super) pauses: Pauses,
    /// The latest good observation.
    pub(super) last: Option<Observation>,
}

/// The pauses of a job.
#[derive(Debug, Clone, Default)]
pub(super) struct Pauses {
    /// How many.
    pub(super) count: u32,
    /// Paused time of the pauses that ended.
    pub(super) total: Duration,
    /// The pause under way: since when (wall clock), and the calm watch for a resume by
    /// itself.
    pub(super) current: Option<(SystemTime, Calm)>,
}

/// Whether swap has stopped growing, for a resume by itself.
#[derive(Debug, Clone, Copy)]
pub(super) struct Calm {
    /// Swap in use it is compared against.
    pub(super) swap_bytes: u64,
    /// When swap last grew past the tolerance (job clock).
    pub(super) since: Duration,
}

impl Pauses {
    /// Paused time so far, the pause under way included.
    pub(super) fn total(&self, now: SystemTime) -> Duration {
        let current = self.current.map_or(Duration::ZERO, |(at, _)| {
            now.duration_since(at).unwrap_or_default()
        });
        self.total + current
    }
}

impl Job {
    /// Running or paused: not ended, no stop under way.
    pub(super) fn live(&self) -> bool {
        matches!(self.status, JobStatus::Running | JobStatus::Paused)
    }

    pub(super) fn notify(&self, event: JobEvent) -> Action {
        Action::Notify {
            job_id: self.id,
            command: self.spec.command.clone(),
            event,
        }
    }

    /// Moves the job's "now" to wall time `at` (a sample's, or a request's), never back.
    pub(super) fn saw(&mut self, at: SystemTime) {
        self.seen_at = self.seen_at.max(at);
    }

    /// One sample for a running job: the stop rules, events, the next check interval.
    pub(super) fn observe(&mut self, sample: &Sample, actions: &mut Vec<Action>) {
        self.saw(sample.at);
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
        let growth = self.ledger.budget_growth_bytes(&obs);
        if guarded {
            // Look ahead to the next check, spaced by how close the budget is.
            self.check = check_interval(
                &self.spec.limits,
                growth,
                obs.swap_used_bytes,
                self.ledger.rate_bytes_per_second(),
                self.spec.poll,
            );
        }
        let mut limits = self.spec.limits.clone();
        limits.lookahead = self.check;
        let stop = self.ledger.observe(guarded.then_some(&limits), &obs);
        self.record(&obs);
        let total = self.ledger.growth_bytes(&obs);
        for event in self.events.observe(&limits, guarded, (total, growth), &obs) {
            // A warning "will be stopped at the budget" is stale when it is stopped now.
            if stop.is_some() && matches!(event, JobEvent::Warning { .. }) {
                continue;
            }
            actions.push(self.notify(event));
        }
        if guarded {
            self.check = check_interval(
                &limits,
                growth,
                obs.swap_used_bytes,
                self.ledger.rate_bytes_per_second(),
                self.spec.poll,
            );
        }
        match stop {
            Some(reason)
                if self.spec.limits.on_budget == OnBudget::Pause
                    && self.pauses.count < self.spec.limits.max_pauses =>
            {
                self.pause(Some(reason), actions);
            }
            Some(reason) => self.stop(reason, actions),
            None => {}
        }
    }

    /// A paused job's sample: figures for the verdict (no stop rule: it is not running),
    /// and a resume by itself once free memory is back and swap has stopped growing.
    pub(super) fn observe_paused(&mut self, obs: &Observation, actions: &mut Vec<Action>) {
        self.ledger.observe(None, obs);
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
        let limits = &self.spec.limits;
        if let Some(free) = limits.resume_free_percent {
            if obs.free_percent >= free && calm_for >= limits.resume_calm {
                self.resume(Some(obs.free_percent), actions);
            }
        }
    }

    /// Records `obs` in the stage figures and the peak growth (after the policy saw it).
    pub(super) fn record(&mut self, obs: &Observation) {
        self.stages.observe(&Reading {
            t_seconds: obs.t.as_secs_f64(),
            swap_used_bytes: obs.swap_used_bytes,
            footprint_bytes: obs.footprint_bytes,
            free_percent: obs.free_percent,
        });
        self.growth_bytes = self.ledger.peak_growth_bytes();
    }

    /// Pauses the job: on a crossing (`reason`), or on request.
    pub(super) fn pause(&mut self, reason: Option<StopReason>, actions: &mut Vec<Action>) {
        let t = self.last.map_or(Duration::ZERO, |o| o.t);
        let swap = self
            .last
            .map_or(self.ledger.swap_start_bytes(), |o| o.swap_used_bytes);
        self.status = JobStatus::Paused;
        self.pauses.count += 1;
        let calm = Calm {
            swap_bytes: swap,
            since: t,
        };
        self.pauses.current = Some((self.seen_at, calm));
        actions.push(self.notify(JobEvent::Paused {
            reason,
            growth_bytes: self.growth_bytes,
            pause: self.pauses.count,
            max_pauses: self.spec.limits.max_pauses.max(self.pauses.count),
        }));
        actions.push(Action::Pause {
            job_id: self.id,
            members: self.members.clone(),
        });
    }

    /// Continues the paused job with a new budget from swap in use now; `free_percent` when
    /// free memory brought it back by itself.
    pub(super) fn resume(&mut self, free_percent: Option<f64>, actions: &mut Vec<Action>) {
        let Some((since, _)) = self.pauses.current.take() else {
            return;
        };
        let paused = self.seen_at.duration_since(since).unwrap_or_default();
        self.pauses.total += paused;
        let swap = self
            .last
            .map_or(self.ledger.swap_start_bytes(), |o| o.swap_used_bytes);
        self.ledger.rebase(swap);
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
    pub(super) fn stop(&mut self, reason: StopReason, actions: &mut Vec<Action>) {
        if let Some((since, _)) = self.pauses.current.take() {
            self.pauses.total += self.seen_at.duration_since(since).unwrap_or_default();
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

    pub(super) fn finish(&mut self, ended: EndReason, actions: &mut Vec<Action>) {
        let mut verdict = self
            .ledger
            .verdict(self.spec.limits.fits_tolerance_bytes, ended);
        verdict.duration = self
            .seen_at
            .duration_since(self.started_at)
            .unwrap_or(verdict.duration);
        verdict.processes = self.members.ever();
        if verdict.fits {
            verdict.tight = self.ledger.tightness(&self.spec.limits);
        }
        verdict.stages = self.stages.stages().to_vec();
        verdict.pauses = self.pauses.count;
        verdict.paused = self.pauses.total(self.seen_at);
        self.pauses.current = None;
        self.verdict = Some(verdict.clone());
        self.status = JobStatus::Finished;
        self.ended_at = Some(self.seen_at);
        actions.push(self.notify(JobEvent::Finished { verdict }));
    }
}
