//! One loop for live and replayed jobs: the samples of a recorded run fed to the driver's
//! loop as a live source would feed them (members that a stop really ends) and to
//! `trace replay` give the same stop, for the same reason, at the same time.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use headroom_core::drive::{check_due, drive, replay, DriverEffects, Input, Source};
use headroom_core::monitor::Monitor;
use headroom_core::trace::{read_trace, Trace};
use headroom_model::counters::{RunState, SystemCounters};
use headroom_model::effects::{JobSignal, SignalReport};
use headroom_model::members::{JobIds, Member};
use headroom_model::process::{ProcessIdentity, TreeMemory};
use headroom_rules::engine::{
    carry_out, Effects, Engine, JobMode, JobSpec, JobView, Moment, StartMemory,
};
use headroom_rules::policy::{EndReason, JobEvent, Limits, StopReason};
use headroom_rules::sample::{Sample, TrackedSample};

const LEADER: ProcessIdentity = ProcessIdentity {
    pid: 4242,
    start_time: 99,
};

/// The samples of a trace, as the live sampler would hand them out, with one real member
/// that lives until a signal of the stop reaches it.
struct Recorded {
    trace: Trace,
    next: usize,
    /// Readings after the trace's last, each its copy half a second later: a sampler that
    /// goes on (the app's) rather than a trace that ends.
    after_end: usize,
    alive: Rc<Cell<bool>>,
    now: Rc<Cell<Duration>>,
}

impl Source for Recorded {
    fn next(&mut self, _due: Duration) -> Input {
        let last = self.trace.samples.len();
        let s = match self.trace.samples.get(self.next).cloned() {
            Some(s) => s,
            None if self.next < last + self.after_end => {
                let mut s = self.trace.samples[last - 1].clone();
                s.t += 0.5 * (self.next + 1 - last) as f64;
                s
            }
            None => return Input::Ended(EndReason::Vanished),
        };
        self.next += 1;
        self.now.set(Duration::from_secs_f64(s.t));
        let alive = self.alive.get();
        Input::Sample(Sample {
            aimed: s.aimed,
            seq: self.next as u64,
            at: UNIX_EPOCH + self.now.get(),
            since_start: self.now.get(),
            system: Some(SystemCounters {
                total_bytes: 48 << 30,
                free_percent: s.level,
                swap_used_bytes: s.swap_used,
                swap_total_bytes: s.swap_total.unwrap_or(0),
                compressed_bytes: s.compressed,
                ..SystemCounters::default()
            }),
            tracked: vec![TrackedSample {
                identity: LEADER,
                memory: alive.then_some(TreeMemory {
                    pid: LEADER.pid,
                    footprint_bytes: s.footprint,
                    resident_bytes: s.footprint,
                    swap_bytes: None,
                    processes: 1,
                }),
                members: if alive {
                    vec![Member {
                        id: LEADER,
                        state: RunState::Running,
                    }]
                } else {
                    Vec::new()
                },
                kernel_peak_bytes: None,
                in_own_cgroup: false,
                cgroup_oom_kills: None,
            }],
            error: None,
        })
    }

    fn now(&self) -> Moment {
        Moment {
            at: UNIX_EPOCH + self.now.get(),
            clock: self.now.get(),
        }
    }
}

/// Signals that reach the member (SIGTERM ends it), and the first stop with the time of
/// the reading it was taken on (the source's clock).
struct Live {
    alive: Rc<Cell<bool>>,
    now: Rc<Cell<Duration>>,
    stopped: Option<(f64, StopReason)>,
}

impl Effects for Live {
    fn signal(
        &mut self,
        _job: u64,
        signal: JobSignal,
        members: &[ProcessIdentity],
    ) -> SignalReport {
        if matches!(signal, JobSignal::Terminate | JobSignal::Kill) {
            self.alive.set(false);
        }
        SignalReport {
            reached: members.to_vec(),
            ..SignalReport::default()
        }
    }

    fn notify(&mut self, _job: u64, _command: &str, event: &JobEvent) {
        if let (JobEvent::Stopped { reason }, None) = (event, &self.stopped) {
            self.stopped = Some((self.now.get().as_secs_f64(), reason.clone()));
        }
    }
}

impl DriverEffects for Live {
    fn sample(&mut self, _sample: Sample, _view: &JobView) {}
}

fn fixture(path: &str) -> Trace {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/macos-traces");
    read_trace(&root.join(path)).unwrap()
}

fn spec(limits: Limits) -> JobSpec {
    let poll = Duration::from_millis(500);
    // As `trace replay` makes it: the live guard's own checks.
    JobSpec::new("job".into(), JobMode::Guard, limits, poll)
}

/// The recorded runs and the limits they are guarded with.
fn cases() -> [(&'static str, Limits); 3] {
    [
        (
            "qwen-image-2026-10-06/eager-1.trace.jsonl",
            Limits::default(),
        ),
        (
            "pixal3d-2026-10-05/eager-1.trace.jsonl",
            Limits {
                swap_budget_bytes: 1 << 30,
                ..Limits::default()
            },
        ),
        (
            "qwen-image-2026-10-06/staged-1.trace.jsonl",
            Limits::default(),
        ),
    ]
}

/// A recorded run's source and its effects, sharing the member's life and the clock.
fn recorded(trace: &Trace, after_end: usize) -> (Recorded, Live) {
    let alive = Rc::new(Cell::new(true));
    let clock = Rc::new(Cell::new(Duration::ZERO));
    let source = Recorded {
        trace: trace.clone(),
        next: 0,
        after_end,
        alive: Rc::clone(&alive),
        now: Rc::clone(&clock),
    };
    let live = Live {
        alive,
        now: clock,
        stopped: None,
    };
    (source, live)
}

#[test]
fn live_and_replay_stop_at_the_same_sample_for_the_same_reason() {
    for (path, limits) in cases() {
        same_stop(path, &fixture(path), limits);
    }
}

#[test]
fn a_trace_with_looks_aimed_at_the_crossing_replays_as_it_ran() {
    // A guard's trace whose last two readings were looks aimed at the crossing: the first,
    // still under the budget, does not stop the job (the projection would have); the
    // second, past it, stops it for the budget itself. Live and replay agree.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aimed.jsonl");
    let mib: u64 = 1 << 20;
    let lines = [
        r#"{"type":"start","interval":0.1}"#.to_string(),
        r#"{"type":"sample","t":0.0,"swap_used":0,"level":50}"#.to_string(),
        format!(
            r#"{{"type":"sample","t":0.1,"swap_used":{},"level":50}}"#,
            30 * mib
        ),
        format!(
            r#"{{"type":"sample","t":0.2,"swap_used":{},"level":50}}"#,
            70 * mib
        ),
        format!(
            r#"{{"type":"sample","t":0.277,"swap_used":{},"level":50,"aimed":true}}"#,
            95 * mib
        ),
        format!(
            r#"{{"type":"sample","t":0.29,"swap_used":{},"level":50,"aimed":true}}"#,
            101 * mib
        ),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let trace = read_trace(&path).unwrap();
    assert!(trace.samples[3].aimed && !trace.samples[2].aimed);
    let limits = Limits {
        swap_budget_bytes: 100 * mib,
        ..Limits::default()
    };
    let (t, reason) = same_stop("aimed.jsonl", &trace, limits).unwrap();
    assert_eq!(t, 0.29);
    assert!(
        matches!(reason, StopReason::SwapBudget { .. }),
        "{reason:?}"
    );
}

/// Drives `trace` live (its readings as a source would hand them out) and replays it:
/// the same stop, for the same reason, at the same reading; returns it.
fn same_stop(path: &str, trace: &Trace, limits: Limits) -> Option<(f64, StopReason)> {
    let (mut source, mut live) = recorded(trace, 0);
    let mut engine = Engine::default();
    let members = JobIds::of_process(LEADER);
    let first = trace.samples[0].swap_used;
    let at = Moment {
        at: SystemTime::UNIX_EPOCH,
        clock: Duration::ZERO,
    };
    let job = engine.add(members, spec(limits.clone()), StartMemory::swap(first), at);
    let verdict = drive(
        &mut engine,
        job,
        Duration::from_millis(500),
        &mut source,
        &mut live,
    );
    let replayed = replay(trace, spec(limits)).unwrap();
    let live_stop = live
        .stopped
        .as_ref()
        .map(|(t, r)| (*t, std::mem::discriminant(r)));
    let replay_stop = replayed
        .stopped_at_seconds
        .zip(replayed.reason.as_ref().map(std::mem::discriminant));
    assert_eq!(
        live_stop, replay_stop,
        "{path}: live {:?}, replay {:?}",
        live.stopped, replayed
    );
    // (The growth after the stop differs: a live check after it reads new numbers, a
    // replay ends at the reading it stopped on.)
    assert_eq!(verdict.fits, replayed.verdict.fits, "{path}");
    live.stopped
}

/// The app's way: a monitor with the job among its jobs takes the same inputs through the
/// same step (`Monitor::step`, as the app's ticker and socket do), its actions carried out
/// by the same `carry_out`, its checks timed by the same `check_due`: it stops at the same
/// reading, for the same reason, with the same verdict as the terminal's loop.
#[test]
fn the_apps_step_stops_where_the_terminals_loop_does() {
    for (path, limits) in cases() {
        let trace = fixture(path);
        let first = trace.samples[0].swap_used;
        let at = Moment {
            at: SystemTime::UNIX_EPOCH,
            clock: Duration::ZERO,
        };
        // A process picked by pid, as the app's list (and `headroom watch`) picks it.
        let members = || JobIds::of_process(LEADER);
        let poll = Duration::from_millis(500);

        let (mut source, mut terminal) = recorded(&trace, 0);
        let mut engine = Engine::default();
        let job = engine.add(
            members(),
            spec(limits.clone()),
            StartMemory::swap(first),
            at,
        );
        let verdict = drive(&mut engine, job, poll, &mut source, &mut terminal);

        // The app samples on after the trace's end: its job ends with its last member.
        let (mut source, mut app) = recorded(&trace, 60);
        let mut monitor = Monitor::default();
        let job = monitor
            .jobs
            .add(members(), spec(limits), StartMemory::swap(first), at);
        let app_verdict = loop {
            let input = source.next(check_due(&monitor.jobs, poll));
            let now = source.now();
            let ended = matches!(input, Input::Ended(_));
            let stepped = monitor.step(input, now);
            carry_out(&mut monitor.jobs, &mut app, stepped.actions, now);
            if let Some(verdict) = monitor.jobs.verdict(job) {
                break Some(verdict.clone());
            }
            if ended {
                break None; // the app has no leader to end a job: it ends with its members
            }
        };
        let stop = |s: &Live| {
            s.stopped
                .as_ref()
                .map(|(t, r)| (*t, std::mem::discriminant(r)))
        };
        assert_eq!(
            stop(&terminal),
            stop(&app),
            "{path}: terminal {:?}, app {:?}",
            terminal.stopped,
            app.stopped
        );
        if terminal.stopped.is_some() {
            let app_verdict = app_verdict.unwrap();
            assert_eq!(verdict.fits, app_verdict.fits, "{path}");
            assert_eq!(
                verdict.swap_growth_bytes, app_verdict.swap_growth_bytes,
                "{path}"
            );
            assert_eq!(
                verdict.peak_footprint_bytes, app_verdict.peak_footprint_bytes,
                "{path}"
            );
        }
    }
}
