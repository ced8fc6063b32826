//! Runs one job to its end: the one loop behind `headroom guard`, `headroom watch` and
//! `headroom trace replay`.
//!
//! The loop ([`drive`]) asks a [`Source`] for the next input (a sample when the engine's
//! next check is due, a request, the leader's exit, an interrupt), feeds it to the engine
//! and carries out the engine's actions through [`DriverEffects`] with
//! [`crate::engine::carry_out`]. Two sources exist: the live one (`live.rs`: the counters,
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
//! driver and stops the job.
//!
//! Files: this one holds what callers use and the loop; `live.rs` the live source;
//! `effects.rs` the live effects (signals under the safety rules, the terminal, outputs);
//! `outputs.rs` the sink threads; `spawned.rs` the command it starts; `replay.rs` the
//! recorded source and effects.

mod effects;
mod live;
mod outputs;
mod replay;
mod spawned;

pub use outputs::{Outputs, Sink, FINISH_WAIT, OUTPUT_BACKLOG};
pub use replay::{replay, Replay};

use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use self::effects::LiveEffects;
use self::live::{LiveSource, Reply, Wake, BACKLOG};
use self::spawned::launch_job;
use crate::counters::{CounterError, CounterSource, Counters};
use crate::effects::{Control, StopReport};
use crate::enforce::{signal_each, stop_members, Safety};
use crate::engine::{carry_out, Action, Effects, Engine, JobSpec, JobStatus, JobView, Moment};
use crate::marks::{not_here, Answer, MarkServer};
use crate::members::MemberSet;
use crate::paths::Dirs;
use crate::policy::{EndReason, Verdict};
use crate::process::ProcessIdentity;
use crate::sampler::{InlineSampler, Sample};
use crate::unix::jobctl::Terminal;
use crate::unix::signals::Kernel;

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

/// The next thing a job's loop must take in.
#[derive(Debug)]
pub enum Input {
    /// A check is due: one sample.
    Sample(Sample),
    /// `control` for the job whose leader is `pid`, from its owner.
    Request {
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
}

/// Where a job's inputs come from: the live counters and processes, or a recorded trace.
pub trait Source {
    /// The next input; a sample once the check due in `due` (from the last one) comes.
    fn next(&mut self, due: Duration) -> Input;
    /// Now, on both clocks.
    fn now(&self) -> Moment;
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
    /// Outputs that could not write everything at the end (nobody read them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unfinished_outputs: Vec<String>,
}

/// The one loop: inputs from `source` to the engine's job `job`, actions through
/// `effects`, until the job has a verdict.
pub fn drive(
    engine: &mut Engine,
    job: u64,
    poll: Duration,
    source: &mut dyn Source,
    effects: &mut dyn DriverEffects,
) -> Verdict {
    loop {
        let due = engine.check_interval().unwrap_or(poll);
        let input = source.next(due);
        let now = source.now();
        let actions = take(engine, job, input, now, effects);
        // The outputs see the job as the actions left it (a pause's event finds it paused).
        if let Some(view) = engine.view(job) {
            effects.view(&view);
        }
        carry_out(engine, effects, actions, now);
        if let Some(view) = engine.view(job) {
            effects.view(&view);
        }
        if let Some(verdict) = engine.verdict(job) {
            return verdict.clone();
        }
    }
}

/// One input into the engine; the actions it leads to.
fn take(
    engine: &mut Engine,
    job: u64,
    input: Input,
    now: Moment,
    effects: &mut dyn DriverEffects,
) -> Vec<Action> {
    match input {
        Input::Sample(sample) => {
            let actions = engine.on_sample(&sample);
            if let Some(view) = engine.view(job) {
                effects.sample(sample, &view);
            }
            actions
        }
        Input::Request {
            control,
            pid,
            reply,
        } => {
            if engine.job_with_root(pid) != Some(job) {
                let _ = reply.try_send(Err(not_here(pid)));
                return Vec::new();
            }
            let answer = engine.request(job, control, now);
            let _ = reply.try_send(answer.as_ref().map(|_| ()).map_err(ToString::to_string));
            answer.unwrap_or_default()
        }
        Input::Mark { peer, stage, reply } => {
            if engine.job_of(peer) != Some(job) {
                let _ = reply.try_send(Err(format!("pid {peer} is not a process of this job")));
                return Vec::new();
            }
            let actions = engine.mark(job, &stage, now.clock);
            let answer = if actions.is_empty() {
                Err(format!(
                    "the job has {} stages already: no more are recorded",
                    crate::stages::MAX_STAGES
                ))
            } else {
                Ok(())
            };
            let _ = reply.try_send(answer);
            actions
        }
        Input::LeaderExit(exit) => {
            engine.set_exit(job, exit);
            Vec::new()
        }
        Input::Interrupt { signal, second } => engine.interrupt(job, signal, second, now),
        Input::Ended(ended) => engine.end(job, ended, now),
    }
}

/// Runs a job on `launch` under `spec` until it ends, is stopped, or the driver is
/// interrupted (a command it started is then stopped first; a watched process is left
/// alone). `sinks` see every sample and event, each on a thread of its own.
///
/// Long because: the set-up is one sequence whose order is the guarantee (what can fail
/// before the spawn, the socket and the outputs before the loop, the stop on a panic).
pub fn run(
    counters: &Counters,
    safety: &Safety,
    launch: Launch,
    spec: JobSpec,
    sinks: Vec<Box<dyn Sink>>,
    interrupts: &dyn Interrupts,
) -> Result<Outcome, DriveError> {
    let sampler = InlineSampler::new(counters.clone(), spec.poll);
    let (requests, wakes, pending) = wake_on_signals(interrupts);
    let swap_start = counters
        .read_system()
        .map_err(DriveError::FirstRead)?
        .swap_used_bytes;
    let mut outputs = Outputs::start(sinks).map_err(DriveError::Outputs)?;
    // The job's socket is optional: without it the job is guarded all the same.
    let mut marks = MarkServer::bind(&Dirs::current().run_dir())
        .map_err(|e| {
            outputs.problem(&format!(
                "stage marks, pause, resume and stop from another terminal are off: {e}"
            ))
        })
        .ok();
    let (members, spawned) = launch_job(counters, launch, marks.as_ref().map(MarkServer::path))?;
    let set = MemberSet::new(members);
    let mut engine = Engine::default();
    let (command, poll, owned) = (spec.command.clone(), spec.poll, spec.owned);
    let now = Moment {
        at: std::time::SystemTime::now(),
        clock: sampler.clock(),
    };
    let job = engine.add(set.clone(), spec, swap_start, now);
    let mut sampler = sampler;
    sampler.track(&set);
    let leader = spawned.as_ref().map(|s| s.leader);
    let terminal = spawned.as_ref().and_then(|s| s.terminal.clone());
    // (The job was just added: its view exists.)
    let view = Arc::new(engine.view(job).unwrap_or_default());
    outputs.started(&view);
    if let Some(server) = marks.as_mut() {
        if let Err(e) = serve_requests(server, set.root().pid, requests) {
            outputs.problem(&format!("stage marks are off: {e}"));
        }
    }
    let mut source = LiveSource {
        counters,
        safety,
        sampler,
        wakes,
        spawned,
        interrupts,
        members: set.clone(),
        told: 0,
        check_now: false,
        signal_pending: pending,
        pending: None,
    };
    let mut effects = LiveEffects::new(
        counters,
        safety,
        outputs,
        source.sampler.origin(),
        terminal,
        leader,
        view,
    );
    let ran = catch_unwind(AssertUnwindSafe(|| {
        drive(&mut engine, job, poll, &mut source, &mut effects)
    }));
    let verdict = ran.unwrap_or_else(|panic| {
        unwound(counters, safety, &set, owned, engine.status(job));
        resume_unwind(panic)
    });
    source.refuse_pending("the job has ended");
    if let Some(spawned) = source.spawned.as_mut() {
        spawned.finish();
    }
    drop(marks);
    let stop = engine.stop_report(job).cloned();
    let unfinished = effects.finish(engine.view(job), &|| interrupts.second());
    Ok(Outcome {
        command,
        pid: set.root().pid,
        verdict,
        stop,
        unfinished_outputs: unfinished,
    })
}

/// The driver's wake-ups: requests and signals come through one queue, with one pending
/// signal wake-up at most (a storm of SIGCHLD, a thousand members ending, must not fill the
/// queue that requests come through). Returns the requests' sender, the queue, and the
/// flag of a pending signal.
fn wake_on_signals(
    interrupts: &dyn Interrupts,
) -> (
    mpsc::SyncSender<Wake>,
    mpsc::Receiver<Wake>,
    Arc<AtomicBool>,
) {
    let (wake, wakes) = mpsc::sync_channel::<Wake>(BACKLOG);
    let requests = wake.clone();
    let pending = Arc::new(AtomicBool::new(false));
    let signal_pending = Arc::clone(&pending);
    interrupts.on_signal(Box::new(move || {
        if !signal_pending.swap(true, Ordering::SeqCst) {
            let _ = wake.try_send(Wake::Signal);
        }
    }));
    (requests, wakes, pending)
}

/// The loop panicked: a bug in Headroom must not leave the job running unguarded, nor a
/// watched process stopped. A command it started is stopped; a paused watched process is
/// continued.
fn unwound(
    counters: &Counters,
    safety: &Safety,
    members: &MemberSet,
    owned: bool,
    status: Option<JobStatus>,
) {
    if owned {
        tracing::error!("the driver panicked: stopping its job");
        stop_members(counters, &Kernel, safety, members, Duration::from_secs(1));
    } else if status == Some(JobStatus::Paused) {
        let ids: Vec<ProcessIdentity> = members.discover(counters).iter().map(|m| m.id).collect();
        signal_each(
            counters,
            &Kernel,
            safety,
            &ids,
            crate::effects::JobSignal::Resume,
        );
    }
}

/// How long a request's sender is kept waiting for the engine's answer; past it the answer
/// is "queued": the request stays in line and will be carried out if it still makes sense.
pub const REPLY_WAIT: Duration = Duration::from_secs(1);

/// Serves the job's socket: marks from its members, pause/resume/stop from its owner, each
/// handed to the loop, which answers with the engine's decision. A request for another
/// job (its pid is not this job's leader) is answered at once.
fn serve_requests(
    server: &mut MarkServer,
    root: u32,
    wake: mpsc::SyncSender<Wake>,
) -> io::Result<()> {
    server.serve(move |peer, request| {
        if let crate::marks::Request::Control { pid, .. } = request {
            if pid != root {
                return Answer::Refused(not_here(pid));
            }
        }
        let (reply, answer) = mpsc::sync_channel(1);
        let woke = wake.try_send(Wake::Request {
            peer,
            request,
            reply,
        });
        if woke.is_err() {
            return Answer::Refused("Headroom is busy with this job; try again".into());
        }
        match answer.recv_timeout(REPLY_WAIT) {
            Ok(Ok(())) => Answer::Done,
            Ok(Err(why)) => Answer::Refused(why),
            Err(_) => Answer::Queued,
        }
    })
}
