//! Runs one job to its end: the driver behind `headroom guard` and `headroom watch`.
//!
//! Everything that can fail before the job is under guard (the sampler, the first reading,
//! the caller's trace file) is done before the command is spawned. After the spawn nothing
//! leaves the job unwatched: a failing [`Sink`] is dropped (and the others are told, loudly)
//! while guarding goes on, and the only ways out of the loop are the job's end, its stop, or
//! the guard's own interruption, which stops a command it started first.
//!
//! A command started here is the leader of its own process group; where the OS allows it
//! the guard is a subreaper, so every descendant, even one that calls `setsid()` or
//! double-forks, stays findable. In a terminal's foreground the job's group gets the
//! terminal: Ctrl-C, Ctrl-\ and Ctrl-Z reach the job, and Ctrl-Z suspends the guard with it
//! until `fg` (or `bg`) continues both. While the guard has paused the job
//! (`--on-budget pause`) it holds the terminal itself, so Ctrl-C reaches the guard and stops
//! the job. A paused job is never left stopped: a stop continues it after SIGTERM, and a
//! watched process is continued before the guard lets go of it.

use std::collections::VecDeque;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::counters::{CounterError, CounterSource, Counters};
use crate::enforce::{pause_members, resume_members, stop_members, Safety, StopReport};
use crate::marks::{not_here, Control, MarkServer, Request, MARK_ENV};
use crate::members::{MemberSet, Members};
use crate::paths::Dirs;
use crate::policy::{EndReason, JobEvent, Verdict};
use crate::process::ProcessIdentity;
use crate::sampler::{InlineSampler, Sample};
use crate::unix::jobctl::{self, ChildStatus, Terminal};
use crate::unix::signals::{self, SIGCONT};

use super::{Action, Engine, JobSpec};

/// Wake-ups queued for the driver at most (signals: one is enough; marks beyond are refused).
const BACKLOG: usize = 64;

/// What wakes the driver between ticks.
enum Wake {
    /// A signal arrived (the guard's own, or SIGCHLD): look at the job now.
    Signal,
    /// A member of the job marked the start of a stage.
    Mark(String),
    /// The job's owner asked to pause, resume or stop it (`headroom resume`).
    Control(Control),
}
/// How long to wait for a stopped leader's exit status.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// A consumer of a job's progress: the terminal's lines, a trace, the app's job file.
pub trait Sink {
    /// What it is, for the message when it fails (`the trace t.jsonl`).
    fn name(&self) -> String;
    /// The job is under guard; `root` is its leader (or the watched process).
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

/// Signals the guard itself received.
pub trait Interrupts {
    /// The first signal received, if any.
    fn received(&self) -> Option<i32>;
    /// True once a second one arrived (SIGKILL at once).
    fn second(&self) -> bool;
    /// Calls `wake` on every signal from now on (an interrupt, and SIGCHLD: a child of the
    /// guard exited or stopped), so the driver needs no polling.
    fn on_signal(&self, _wake: Box<dyn Fn() + Send + Sync>) {}
}

/// What to run the job on.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // made once per run
pub enum Launch {
    /// Start this command (in its own process group), with the terminal whose foreground it
    /// gets, if the guard has one.
    Command {
        /// The command.
        command: Command,
        /// The terminal, when the guard runs in its foreground.
        terminal: Option<Terminal>,
    },
    /// Attach to a running process (watch): it and its descendants.
    Process(ProcessIdentity),
}

/// Why a job could not be put under guard (nothing was started).
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

/// A command this driver started.
struct Spawned {
    leader: u32,
    terminal: Option<Terminal>,
    exit: Option<EndReason>,
    /// The guard paused the job: the leader's stop is ours, not a Ctrl-Z.
    paused: bool,
}

impl Spawned {
    /// Reaps what changed state; returns the leader's end once it exited. A leader stopped
    /// by Ctrl-Z suspends the guard too; once continued, the job is continued.
    fn reap(&mut self) -> Option<EndReason> {
        while let Ok(Some((pid, status))) = jobctl::reap_any() {
            if pid != self.leader {
                continue; // an adopted orphan of the job, or a stopped member
            }
            match status {
                ChildStatus::Exited(code) => self.exit = Some(EndReason::Exited { code }),
                ChildStatus::Signaled(signal) => self.exit = Some(EndReason::Signaled { signal }),
                ChildStatus::Stopped(_) if self.paused => {}
                ChildStatus::Stopped(_) => self.suspended(),
            }
        }
        self.exit.clone()
    }

    fn suspended(&self) {
        let Some(terminal) = &self.terminal else {
            return; // stopped by someone else, outside a terminal: not ours to continue
        };
        let _ = terminal.take_back();
        jobctl::suspend_self();
        // Continued: `fg` gave the terminal back to us (hand it to the job); `bg` did not.
        if terminal.ours() {
            let _ = terminal.give_to(self.leader);
        }
        let _ = signals::send_group(self.leader, SIGCONT);
    }

    /// Waits (bounded) for the leader's exit status after a stop.
    fn reap_leader(&mut self) {
        let started = std::time::Instant::now();
        while self.reap().is_none() && started.elapsed() < REAP_WAIT {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Paused: the guard takes the terminal, so Ctrl-C reaches it (and stops the job).
    /// Resumed: the job gets it back.
    fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
        if let Some(terminal) = &self.terminal {
            let _ = if paused {
                terminal.take_back()
            } else {
                terminal.give_to(self.leader)
            };
        }
    }

    fn finish(&mut self) {
        if let Some(terminal) = &self.terminal {
            let _ = terminal.take_back();
            terminal.restore_settings();
        }
        self.reap();
    }
}

/// Stops a started job if the driver unwinds from a panic: a bug in Headroom must not leave
/// the job running unguarded. A watched process is left alone, continued if it was paused.
struct StopOnUnwind<'a> {
    counters: &'a Counters,
    safety: &'a Safety,
    members: MemberSet,
    armed: bool,
    paused: Arc<AtomicBool>,
}

impl Drop for StopOnUnwind<'_> {
    fn drop(&mut self) {
        if !self.armed && self.paused.load(Ordering::SeqCst) && std::thread::panicking() {
            resume_members(self.counters, self.safety, &self.members);
        }
        if self.armed && std::thread::panicking() {
            tracing::error!("the guard panicked: stopping its job");
            stop_members(
                self.counters,
                self.safety,
                &self.members,
                Duration::from_secs(1),
                &|| false,
            );
        }
    }
}

/// The sinks, dropping any that fails (and telling the others).
struct Sinks(Vec<Box<dyn Sink>>);

impl Sinks {
    /// Tells every sink about a problem.
    fn problem(&mut self, text: &str) {
        for sink in &mut self.0 {
            sink.problem(text);
        }
    }

    fn each(&mut self, mut f: impl FnMut(&mut dyn Sink) -> io::Result<()>) {
        let mut failed = Vec::new();
        self.0.retain_mut(|sink| match f(sink.as_mut()) {
            Ok(()) => true,
            Err(e) => {
                failed.push(format!(
                    "{} failed: {e}; it is dropped, the job stays under guard",
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

/// Starts the command of `launch` (its own process group, the terminal handed over, the
/// mark socket in its environment), or takes the watched process; returns the job's members.
fn launch_job(
    counters: &Counters,
    launch: Launch,
    marks: Option<&MarkServer>,
) -> Result<(Members, Option<Spawned>), DriveError> {
    let (mut command, terminal) = match launch {
        Launch::Process(id) => return Ok((Members::of_process(id), None)),
        Launch::Command { command, terminal } => (command, terminal),
    };
    let reaper = jobctl::become_subreaper();
    command.process_group(0);
    if let Some(server) = marks {
        command.env(MARK_ENV, server.path());
    }
    if let Some(terminal) = &terminal {
        terminal.hand_over_at_spawn(&mut command);
    }
    let child = command.spawn().map_err(DriveError::Spawn)?;
    let leader = child.id();
    drop(child); // reaped by `Spawned::reap`, never by std
    if let Some(terminal) = &terminal {
        let _ = terminal.give_to(leader);
    }
    let id = ProcessIdentity {
        pid: leader,
        start_time: counters.start_time_even_exited(leader).unwrap_or(0),
    };
    let spawned = Spawned {
        leader,
        terminal,
        exit: None,
        paused: false,
    };
    let reaper = reaper.then(std::process::id);
    Ok((Members::of_command(id, reaper), Some(spawned)))
}

/// Serves the job's socket: marks from its members, pause/resume/stop from its owner, each
/// handed to the driver as a [`Wake`].
fn serve_requests(
    server: &mut MarkServer,
    set: &MemberSet,
    counters: &Counters,
    paused: &Arc<AtomicBool>,
    wake: mpsc::SyncSender<Wake>,
) -> io::Result<()> {
    let (members, counters, paused) = (set.clone(), counters.clone(), paused.clone());
    let root = set.root();
    server.serve(move |peer, request| {
        let next = match request {
            Request::Mark(stage) => {
                if !members.discover(&counters).iter().any(|m| m.pid == peer) {
                    return Err(format!("pid {peer} is not a process of this job"));
                }
                Wake::Mark(stage)
            }
            Request::Control { pid, .. } if pid != root.pid => return Err(not_here(pid)),
            Request::Control { control, pid } => {
                check_control(control, pid, paused.load(Ordering::SeqCst))?;
                Wake::Control(control)
            }
        };
        wake.try_send(next)
            .map_err(|_| "the guard is busy; try again".to_string())
    })
}

/// One job being driven: the loop's state between wake-ups.
struct Driver<'a> {
    counters: &'a Counters,
    safety: &'a Safety,
    interrupts: &'a dyn Interrupts,
    grace: Duration,
    poll: Duration,
    sampler: InlineSampler,
    wakes: mpsc::Receiver<Wake>,
    sinks: Sinks,
    engine: Engine,
    job: u64,
    set: MemberSet,
    spawned: Option<Spawned>,
    /// True while the job is paused (shared with the socket's thread).
    paused: Arc<AtomicBool>,
    stop: Option<StopReport>,
    queue: VecDeque<Action>,
}

impl Driver<'_> {
    /// One turn of the loop: an interruption, the job's end, or the next wake-up (a signal,
    /// a mark, a request, the next tick); then the engine's actions. The verdict once the
    /// job has ended.
    fn step(&mut self) -> Option<Verdict> {
        if let Some(signal) = self.interrupts.received() {
            self.interrupted(signal);
        } else if self.leader_gone() && self.set.discover(self.counters).is_empty() {
            self.queue.extend(self.engine.members_gone(self.job));
        } else {
            self.wait();
        }
        while let Some(action) = self.queue.pop_front() {
            if let Some(verdict) = self.carry_out(action) {
                return Some(verdict);
            }
        }
        let interval = self.engine.check_interval().unwrap_or(self.poll);
        self.sampler.set_interval(interval);
        None
    }

    /// The guard itself was interrupted: a command we started is stopped with us (continued
    /// after SIGTERM if paused); a watched process is left alone, continued if we paused it.
    fn interrupted(&mut self, signal: i32) {
        let (counters, safety, interrupts) = (self.counters, self.safety, self.interrupts);
        if let Some(spawned) = self.spawned.as_mut() {
            let report = stop_members(counters, safety, &self.set, self.grace, &|| {
                interrupts.second()
            });
            spawned.reap_leader();
            self.stop = Some(report);
        } else if self.paused.load(Ordering::SeqCst) {
            resume_members(counters, safety, &self.set);
            self.paused.store(false, Ordering::SeqCst);
        }
        let ended = EndReason::Interrupted { signal };
        self.queue.extend(self.engine.end(self.job, ended));
    }

    /// True once the leader (or the watched process) is gone; records its exit status.
    fn leader_gone(&mut self) -> bool {
        match self.spawned.as_mut() {
            Some(spawned) => match spawned.reap() {
                Some(exit) => {
                    self.engine.set_exit(self.job, exit);
                    true
                }
                None => false,
            },
            None => !self.set.root().is_alive(self.counters),
        }
    }

    /// Sleeps until the next tick or wake-up, and feeds the engine what came.
    fn wait(&mut self) {
        let job = self.job;
        let actions = match self.wakes.recv_timeout(self.sampler.until_next()) {
            Ok(Wake::Signal) => Vec::new(),
            Ok(Wake::Mark(stage)) => self.engine.mark(job, &stage, self.sampler.clock()),
            Ok(Wake::Control(Control::Pause)) => self.engine.pause(job),
            Ok(Wake::Control(Control::Resume)) => self.engine.resume(job),
            Ok(Wake::Control(Control::Stop)) => self.engine.stop(job),
            Err(_) => {
                let sample = self.sampler.tick();
                // A leader the sample saw gone has exited: its status is there to reap, so
                // the verdict keeps its exit code.
                if let Some(exit) = self.spawned.as_mut().and_then(Spawned::reap) {
                    self.engine.set_exit(job, exit);
                }
                self.sinks.each(|s| s.sample(&sample));
                self.engine.on_sample(&sample)
            }
        };
        self.queue.extend(actions);
    }

    /// Carries out one action; the verdict when it is the job's last event.
    fn carry_out(&mut self, action: Action) -> Option<Verdict> {
        let (counters, safety, interrupts) = (self.counters, self.safety, self.interrupts);
        match action {
            Action::Notify { event, .. } => {
                let t = self.sampler.clock();
                self.sinks.each(|s| s.event(t, &event));
                if let JobEvent::Finished { verdict } = event {
                    return Some(verdict);
                }
            }
            Action::Pause { members, .. } => {
                pause_members(counters, safety, &members);
                self.paused.store(true, Ordering::SeqCst);
                if let Some(spawned) = self.spawned.as_mut() {
                    spawned.set_paused(true);
                }
            }
            Action::Resume { members, .. } => {
                if let Some(spawned) = self.spawned.as_mut() {
                    spawned.set_paused(false);
                }
                resume_members(counters, safety, &members);
                self.paused.store(false, Ordering::SeqCst);
            }
            Action::Stop { members, .. } => {
                let report = stop_members(counters, safety, &members, self.grace, &|| {
                    interrupts.second()
                });
                self.paused.store(false, Ordering::SeqCst);
                if let Some(spawned) = self.spawned.as_mut() {
                    spawned.paused = false;
                    spawned.reap_leader();
                    if let Some(exit) = spawned.exit.clone() {
                        self.engine.set_exit(self.job, exit);
                    }
                }
                self.queue.extend(self.engine.stop_done(self.job, &report));
                self.stop = Some(report);
            }
        }
        None
    }
}

/// Runs a job on `launch` under `spec` until it ends, is stopped, or the guard is
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
    // Stage marks are optional: without a socket the job is guarded all the same.
    let mut marks = MarkServer::bind(&Dirs::current().marks_dir())
        .map_err(|e| sinks.problem(&format!("stage marks are off: {e}")))
        .ok();
    let (members, spawned) = launch_job(counters, launch, marks.as_ref())?;
    let set = MemberSet::new(members);
    let mut engine = Engine::default();
    let (command, poll) = (spec.command.clone(), spec.poll);
    let job = engine.add(set.clone(), spec, swap_start);
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

/// Whether `control` makes sense for the job now (answered to `headroom resume` at once).
fn check_control(control: Control, pid: u32, paused: bool) -> Result<(), String> {
    match (control, paused) {
        (Control::Resume, false) => Err(format!("the job of pid {pid} is not paused")),
        (Control::Pause, true) => Err(format!("the job of pid {pid} is already paused")),
        _ => Ok(()),
    }
}
