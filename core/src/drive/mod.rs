//! Runs one job to its end: the one loop behind `headroom guard`, `headroom watch` and
//! `headroom trace replay`.
//!
//! The loop ([`drive`]) asks a [`Source`] for the next input (a sample when the engine's
//! next check is due, a request, the leader's exit, an interrupt), feeds it to the engine
//! with [`step`] (the one step the app's ticker and socket take too) and carries out the engine's actions through [`DriverEffects`] with
//! [`headroom_rules::engine::carry_out`]. Two sources exist: the live one (`live.rs`: the counters,
//! the command, its socket, the driver's signals) and a recorded trace (`replay.rs`: no
//! processes, no signals; the effects are recorded, not sent). So a replay takes every
//! decision a live guard would, the adaptive checks included.
//!
//! Live, everything that can fail before the job is watched (the sampler, the first
//! reading, the caller's trace file) is done before the command is spawned. After the
//! spawn nothing leaves the job unwatched: outputs run on threads of their own and a
//! failing one is dropped (`outputs.rs`), and the only ways out of the loop are the job's
//! end (verified: no member left, or a stop that could not hold, said plainly) and the
//! driver's own interruption, which stops a command it started first. A panic in the loop
//! stops a command it started (or continues a paused watched process) before it unwinds.
//!
//! A command started here is the leader of its own process group; where the OS allows it
//! the driver is a subreaper, so every descendant, even one that calls `setsid()` or
//! double-forks, stays findable. In a terminal's foreground the job's group gets the
//! terminal: Ctrl-C, Ctrl-\ and Ctrl-Z reach the job, and Ctrl-Z suspends the driver with it
//! (members in other sessions paused meanwhile) until `fg` (or `bg`) continues all. While
//! the engine has paused the job the driver holds the terminal itself, so Ctrl-C reaches the
//! driver and stops the job. Once the leader has exited the driver takes the terminal back
//! for good (its group may be gone, or hold a few members only): Ctrl-C and Ctrl-\ are then
//! sent on to every member (under `enforce`'s rules), and Ctrl-Z suspends the driver with
//! the job as before.
//!
//! Files: this one holds the types the loop and its parts share; `step.rs` the one step
//! every driver takes (the app's too); `driver.rs` the loop and the live driver's set-up; `live.rs` the live source;
//! `effects.rs` the live effects (signals under the safety rules, the terminal, outputs);
//! `outputs.rs` the sink threads; `pushes.rs` the warning pushed to
//! the job's sessions on its socket; `spawned.rs` the command it starts; `replay.rs` the
//! recorded source and effects; `wait.rs` waiting for room before the start.

mod driver;
mod effects;
mod live;
mod outputs;
mod pushes;
mod replay;
mod spawned;
mod step;
mod wait;

pub use driver::{drive, run, REPLY_WAIT};
pub(crate) use effects::LiveEffects;
pub use outputs::{Outputs, SampleGate, Sink, FINISH_WAIT, OUTPUT_BACKLOG, START_WAIT};
pub use replay::{replay, Replay};
pub use spawned::Tracking;
pub use step::{check_due, look_due, step, Step};
pub use wait::{wait_for_room, Admit, Waited};

use std::io;
use std::process::Command;
use std::sync::mpsc::SyncSender;
use std::time::Duration;

use headroom_model::effects::{Control, StopReport};
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::CounterError;
use headroom_os::unix::jobctl::Terminal;
use headroom_rules::engine::{Effects, JobView, Moment};
use headroom_rules::policy::{EndReason, Verdict};
use headroom_rules::sample::Sample;

/// The answer a request's sender waits for: `Ok` once the engine took it, or why not.
pub type Reply = SyncSender<Result<(), String>>;

/// Signals the driver's own process received.
pub trait Interrupts {
    /// The first signal received, if any.
    fn received(&self) -> Option<i32>;
    /// True once a second one arrived (SIGKILL at once).
    fn second(&self) -> bool;
    /// Calls `wake` on every signal from now on (an interrupt, and SIGCHLD: a child of the
    /// driver exited or stopped), so the driver needs no polling.
    fn on_signal(&self, _wake: Box<dyn Fn() + Send + Sync>) {}
    /// From now on SIGINT and SIGQUIT are the terminal's keys for the job, kept for
    /// [`Interrupts::key`] rather than counted as interrupts: the driver holds the terminal
    /// for a job whose leader has exited. (SIGTSTP, Ctrl-Z, always is one.)
    fn keys_for_the_job(&self) {}
    /// The driver's command runs: from now on SIGTSTP to the driver (a `kill -TSTP`, with or
    /// without a terminal) is a key too, so the driver never stops alone while its job runs
    /// on unguarded: it suspends with the job paused (see [`Interrupts::key`]).
    fn job_runs(&self) {}
    /// The next key kept for the job (SIGINT, SIGQUIT or SIGTSTP), if any.
    fn key(&self) -> Option<i32> {
        None
    }
}

/// The next thing a job's loop must take in.
#[derive(Debug)]
// One input at a time, moved once into the loop: a box would cost an allocation per check.
#[allow(clippy::large_enum_variant)]
pub enum Input {
    /// A check is due: one sample.
    Sample(Sample),
    /// `control` for the job whose leader is `pid`, from its owner.
    Request {
        /// Who sent it (the kernel's word; 0 when unknown).
        peer: u32,
        /// What to do.
        control: Control,
        /// The job's pid.
        pid: u32,
        /// Where the answer goes.
        reply: Reply,
    },
    /// Process `peer` marked the start of `stage`.
    Mark {
        /// Who sent it.
        peer: u32,
        /// The stage.
        stage: String,
        /// Where the answer goes.
        reply: Reply,
    },
    /// The app lets job `job` go ("Spare it", Unwatch, Unguard): it is no longer watched or
    /// guarded, its processes run on. Refused while it is paused (a paused job is never let
    /// go). Only the app makes this input: no socket line asks for it.
    Release {
        /// The job, by the engine's id.
        job: u64,
        /// Where the answer goes.
        reply: Reply,
    },
    /// Process `peer` ended the stage its job is in.
    EndStage {
        /// Who sent it.
        peer: u32,
        /// Where the answer goes.
        reply: Reply,
    },
    /// Process `peer` begins a session on the job's socket: is it a member of the job?
    Hello {
        /// Who sent it.
        peer: u32,
        /// Where the answer goes.
        reply: Reply,
    },
    /// Process `peer` reports a load, release or mark (for the trace).
    Report {
        /// Who sent it.
        peer: u32,
        /// What it reported.
        event: headroom_rules::stages::Reported,
        /// Where the answer goes.
        reply: Reply,
    },
    /// The leader (the command Headroom started) ended; the job ends with its last member.
    LeaderExit(EndReason),
    /// The driver itself received `signal` (`second`: another one came after it).
    Interrupt {
        /// The signal.
        signal: i32,
        /// True from the second one on.
        second: bool,
    },
    /// The source has nothing more (a recorded trace ran out): the job ends as `EndReason`.
    Ended(EndReason),
    /// A key of the terminal the driver holds for the job (its leader has exited): Ctrl-C
    /// ([`JobSignal::Interrupt`](headroom_model::effects::JobSignal::Interrupt)) or Ctrl-\ ([`JobSignal::Quit`](headroom_model::effects::JobSignal::Quit)), `signal` its number.
    Key {
        /// What it asks of the job.
        key: headroom_model::effects::JobSignal,
        /// The signal the driver received.
        signal: i32,
    },
}

/// Where a job's inputs come from: the live counters and processes, or a recorded trace.
pub trait Source {
    /// The next input; a sample once the check due in `due` (from the last one) comes.
    fn next(&mut self, due: Duration) -> Input;
    /// Now, on both clocks.
    fn now(&self) -> Moment;
    /// Other guards' jobs, when the source has a new look at them (the pause order, the
    /// share of memory in use); `None` keeps the last (a replay has none).
    fn peers(&mut self) -> Option<crate::peers::Peers> {
        None
    }
    /// How the checks that follow are taken ([`Look`]).
    fn next_look(&mut self, _look: Look) {}
}

/// How a source takes the checks that follow, as the engine's state after the last input
/// allows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Look {
    /// They may be light ones (while the job runs; a pause or a stop under way or held is
    /// checked in full, see `crate::sampler::read_sample`).
    pub light: bool,
    /// The next one is a look aimed at the crossing (`headroom_rules::policy::aim`), which
    /// its sample then says ([`Sample::aimed`]).
    pub aimed: bool,
    /// Readings that match this are quiet: a live source may hold them and hand them on
    /// later, in order, before the next input (`headroom_rules::policy::quiet`).
    pub quiet: Option<headroom_rules::policy::quiet::Quiet>,
}

/// What a job's actions do, and where its progress goes.
pub trait DriverEffects: Effects {
    /// One sample the engine has just seen, with the job as it is after it.
    fn sample(&mut self, _sample: Sample, _view: &JobView) {}
    /// The job as it is now (after a request, an event).
    fn view(&mut self, _view: &JobView) {}
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
    /// The outputs could not be started.
    #[error("starting the outputs: {0}")]
    Outputs(#[source] io::Error),
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
    /// What stopping it did, if it was stopped: verified at the end (`survivors` come from
    /// a complete, fresh look at the job).
    pub stop: Option<StopReport>,
    /// How its members were found: a cgroup of its own, or its processes (and why).
    pub tracking: Tracking,
    /// Outputs that could not write everything at the end (nobody read them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unfinished_outputs: Vec<String>,
    /// The run as the run history records it (`crate::store::Store::record_finished`).
    #[serde(skip)]
    pub run: Option<headroom_rules::engine::FinishedRun>,
}
