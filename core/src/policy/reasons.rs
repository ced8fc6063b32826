//! Why a guard stopped a job, and how a job ended: the reasons the verdict and the
//! notifications give.

use serde::{Deserialize, Serialize};

use crate::units::format_bytes;

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
        /// The signal the guard received.
        signal: i32,
    },
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndReason::Exited { code } => write!(f, "exited with code {code}"),
            EndReason::Signaled { signal } => write!(f, "killed by signal {signal}"),
            EndReason::Stopped { reason } => write!(f, "stopped by the guard: {reason}"),
            EndReason::Vanished => write!(f, "ended"),
            EndReason::Interrupted { signal } => write!(f, "stopped on signal {signal}"),
        }
    }
}
