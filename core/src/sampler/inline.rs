//! Sampling on the caller's thread, on the same schedule and clock as the [`Sampler`]
//! thread: for a process with one job (`headroom guard`, `watch`), whose driver would
//! otherwise wake twice a tick (the sampler, then itself). Each wake-up has a fixed cost
//! (about 0.1 ms of CPU on a small VM, see `docs/benchmarks.md`), which dominates a guard's
//! own CPU when it checks every 100 ms.
//!
//! [`Sampler`]: super::Sampler

use std::time::{Duration, Instant};

use super::{next_tick, read_sample, ErrorOnce, Sample};
use crate::counters::Counters;
use crate::members::MemberSet;

/// A sampler without a thread: the caller sleeps [`InlineSampler::until_next`], then calls
/// [`InlineSampler::tick`].
#[derive(Debug)]
pub struct InlineSampler {
    counters: Counters,
    origin: Instant,
    interval: Duration,
    schedule_start: Instant,
    n: u64,
    next: Instant,
    seq: u64,
    errors: ErrorOnce,
    tracked: Vec<MemberSet>,
}

impl InlineSampler {
    /// A sampler ticking every `interval`, the first tick due now.
    pub fn new(counters: Counters, interval: Duration) -> Self {
        let now = Instant::now();
        InlineSampler {
            counters,
            origin: now,
            interval: interval.max(Duration::from_millis(1)),
            schedule_start: now,
            n: 0,
            next: now,
            seq: 0,
            errors: ErrorOnce::default(),
            tracked: Vec::new(),
        }
    }

    /// Tracks a job's members from the next tick on.
    pub fn track(&mut self, set: &MemberSet) {
        if !self.tracked.iter().any(|t| t.same_as(set)) {
            self.tracked.push(set.clone());
        }
    }

    /// Changes the interval: the next tick comes one new interval after the last one (or
    /// now, if that has passed); the clock goes on. The same interval changes nothing.
    pub fn set_interval(&mut self, interval: Duration) {
        let interval = interval.max(Duration::from_millis(1));
        if interval == self.interval {
            return;
        }
        let last = self.next.checked_sub(self.interval).unwrap_or(self.origin);
        self.interval = interval;
        self.schedule_start = last;
        self.n = 0;
        (self.n, self.next) = next_tick(last, interval, 0, last);
    }

    /// Time until the next tick is due (zero when it is).
    pub fn until_next(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// This sampler's clock's zero.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Time on this sampler's clock now.
    pub fn clock(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Reads one sample now and schedules the next tick (missed ticks are skipped).
    pub fn tick(&mut self) -> Sample {
        let sample = read_sample(
            &self.counters,
            &self.tracked,
            &mut self.errors,
            self.seq,
            self.origin.elapsed(),
        );
        self.seq += 1;
        (self.n, self.next) = next_tick(self.schedule_start, self.interval, self.n, Instant::now());
        sample
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn one_clock_across_interval_changes() {
        let mut s = InlineSampler::new(Counters::new(), Duration::from_millis(30));
        assert_eq!(
            s.until_next(),
            Duration::ZERO,
            "the first tick is due at once"
        );
        let mut last = None;
        for k in 0..12 {
            if k == 4 {
                s.set_interval(Duration::from_millis(10));
            }
            if k == 8 {
                s.set_interval(Duration::from_millis(40));
            }
            std::thread::sleep(s.until_next());
            let sample = s.tick();
            assert!(sample.system.is_some());
            if let Some(prev) = last {
                assert!(sample.since_start > prev, "the clock went back");
            }
            last = Some(sample.since_start);
            assert!(s.until_next() <= Duration::from_millis(40));
        }
        assert!(s.clock() >= last.unwrap_or_default());
    }
}
