//! `trace replay`: the driver's loop fed by a recorded trace instead of the live counters.
//! No process runs and no signal is sent: the job is one stand-in member, "alive" until
//! the replay's effects stop it (or the trace says none of it lives), and every action is
//! recorded with its time. The engine, its adaptive checks and its stop rules are the live
//! guard's own, and a guard's trace holds every reading it judged with every fact the rules
//! read of it ([`crate::sampler::recorded`] makes the samples back), so a replay stops where
//! the live guard did, on the same sample, for the same reason.

use std::borrow::Cow;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::{drive, DriverEffects, Input, Source};
use crate::summary::stage_windows;
use crate::trace::RunRecord;
use crate::trace::{duration, SampleRecord, Trace};
use headroom_model::effects::{JobSignal, SignalReport};
use headroom_model::members::JobIds;
use headroom_model::process::ProcessIdentity;
use headroom_rules::engine::{Effects, Engine, JobSpec, Moment, StartMemory};
use headroom_rules::policy::{EndReason, JobEvent, OnBudget, StopReason, Verdict};
use headroom_rules::sample::Sample;

/// The stand-in for the job's processes.
const STAND_IN: ProcessIdentity = ProcessIdentity {
    pid: 2,
    start_time: 1,
};

/// What the guard would have done over a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replay {
    /// When it would have stopped (or paused) the job (`t` seconds), and why; `None` if
    /// never.
    pub stopped_at_seconds: Option<f64>,
    /// The stop reason.
    pub reason: Option<StopReason>,
    /// The stage running at that moment.
    pub stage: Option<String>,
    /// The verdict over the samples up to the stop (or all of them).
    pub verdict: Verdict,
}

/// Replays `trace` under `spec` (its limits and poll): where the guard would first have
/// stopped the job (or paused it, with `--on-budget pause`). `None` without samples.
pub fn replay(trace: &Trace, spec: JobSpec) -> Option<Replay> {
    // A trace read from a file is in time order (the reader refuses one that is not): its
    // samples are replayed where they are, not copied (a day-long trace has a million).
    let samples: Cow<'_, [SampleRecord]> = if trace.samples.windows(2).all(|w| w[0].t <= w[1].t) {
        Cow::Borrowed(&trace.samples)
    } else {
        let mut sorted = trace.samples.clone();
        sorted.sort_by(|a, b| a.t.total_cmp(&b.t));
        Cow::Owned(sorted)
    };
    let first = samples.first()?.clone();
    let alive = Rc::new(Cell::new(true));
    // The clock of the reading being judged, the source's and the recorder's.
    let now = Rc::new(Cell::new(Duration::ZERO));
    let start_at = UNIX_EPOCH + Duration::from_secs(1);
    let run = RunRecord::of(trace);
    // The memory the live guard started from (read before the job was spawned), where the
    // trace keeps it; else its first reading's swap.
    let start = run.start_system();
    let swap_start = run.swap_start_bytes.unwrap_or(first.swap_used);
    let mut source = TraceSource {
        samples: &samples,
        next: 0,
        alive: Rc::clone(&alive),
        start_at,
        run,
        now: Rc::clone(&now),
        repeat: None,
    };
    let mut recorder = Recorder {
        alive,
        acted: None,
        now,
    };
    let poll = spec.poll;
    // Replay answers "where would the guard first act": a pause there ends the replay too.
    let mut spec = JobSpec {
        owned: true,
        ..spec
    };
    spec.limits.on_budget = OnBudget::Stop;
    let mut engine = Engine::default();
    let at = Moment {
        at: start_at,
        clock: duration(first.t),
    };
    let start = start.map_or(StartMemory::swap(swap_start), |system| StartMemory {
        swap_used_bytes: swap_start,
        ..StartMemory::of(&system)
    });
    let job = engine.add(JobIds::of_process(STAND_IN), spec, start, at);
    let verdict = drive(&mut engine, job, poll, &mut source, &mut recorder);
    let (stopped_at_seconds, reason) = match recorder.acted {
        Some((t, reason)) => (Some(t), Some(reason)),
        None => (None, None),
    };
    let windows = stage_windows(trace);
    let stage = stopped_at_seconds
        .filter(|_| windows.len() > 1)
        .and_then(|t| windows.iter().rev().find(|w| w.1 <= t))
        .and_then(|w| w.0.clone());
    Some(Replay {
        stopped_at_seconds,
        reason,
        stage,
        verdict,
    })
}

/// Samples of a trace, at the checks the engine asks for.
struct TraceSource<'a> {
    samples: &'a [SampleRecord],
    next: usize,
    alive: Rc<Cell<bool>>,
    start_at: SystemTime,
    /// What the trace's `start` record says of the run.
    run: RunRecord,
    now: Rc<Cell<Duration>>,
    /// The last reading handed out, and whether it was looked at again after the stand-in
    /// was stopped (the live guard's next check would find it gone at once).
    repeat: Option<(SampleRecord, bool)>,
}

impl Source for TraceSource<'_> {
    fn next(&mut self, due_in: Duration) -> Input {
        if let Some((record, false)) = self.repeat.clone().filter(|_| !self.alive.get()) {
            self.repeat = Some((record.clone(), true));
            return Input::Sample(self.sample(&record));
        }
        // Every sample of a trace is a check its guard made (a guard writes every reading it
        // judged, the faster checks near the budget too), so each is looked at, as the live
        // guard did.
        let _ = due_in;
        if let Some(record) = self.samples.get(self.next).cloned() {
            self.next += 1;
            self.now.set(duration(record.t));
            self.repeat = Some((record.clone(), false));
            return Input::Sample(self.sample(&record));
        }
        Input::Ended(EndReason::Vanished)
    }

    fn now(&self) -> Moment {
        Moment {
            at: self.start_at + self.now.get(),
            clock: self.now.get(),
        }
    }
}

impl TraceSource<'_> {
    fn sample(&self, record: &SampleRecord) -> Sample {
        let at = self.start_at + self.now.get();
        let seq = self.next as u64;
        self.run.sample(record, seq, at, STAND_IN, self.alive.get())
    }
}

/// The replay's effects: the first stop or pause is recorded, with its time and reason, and
/// the stand-in stops there.
struct Recorder {
    alive: Rc<Cell<bool>>,
    acted: Option<(f64, StopReason)>,
    /// The clock of the reading being judged (the action is taken on it).
    now: Rc<Cell<Duration>>,
}

impl Effects for Recorder {
    fn signal(
        &mut self,
        _job: u64,
        signal: JobSignal,
        members: &[ProcessIdentity],
    ) -> SignalReport {
        if matches!(
            signal,
            JobSignal::Terminate | JobSignal::Kill | JobSignal::Pause
        ) {
            self.alive.set(false);
        }
        SignalReport {
            reached: members.to_vec(),
            ..SignalReport::default()
        }
    }

    fn notify(&mut self, _job: u64, _command: &str, event: &JobEvent) {
        let reason = match event {
            JobEvent::Stopped { reason } => Some(reason.clone()),
            JobEvent::Paused {
                reason: Some(reason),
                ..
            } => Some(reason.clone()),
            _ => None,
        };
        if let (Some(reason), None) = (reason, &self.acted) {
            self.acted = Some((self.now.get().as_secs_f64(), reason));
        }
    }
}

impl DriverEffects for Recorder {
    fn sample(&mut self, _sample: Sample, _view: &headroom_rules::engine::JobView) {}
}
