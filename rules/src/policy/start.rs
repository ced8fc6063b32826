//! The start gate of `headroom guard`: whether a job may start now (room enough, nothing
//! busy for long enough), or why it waits, or that it gives up.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Limits, Observation};
use headroom_model::units::{format_bytes, format_duration};

/// Why a job is not started yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitReason {
    /// Free memory below `--wait-free`.
    LowFree {
        /// Free now, percent.
        free_percent: f64,
        /// Needed, percent.
        need_percent: f64,
    },
    /// Swap in use plus the budget would pass `--swap-limit`.
    SwapLimit {
        /// Swap in use, bytes.
        used_bytes: u64,
        /// The budget, bytes.
        budget_bytes: u64,
        /// The limit, bytes.
        limit_bytes: u64,
    },
    /// A `--busy` process is running, or ran less than `--quiet-for` ago.
    Busy {
        /// The busy command line last seen.
        command: String,
        /// How long it still has to stay quiet.
        quiet_left: Duration,
    },
    /// In the queue of `--wait-fit` (see `crate::queue`): the predicted need does not fit in
    /// the room, or an earlier job waits.
    InLine {
        /// The job's predicted need, bytes (none without a past run).
        need_bytes: Option<u64>,
        /// Free above the free floor, less the reservations, bytes.
        room_bytes: u64,
        /// Held back for jobs admitted a moment ago, bytes.
        reserved_bytes: u64,
        /// Its place among the waiting jobs, from 1.
        position: usize,
        /// The key of the first earlier job it may not pass, if that is why it waits.
        behind: Option<String>,
    },
}

impl std::fmt::Display for WaitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitReason::LowFree {
                free_percent,
                need_percent,
            } => write!(
                f,
                "free memory {free_percent:.0}% < {need_percent:.0}% needed"
            ),
            WaitReason::SwapLimit {
                used_bytes,
                budget_bytes,
                limit_bytes,
            } => write!(
                f,
                "swap {} + budget {} > limit {}",
                format_bytes(*used_bytes),
                format_bytes(*budget_bytes),
                format_bytes(*limit_bytes)
            ),
            WaitReason::Busy {
                command,
                quiet_left,
            } => write!(
                f,
                "busy: {command} (quiet for {} more)",
                format_duration(*quiet_left)
            ),
            WaitReason::InLine {
                need_bytes,
                room_bytes,
                reserved_bytes,
                position,
                behind,
            } => {
                match need_bytes {
                    Some(need) => write!(
                        f,
                        "needs {}, {} free above the floor",
                        format_bytes(*need),
                        format_bytes(*room_bytes)
                    )?,
                    None => write!(f, "no past run, waits by --wait-free")?,
                }
                if *reserved_bytes > 0 {
                    write!(
                        f,
                        " ({} held for jobs just started)",
                        format_bytes(*reserved_bytes)
                    )?;
                }
                write!(f, "; {} in line", ordinal(*position))?;
                match behind {
                    Some(key) => write!(f, ", behind {key}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, … `11th`, `12th`, `13th`, `21st`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// What the start gate says.
#[derive(Debug, Clone, PartialEq)]
pub enum StartDecision {
    /// There is room: start now.
    Go,
    /// Not yet.
    Wait(WaitReason),
    /// `--start-timeout` passed without room.
    GiveUp(WaitReason),
}

/// The start gate: free memory and busy processes, over time.
#[derive(Debug, Clone, Default)]
pub struct StartGate {
    last_busy: Option<(Duration, String)>,
}

impl StartGate {
    /// Decides from one observation and the busy command line seen now (if any). Without any
    /// busy process seen since waiting began the job may start at once; once one was seen,
    /// none may be seen for `quiet_for`.
    pub fn decide(
        &mut self,
        limits: &Limits,
        obs: &Observation,
        busy_now: Option<&str>,
    ) -> StartDecision {
        if let Some(command) = busy_now {
            self.last_busy = Some((obs.t, command.to_string()));
        }
        let over_limit = limits
            .swap_limit_bytes
            .filter(|&limit| obs.swap_used_bytes.saturating_add(limits.swap_budget_bytes) > limit);
        let reason = if obs.free_percent < limits.wait_free_percent {
            Some(WaitReason::LowFree {
                free_percent: obs.free_percent,
                need_percent: limits.wait_free_percent,
            })
        } else if let Some(limit_bytes) = over_limit {
            Some(WaitReason::SwapLimit {
                used_bytes: obs.swap_used_bytes,
                budget_bytes: limits.swap_budget_bytes,
                limit_bytes,
            })
        } else {
            self.last_busy.as_ref().and_then(|(at, command)| {
                let quiet = obs.t.saturating_sub(*at);
                (busy_now.is_some() || quiet < limits.quiet_for).then(|| WaitReason::Busy {
                    command: command.clone(),
                    quiet_left: limits.quiet_for.saturating_sub(quiet),
                })
            })
        };
        Self::ruling(limits, obs, reason)
    }

    /// [`StartGate::decide`], with the queue's last word once the gate itself says go
    /// (`--wait-fit`): its `Err` keeps the job waiting for its reason, and past
    /// `--start-timeout` gives up, as the gate's own reasons do. `queue` is asked only then.
    pub fn decide_queued(
        &mut self,
        limits: &Limits,
        obs: &Observation,
        busy_now: Option<&str>,
        queue: impl FnOnce() -> Result<(), WaitReason>,
    ) -> StartDecision {
        match self.decide(limits, obs, busy_now) {
            StartDecision::Go => Self::ruling(limits, obs, queue().err()),
            other => other,
        }
    }

    /// Go without a reason to wait; with one, wait, or give up once `--start-timeout` has
    /// passed.
    fn ruling(limits: &Limits, obs: &Observation, reason: Option<WaitReason>) -> StartDecision {
        match reason {
            None => StartDecision::Go,
            Some(r) if obs.t >= limits.start_timeout => StartDecision::GiveUp(r),
            Some(r) => StartDecision::Wait(r),
        }
    }
}
