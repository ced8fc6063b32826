//! Notification events of a job, with hysteresis: swap grew past another step (at most one
//! a minute), a warning at 80 % of the budget (once, re-armed only after growth falls back
//! under 60 %), stopped, finished. A value hovering at a threshold yields one event, not a
//! stream.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::reasons::StopReason;
use super::verdict::Verdict;
use super::{Limits, Observation, WARN_FRACTION, WARN_REARM_FRACTION};

/// Something worth telling the user about a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JobEvent {
    /// Swap grew by `growth_bytes` since the job started (past step `step`).
    SwapGrew {
        /// Growth over the start, bytes.
        growth_bytes: u64,
        /// Which multiple of the step was passed.
        step: u64,
    },
    /// A guard is close to stopping (or pausing) the job.
    Warning {
        /// Growth counted against the budget (since the start or the last resume), bytes.
        growth_bytes: u64,
        /// The budget, bytes.
        budget_bytes: u64,
        /// What the guard will do at the budget.
        #[serde(default)]
        then: super::OnBudget,
    },
    /// A process of the job marked the start of a stage.
    Stage {
        /// The stage's name.
        stage: String,
    },
    /// A process of the job ended the stage it was in (the outermost `with stage()` left):
    /// what follows belongs to no stage until the next mark.
    StageEnded {
        /// The stage that ended.
        stage: String,
    },
    /// A process of the job reported a load, release or mark (stageload's events): for the
    /// trace; nothing is decided on it.
    Reported {
        /// What it reported.
        report: crate::stages::Reported,
    },
    /// The guard paused the job (SIGSTOP): on a crossing (`reason`), or on request.
    Paused {
        /// The crossing, or `None` when the user asked.
        reason: Option<StopReason>,
        /// Swap growth since the job started, bytes.
        growth_bytes: u64,
        /// Which pause this is (1 for the first).
        pause: u32,
        /// Pauses allowed before a crossing stops it.
        max_pauses: u32,
    },
    /// Its budget was crossed and a younger job was paused in its place (asked now, or
    /// paused a moment ago by the same growth): it goes on, its budget counting again from
    /// swap in use now (see [`crate::policy::order`]).
    MadeRoom {
        /// Why its own guard would have paused it.
        reason: StopReason,
        /// The younger job's leader pid.
        younger_pid: u32,
        /// True when this guard asked it; false when it was paused a moment ago anyway.
        asked: bool,
        /// The new budget's base: swap in use now, bytes.
        swap_used_bytes: u64,
    },
    /// Its budget was crossed and its leader interrupted (SIGINT, `--on-budget interrupt`):
    /// it goes on, stopped if swap grows `hard_bytes` more from `swap_used_bytes`.
    Interrupted {
        /// Why its guard would have stopped it.
        reason: StopReason,
        /// The pid the interrupt was sent to (the job's leader, or the watched process).
        leader: u32,
        /// How much more swap may grow before the job is stopped, bytes.
        hard_bytes: u64,
        /// Swap in use at the interrupt, bytes.
        swap_used_bytes: u64,
    },
    /// Swap stopped growing after an interrupt: the job's whole budget counts again, from
    /// swap in use now.
    Rearmed {
        /// The new budget's base: swap in use now, bytes.
        swap_used_bytes: u64,
    },
    /// A paused job was continued, with a new budget from swap in use now.
    Resumed {
        /// Free memory brought it back by itself (`--resume-free`), at this percent; `None`
        /// when the user asked.
        free_percent: Option<f64>,
        /// How long it was paused.
        paused: Duration,
        /// The new budget's base: swap in use at the resume, bytes.
        swap_used_bytes: u64,
    },
    /// The guard stopped the job.
    Stopped {
        /// Why.
        reason: StopReason,
    },
    /// The safety rules (or the OS) kept a signal from some members: they are left as they
    /// are. Said at once, whatever the signal.
    Refused {
        /// What the guard tried: `pause`, `resume` or `stop`.
        action: String,
        /// The members, and why each was refused.
        members: Vec<(u32, String)>,
    },
    /// A paused job runs again without Headroom resuming it: members continued from outside
    /// (`kill -CONT`), or that the pause could not reach. It is guarded as running again: its
    /// budget applies; its pause count is kept.
    RunsAgain {
        /// The members seen running.
        pids: Vec<u32>,
        /// True when they had been seen stopped (continued from outside); false when the
        /// pause never reached them.
        continued: bool,
    },
    /// The job ended.
    Finished {
        /// The verdict.
        verdict: Verdict,
    },
}

/// Decides which events an observation produces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventGate {
    steps_reported: u64,
    last_growth_event: Option<Duration>,
    warned: bool,
}

impl EventGate {
    /// Events for one observation; `guarded` enables the budget warning, judged on
    /// `budget_growth_bytes` (growth since the start, or since the last resume).
    pub fn observe(
        &mut self,
        limits: &Limits,
        guarded: bool,
        (growth_bytes, budget_growth_bytes): (u64, u64),
        obs: &Observation,
    ) -> Vec<JobEvent> {
        let mut events = Vec::new();
        let step = step_of(limits, growth_bytes);
        let rate_ok = self
            .last_growth_event
            .is_none_or(|at| obs.t.saturating_sub(at) >= limits.notify_min_interval);
        if step > self.steps_reported && rate_ok {
            self.steps_reported = step;
            self.last_growth_event = Some(obs.t);
            events.push(JobEvent::SwapGrew { growth_bytes, step });
        }
        if guarded && limits.swap_budget_bytes > 0 {
            let fraction = budget_growth_bytes as f64 / limits.swap_budget_bytes as f64;
            if !self.warned && fraction >= WARN_FRACTION {
                self.warned = true;
                events.push(JobEvent::Warning {
                    growth_bytes: budget_growth_bytes,
                    budget_bytes: limits.swap_budget_bytes,
                    then: limits.on_budget,
                });
            } else if self.warned && fraction < WARN_REARM_FRACTION {
                self.warned = false;
            }
        }
        events
    }

    /// Whether a swap-growth event waits for its minute ([`Limits::notify_min_interval`]):
    /// growth `growth_bytes` passed a step not yet told. It is told at the first observation
    /// after the minute, whatever swap does then.
    pub fn growth_event_waits(&self, limits: &Limits, growth_bytes: u64) -> bool {
        step_of(limits, growth_bytes) > self.steps_reported
    }

    /// A new budget (after a resume): the warning is armed again.
    pub fn rearm(&mut self) {
        self.warned = false;
    }
}

/// Which multiple of the notification step (`Limits::notify_step_bytes`) growth
/// `growth_bytes` has passed.
fn step_of(limits: &Limits, growth_bytes: u64) -> u64 {
    growth_bytes / limits.notify_step_bytes.max(1)
}
