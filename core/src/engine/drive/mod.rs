//! Runs one job to its end: the driver behind `headroom guard` and `headroom watch`.
//!
//! Everything that can fail before the job is watched (the sampler, the first reading,
//! the caller's trace file) is done before the command is spawned. After the spawn nothing
//! leaves the job unwatched: a failing [`Sink`] is dropped (and the others are told,
//! loudly) while the job stays watched, and the only ways out of the loop are the job's end,
//! its stop, or the driver's own interruption, which stops a command it started first.
//!
//! A command started here is the leader of its own process group; where the OS allows it
//! the driver is a subreaper, so every descendant, even one that calls `setsid()` or
//! double-forks, stays findable. In a terminal's foreground the job's group gets the
//! terminal: Ctrl-C, Ctrl-\ and Ctrl-Z reach the job, and Ctrl-Z suspends the driver with it
//! until `fg` (or `bg`) continues both. While the driver has paused the job
//! (`--on-budget pause`) it holds the terminal itself, so Ctrl-C reaches the driver and stops
//! the job. A paused job is never left stopped: a stop continues it after SIGTERM, and a
//! watched process is continued before the driver lets go of it.
//!
//! Files: this one holds what callers use ([`Sink`], [`Interrupts`], [`Launch`], [`run`]);
//! `spawned.rs` the command it starts (process group, terminal, reaping, the stop on
//! unwind); `driver.rs` the loop (wake-ups, the job's socket, carrying out actions).

mod driver;
mod spawned;

use std::collections::VecDeque;
use std::io;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

use self::driver::{serve_requests, Driver, Wake, BACKLOG};
use self::spawned::{launch_job, StopOnUnwind};
use super::{Engine, JobSpec};
use crate::counters::{CounterError, CounterSource, Counters};
use crate::enforce::{Safety, StopReport};
use crate::marks::MarkServer;
use crate::members::MemberSet;
use crate::paths::Dirs;
use crate::policy::{JobEvent, Verdict};
use crate::process::ProcessIdentity;
use crate::sampler::{InlineSampler, Sample};
use crate::unix::jobctl::Terminal;

/// A consumer of a job's progress: the terminal's lines, a trace, the app's job file.
pub trait Sink {
    /// What it is, for the message when it fails (`the trace t.jsonl`).
    fn name(&self) -> String;
    /// The job is watched; `root` is its leader (or the watched process).
    fn started(&mut self, _root: ProcessIdentity, _swap_start_bytes: u64) -> io::Result<()> {
        Ok(())
    }
    /// One sample of the sampler (at the check interval, which may be shorter than the poll).
    fn sample(&mut self, _sample: &Sample) -> io::Result<()> {
        Ok(())
    }
    /// An event of the job at `t` on the sampler's clock; the last is always `Finished`.
    fn event(&mut self, _t: Duration, _event: &JobEvent) -> io::Result<()> {
        Ok(())
    }
    /// Something the user must hear about (another sink failed and was dropped).
    fn problem(&mut self, _text: &str) {}
}

/// Signals the driver's own process received.
pub trait Interrupts {
    /// The first signal received, if any.
    fn received(&self) -> Option<i32>;
    /// True once a second one arrived (SIGKILL at once).
    fn second(&self) -> bool;
    /// Calls `wake` on every signal from now on (an interrupt, and SIGCHLD: a child of the
    /// driver exited or stopped), so the driver needs no polling.
    fn on_signal(&self, _wake: Box<dyn Fn() + Send + Sync>) {}
}

/// What to run the job on.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // made once per run
pub enum Launch {
    /// Start this command (in its own process group), with the terminal whose foreground it
    /// gets, if the driver has one.
    Command {
        /// The command.
        command: Command,
        /// The terminal, when the driver runs in its foreground.
        terminal: Option<Terminal>,
    },
    /// Attach to a running process (watch): it and its descendants.
    Process(ProcessIdentity),
}

/// Why a job could not be started or watched (nothing was started).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriveError {
    /// The first reading of the memory counters failed.
    #[error("reading memory counters: {0}")]
    FirstRead(#[source] CounterError),
    /// The command could not be started.
    #[error("{0}")]
    Spawn(#[source] io::Error),
}

/// How a job ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The job's command line.
    pub command: String,
    /// The pid of its leader (or of the watched process).
    pub pid: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// What stopping it did, if it was stopped.
    pub stop: Option<StopReport>,
}

/// The sinks, dropping any that fails (and telling the others).
pub(super) struct Sinks(Vec<Box<dyn Sink>>);

impl Sinks {
    /// Tells every sink about a problem.
    pub(super) fn problem(&mut self, text: &str) {
        for sink in &mut self.0 {
            sink.problem(text);
        }
    }

    pub(super) fn each(&mut self, mut f: impl FnMut(&mut dyn Sink) -> io::Result<()>) {
        let mut failed = Vec::new();
        self.0.retain_mut(|sink| match f(sink.as_mut()) {
            Ok(()) => true,
            Err(e) => {
                failed.push(format!(
                    "{} failed: {e}; it is dropped, the job stays watched",
                    sink.name()
                ));
                false
            }
        });
        for text in failed {
            tracing::warn!("{text}");
            self.problem(&text);
        }
    }
}

/// Runs a job on `launch` under `spec` until it ends, is stopped, or the driver is
/// interrupted (a command it started is then stopped first; a watched process is left
/// alone). `sinks` see every sample and event.
pub fn run(
    counters: &Counters,
    safety: &Safety,
    launch: Launch,
    spec: JobSpec,
    grace: Duration,
    sinks: Vec<Box<dyn Sink>>,
    interrupts: &dyn Interrupts,
) -> Result<Outcome, DriveError> {
    // The driver samples on its own thread (one wake-up a tick) and sleeps until the next
    // tick or a signal (SIGCHLD included), whichever comes first: no polling.
    let mut sampler = InlineSampler::new(counters.clone(), spec.poll);
    let (wake, wakes) = mpsc::sync_channel::<Wake>(BACKLOG);
    let _open = wake.clone(); // the channel never disconnects, whatever `interrupts` keeps
    let requests = wake.clone();
    interrupts.on_signal(Box::new(move || {
        let _ = wake.try_send(Wake::Signal);
    }));
    let swap_start = counters
        .read_system()
        .map_err(DriveError::FirstRead)?
        .swap_used_bytes;
    let mut sinks = Sinks(sinks);
    // Stage marks are optional: without a socket the job is watched all the same.
    let mut marks = MarkServer::bind(&Dirs::current().marks_dir())
        .map_err(|e| sinks.problem(&format!("stage marks are off: {e}")))
        .ok();
    let (members, spawned) = launch_job(counters, launch, marks.as_ref())?;
    let set = MemberSet::new(members);
    let mut engine = Engine::default();
    let (command, poll) = (spec.command.clone(), spec.poll);
    let job = engine.add(set.clone(), spec, swap_start, SystemTime::now());
    let paused = Arc::new(AtomicBool::new(false));
    let _unwind = StopOnUnwind {
        counters,
        safety,
        members: set.clone(),
        armed: spawned.is_some(),
        paused: paused.clone(),
    };
    sampler.track(&set);
    sinks.each(|s| s.started(set.root(), swap_start));
    if let Some(server) = marks.as_mut() {
        if let Err(e) = serve_requests(server, &set, counters, &paused, requests) {
            sinks.problem(&format!("stage marks are off: {e}"));
        }
    }
    let mut driver = Driver {
        counters,
        safety,
        interrupts,
        grace,
        poll,
        sampler,
        wakes,
        sinks,
        engine,
        job,
        set,
        spawned,
        paused,
        stop: None,
        queue: VecDeque::new(),
    };
    let verdict = loop {
        if let Some(verdict) = driver.step() {
            break verdict;
        }
    };
    if let Some(spawned) = driver.spawned.as_mut() {
        spawned.finish();
    }
    drop(marks);
    Ok(Outcome {
        command,
        pid: driver.set.root().pid,
        verdict,
        stop: driver.stop,
    })
}
