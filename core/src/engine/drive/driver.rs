//! The driver's loop: what wakes it (a signal, a stage mark, a control request, the next
//! tick), one turn per wake-up, and carrying out the engine's actions (stop, pause, resume,
//! events to the sinks). The job's socket is served on its own thread and hands requests over
//! as wake-ups.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

use super::spawned::Spawned;
use super::{Interrupts, Sinks};
use crate::counters::Counters;
use crate::enforce::{pause_members, resume_members, stop_members, Safety, StopReport};
use crate::engine::{Action, Engine};
use crate::marks::{not_here, Control, MarkServer, Request};
use crate::members::MemberSet;
use crate::policy::{EndReason, JobEvent, Verdict};
use crate::sampler::InlineSampler;

/// Wake-ups queued for the driver at most (signals: one is enough; marks beyond are refused).
pub(super) const BACKLOG: usize = 64;

/// What wakes the driver between ticks.
pub(super) enum Wake {
    /// A signal arrived (the driver's own, or SIGCHLD): look at the job now.
    Signal,
    /// A member of the job marked the start of a stage.
    Mark(String),
    /// The job's owner asked to pause, resume or stop it (`headroom resume`).
    Control(Control),
}
/// Serves the job's socket: marks from its members, pause/resume/stop from its owner, each
/// handed to the driver as a [`Wake`].
pub(super) fn serve_requests(
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
            .map_err(|_| "Headroom is busy with this job; try again".to_string())
    })
}

/// One job being driven: the loop's state between wake-ups.
pub(super) struct Driver<'a> {
    pub(super) counters: &'a Counters,
    pub(super) safety: &'a Safety,
    pub(super) interrupts: &'a dyn Interrupts,
    pub(super) grace: Duration,
    pub(super) poll: Duration,
    pub(super) sampler: InlineSampler,
    pub(super) wakes: mpsc::Receiver<Wake>,
    pub(super) sinks: Sinks,
    pub(super) engine: Engine,
    pub(super) job: u64,
    pub(super) set: MemberSet,
    pub(super) spawned: Option<Spawned>,
    /// True while the job is paused (shared with the socket's thread).
    pub(super) paused: Arc<AtomicBool>,
    pub(super) stop: Option<StopReport>,
    pub(super) queue: VecDeque<Action>,
}

impl Driver<'_> {
    /// One turn of the loop: an interruption, the job's end, or the next wake-up (a signal,
    /// a mark, a request, the next tick); then the engine's actions. The verdict once the
    /// job has ended.
    pub(super) fn step(&mut self) -> Option<Verdict> {
        if let Some(signal) = self.interrupts.received() {
            self.interrupted(signal);
        } else if self.leader_gone() && self.set.discover(self.counters).is_empty() {
            self.queue
                .extend(self.engine.members_gone(self.job, SystemTime::now()));
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

    /// The driver itself was interrupted: a command we started is stopped with us (continued
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
        self.queue
            .extend(self.engine.end(self.job, ended, SystemTime::now()));
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
            Ok(Wake::Control(Control::Pause)) => self.engine.pause(job, SystemTime::now()),
            Ok(Wake::Control(Control::Resume)) => self.engine.resume(job, SystemTime::now()),
            Ok(Wake::Control(Control::Stop)) => self.engine.stop(job, SystemTime::now()),
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
                self.queue
                    .extend(self.engine.stop_done(self.job, &report, SystemTime::now()));
                self.stop = Some(report);
            }
        }
        None
    }
}

/// Whether `control` makes sense for the job now (answered to `headroom resume` at once).
fn check_control(control: Control, pid: u32, paused: bool) -> Result<(), String> {
    match (control, paused) {
        (Control::Resume, false) => Err(format!("the job of pid {pid} is not paused")),
        (Control::Pause, true) => Err(format!("the job of pid {pid} is already paused")),
        _ => Ok(()),
    }
}
