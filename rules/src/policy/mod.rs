//! Pure decisions: when a guarded job may start, when it must be stopped, its verdict, and
//! which notification events it produces (with hysteresis).
//!
//! Nothing here reads the clock or the OS: callers feed observations (`t` since the job's
//! start, swap, free %, footprint) and act on what comes back, so every rule is table-tested
//! with recorded samples, including real macOS traces (`core/tests/fixtures/macos-traces`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The budget a guarded job runs under (`headroom guard` flags and their defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Wait until free memory is at least this, percent (`--wait-free`, 40).
    pub wait_free_percent: f64,
    /// Stop when swap grows more than this over its level at the start (`--swap-budget`, 8G).
    pub swap_budget_bytes: u64,
    /// Stop when swap in use passes this absolute amount (`--swap-limit`).
    pub swap_limit_bytes: Option<u64>,
    /// Stop when free memory stays below this for two consecutive samples (`--kill-free`, 10).
    pub kill_free_percent: f64,
    /// With busy patterns: how long none may have matched before starting (`--quiet-for`, 1m).
    pub quiet_for: Duration,
    /// Give up waiting for room after this long (`--start-timeout`, 30m).
    pub start_timeout: Duration,
    /// Swap growth up to this still "fits" (64 MiB).
    pub fits_tolerance_bytes: u64,
    /// A notification each time swap growth passes another multiple of this (512 MiB).
    pub notify_step_bytes: u64,
    /// At most one swap-growth notification per job in this time (1 min).
    pub notify_min_interval: Duration,
    /// A run that fits is "tight" when compressed memory (macOS compressor, Linux zswap) grew
    /// more than this (`--tight-compressed`, 2 GiB).
    pub tight_compressed_bytes: u64,
    /// A run that fits is "tight" when free memory fell under this, percent (`--tight-free`,
    /// 20: the staged runs of the real traces stayed at or above 33 %, the runs that did not
    /// fit fell to 6-25 %).
    pub tight_free_percent: f64,
    /// What passing the budget (or the free floor) does: stop the job, or pause it
    /// (`--on-budget`, stop).
    #[serde(default)]
    pub on_budget: OnBudget,
    /// Pauses at most; the crossing after the last one stops the job (`--max-pauses`, 3).
    #[serde(default = "default_max_pauses")]
    pub max_pauses: u32,
    /// Resume a paused job by itself once free memory is back at or above this, percent,
    /// and swap has not grown for [`Limits::resume_calm`] (`--resume-free`; none:
    /// only on request).
    #[serde(default)]
    pub resume_free_percent: Option<f64>,
    /// How long swap must have stopped growing before a paused job resumes by itself (15 s).
    #[serde(default = "default_resume_calm")]
    pub resume_calm: Duration,
    /// Look-ahead for the growth projection: stop when swap, growing at its rate over the
    /// last look-ahead (at least), would pass the budget within this time, on two checks in
    /// a row. The job engine sets it to the current check interval: before the next check.
    pub lookahead: Duration,
}

/// The fastest check while guarding.
pub const MIN_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// Swap growth rate assumed at least when spacing checks (a fast fill onto an SSD).
pub const ASSUMED_FILL_BYTES_PER_SECOND: f64 = (1u64 << 30) as f64;
/// Checks wanted, at the assumed or observed rate, before swap could reach the budget.
const CHECKS_BEFORE_BUDGET: f64 = 4.0;
/// How much swap history the growth rate is computed over, at most.
const RATE_HISTORY: Duration = Duration::from_secs(10);

/// The adaptive check interval of a guarded job, as earlyoom spaces its checks: `base` (the
/// poll the user set) while swap is far from the budget, shorter as it nears it or grows
/// fast, never under [`MIN_CHECK_INTERVAL`]. Time to the budget (or the swap limit) at the
/// observed rate, or at least [`ASSUMED_FILL_BYTES_PER_SECOND`], split into four checks.
pub fn check_interval(
    limits: &Limits,
    growth_bytes: u64,
    swap_used_bytes: u64,
    rate_bytes_per_second: f64,
    base: Duration,
) -> Duration {
    let mut remaining = limits.swap_budget_bytes.saturating_sub(growth_bytes);
    if let Some(limit) = limits.swap_limit_bytes {
        remaining = remaining.min(limit.saturating_sub(swap_used_bytes));
    }
    let rate = rate_bytes_per_second.max(ASSUMED_FILL_BYTES_PER_SECOND);
    let seconds = remaining as f64 / rate / CHECKS_BEFORE_BUDGET;
    let base = base.max(MIN_CHECK_INTERVAL);
    Duration::try_from_secs_f64(seconds)
        .unwrap_or(base)
        .clamp(MIN_CHECK_INTERVAL, base)
}

/// A look aimed at the crossing comes this long after the moment swap, growing at its rate,
/// would pass the budget.
pub const AIM_AFTER: Duration = Duration::from_millis(2);
/// A look aimed at the crossing comes at least this long after the one that aims it.
pub const AIM_MIN: Duration = Duration::from_millis(10);

/// When to look again, before or at the next regular check due in `next`, when swap,
/// growing at `rate_bytes_per_second`, would pass the budget (or the swap limit) before
/// `next`: just after that moment ([`AIM_AFTER`], at least [`AIM_MIN`] after this look, at
/// most at `next`). `None` when it would not (no growth, no budget left, or the crossing
/// comes later). A crossing is then seen within a few milliseconds of it, not up to a whole
/// interval later, at the cost of a look or two near it.
pub fn aim(
    limits: &Limits,
    growth_bytes: u64,
    swap_used_bytes: u64,
    rate_bytes_per_second: f64,
    next: Duration,
) -> Option<Duration> {
    let mut remaining = limits.swap_budget_bytes.saturating_sub(growth_bytes);
    if let Some(limit) = limits.swap_limit_bytes {
        remaining = remaining.min(limit.saturating_sub(swap_used_bytes));
    }
    if remaining == 0 || rate_bytes_per_second <= 0.0 {
        return None;
    }
    let crossing = Duration::try_from_secs_f64(remaining as f64 / rate_bytes_per_second).ok()?;
    (crossing < next).then(|| (crossing + AIM_AFTER).max(AIM_MIN).min(next))
}

/// How long the driver holds quiet readings ([`quiet`]) at most before it has them judged:
/// what a held reading leads to is done this late at the most.
pub const QUIET_HOLD: Duration = Duration::from_secs(10);

/// Free memory at least this many points above the free floor for a guarded job's next
/// check to be a light one ([`light_check_ok`]).
pub const LIGHT_ROOM_PERCENT: f64 = 10.0;

/// Whether a running guarded job's next check may be a light one. A light check reads swap
/// exactly (on Linux `sysinfo(2)` gives `meminfo`'s own swap figures, and under a limit the
/// cgroup's files are read), so the budget and the swap limit are judged as by a full one;
/// free memory on the host is estimated (free RAM now, plus the reclaimable cache of the
/// last full read, at most a second old). So a light check will do while free memory is at
/// least [`LIGHT_ROOM_PERCENT`] above the floor; nearer, every check is a full read.
pub fn light_check_ok(limits: &Limits, obs: &Observation) -> bool {
    obs.free_percent >= limits.kill_free_percent + LIGHT_ROOM_PERCENT
}

/// The check interval under a memory limit (a cgroup's: the OOM killer acts at the limit,
/// and there may be no swap to take the overflow): shorter as the room left above the free
/// floor shrinks, that room split into four checks at [`ASSUMED_FILL_BYTES_PER_SECOND`], never
/// under [`MIN_CHECK_INTERVAL`] nor over `base`. Without a limit, `base`.
pub fn room_check_interval(limits: &Limits, obs: &Observation, base: Duration) -> Duration {
    let base = base.max(MIN_CHECK_INTERVAL);
    let Some(limit) = obs.limit_bytes else {
        return base;
    };
    let room_percent = (obs.free_percent - limits.kill_free_percent).max(0.0);
    let room_bytes = room_percent / 100.0 * limit as f64;
    let seconds = room_bytes / ASSUMED_FILL_BYTES_PER_SECOND / CHECKS_BEFORE_BUDGET;
    Duration::try_from_secs_f64(seconds)
        .unwrap_or(base)
        .clamp(MIN_CHECK_INTERVAL, base)
}

/// Samples in a row below `kill_free_percent` that stop a job (one under a memory limit: the
/// OOM killer gives no second look).
pub const LOW_FREE_STRIKES: u32 = 2;
/// Checks in a row whose growth projection passes the budget that stop a job.
pub const PROJECTED_CROSSINGS: u32 = 2;
/// Fraction of the swap budget at which a warning is sent.
pub const WARN_FRACTION: f64 = 0.8;
/// The warning re-arms only after growth falls back under this fraction of the budget.
pub const WARN_REARM_FRACTION: f64 = 0.6;

impl Default for Limits {
    fn default() -> Self {
        use crate::defaults as d;
        Limits {
            wait_free_percent: d::WAIT_FREE_PERCENT,
            swap_budget_bytes: d::SWAP_BUDGET_BYTES,
            swap_limit_bytes: None,
            kill_free_percent: d::KILL_FREE_PERCENT,
            quiet_for: d::QUIET_FOR,
            start_timeout: d::START_TIMEOUT,
            fits_tolerance_bytes: d::FITS_TOLERANCE_BYTES,
            notify_step_bytes: d::NOTIFY_STEP_BYTES,
            notify_min_interval: d::NOTIFY_MIN_INTERVAL,
            tight_compressed_bytes: d::TIGHT_COMPRESSED_BYTES,
            tight_free_percent: d::TIGHT_FREE_PERCENT,
            on_budget: OnBudget::Stop,
            max_pauses: d::MAX_PAUSES,
            resume_free_percent: None,
            resume_calm: d::RESUME_CALM,
            lookahead: d::POLL,
        }
    }
}

/// Swap growth under this, between readings, still counts as "not growing" while paused.
pub const CALM_TOLERANCE_BYTES: u64 = 16 << 20;

fn default_max_pauses() -> u32 {
    crate::defaults::MAX_PAUSES
}

fn default_resume_calm() -> Duration {
    crate::defaults::RESUME_CALM
}

/// What a guard does when a job passes its budget or the free floor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnBudget {
    /// Stop it: SIGTERM, then SIGKILL after the grace.
    #[default]
    Stop,
    /// Pause it (SIGSTOP) until resumed; past `max_pauses`, stop it.
    Pause,
    /// Interrupt it: SIGINT to its leader (Python raises `KeyboardInterrupt` in the running
    /// cell or script, the process and its state live on). Its budget then counts from swap
    /// in use at the interrupt, [`INTERRUPT_HARD_FRACTION`] of it: swap that still grows that
    /// much stops the job; swap that stops growing for `resume_calm` gives it its whole
    /// budget again, from swap in use then.
    Interrupt,
}

/// After an interrupt at the budget, the share of the budget swap may still grow before the
/// job is stopped (its hard limit).
pub const INTERRUPT_HARD_FRACTION: f64 = 0.5;

impl OnBudget {
    /// `stop`, `pause` or `interrupt`, as the flag and the settings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            OnBudget::Stop => "stop",
            OnBudget::Pause => "pause",
            OnBudget::Interrupt => "interrupt",
        }
    }

    /// The choice named by [`OnBudget::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "stop" => Some(OnBudget::Stop),
            "pause" => Some(OnBudget::Pause),
            "interrupt" => Some(OnBudget::Interrupt),
            _ => None,
        }
    }
}

/// One observation of the system (and the job, once running).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Observation {
    /// Time since waiting (start gate) or running (stop rules) began.
    pub t: Duration,
    /// System swap in use.
    pub swap_used_bytes: u64,
    /// System free memory, percent.
    pub free_percent: f64,
    /// Footprint of the job's process tree, if known.
    pub footprint_bytes: Option<u64>,
    /// Memory held compressed (macOS compressor, Linux zswap), where the OS has it.
    #[serde(default)]
    pub compressed_bytes: Option<u64>,
    /// Memory in use from the kernel's page counts (macOS), where the OS has them: what a
    /// run's need is measured by there ([`headroom_model::counters::SystemCounters::in_use_bytes`]).
    #[serde(default)]
    pub in_use_bytes: Option<u64>,
    /// How much the footprints of the other jobs running grew since this job started, and
    /// how old that word is, where known: what its share of the rise of memory in use is
    /// weighed against ([`share`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others: Option<Others>,
    /// The memory not in use now, where the OS counts memory in use by pages
    /// ([`headroom_model::counters::SystemCounters::room_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room_bytes: Option<u64>,
    /// The kernel's OOM kills so far (host-wide count; Linux), where the OS has it.
    #[serde(default)]
    pub oom_kills: Option<u64>,
    /// The memory limit Headroom runs under (a cgroup's), where one binds.
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    /// The kernel's high-water mark of the job's memory (a cgroup of its own), where known:
    /// the peak footprint is at least this.
    #[serde(default)]
    pub kernel_peak_bytes: Option<u64>,
}

/// The other jobs beside the one judged, as one observation weighs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Others {
    /// How much their footprints grew since the judged job started, bytes.
    pub growth_bytes: u64,
    /// How old the oldest of their footprints is (another guard's job file holds the one of
    /// its last publication): the judged job's share is weighed with its own reading of
    /// that moment, not of now ([`Ledger`] keeps its recent readings).
    pub lag: Duration,
}

impl Observation {
    /// What a reading of `system` at `t` says of the machine. What only the job's own reading
    /// says (its footprint, its kernel peak, its own cgroup's OOM count) is the caller's to set.
    pub fn of_system(t: Duration, system: &headroom_model::counters::SystemCounters) -> Self {
        Observation {
            t,
            swap_used_bytes: system.swap_used_bytes,
            free_percent: system.free_percent,
            footprint_bytes: None,
            compressed_bytes: system.compressed_bytes,
            in_use_bytes: system.in_use_bytes,
            others: None,
            room_bytes: system.in_use_bytes.map(|_| system.room_bytes()),
            oom_kills: system.oom_kills,
            limit_bytes: system.cgroup.as_ref().map(|c| c.limit_bytes),
            kernel_peak_bytes: None,
        }
    }
}

mod events;
mod ledger;
pub mod order;
pub mod quiet;
mod reasons;
pub mod share;
mod start;
mod verdict;

pub use events::{EventGate, JobEvent};
pub use ledger::Ledger;
pub use reasons::{EndReason, StopReason, Survivor};
pub use start::{StartDecision, StartGate, WaitReason};
pub use verdict::{times, OomKilled, RecordedRun, Tightness, Verdict};

#[cfg(test)]
mod tests;
