//! Why a guard stopped a job, and how a job ended: the reasons the verdict and the
//! notifications give.

use serde::{Deserialize, Serialize};

use headroom_model::units::format_bytes;

/// Why a guard stopped a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopReason {
    /// Swap grew past the budget.
    SwapBudget {
        /// Growth over the start, bytes.
        growth_bytes: u64,
        /// The budget, bytes.
        budget_bytes: u64,
    },
    /// Swap was growing so fast that it would pass the budget before the next check.
    SwapBudgetProjected {
        /// Growth over the start, bytes.
        growth_bytes: u64,
        /// Growth rate, bytes per second.
        rate_bytes_per_second: u64,
        /// The budget, bytes.
        budget_bytes: u64,
    },
    /// Swap in use passed the absolute limit.
    SwapLimit {
        /// Swap in use, bytes.
        used_bytes: u64,
        /// The limit, bytes.
        limit_bytes: u64,
    },
    /// Free memory stayed under the floor.
    LowFree {
        /// Free memory, percent.
        free_percent: f64,
        /// The floor, percent.
        floor_percent: f64,
    },
    /// The user asked (the app, `headroom stop`, a notification's "Stop").
    Requested,
    /// An older guarded job's budget was crossed and this job, younger, was paused in its
    /// place (a pause only, never a stop: see [`crate::policy::order`]).
    MakesRoom {
        /// The process that asked: the older job's guard (or, in the app, its leader).
        for_pid: Option<u32>,
    },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::SwapBudget {
                growth_bytes,
                budget_bytes,
            } => write!(
                f,
                "swap grew {} (budget {})",
                format_bytes(*growth_bytes),
                format_bytes(*budget_bytes)
            ),
            StopReason::SwapBudgetProjected {
                growth_bytes,
                rate_bytes_per_second,
                budget_bytes,
            } => write!(
                f,
                "swap grew {} at {}/s and would pass the budget {} before the next check",
                format_bytes(*growth_bytes),
                format_bytes(*rate_bytes_per_second),
                format_bytes(*budget_bytes)
            ),
            StopReason::SwapLimit {
                used_bytes,
                limit_bytes,
            } => write!(
                f,
                "swap in use {} passed the limit {}",
                format_bytes(*used_bytes),
                format_bytes(*limit_bytes)
            ),
            StopReason::LowFree {
                free_percent,
                floor_percent,
            } => write!(
                f,
                "free memory {free_percent:.0}% stayed under {floor_percent:.0}%"
            ),
            StopReason::Requested => write!(f, "on request"),
            StopReason::MakesRoom { for_pid } => {
                write!(f, "to make room for an older guarded job")?;
                if let Some(pid) = for_pid {
                    write!(f, " (pid {pid})")?;
                }
                write!(f, ": the youngest pauses first")
            }
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EndReason {
    /// It exited with this code.
    Exited {
        /// Exit code.
        code: i32,
    },
    /// A signal ended it (not ours).
    Signaled {
        /// Signal number.
        signal: i32,
    },
    /// The guard stopped it.
    Stopped {
        /// Why.
        reason: StopReason,
    },
    /// It went away (a watched process we cannot wait for).
    Vanished,
    /// The guard itself was interrupted and stopped it.
    Interrupted {
        /// The signal the driver (`headroom guard`) received.
        signal: i32,
    },
    /// The guard tried to stop it and could not: some members still ran at the last check
    /// (another user's process, one that survived SIGKILL).
    NotStopped {
        /// Why it was being stopped.
        reason: StopReason,
        /// The members left running, and why.
        survivors: Vec<Survivor>,
    },
}

/// A member a stop could not end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Survivor {
    /// Its pid.
    pub pid: u32,
    /// Why it is still there (the safety rule that refused it, or "alive after SIGKILL").
    pub why: String,
}

impl EndReason {
    /// True when the guard stopped the job (at a limit, on request or when interrupted), or
    /// tried to.
    pub fn by_the_guard(&self) -> bool {
        matches!(
            self,
            EndReason::Stopped { .. }
                | EndReason::Interrupted { .. }
                | EndReason::NotStopped { .. }
        )
    }

    /// The stop reason, when the guard stopped it at one of its limits (not on request).
    pub fn at_a_limit(&self) -> Option<&StopReason> {
        match self {
            EndReason::Stopped { reason } | EndReason::NotStopped { reason, .. }
                if !matches!(reason, StopReason::Requested | StopReason::MakesRoom { .. }) =>
            {
                Some(reason)
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndReason::Exited { code } => write!(f, "exited with code {code}"),
            EndReason::Signaled { signal } => write!(f, "killed by signal {signal}"),
            EndReason::Stopped { reason } => write!(f, "stopped by the guard: {reason}"),
            EndReason::Vanished => write!(f, "ended"),
            EndReason::Interrupted { signal } => write!(f, "stopped on signal {signal}"),
            EndReason::NotStopped { reason, survivors } => {
                let pids: Vec<String> = survivors
                    .iter()
                    .map(|s| format!("pid {} ({})", s.pid, s.why))
                    .collect();
                write!(
                    f,
                    "NOT stopped: the guard stopped it ({reason}) but {} still run: {}",
                    if survivors.len() == 1 {
                        "1 process".to_string()
                    } else {
                        format!("{} processes", survivors.len())
                    },
                    pids.join("; ")
                )
            }
        }
    }
}
