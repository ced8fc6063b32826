//! A running job's ledger: peaks, lows, the swap rate and strikes, the stop rules applied
//! to each observation, and the figures of its verdict.

use std::collections::VecDeque;
use std::time::Duration;

use super::reasons::{EndReason, StopReason};
use super::verdict::{OomKilled, Tightness, Verdict};
use super::{Limits, Observation, LOW_FREE_STRIKES, PROJECTED_CROSSINGS, RATE_HISTORY};

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
    /// Free memory at the first observation, percent: the run's start.
    free_start_percent: Option<f64>,
    low_free_strikes: u32,
    last_t: Duration,
    /// Compressed memory at the first reading that had it, and its highest since.
    compressed_start_peak: Option<(u64, u64)>,
    /// Memory in use (page counts) at the start.
    in_use_start_bytes: Option<u64>,
    /// The most the job took of memory in use since ([`super::share`]).
    in_use_taken_bytes: Option<u64>,
    /// Its recent readings (time, rise of memory in use, own footprint), for other jobs'
    /// footprints read a moment ago (their job files): its share is weighed as of then.
    in_use_recent: VecDeque<(Duration, u64, u64)>,
    /// Recent (time, swap in use) observations, for the growth rate over a window.
    recent: VecDeque<(Duration, u64)>,
    /// The growth rate at the last observation, bytes per second.
    rate_bytes_per_second: f64,
    /// Observations in a row whose projection passed the budget.
    projected_crossings: u32,
    /// The kernel's OOM-kill count at the first and the last observation that had it.
    oom_kills_first_last: Option<(u64, u64)>,
    /// The memory limit of the last observation that had one.
    limit_bytes: Option<u64>,
}

/// How many recent readings a ledger keeps for weighing its share as of another job's
/// older footprint, and over how long at most (a job file is at most a few seconds old).
const IN_USE_RECENT: usize = 64;
const IN_USE_WINDOW: Duration = Duration::from_secs(10);

/// SIGKILL's number (the same on every POSIX system): what the OOM killer sends.
const SIGKILL: i32 = 9;

impl Ledger {
    /// The OOM killer ended the job: SIGKILL ended it while the kernel's OOM-kill count went
    /// up (the count is the host's, cgroup OOMs included, so another process's OOM kill at
    /// the same moment would be taken for the job's: a SIGKILL at such a moment is a
    /// verdict either way).
    fn oom_killed(&self, ended: &EndReason) -> Option<OomKilled> {
        let (first, last) = self.oom_kills_first_last?;
        let killed = matches!(ended, EndReason::Signaled { signal: SIGKILL }) && last > first;
        killed.then_some(OomKilled {
            limit_bytes: self.limit_bytes,
        })
    }

    /// A job starting with `swap_start_bytes` of swap in use.
    pub fn new(swap_start_bytes: u64) -> Self {
        Ledger {
            swap_start_bytes,
            budget_base_bytes: swap_start_bytes,
            swap_peak_bytes: swap_start_bytes,
            peak_footprint_bytes: None,
            lowest_free_percent: None,
            free_start_percent: None,
            low_free_strikes: 0,
            last_t: Duration::ZERO,
            compressed_start_peak: None,
            in_use_start_bytes: None,
            in_use_taken_bytes: None,
            in_use_recent: VecDeque::new(),
            recent: VecDeque::new(),
            rate_bytes_per_second: 0.0,
            projected_crossings: 0,
            oom_kills_first_last: None,
            limit_bytes: None,
        }
    }

    /// Swap in use when the job started.
    pub fn swap_start_bytes(&self) -> u64 {
        self.swap_start_bytes
    }

    /// Free memory at the job's first observation (its start), percent.
    pub fn free_start_percent(&self) -> Option<f64> {
        self.free_start_percent
    }

    /// Sets free memory at the job's start, for a job taken up again after a restart (its
    /// first observation then is not its start).
    pub fn set_free_start_percent(&mut self, percent: Option<f64>) {
        self.free_start_percent = percent;
    }

    /// The most the job took so far of memory in use (page counts), bytes: its share of the
    /// rise since its start, at least its footprint ([`super::share::taken_bytes`]).
    pub fn in_use_taken_bytes(&self) -> Option<u64> {
        self.in_use_taken_bytes
    }

    /// Memory in use (page counts) at the job's start, bytes, where the OS has it.
    pub fn in_use_start_bytes(&self) -> Option<u64> {
        self.in_use_start_bytes
    }

    /// Sets memory in use at the job's start (see [`Ledger::set_free_start_percent`]).
    pub fn set_in_use_start_bytes(&mut self, bytes: Option<u64>) {
        self.in_use_start_bytes = bytes;
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

    /// The peak footprint seen so far.
    pub fn peak_footprint_bytes(&self) -> Option<u64> {
        self.peak_footprint_bytes
    }

    /// Peak growth so far.
    pub fn peak_growth_bytes(&self) -> u64 {
        self.swap_peak_bytes.saturating_sub(self.swap_start_bytes)
    }

    /// Records what the reading that found the job gone says of its end: the kernel's OOM
    /// count, the limit and the kernel's own peak of the job's memory (the sampled peaks
    /// stay those of the job's life). Every observation records them too.
    pub fn record_end(&mut self, obs: &Observation) {
        if let Some(f) = obs.kernel_peak_bytes {
            self.peak_footprint_bytes = Some(self.peak_footprint_bytes.map_or(f, |p| p.max(f)));
        }
        if let Some(kills) = obs.oom_kills {
            let (_, last) = self.oom_kills_first_last.get_or_insert((kills, kills));
            *last = kills;
        }
        self.limit_bytes = obs.limit_bytes.or(self.limit_bytes);
    }

    /// Records an observation; with limits (a guard), says whether to stop the job now.
    pub fn observe(&mut self, limits: Option<&Limits>, obs: &Observation) -> Option<StopReason> {
        self.record(obs, limits.map_or(Duration::ZERO, |c| c.lookahead));
        self.judge(limits?, obs)
    }

    /// Records an observation (peaks, lows, the swap rate over `window` or more) without
    /// judging it.
    pub fn record(&mut self, obs: &Observation, window: Duration) {
        self.swap_peak_bytes = self.swap_peak_bytes.max(obs.swap_used_bytes);
        if let Some(f) = obs.footprint_bytes {
            self.peak_footprint_bytes = Some(self.peak_footprint_bytes.map_or(f, |p| p.max(f)));
        }
        self.free_start_percent.get_or_insert(obs.free_percent);
        self.lowest_free_percent = Some(
            self.lowest_free_percent
                .map_or(obs.free_percent, |l| l.min(obs.free_percent)),
        );
        self.last_t = self.last_t.max(obs.t);
        self.record_end(obs);
        if let Some(c) = obs.compressed_bytes {
            let (_, peak) = self.compressed_start_peak.get_or_insert((c, c));
            *peak = (*peak).max(c);
        }
        if let Some(used) = obs.in_use_bytes {
            self.record_taken(obs, used);
        }
        self.rate_bytes_per_second = self.swap_rate(obs, window);
    }

    /// What the job took of memory in use (`used` now): its share of the rise, weighed
    /// against the other jobs' growth as of when their footprints were read (its own reading
    /// of that moment), and at least its footprint now ([`super::share`]).
    fn record_taken(&mut self, obs: &Observation, used: u64) {
        let start = *self.in_use_start_bytes.get_or_insert(used);
        // The room at its start: what is not in use now, and what it and the others took since.
        let room_start = obs.room_bytes.map_or(u64::MAX, |room| {
            room.saturating_add(used).saturating_sub(start)
        });
        let own = super::share::own_bytes(obs.footprint_bytes.unwrap_or(0), room_start);
        let rise = used.saturating_sub(start);
        self.in_use_recent.push_back((obs.t, rise, own));
        while self.in_use_recent.len() > IN_USE_RECENT
            || self
                .in_use_recent
                .front()
                .is_some_and(|&(t, _, _)| obs.t.saturating_sub(t) > IN_USE_WINDOW)
        {
            self.in_use_recent.pop_front();
        }
        let share = match obs.others {
            None => super::share::taken_bytes(rise, own, 0),
            Some(others) => {
                let then = obs.t.saturating_sub(others.lag);
                let (_, rise_then, own_then) = self
                    .in_use_recent
                    .iter()
                    .rev()
                    .find(|&&(t, _, _)| t <= then)
                    .or(self.in_use_recent.front())
                    .copied()
                    .unwrap_or((obs.t, rise, own));
                super::share::taken_bytes(rise_then, own_then, others.growth_bytes)
            }
        };
        let taken = share.max(own);
        self.in_use_taken_bytes = Some(self.in_use_taken_bytes.map_or(taken, |t| t.max(taken)));
    }

    /// The stop rules on an observation already recorded: whether to stop the job now.
    pub fn judge(&mut self, limits: &Limits, obs: &Observation) -> Option<StopReason> {
        self.judge_look(limits, obs, true)
    }

    /// [`Ledger::judge`] for a look aimed at the crossing between two regular checks
    /// ([`super::aim`]): every rule but the growth projection. The look comes just after
    /// the crossing the projection foresaw: a job still under its budget then grew slower
    /// than projected, and the projection starts again (it must hold on two regular checks
    /// in a row); the crossing itself is seen by the look after it, within milliseconds.
    pub fn judge_between(&mut self, limits: &Limits, obs: &Observation) -> Option<StopReason> {
        let stop = self.judge_look(limits, obs, false);
        if stop.is_none() {
            self.projected_crossings = 0;
        }
        stop
    }

    fn judge_look(
        &mut self,
        limits: &Limits,
        obs: &Observation,
        project: bool,
    ) -> Option<StopReason> {
        let rate = self.rate_bytes_per_second;
        let growth = self.budget_growth_bytes(obs);
        if growth > limits.swap_budget_bytes {
            return Some(StopReason::SwapBudget {
                growth_bytes: growth,
                budget_bytes: limits.swap_budget_bytes,
            });
        }
        // One burst, or a late check right after an early one, must not stop a job that
        // fits: the rate spans at least the look-ahead, and the crossing must hold twice.
        let projected = growth as f64 + rate * limits.lookahead.as_secs_f64();
        if project && projected > limits.swap_budget_bytes as f64 {
            self.projected_crossings += 1;
            if self.projected_crossings >= PROJECTED_CROSSINGS {
                return Some(StopReason::SwapBudgetProjected {
                    growth_bytes: growth,
                    rate_bytes_per_second: rate as u64,
                    budget_bytes: limits.swap_budget_bytes,
                });
            }
        } else if project {
            self.projected_crossings = 0;
        }
        if let Some(limit) = limits.swap_limit_bytes {
            if obs.swap_used_bytes > limit {
                return Some(StopReason::SwapLimit {
                    used_bytes: obs.swap_used_bytes,
                    limit_bytes: limit,
                });
            }
        }
        if obs.free_percent < limits.kill_free_percent {
            self.low_free_strikes += 1;
            let strikes = if obs.limit_bytes.is_some() {
                1
            } else {
                LOW_FREE_STRIKES
            };
            if self.low_free_strikes >= strikes {
                return Some(StopReason::LowFree {
                    free_percent: obs.free_percent,
                    floor_percent: limits.kill_free_percent,
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
    /// `limits.tight_compressed_bytes`, or free memory fell under `limits.tight_free_percent`.
    pub fn tightness(&self, limits: &Limits) -> Option<Tightness> {
        let compressed = self
            .compressed_start_peak
            .map(|(start, peak)| peak.saturating_sub(start))
            .filter(|&g| g > limits.tight_compressed_bytes);
        let low = self
            .lowest_free_percent
            .filter(|&l| l < limits.tight_free_percent);
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
        let oom_killed = self.oom_killed(&ended);
        Verdict {
            fits: Verdict::fit_by(growth, fits_tolerance_bytes, &ended, oom_killed.as_ref()),
            oom_killed,
            swap_growth_bytes: growth,
            swap_start_bytes: self.swap_start_bytes,
            peak_footprint_bytes: self.peak_footprint_bytes,
            lowest_free_percent: self.lowest_free_percent,
            in_use_taken_bytes: self.in_use_taken_bytes(),
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
