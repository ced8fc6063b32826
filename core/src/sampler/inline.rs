//! Sampling on the caller's thread, on the same schedule and clock as the [`Sampler`]
//! thread: for a process with one job (`headroom guard`, `watch`), whose driver would
//! otherwise wake twice a tick (the sampler, then itself). Each wake-up has a fixed cost
//! (about 0.1 ms of CPU on a small VM, see `docs/benchmarks.md`), which dominates a guard's
//! own CPU when it checks every 100 ms.
//!
//! [`Sampler`]: super::Sampler

use std::time::{Duration, Instant, SystemTime};

use super::steady::Steadiness;
use super::{
    full_spacing_for, next_tick, read_sample, tracked_sample, ErrorOnce, Sample, FULL_EVERY,
    FULL_SPACING,
};
use headroom_model::counters::SystemCounters;
use headroom_os::counters::CounterSource;
use headroom_os::counters::Counters;
use headroom_os::members::MemberSet;
use headroom_rules::policy::quiet::Quiet;
use headroom_rules::policy::QUIET_HOLD;
use headroom_rules::sample::TrackedSample;

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
    /// Readings of quiet ticks not yet handed on, oldest first ([`InlineSampler::quiet_tick`]).
    held: Vec<Held>,
    /// The tracked jobs as the first held reading found them (nothing of them moves while
    /// readings are held).
    held_tracked: Vec<TrackedSample>,
}

/// A reading of a quiet tick: what its sample will hold besides the tracked jobs.
#[derive(Debug)]
struct Held {
    seq: u64,
    at: SystemTime,
    since_start: Duration,
    system: SystemCounters,
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
            held: Vec::new(),
            held_tracked: Vec::new(),
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
        let light = self.light_due(now, members) && !std::mem::take(&mut self.full_next);
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

    /// Whether a tick now may be a light one (by the schedule of full ones, see
    /// [`InlineSampler::tick`]).
    fn light_due(&self, now: Instant, members: usize) -> bool {
        let (ticks, at) = self.since_full;
        let spacing = self
            .steady
            .spacing(full_spacing_for(self.full_spacing, members));
        self.light_allowed
            && (ticks < FULL_EVERY || now.saturating_duration_since(at) < spacing)
            && self.last.is_some()
    }

    /// A quiet tick in place of a light one ([`headroom_rules::policy::quiet`]): reads what
    /// a light tick reads of the system and asks the members' exit watches, reads no
    /// member's file, and when the reading is quiet (`quiet` holds for it, no member
    /// ended) holds it for [`InlineSampler::take_held`] and schedules the next tick as
    /// [`InlineSampler::tick`] does. False, with nothing read that counts, when the tick is
    /// to be a regular one: the reading moved, a full tick is due, a member ended or needs
    /// its file read, or readings have been held for [`QUIET_HOLD`].
    pub fn quiet_tick(&mut self, quiet: &Quiet) -> bool {
        let now = Instant::now();
        let since_start = now.saturating_duration_since(self.origin);
        let held_long = self
            .held
            .first()
            .is_some_and(|h| since_start.saturating_sub(h.since_start) >= QUIET_HOLD);
        let members = self.tracked.iter().map(MemberSet::live_count).sum();
        if self.full_next || held_long || !self.light_due(now, members) {
            return false;
        }
        // What a light reading carries over is the last tick's: a quiet one leaves it (what it
        // reads fresh, the next reading reads again).
        let Some(last) = self.last.as_ref() else {
            return false;
        };
        let Ok(system) = self.counters.read_system_light(last) else {
            return false;
        };
        if !quiet.holds(system.swap_used_bytes, system.free_percent) {
            return false;
        }
        let first = self.held.is_empty();
        let mut tracked = Vec::new();
        for set in &self.tracked {
            let Some(memory) = set.quiet_look() else {
                return false;
            };
            if first {
                tracked.push(tracked_sample(set, Some(memory), set.live_members()));
            }
        }
        if first {
            self.held_tracked = tracked;
        }
        let reading = Some((system.swap_used_bytes, system.free_percent));
        self.steady.saw(false, reading, members);
        self.since_full.0 += 1;
        self.held.push(Held {
            seq: self.seq,
            at: SystemTime::now(),
            since_start,
            system,
        });
        self.seq += 1;
        self.next = next_tick(self.schedule_start, self.interval, now);
        true
    }

    /// The samples of the quiet ticks held so far, oldest first, each as the light tick in
    /// its place would have read it (the members' memory as the last look found it); none
    /// are held after.
    pub fn take_held(&mut self) -> Vec<Sample> {
        let tracked = std::mem::take(&mut self.held_tracked);
        self.held
            .drain(..)
            .map(|held| Sample {
                aimed: false,
                seq: held.seq,
                at: held.at,
                since_start: held.since_start,
                system: Some(held.system),
                tracked: tracked.clone(),
                error: None,
            })
            .collect()
    }

    /// Whether quiet ticks hold readings not yet taken.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use headroom_rules::policy::quiet::Quiet;

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

    /// A /proc whose `meminfo` says `available_kib` free and `swap_free_kib` of swap free
    /// (the recorded machine's other lines).
    fn write_meminfo(dir: &std::path::Path, available_kib: u64, swap_free_kib: u64) {
        let modern = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../os/tests/fixtures/proc-modern/meminfo");
        let text: String = std::fs::read_to_string(modern)
            .expect("the recorded meminfo")
            .lines()
            .map(|l| match l.split(':').next() {
                Some("MemAvailable") => format!("MemAvailable: {available_kib} kB\n"),
                Some("SwapFree") => format!("SwapFree: {swap_free_kib} kB\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        std::fs::write(dir.join("meminfo"), text).expect("meminfo written");
    }

    #[test]
    fn quiet_ticks_hold_still_readings_and_hand_them_on_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // 24,683,656 kB in all: 0.1 point is about 24,684 kB.
        let (swap_free, half) = (3_145_724, 12_341_828);
        write_meminfo(dir.path(), half, swap_free);
        std::fs::write(dir.path().join("vmstat"), "pswpout 0\n").unwrap();
        let mut s = InlineSampler::new(
            Counters::with_proc_root(dir.path()),
            Duration::from_millis(1),
        );
        s.allow_light(true);
        let first = s.tick();
        let system = first.system.as_ref().unwrap();
        let quiet = Quiet {
            swap_used_bytes: system.swap_used_bytes,
            free_percent: system.free_percent,
        };
        // (available kB, swap free kB, held)
        let table: [(u64, u64, bool); 5] = [
            (half, swap_free, true),
            (half - 10_000, swap_free, true),  // 0.04 point
            (half + 20_000, swap_free, true),  // 0.08 point
            (half - 30_000, swap_free, false), // 0.12 point: a move
            (half, swap_free - 4, false),      // one page swapped out
        ];
        let mut held_free = Vec::new();
        for (i, (available, swap, want)) in table.into_iter().enumerate() {
            write_meminfo(dir.path(), available, swap);
            assert_eq!(s.quiet_tick(&quiet), want, "row {i}");
            if want {
                held_free.push(available as f64);
            }
        }
        assert!(s.holds());
        let next = s.tick();
        let held = s.take_held();
        assert!(!s.holds(), "taken once");
        // In order, numbered between the ticks around them, each as read.
        let seqs: Vec<u64> = held.iter().map(|h| h.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert_eq!(next.seq, 4);
        let free: Vec<f64> = held
            .iter()
            .map(|h| h.system.as_ref().unwrap().free_percent)
            .collect();
        let total_kib = 24_683_656.0;
        let want: Vec<f64> = held_free.iter().map(|k| k / total_kib * 100.0).collect();
        for (got, want) in free.iter().zip(&want) {
            assert!((got - want).abs() < 1e-9, "{free:?} {want:?}");
        }
        assert!(held.windows(2).all(|w| w[0].since_start < w[1].since_start));
        assert!(held.iter().all(|h| h.since_start > first.since_start));
        assert!(held.iter().all(|h| h.since_start < next.since_start));
        // Not while light ticks are not allowed (a pause or a stop under way).
        s.allow_light(false);
        write_meminfo(dir.path(), half, swap_free);
        assert!(!s.quiet_tick(&quiet));
    }
}
