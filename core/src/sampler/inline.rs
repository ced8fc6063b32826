//! Sampling on the caller's thread, on the same schedule and clock as the [`Sampler`]
//! thread: for a process with one job (`headroom guard`, `watch`), whose driver would
//! otherwise wake twice a tick (the sampler, then itself). Each wake-up has a fixed cost
//! (about 0.1 ms of CPU on a small VM, see `docs/benchmarks.md`), which dominates a guard's
//! own CPU when it checks every 100 ms.
//!
//! [`Sampler`]: super::Sampler

use std::time::{Duration, Instant};

use super::steady::Steadiness;
use super::{
    full_spacing_for, next_tick, read_sample, ErrorOnce, Sample, FULL_EVERY, FULL_SPACING,
};
use headroom_model::counters::SystemCounters;
use headroom_os::counters::Counters;
use headroom_os::members::MemberSet;

/// A sampler without a thread: the caller sleeps [`InlineSampler::until_next`], then calls
/// [`InlineSampler::tick`].
#[derive(Debug)]
pub struct InlineSampler {
    counters: Counters,
    origin: Instant,
    interval: Duration,
    schedule_start: Instant,
    next: Instant,
    seq: u64,
    errors: ErrorOnce,
    tracked: Vec<MemberSet>,
    /// The system counters of the last tick, for the light ones ([`FULL_EVERY`]).
    last: Option<SystemCounters>,
    /// Ticks since the last full one, and when that was.
    since_full: (u64, Instant),
    /// Full ticks come this far apart at least ([`FULL_SPACING`]).
    full_spacing: Duration,
    /// Light ticks are allowed (the job runs; off until its driver says so).
    light_allowed: bool,
    /// The next tick is a full one.
    full_next: bool,
    /// How long the job has sat still: full ticks back off while it does.
    steady: Steadiness,
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
            next: now,
            seq: 0,
            errors: ErrorOnce::default(),
            tracked: Vec::new(),
            last: None,
            since_full: (0, now),
            full_spacing: FULL_SPACING,
            light_allowed: false,
            full_next: false,
            steady: Steadiness::default(),
        }
    }

    /// Tracks a job's members from the next tick on (a full one).
    pub fn track(&mut self, set: &MemberSet) {
        if !self.tracked.iter().any(|t| t.same_as(set)) {
            self.tracked.push(set.clone());
            self.last = None;
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
        self.next = next_tick(last, interval, last);
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

    /// Whether the ticks that follow may be light ones (while the job runs: see
    /// [`read_sample`]); when not (the default), every tick is a full one.
    pub fn allow_light(&mut self, allowed: bool) {
        self.light_allowed = allowed;
    }

    /// The next tick is a full one (a mark's sender may be a process born since the last
    /// tick: only a full one looks for new members).
    pub fn full_next(&mut self) {
        self.full_next = true;
    }

    /// Full ticks come at least `spacing` apart ([`FULL_SPACING`] by default).
    #[cfg(test)]
    pub fn space_full_ticks(&mut self, spacing: Duration) {
        self.full_spacing = spacing;
    }

    /// Reads one sample now and schedules the next tick on the clock's schedule (missed ticks
    /// are skipped; an extra tick, taken between two, does not move the next one). One tick
    /// in [`FULL_EVERY`], and no more than one each [`FULL_SPACING`] (further apart for a
    /// large job: [`full_spacing_for`]; and while the job sits still:
    /// [`super::steady`]), reads everything; the others are light ([`read_sample`]) while
    /// they are allowed.
    pub fn tick(&mut self) -> Sample {
        let now = Instant::now();
        let (ticks, at) = self.since_full;
        let members = self.tracked.iter().map(MemberSet::live_count).sum();
        let spacing = self
            .steady
            .spacing(full_spacing_for(self.full_spacing, members));
        let light = self.light_allowed
            && !std::mem::take(&mut self.full_next)
            && (ticks < FULL_EVERY || now.saturating_duration_since(at) < spacing)
            && self.last.is_some();
        let sample = read_sample(
            &self.counters,
            &self.tracked,
            &mut self.errors,
            self.seq,
            self.origin.elapsed(),
            self.last.as_ref().filter(|_| light),
        );
        self.last.clone_from(&sample.system);
        let reading = sample
            .system
            .as_ref()
            .map(|c| (c.swap_used_bytes, c.free_percent));
        let members_now = self.tracked.iter().map(MemberSet::live_count).sum();
        self.steady.saw(!light, reading, members_now);
        self.since_full = if light { (ticks + 1, at) } else { (1, now) };
        self.seq += 1;
        self.next = next_tick(self.schedule_start, self.interval, Instant::now());
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

    #[test]
    fn one_tick_in_five_reads_everything_and_every_tick_when_light_ones_are_not_allowed() {
        // A /proc whose page counts (vmstat) grow before every tick: a light tick hands on
        // the last full tick's count, a full one reads the new one.
        let dir = tempfile::tempdir().unwrap();
        let modern = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../os/tests/fixtures/proc-modern");
        std::fs::copy(modern.join("meminfo"), dir.path().join("meminfo")).unwrap();
        let vmstat = dir.path().join("vmstat");
        let mut s = InlineSampler::new(
            Counters::with_proc_root(dir.path()),
            Duration::from_millis(1),
        );
        s.space_full_ticks(Duration::ZERO);
        s.allow_light(true);
        let mut pages = 0u64;
        let mut tick = |s: &mut InlineSampler| {
            pages += 1;
            std::fs::write(&vmstat, format!("pswpout {pages}\n")).unwrap();
            s.tick().system.unwrap().swapped_out_bytes
        };
        let seen: Vec<u64> = (0..11).map(|_| tick(&mut s)).collect();
        // Ticks 0, 5 and 10 are full; the others hand on the count of the one before.
        assert!(seen[1..5].iter().all(|&c| c == seen[0]), "{seen:?}");
        assert!(seen[5] > seen[0], "{seen:?}");
        assert!(seen[6..10].iter().all(|&c| c == seen[5]), "{seen:?}");
        assert!(seen[10] > seen[5], "{seen:?}");
        // Not allowed (a pause or a stop under way): every tick is a full one.
        s.allow_light(false);
        let mut last = seen[10];
        for _ in 11..14 {
            let now = tick(&mut s);
            assert!(now > last, "a full tick");
            last = now;
        }
        s.allow_light(true);
        assert_eq!(tick(&mut s), last, "tick 14 is light again");
        last = tick(&mut s);
        assert_eq!(tick(&mut s), last, "tick 16 is light");
        s.full_next();
        assert!(tick(&mut s) > last, "tick 17 is full, as asked");
    }

    #[test]
    fn full_ticks_come_no_closer_than_their_spacing() {
        let dir = tempfile::tempdir().unwrap();
        let modern = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../os/tests/fixtures/proc-modern");
        std::fs::copy(modern.join("meminfo"), dir.path().join("meminfo")).unwrap();
        let vmstat = dir.path().join("vmstat");
        let mut s = InlineSampler::new(
            Counters::with_proc_root(dir.path()),
            Duration::from_millis(1),
        );
        s.space_full_ticks(Duration::from_millis(300));
        s.allow_light(true);
        let mut pages = 0u64;
        let mut tick = |s: &mut InlineSampler| {
            pages += 1;
            std::fs::write(&vmstat, format!("pswpout {pages}\n")).unwrap();
            s.tick().system.unwrap().swapped_out_bytes
        };
        let first = tick(&mut s);
        // Five ticks and more, back to back: all light (the spacing has not passed).
        let quick: Vec<u64> = (0..8).map(|_| tick(&mut s)).collect();
        assert!(quick.iter().all(|&c| c == first), "{quick:?}");
        std::thread::sleep(Duration::from_millis(300));
        let spaced = tick(&mut s);
        assert!(spaced > first, "full once the spacing passed");
        assert_eq!(tick(&mut s), spaced, "then light again");
    }
}
