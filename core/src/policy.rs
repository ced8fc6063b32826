//! Pure decisions: when a guarded job may start, when it must be stopped, its verdict, and
//! which notification events it produces (with hysteresis).
//!
//! Nothing here reads the clock or the OS: callers feed observations (`t` since the job's
//! start, swap, free %, footprint) and act on what comes back, so every rule is table-tested
//! with recorded samples, including real macOS traces (`tests/fixtures/macos-traces`).

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::stages::{grew_swap, StageFigures};
use crate::units::{format_bytes, format_delta_bytes, format_duration};

/// The budget a guarded job runs under (`headroom guard` flags and their defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardConfig {
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
    /// and swap has not grown for [`GuardConfig::resume_calm`] (`--resume-free`; none:
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
    cfg: &GuardConfig,
    growth_bytes: u64,
    swap_used_bytes: u64,
    rate_bytes_per_second: f64,
    base: Duration,
) -> Duration {
    let mut remaining = cfg.swap_budget_bytes.saturating_sub(growth_bytes);
    if let Some(limit) = cfg.swap_limit_bytes {
        remaining = remaining.min(limit.saturating_sub(swap_used_bytes));
    }
    let rate = rate_bytes_per_second.max(ASSUMED_FILL_BYTES_PER_SECOND);
    let seconds = remaining as f64 / rate / CHECKS_BEFORE_BUDGET;
    let base = base.max(MIN_CHECK_INTERVAL);
    Duration::try_from_secs_f64(seconds)
        .unwrap_or(base)
        .clamp(MIN_CHECK_INTERVAL, base)
}

/// Samples in a row below `kill_free_percent` that stop a job.
pub const LOW_FREE_STRIKES: u32 = 2;
/// Checks in a row whose growth projection passes the budget that stop a job.
pub const PROJECTED_CROSSINGS: u32 = 2;
/// Fraction of the swap budget at which a warning is sent.
pub const WARN_FRACTION: f64 = 0.8;
/// The warning re-arms only after growth falls back under this fraction of the budget.
pub const WARN_REARM_FRACTION: f64 = 0.6;

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            wait_free_percent: 40.0,
            swap_budget_bytes: 8 << 30,
            swap_limit_bytes: None,
            kill_free_percent: 10.0,
            quiet_for: Duration::from_secs(60),
            start_timeout: Duration::from_secs(30 * 60),
            fits_tolerance_bytes: 64 << 20,
            notify_step_bytes: 512 << 20,
            notify_min_interval: Duration::from_secs(60),
            tight_compressed_bytes: 2 << 30,
            tight_free_percent: 20.0,
            on_budget: OnBudget::Stop,
            max_pauses: DEFAULT_MAX_PAUSES,
            resume_free_percent: None,
            resume_calm: DEFAULT_RESUME_CALM,
            lookahead: Duration::from_millis(500),
        }
    }
}

/// Pauses a job may have by default (`--max-pauses`).
pub const DEFAULT_MAX_PAUSES: u32 = 3;
/// Swap must have stopped growing this long before a paused job resumes by itself.
pub const DEFAULT_RESUME_CALM: Duration = Duration::from_secs(15);
/// Swap growth under this, between readings, still counts as "not growing" while paused.
pub const CALM_TOLERANCE_BYTES: u64 = 16 << 20;

fn default_max_pauses() -> u32 {
    DEFAULT_MAX_PAUSES
}

fn default_resume_calm() -> Duration {
    DEFAULT_RESUME_CALM
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
}

impl OnBudget {
    /// `stop` or `pause`, as the flag and the settings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            OnBudget::Stop => "stop",
            OnBudget::Pause => "pause",
        }
    }

    /// The choice named by [`OnBudget::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "stop" => Some(OnBudget::Stop),
            "pause" => Some(OnBudget::Pause),
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
}

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
        }
    }
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
        cfg: &GuardConfig,
        obs: &Observation,
        busy_now: Option<&str>,
    ) -> StartDecision {
        if let Some(command) = busy_now {
            self.last_busy = Some((obs.t, command.to_string()));
        }
        let over_limit = cfg
            .swap_limit_bytes
            .filter(|&limit| obs.swap_used_bytes.saturating_add(cfg.swap_budget_bytes) > limit);
        let reason = if obs.free_percent < cfg.wait_free_percent {
            Some(WaitReason::LowFree {
                free_percent: obs.free_percent,
                need_percent: cfg.wait_free_percent,
            })
        } else if let Some(limit_bytes) = over_limit {
            Some(WaitReason::SwapLimit {
                used_bytes: obs.swap_used_bytes,
                budget_bytes: cfg.swap_budget_bytes,
                limit_bytes,
            })
        } else {
            self.last_busy.as_ref().and_then(|(at, command)| {
                let quiet = obs.t.saturating_sub(*at);
                (busy_now.is_some() || quiet < cfg.quiet_for).then(|| WaitReason::Busy {
                    command: command.clone(),
                    quiet_left: cfg.quiet_for.saturating_sub(quiet),
                })
            })
        };
        match reason {
            None => StartDecision::Go,
            Some(r) if obs.t >= cfg.start_timeout => StartDecision::GiveUp(r),
            Some(r) => StartDecision::Wait(r),
        }
    }
}

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

/// The verdict on a finished job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// True when swap did not grow beyond the tolerance.
    pub fits: bool,
    /// Peak swap in use minus swap in use at the start.
    pub swap_growth_bytes: u64,
    /// Swap in use at the start.
    pub swap_start_bytes: u64,
    /// Peak footprint of the job's tree, if it was measured.
    pub peak_footprint_bytes: Option<u64>,
    /// Lowest system free memory seen, percent.
    pub lowest_free_percent: Option<f64>,
    /// How long the job ran.
    pub duration: Duration,
    /// How it ended.
    pub ended: EndReason,
    /// How many processes the job had in all (its members ever seen; 0 when unknown).
    #[serde(default)]
    pub processes: u32,
    /// Swap growth up to this still "fits" (the words name the stages that grew more).
    #[serde(default = "default_fits_tolerance_bytes")]
    pub fits_tolerance_bytes: u64,
    /// The job's stages, as its processes marked them (empty without marks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageFigures>,
    /// Set when it fit by the swap rule but was on the edge: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tight: Option<Tightness>,
    /// How many times it was paused (`--on-budget pause`, or on request).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pauses: u32,
    /// How long it was paused in all.
    #[serde(default, skip_serializing_if = "Duration::is_zero")]
    pub paused: Duration,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// "once", "twice", "3 times".
pub fn times(n: u32) -> String {
    match n {
        1 => "once".to_string(),
        2 => "twice".to_string(),
        n => format!("{n} times"),
    }
}

/// Why a run that fits was "tight": what passed its threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tightness {
    /// Growth of compressed memory, when it passed `tight_compressed_bytes`.
    pub compressed_growth_bytes: Option<u64>,
    /// Lowest free memory, when it fell under `tight_free_percent`.
    pub lowest_free_percent: Option<f64>,
}

impl std::fmt::Display for Tightness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(c) = self.compressed_growth_bytes {
            parts.push(format!("compressed {}", format_delta_bytes(c as i64)));
        }
        if let Some(l) = self.lowest_free_percent {
            parts.push(format!("lowest free {l:.0}%"));
        }
        write!(f, "{}", parts.join(", "))
    }
}

fn default_fits_tolerance_bytes() -> u64 {
    GuardConfig::default().fits_tolerance_bytes
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.tight, self.fits) {
            (Some(tight), true) => write!(f, "tight: {tight}; swap")?,
            (None, true) => write!(f, "fits: swap")?,
            (_, false) => write!(f, "doesn't fit: swap")?,
        }
        write!(f, " {}", format_delta_bytes(self.swap_growth_bytes as i64))?;
        let grew = grew_swap(&self.stages, self.fits_tolerance_bytes);
        if !grew.is_empty() {
            let parts: Vec<String> = grew
                .iter()
                .map(|s| {
                    format!(
                        "{} {}",
                        s.stage,
                        format_delta_bytes(s.swap_growth_bytes as i64)
                    )
                })
                .collect();
            write!(f, " ({})", parts.join(", "))?;
        }
        if let Some(p) = self.peak_footprint_bytes {
            write!(f, ", peak footprint {}", format_bytes(p))?;
        }
        if let Some(l) = self.lowest_free_percent {
            write!(f, ", lowest free {l:.0}%")?;
        }
        if self.processes > 1 {
            write!(f, ", {} processes", self.processes)?;
        }
        if self.pauses > 0 {
            let (n, all) = (times(self.pauses), format_duration(self.paused));
            write!(f, ", paused {n}")?;
            write!(
                f,
                "{}",
                if self.pauses > 1 {
                    format!(", {all} in all")
                } else {
                    format!(" for {all}")
                }
            )?;
        }
        write!(f, ", {}, {}", format_duration(self.duration), self.ended)
    }
}

/// The ledger of a guarded or watched job: what it has seen (peaks, lows, the swap rate,
/// strikes), the stop rules applied to each observation, and the verdict's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    swap_start_bytes: u64,
    /// Swap in use the budget is measured from: the start, or the last resume.
    budget_base_bytes: u64,
    swap_peak_bytes: u64,
    peak_footprint_bytes: Option<u64>,
    lowest_free_percent: Option<f64>,
    low_free_strikes: u32,
    last_t: Duration,
    /// Compressed memory at the first reading that had it, and its highest since.
    compressed_start_peak: Option<(u64, u64)>,
    /// Recent (time, swap in use) observations, for the growth rate over a window.
    recent: VecDeque<(Duration, u64)>,
    /// The growth rate at the last observation, bytes per second.
    rate_bytes_per_second: f64,
    /// Observations in a row whose projection passed the budget.
    projected_crossings: u32,
}

impl Ledger {
    /// A job starting with `swap_start_bytes` of swap in use.
    pub fn new(swap_start_bytes: u64) -> Self {
        Ledger {
            swap_start_bytes,
            budget_base_bytes: swap_start_bytes,
            swap_peak_bytes: swap_start_bytes,
            peak_footprint_bytes: None,
            lowest_free_percent: None,
            low_free_strikes: 0,
            last_t: Duration::ZERO,
            compressed_start_peak: None,
            recent: VecDeque::new(),
            rate_bytes_per_second: 0.0,
            projected_crossings: 0,
        }
    }

    /// Swap in use when the job started.
    pub fn swap_start_bytes(&self) -> u64 {
        self.swap_start_bytes
    }

    /// Swap growth now: current swap minus the start (0 if it shrank).
    pub fn growth_bytes(&self, obs: &Observation) -> u64 {
        obs.swap_used_bytes.saturating_sub(self.swap_start_bytes)
    }

    /// Swap growth counted against the budget: current swap minus the start, or minus the
    /// swap at the last resume (0 if it shrank).
    pub fn budget_growth_bytes(&self, obs: &Observation) -> u64 {
        obs.swap_used_bytes.saturating_sub(self.budget_base_bytes)
    }

    /// A resume grants a new budget, measured from `swap_used_bytes` (swap in use now); the
    /// verdict still counts growth from the job's start. The strikes restart; the rate
    /// history is kept, so a job that resumes at full speed is projected from its first check.
    pub fn rebase(&mut self, swap_used_bytes: u64) {
        self.budget_base_bytes = swap_used_bytes;
        self.projected_crossings = 0;
        self.low_free_strikes = 0;
    }

    /// Peak growth so far.
    pub fn peak_growth_bytes(&self) -> u64 {
        self.swap_peak_bytes.saturating_sub(self.swap_start_bytes)
    }

    /// Records an observation; with a config (a guard), says whether to stop the job now.
    pub fn observe(&mut self, cfg: Option<&GuardConfig>, obs: &Observation) -> Option<StopReason> {
        self.swap_peak_bytes = self.swap_peak_bytes.max(obs.swap_used_bytes);
        if let Some(f) = obs.footprint_bytes {
            self.peak_footprint_bytes = Some(self.peak_footprint_bytes.map_or(f, |p| p.max(f)));
        }
        self.lowest_free_percent = Some(
            self.lowest_free_percent
                .map_or(obs.free_percent, |l| l.min(obs.free_percent)),
        );
        self.last_t = self.last_t.max(obs.t);
        if let Some(c) = obs.compressed_bytes {
            let (_, peak) = self.compressed_start_peak.get_or_insert((c, c));
            *peak = (*peak).max(c);
        }
        let window = cfg.map_or(Duration::ZERO, |c| c.lookahead);
        let rate = self.swap_rate(obs, window);
        self.rate_bytes_per_second = rate;
        let cfg = cfg?;
        let growth = self.budget_growth_bytes(obs);
        if growth > cfg.swap_budget_bytes {
            return Some(StopReason::SwapBudget {
                growth_bytes: growth,
                budget_bytes: cfg.swap_budget_bytes,
            });
        }
        // One burst, or a late check right after an early one, must not stop a job that
        // fits: the rate spans at least the look-ahead, and the crossing must hold twice.
        let projected = growth as f64 + rate * cfg.lookahead.as_secs_f64();
        if projected > cfg.swap_budget_bytes as f64 {
            self.projected_crossings += 1;
            if self.projected_crossings >= PROJECTED_CROSSINGS {
                return Some(StopReason::SwapBudgetProjected {
                    growth_bytes: growth,
                    rate_bytes_per_second: rate as u64,
                    budget_bytes: cfg.swap_budget_bytes,
                });
            }
        } else {
            self.projected_crossings = 0;
        }
        if let Some(limit) = cfg.swap_limit_bytes {
            if obs.swap_used_bytes > limit {
                return Some(StopReason::SwapLimit {
                    used_bytes: obs.swap_used_bytes,
                    limit_bytes: limit,
                });
            }
        }
        if obs.free_percent < cfg.kill_free_percent {
            self.low_free_strikes += 1;
            if self.low_free_strikes >= LOW_FREE_STRIKES {
                return Some(StopReason::LowFree {
                    free_percent: obs.free_percent,
                    floor_percent: cfg.kill_free_percent,
                });
            }
        } else {
            self.low_free_strikes = 0;
        }
        None
    }

    /// Records `obs` and returns the swap growth rate over the last `window` or more: from
    /// the newest observation at least `window` old (0 while the job is younger than that,
    /// and when swap shrank), bytes per second.
    fn swap_rate(&mut self, obs: &Observation, window: Duration) -> f64 {
        self.recent.push_back((obs.t, obs.swap_used_bytes));
        let keep = RATE_HISTORY.max(window);
        while self
            .recent
            .front()
            .is_some_and(|&(t, _)| obs.t.saturating_sub(t) > keep)
        {
            self.recent.pop_front();
        }
        let from = self
            .recent
            .iter()
            .rev()
            .find(|&&(t, _)| t < obs.t && obs.t - t >= window);
        match from {
            Some(&(t, swap)) => {
                obs.swap_used_bytes.saturating_sub(swap) as f64 / (obs.t - t).as_secs_f64()
            }
            None => 0.0,
        }
    }

    /// Why a run that fits was on the edge, if it was: compressed memory grew past
    /// `cfg.tight_compressed_bytes`, or free memory fell under `cfg.tight_free_percent`.
    pub fn tightness(&self, cfg: &GuardConfig) -> Option<Tightness> {
        let compressed = self
            .compressed_start_peak
            .map(|(start, peak)| peak.saturating_sub(start))
            .filter(|&g| g > cfg.tight_compressed_bytes);
        let low = self
            .lowest_free_percent
            .filter(|&l| l < cfg.tight_free_percent);
        (compressed.is_some() || low.is_some()).then_some(Tightness {
            compressed_growth_bytes: compressed,
            lowest_free_percent: low,
        })
    }

    /// The growth rate at the last observation, bytes per second.
    pub fn rate_bytes_per_second(&self) -> f64 {
        self.rate_bytes_per_second
    }

    /// The verdict, once the job has ended.
    pub fn verdict(&self, fits_tolerance_bytes: u64, ended: EndReason) -> Verdict {
        let growth = self.peak_growth_bytes();
        Verdict {
            fits: growth <= fits_tolerance_bytes && !matches!(ended, EndReason::Stopped { .. }),
            swap_growth_bytes: growth,
            swap_start_bytes: self.swap_start_bytes,
            peak_footprint_bytes: self.peak_footprint_bytes,
            lowest_free_percent: self.lowest_free_percent,
            duration: self.last_t,
            ended,
            processes: 0,
            fits_tolerance_bytes,
            stages: Vec::new(),
            tight: None,
            pauses: 0,
            paused: Duration::ZERO,
        }
    }
}

#[path = "policy_events.rs"]
mod events;
pub use events::{EventGate, JobEvent};

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
