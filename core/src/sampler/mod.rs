//! The one sampling loop.
//!
//! A thread reads system counters every tick (default 0.5 s) and the memory of each tracked
//! job's members ([`MemberSet`]), and publishes an `Arc<Sample>` to every subscriber. Ticks
//! are scheduled at `start + n × interval`, so the loop does not drift; a tick that falls
//! behind skips ahead instead of bursting. There is one clock: `since_start` counts from the
//! sampler's start and never restarts; changing the interval only changes the spacing of
//! the ticks that follow. A read error is reported in the first sample that fails (and logged
//! once); later samples carry no error until reads succeed again, and sampling goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

mod inline;
pub mod recorded;
pub mod steady;
pub use inline::InlineSampler;

use headroom_model::counters::SystemCounters;
use headroom_model::members::Member;
use headroom_model::process::{ProcessIdentity, TreeMemory};
use headroom_os::counters::{CounterSource, Counters, Result};
use headroom_os::members::MemberSet;

use headroom_rules::sample::{Sample, TrackedSample};

/// How many samples a slow subscriber may fall behind before it misses some.
const SUBSCRIBER_BACKLOG: usize = 256;

/// Remembers the last error so each run of failures is reported once.
#[derive(Debug, Default)]
pub struct ErrorOnce {
    last: Option<String>,
}

impl ErrorOnce {
    /// Feeds one read result; returns the message when it is new.
    pub fn observe<T>(&mut self, result: &Result<T>) -> Option<String> {
        match result {
            Ok(_) => {
                if self.last.take().is_some() {
                    tracing::info!("memory counters readable again");
                }
                None
            }
            Err(e) => {
                let msg = e.to_string();
                if self.last.as_deref() == Some(msg.as_str()) {
                    None
                } else {
                    tracing::warn!(error = %msg, "reading memory counters failed");
                    self.last = Some(msg.clone());
                    Some(msg)
                }
            }
        }
    }
}

/// One check in this many reads everything ([`read_sample`] with no `last`); the others
/// are light (see [`read_sample`]).
pub const FULL_EVERY: u64 = 5;

/// Full checks come at least this far apart: at the default half-second checks one in
/// five is already 2.5 s apart; at the fastest (every 100 ms, near the budget) one in ten.
/// While the job sits still they come further apart ([`steady`]).
/// What a full check reads alone moves slowly or is kept by the kernel (new members, the
/// job cgroup's figures and peak, page counts, pressure, our cgroup's limit); what the stop
/// rules read, every check reads.
pub const FULL_SPACING: Duration = Duration::from_secs(1);

/// For a large job, full checks come this much further apart per member (a full look reads
/// every member's files; a light one, a few at most: `headroom_os::members::LIGHT_READS_AT_MOST`),
/// so that what a check costs on average grows little with the job: 100 members keep
/// [`FULL_SPACING`], 1,000 have a full look every 10 s, and none waits more than
/// [`FULL_SPACING_MAX`]. New members, and the members' memory, are seen at the full looks;
/// the stop rules read the system's swap and free memory at every check, and a pause or a
/// stop is verified by full looks only.
pub const FULL_SPACING_PER_MEMBER: Duration = Duration::from_millis(10);

/// The longest time between two full checks, whatever the job's size.
pub const FULL_SPACING_MAX: Duration = Duration::from_secs(30);

/// How far apart full checks come for jobs of `members` processes in all, at least
/// `spacing` (see [`FULL_SPACING_PER_MEMBER`]).
pub fn full_spacing_for(spacing: Duration, members: usize) -> Duration {
    let per_size =
        FULL_SPACING_PER_MEMBER.saturating_mul(u32::try_from(members).unwrap_or(u32::MAX));
    spacing.max(per_size.min(FULL_SPACING_MAX))
}

/// Reads one sample: system counters and every tracked job's members (each re-checked by
/// pid and start time).
///
/// With `last` (the system counters of the sample before it), a light check, for a job that
/// runs (the driver asks for full checks while a pause or a stop is under way or held):
/// what the stop rules need is read fresh (swap in use and free memory, under a limit that
/// binds our cgroup's usage), and each known member, its state and its memory; the rest is
/// as the last full check read it: the kernel's page and swap counts, the OOM counts,
/// pressure, our cgroup's limit, a job's own memory cgroup's figures (the kernel keeps its
/// peak) ([`CounterSource::read_system_light`], [`MemberSet::refresh_light`]). New members
/// are looked for at the full checks. When a member is gone (the job may be ending) the
/// check is a full one after all.
pub fn read_sample(
    counters: &impl CounterSource,
    tracked: &[MemberSet],
    errors: &mut ErrorOnce,
    seq: u64,
    since_start: Duration,
    last: Option<&SystemCounters>,
) -> Sample {
    let mut full = last.is_none();
    let tracked = tracked
        .iter()
        .map(|set| {
            let light = last.and_then(|_| set.refresh_light(counters));
            let (memory, members) = light.unwrap_or_else(|| {
                full = true;
                set.refresh(counters)
            });
            tracked_sample(set, memory, members)
        })
        .collect();
    let system = match last {
        Some(last) if !full => counters.read_system_light(last),
        _ => counters.read_system(),
    };
    let error = errors.observe(&system);
    Sample {
        aimed: false,
        seq,
        at: SystemTime::now(),
        since_start,
        system: system.ok(),
        tracked,
        error,
    }
}

/// Job `set` at one tick: its members' `memory` and the live `members` a look found, with
/// what the set keeps of its cgroup.
fn tracked_sample(
    set: &MemberSet,
    memory: Option<TreeMemory>,
    members: Vec<Member>,
) -> TrackedSample {
    TrackedSample {
        identity: set.root(),
        memory,
        members,
        kernel_peak_bytes: set.kernel_peak_bytes(),
        in_own_cgroup: set.in_own_memory_cgroup(),
        cgroup_oom_kills: set.cgroup_oom_kills(),
    }
}

/// The deadline of the next tick after `now` for a schedule `start + n × interval`: the
/// first slot after `now`. The schedule is the clock's, not a count of ticks: a tick taken
/// between two slots (an extra one, for a mark or a signal) does not move the next regular
/// one, and ticks already missed are skipped, never run in a burst.
pub fn next_tick(start: Instant, interval: Duration, now: Instant) -> Instant {
    // Nanoseconds in a u64 last 584 years: no schedule of a running process reaches its end
    // (and the arithmetic stays in 64 bits, a few instructions at every check).
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let interval_nanos = nanos(interval).max(1);
    let n = nanos(now.saturating_duration_since(start)) / interval_nanos + 1;
    start + Duration::from_nanos(n.saturating_mul(interval_nanos))
}

#[derive(Debug)]
struct Shared {
    /// The clock's zero: `since_start` counts from here.
    origin: Instant,
    stop: AtomicBool,
    wake: Condvar,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    interval: Duration,
    tracked: Vec<MemberSet>,
    subscribers: Vec<SyncSender<Arc<Sample>>>,
    /// Bumped when the interval changes so the loop restarts its schedule.
    generation: u64,
    /// A tick is asked for now, ahead of the schedule ([`Waker::tick_now`]).
    tick_now: bool,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running sampler. Dropping it stops the loop.
#[derive(Debug)]
pub struct Sampler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling every `interval` on a thread of its own.
    pub fn start(counters: Counters, interval: Duration) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            origin: Instant::now(),
            stop: AtomicBool::new(false),
            wake: Condvar::new(),
            state: Mutex::new(State {
                interval: interval.max(Duration::from_millis(1)),
                tracked: Vec::new(),
                subscribers: Vec::new(),
                generation: 0,
                tick_now: false,
            }),
        });
        let loop_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("headroom-sampler".into())
            .spawn(move || run_loop(&loop_shared, &counters))?;
        Ok(Sampler {
            shared,
            thread: Some(thread),
        })
    }

    /// A new receiver of every following sample. A subscriber that falls more than a few
    /// hundred samples behind misses samples rather than blocking the loop.
    pub fn subscribe(&self) -> Receiver<Arc<Sample>> {
        let (tx, rx) = mpsc::sync_channel(SUBSCRIBER_BACKLOG);
        lock(&self.shared.state).subscribers.push(tx);
        rx
    }

    /// Tracks a job's members from the next tick on (once per set).
    pub fn track(&self, set: &MemberSet) {
        let mut state = lock(&self.shared.state);
        if !state.tracked.iter().any(|t| t.same_as(set)) {
            state.tracked.push(set.clone());
        }
    }

    /// The member sets it tracks (a sender of a mark may be a member it has not seen yet).
    pub fn tracked(&self) -> Vec<MemberSet> {
        lock(&self.shared.state).tracked.clone()
    }

    /// Stops tracking the job named by `root`.
    pub fn untrack(&self, root: ProcessIdentity) {
        lock(&self.shared.state)
            .tracked
            .retain(|t| t.root() != root);
    }

    /// A handle that asks for a tick now from any thread (the Mac's memory-pressure events),
    /// without keeping the sampler alive.
    pub fn waker(&self) -> Waker {
        Waker {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Changes the interval of the ticks that follow (the next tick comes one new interval
    /// from now); the clock (`since_start`) goes on. Setting the same interval does nothing.
    pub fn set_interval(&self, interval: Duration) {
        let interval = interval.max(Duration::from_millis(1));
        let mut state = lock(&self.shared.state);
        if state.interval == interval {
            return;
        }
        state.interval = interval;
        state.generation += 1;
        self.shared.wake.notify_all();
    }

    /// Time on the sampler's clock now (the `since_start` a sample taken now would have).
    pub fn clock(&self) -> Duration {
        self.shared.origin.elapsed()
    }

    /// The current interval.
    pub fn interval(&self) -> Duration {
        lock(&self.shared.state).interval
    }

    /// Stops the loop and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn run_loop(shared: &Shared, counters: &Counters) {
    let mut errors = ErrorOnce::default();
    let mut seq = 0u64;
    let origin = shared.origin;
    let mut first = true;
    'schedule: loop {
        let (interval, generation) = {
            let s = lock(&shared.state);
            (s.interval, s.generation)
        };
        // A new interval: ticks from now on, one new interval apart (the first tick of all
        // is immediate).
        let start = Instant::now();
        let mut deadline = if first { start } else { start + interval };
        first = false;
        loop {
            // Sleep until the deadline, waking early only to stop or to change the interval.
            let mut state = lock(&shared.state);
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                if state.generation != generation {
                    continue 'schedule;
                }
                if std::mem::take(&mut state.tick_now) {
                    break;
                }
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                state = shared
                    .wake
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            let tracked = state.tracked.clone();
            drop(state);

            // A panic while reading is caught and logged, and sampling goes on: the jobs and
            // their guards depend on this loop.
            let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                read_sample(counters, &tracked, &mut errors, seq, origin.elapsed(), None)
            }));
            match read {
                Ok(sample) => publish(shared, &Arc::new(sample)),
                Err(_) => tracing::error!(seq, "reading a sample panicked; sampling goes on"),
            }
            seq += 1;
            deadline = next_tick(start, interval, Instant::now());
        }
    }
}

/// Asks a [`Sampler`] for a tick now; does nothing once it has stopped.
#[derive(Debug, Clone)]
pub struct Waker {
    shared: std::sync::Weak<Shared>,
}

impl Waker {
    /// The next tick comes at once (the schedule goes on after it).
    pub fn tick_now(&self) {
        if let Some(shared) = self.shared.upgrade() {
            lock(&shared.state).tick_now = true;
            shared.wake.notify_all();
        }
    }
}

fn publish(shared: &Shared, sample: &Arc<Sample>) {
    let mut state = lock(&shared.state);
    state
        .subscribers
        .retain(|tx| match tx.try_send(Arc::clone(sample)) {
            Ok(()) | Err(TrySendError::Full(_)) => true,
            Err(TrySendError::Disconnected(_)) => false,
        });
}

#[cfg(test)]
mod recorded_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_os::error::CounterError;
    use headroom_os::process::ProcessLookup;

    #[test]
    fn full_checks_spread_out_with_the_jobs_size() {
        let s = Duration::from_secs;
        // (members, spacing)
        for (members, want) in [
            (0, s(1)),
            (1, s(1)),
            (100, s(1)),
            (250, Duration::from_millis(2500)),
            (1000, s(10)),
            (5000, FULL_SPACING_MAX),
            (usize::MAX, FULL_SPACING_MAX),
        ] {
            assert_eq!(full_spacing_for(FULL_SPACING, members), want, "{members}");
        }
        // A longer spacing asked for stays.
        assert_eq!(full_spacing_for(s(60), 1000), s(60));
    }

    #[test]
    fn schedule_does_not_drift_and_skips_missed_ticks() {
        let start = Instant::now();
        let i = Duration::from_millis(500);
        // On time: the next deadline is exactly start + (n+1) × interval.
        assert_eq!(
            next_tick(start, i, start + Duration::from_millis(3)),
            start + i
        );
        assert_eq!(
            next_tick(start, i, start + i * 7199 + Duration::from_millis(40)),
            start + i * 7200
        );
        // Late by several ticks: the next slot after now, no burst of the missed ones.
        assert_eq!(
            next_tick(start, i, start + Duration::from_millis(2600)),
            start + i * 6
        );
        // Days of 1 ms ticks: the schedule still moves forward.
        let days = Duration::from_secs(60 * 86_400);
        let ms = Duration::from_millis(1);
        assert_eq!(next_tick(start, ms, start + days), start + days + ms);
    }

    #[test]
    fn extra_ticks_never_move_the_schedule() {
        // Hundreds of extra ticks (marks, each asking for a fresh look) between two slots:
        // the next regular tick stays where the clock put it.
        let start = Instant::now();
        let i = Duration::from_millis(500);
        for k in 0..400u32 {
            let at = start + i * 3 + Duration::from_micros(u64::from(k) * 1000);
            assert_eq!(next_tick(start, i, at), start + i * 4, "extra tick {k}");
        }
    }

    #[test]
    fn errors_reported_once_until_recovery() {
        let mut once = ErrorOnce::default();
        let bad: Result<()> = Err(CounterError::Unsupported { what: "x".into() });
        assert!(once.observe(&bad).is_some());
        assert!(once.observe(&bad).is_none());
        assert!(once.observe(&bad).is_none());
        assert!(once.observe(&Ok(())).is_none());
        assert!(once.observe(&bad).is_some());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn failing_reader_keeps_sampling() {
        let counters = Counters::with_proc_root("/nonexistent-proc-root");
        let mut errors = ErrorOnce::default();
        let first = read_sample(&counters, &[], &mut errors, 0, Duration::ZERO, None);
        let second = read_sample(&counters, &[], &mut errors, 1, Duration::ZERO, None);
        assert!(first.system.is_none() && first.error.is_some());
        assert!(second.system.is_none() && second.error.is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_waker_asks_for_a_tick_ahead_of_an_hour_long_schedule() {
        let sampler = Sampler::start(Counters::new(), Duration::from_secs(3600)).unwrap();
        let rx = sampler.subscribe();
        let waker = sampler.waker();
        // The first tick is immediate (it may have come before the subscription); then
        // nothing for an hour unless woken.
        let _ = rx.recv_timeout(Duration::from_secs(5));
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "no tick due"
        );
        waker.tick_now();
        let woken = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(woken.system.is_some());
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "one tick per wake"
        );
        sampler.stop();
        waker.tick_now(); // a stopped sampler: nothing, no panic
    }

    #[test]
    fn live_sampler_publishes_and_tracks() {
        let counters = Counters::new();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let id = ProcessIdentity::of(&counters, child.id()).unwrap();
        let sampler = Sampler::start(counters, Duration::from_millis(20)).unwrap();
        let rx = sampler.subscribe();
        let set = MemberSet::new(headroom_os::members::Members::of_process(id));
        sampler.track(&set);
        let mut seen_tracked = false;
        let mut last_seq = None;
        for _ in 0..20 {
            let s = rx.recv_timeout(Duration::from_secs(5)).unwrap();
            assert!(s.system.is_some());
            if let Some(prev) = last_seq {
                assert!(s.seq > prev);
            }
            last_seq = Some(s.seq);
            seen_tracked |= s
                .tracked
                .iter()
                .any(|t| t.identity == id && t.memory.is_some());
        }
        assert!(seen_tracked);
        let _ = child.kill();
        let _ = child.wait();
        // After the child is reaped its tracked entry reports no memory.
        let gone = (0..50).any(|_| {
            rx.recv_timeout(Duration::from_secs(5))
                .map(|s| {
                    s.tracked
                        .iter()
                        .any(|t| t.identity == id && t.memory.is_none())
                })
                .unwrap_or(false)
        });
        assert!(gone);
        sampler.untrack(id);
        let before = rx.recv_timeout(Duration::from_secs(5)).unwrap().since_start;
        sampler.set_interval(Duration::from_millis(10));
        assert_eq!(sampler.interval(), Duration::from_millis(10));
        let after = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(after.tracked.is_empty());
        // One clock: a new interval never restarts the time.
        assert!(after.since_start > before, "{after:?} after {before:?}");
        sampler.stop();
    }
}
