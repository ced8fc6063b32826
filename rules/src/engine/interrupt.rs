//! `--on-budget interrupt`: a job interrupted at its budget instead of stopped (SIGINT to its
//! leader: Python raises `KeyboardInterrupt` in the running cell or script, and the process
//! with its state lives on). After the interrupt its budget counts from swap in use then, a
//! share of it ([`INTERRUPT_HARD_FRACTION`]): swap that still grows that much stops the job
//! (the interrupt did not help: a loop that ignores it, memory a C extension still takes);
//! swap that stops growing for `resume_calm` gives the job its whole budget again.

use super::job::{Calm, Interrupted, Job};
use super::{Action, JobMode};
use crate::policy::{
    JobEvent, Limits, Observation, OnBudget, StopReason, CALM_TOLERANCE_BYTES,
    INTERRUPT_HARD_FRACTION,
};
use headroom_model::effects::JobSignal;

/// The hard limit after an interrupt: how much more swap may grow, bytes.
fn hard_bytes(budget_bytes: u64) -> u64 {
    (budget_bytes as f64 * INTERRUPT_HARD_FRACTION) as u64
}

impl Job {
    /// True when crossing its budget for `reason` interrupts this job: a guard of
    /// `--on-budget interrupt`, not interrupted already, past its swap budget (the free
    /// floor and the swap limit stop it: they guard the machine, not the job's budget).
    pub(super) fn interrupts(&self, reason: &StopReason) -> bool {
        self.spec.mode == JobMode::Guard
            && self.spec.limits.on_budget == OnBudget::Interrupt
            && self.interrupted.is_none()
            && matches!(
                reason,
                StopReason::SwapBudget { .. } | StopReason::SwapBudgetProjected { .. }
            )
    }

    /// The limits a check judges by: after an interrupt, the hard limit in place of the
    /// budget.
    pub(super) fn judged_limits(&self, mut limits: Limits) -> Limits {
        if self.interrupted.is_some() {
            limits.swap_budget_bytes = hard_bytes(limits.swap_budget_bytes);
        }
        limits
    }

    /// Interrupts the job at its crossing (`reason`): SIGINT to its leader; from now on its
    /// budget counts from swap in use now, up to the hard limit.
    pub(super) fn interrupt(
        &mut self,
        reason: StopReason,
        obs: &Observation,
        actions: &mut Vec<Action>,
    ) {
        let swap = obs.swap_used_bytes;
        self.ledger.rebase(swap);
        self.events.rearm();
        self.budget_since = self.seen_at;
        self.interrupted = Some(Interrupted {
            calm: Calm {
                swap_bytes: swap,
                since: obs.t,
            },
        });
        actions.push(self.signal(JobSignal::Interrupt, vec![self.root]));
        actions.push(self.notify(JobEvent::Interrupted {
            reason,
            leader: self.root.pid,
            hard_bytes: hard_bytes(self.spec.limits.swap_budget_bytes),
            swap_used_bytes: swap,
        }));
    }

    /// After an interrupt, at each check that did not stop the job: swap that has not grown
    /// (by [`CALM_TOLERANCE_BYTES`]) for `resume_calm` gives it its whole budget again,
    /// counted from swap in use now.
    pub(super) fn watch_calm(&mut self, obs: &Observation, actions: &mut Vec<Action>) {
        let Some(interrupted) = self.interrupted.as_mut() else {
            return;
        };
        let calm = &mut interrupted.calm;
        if obs.swap_used_bytes > calm.swap_bytes.saturating_add(CALM_TOLERANCE_BYTES) {
            *calm = Calm {
                swap_bytes: obs.swap_used_bytes,
                since: obs.t,
            };
            return;
        }
        calm.swap_bytes = calm.swap_bytes.min(obs.swap_used_bytes);
        if obs.t.saturating_sub(calm.since) < self.spec.limits.resume_calm {
            return;
        }
        self.interrupted = None;
        self.ledger.rebase(obs.swap_used_bytes);
        self.events.rearm();
        self.budget_since = self.seen_at;
        actions.push(self.notify(JobEvent::Rearmed {
            swap_used_bytes: obs.swap_used_bytes,
        }));
    }
}
