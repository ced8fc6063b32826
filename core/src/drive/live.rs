//! The live source of a job's inputs: the inline sampler on its schedule (the engine's check
//! interval), the driver's own signals, the leader's exit (reaped here, on SIGCHLD), the
//! requests and marks that come over the job's socket, and Ctrl-Z. The driver's loop
//! (`super::drive`) asks it for the next input and never sleeps anywhere else.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant, SystemTime};

use super::spawned::{Reaped, Spawned};
use super::{Input, Interrupts, Look, Reply, Source};
use crate::peers::PeerBoard;
use crate::sampler::InlineSampler;
use crate::socket::Request;
use headroom_model::counters::RunState;
use headroom_model::effects::JobSignal;
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::Counters;
use headroom_os::enforce::{signal_each, Safety};
use headroom_os::members::MemberSet;
use headroom_os::unix::jobctl;
use headroom_os::unix::signals;
use headroom_os::unix::signals::{Kernel, SIGCONT};
use headroom_rules::engine::Moment;
use headroom_rules::policy::quiet::Quiet;

/// Wake-ups queued for the driver at most (signals: one is enough; requests beyond are
/// refused as busy).
pub(super) const BACKLOG: usize = 64;

/// What wakes the driver between ticks.
pub(crate) enum Wake {
    /// A signal arrived (the driver's own, or SIGCHLD): look at the job now.
    Signal,
    /// The OS says memory is under pressure (macOS): look now, not at the next tick.
    Pressure,
    /// A request over the job's socket, from the process with pid `peer`.
    Request {
        /// Who sent it (the kernel's word).
        peer: u32,
        /// What it asks.
        request: Request,
        /// Where the engine's answer goes.
        reply: Reply,
    },
}

/// Where the driver's wake-ups are sent from (its signal handler's thread, the job's socket,
/// the OS's memory-pressure hint): each is queued, then the driver's thread is unparked.
/// The driver waits with [`std::thread::park_timeout`] between checks (`LiveSource::wait`):
/// one system call, where a wait in the queue itself registers and unregisters a waker with
/// it at every check (`docs/benchmarks.md`, the guard's CPU against a sysinfo timer).
#[derive(Debug, Clone)]
pub(crate) struct WakeSender {
    queue: SyncSender<Wake>,
    driver: Thread,
}

impl WakeSender {
    /// Wake-ups for the driver running on `driver`, queued in `queue`.
    pub(crate) fn new(queue: SyncSender<Wake>, driver: Thread) -> Self {
        WakeSender { queue, driver }
    }

    /// Queues `wake` and wakes the driver; false, with nothing queued, when the queue is
    /// full or the driver gone.
    pub(crate) fn send(&self, wake: Wake) -> bool {
        let queued = self.queue.try_send(wake).is_ok();
        if queued {
            self.driver.unpark();
        }
        queued
    }
}

/// The live inputs of one job.
pub(super) struct LiveSource<'a> {
    pub(super) counters: &'a Counters,
    pub(super) safety: &'a Safety,
    pub(super) sampler: InlineSampler,
    pub(super) wakes: Receiver<Wake>,
    pub(super) spawned: Option<Spawned>,
    pub(super) interrupts: &'a dyn Interrupts,
    pub(super) members: MemberSet,
    /// Interrupts already handed to the loop (the first, then a second).
    pub(super) told: u8,
    /// A check is due now (the leader just exited: is the job over?).
    pub(super) check_now: bool,
    /// The leader may have changed state since the last reap: a signal came (or none was
    /// looked for yet). A check reaps after its read whatever this says.
    pub(super) reap_due: bool,
    /// Set by the signal handler's wake-up, cleared when it is taken: one queued at most.
    pub(super) signal_pending: Arc<AtomicBool>,
    /// Inputs to hand on before any new one, in order: a mark waiting for the fresh look at
    /// the job taken just before it (its sender may be a process born since the last
    /// check), a sample read as the leader exited, the samples of quiet checks.
    pub(super) pending: VecDeque<Input>,
    /// Other guards' jobs, for a job that pauses at its budget (the pause order).
    pub(super) peers: Option<PeerBoard>,
    /// The next timed check is a look aimed at the crossing (`headroom_rules::policy::aim`).
    pub(super) aimed: bool,
    /// Timed checks are quiet ones while their readings match this
    /// (`headroom_rules::policy::quiet`).
    pub(super) quiet: Option<Quiet>,
}

impl Source for LiveSource<'_> {
    fn next(&mut self, due: Duration) -> Input {
        if let Some(input) = self.pending.pop_front() {
            return input;
        }
        let input = self.fresh(due);
        if !self.sampler.holds() {
            return input;
        }
        // The readings of quiet checks came before it: they are judged first, in order.
        let held = self.sampler.take_held();
        tracing::debug!(
            readings = held.len(),
            "quiet checks: held readings judged now"
        );
        let mut held = held.into_iter().map(Input::Sample);
        let Some(first) = held.next() else {
            return input;
        };
        let later: VecDeque<Input> = held
            .chain(std::iter::once(input))
            .chain(self.pending.drain(..))
            .collect();
        self.pending = later;
        first
    }

    fn now(&self) -> Moment {
        Moment {
            at: SystemTime::now(),
            clock: self.sampler.clock(),
        }
    }

    fn peers(&mut self) -> Option<crate::peers::Peers> {
        self.peers.as_mut()?.read()
    }

    fn next_look(&mut self, look: Look) {
        self.sampler.allow_light(look.light);
        self.aimed = look.aimed;
        self.quiet = look.quiet;
    }
}

impl LiveSource<'_> {
    /// The next input from the job, its socket, the terminal or the clock: what
    /// [`Source::next`] hands on once the readings of quiet checks taken meanwhile are.
    fn fresh(&mut self, due: Duration) -> Input {
        loop {
            if let Some(input) = self.key() {
                return input;
            }
            if let Some(input) = self.interrupt() {
                return input;
            }
            // Between checks nothing but a signal (SIGCHLD) has news of the leader: the check
            // just taken reaped after its read, and a signal since is pending or queued.
            if self.reap_due || self.signal_pending.load(Ordering::SeqCst) {
                if let Some(input) = self.reaped() {
                    return input;
                }
            }
            if self.check_now {
                self.check_now = false;
                return self.sample();
            }
            self.sampler.set_interval(due);
            match self.wait(self.sampler.until_next()) {
                Ok(Wake::Signal) => {
                    self.signal_pending.store(false, Ordering::SeqCst);
                    self.reap_due = true;
                }
                Ok(Wake::Pressure) => return self.sample(),
                Ok(Wake::Request {
                    peer,
                    request,
                    reply,
                }) => {
                    let input = Input::requested(peer, request, reply);
                    // From a member: one the last look saw is taken at once (a loop that
                    // marks thousands of times costs no look each); one it did not see may
                    // be a process born since, which only a full look finds.
                    let from_member = matches!(
                        input,
                        Input::Mark { .. }
                            | Input::EndStage { .. }
                            | Input::Hello { .. }
                            | Input::Report { .. }
                    );
                    if from_member && !self.members.knows(peer) {
                        self.pending.push_back(input);
                        self.sampler.full_next();
                        return self.sample();
                    }
                    return input;
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    // A quiet reading is held, and the wait goes on.
                    if let Some(quiet) = self.quiet {
                        if self.sampler.quiet_tick(&quiet) {
                            continue;
                        }
                    }
                    let aimed = self.aimed;
                    return self.sample_as(aimed);
                }
            }
        }
    }

    /// The leader's exit, if it just exited (reaped here, the one place): the driver then
    /// holds the terminal for the job (its keys are sent on to every member). A Ctrl-Z is
    /// handled on the spot.
    fn reaped(&mut self) -> Option<Input> {
        self.reap_due = false;
        loop {
            let spawned = self.spawned.as_mut()?;
            match spawned.reap()? {
                Reaped::Exit(exit) => {
                    if let Some(terminal) = &spawned.terminal {
                        self.interrupts.keys_for_the_job();
                        let _ = terminal.keep();
                    }
                    self.check_now = true;
                    return Some(Input::LeaderExit(exit));
                }
                Reaped::TerminalStop if spawned.terminal.is_some() => self.suspended(true),
                // Stopped by someone else, outside a terminal: not ours to continue.
                Reaped::TerminalStop => {}
            }
        }
    }

    /// A key of the terminal the driver holds: Ctrl-Z suspends it with the job on the spot;
    /// Ctrl-C and Ctrl-\ go to the engine.
    fn key(&mut self) -> Option<Input> {
        loop {
            let signal = self.interrupts.key()?;
            let key = match signal {
                signals::SIGINT => JobSignal::Interrupt,
                signals::SIGQUIT => JobSignal::Quit,
                _ => {
                    self.suspended(false);
                    continue;
                }
            };
            return Some(Input::Key { key, signal });
        }
    }

    /// One sample now. A leader that exited while it was read is reaped first, so that the
    /// engine knows its exit status before it sees the job gone.
    fn sample(&mut self) -> Input {
        self.sample_as(false)
    }

    /// [`LiveSource::sample`], saying whether it is the look aimed at the crossing.
    fn sample_as(&mut self, aimed: bool) -> Input {
        let mut sample = self.sampler.tick();
        sample.aimed = aimed;
        // A leader the read found alive that exits after it sends SIGCHLD: reaped when that
        // comes, as anything else a signal brings.
        let leader_read_alive = self.spawned.as_ref().is_some_and(|spawned| {
            !sample.tracked.is_empty()
                && sample
                    .tracked
                    .iter()
                    .all(|t| t.members.iter().any(|m| m.id.pid == spawned.leader))
        });
        let sample = Input::Sample(sample);
        if leader_read_alive && !self.reap_due && !self.signal_pending.load(Ordering::SeqCst) {
            return sample;
        }
        match self.reaped() {
            Some(exit) => {
                self.check_now = false;
                self.pending.push_back(sample);
                exit
            }
            None => sample,
        }
    }

    /// The first interrupt, then a second one, each once.
    fn interrupt(&mut self) -> Option<Input> {
        let signal = self.interrupts.received()?;
        let second = self.interrupts.second();
        let want = if second { 2 } else { 1 };
        if self.told >= want {
            return None;
        }
        self.told = want;
        Some(Input::Interrupt { signal, second })
    }

    /// Ctrl-Z: the terminal stopped the job's foreground group (its leader), or reached the
    /// driver itself (it holds the terminal while the job is paused, or once the leader has
    /// exited), and the driver suspends with the job, as a shell job would. Members the
    /// terminal did not stop (in other sessions or groups: a `setsid` worker) are paused
    /// first, so nothing of the job runs unguarded while the driver is suspended, and
    /// continued with the rest on `fg` (or `bg`); members already stopped (a pause of the
    /// engine's) stay as they are. A watched process is not the driver's to pause. A
    /// SIGTSTP to the driver itself (`by_terminal` false: the terminal stopped nothing, or
    /// there is no terminal) suspends it the same way, and continues only what it paused.
    fn suspended(&mut self, by_terminal: bool) {
        let Some(spawned) = self.spawned.as_ref() else {
            jobctl::suspend_self();
            return;
        };
        let running: Vec<ProcessIdentity> = self
            .members
            .discover(self.counters)
            .iter()
            .filter(|m| m.state != RunState::Stopped)
            .map(|m| m.id)
            .collect();
        let held = signal_each(
            self.counters,
            &Kernel,
            self.safety,
            &running,
            JobSignal::Pause,
        );
        let job_had_terminal = spawned.terminal.as_ref().is_some_and(|t| !t.ours());
        if let Some(terminal) = &spawned.terminal {
            let _ = terminal.take_back();
        }
        if by_terminal {
            jobctl::suspend_self();
        } else {
            // A stop signal sent to the guard itself: stopped for sure, wherever its
            // process group is (a SIGTSTP of its own would be discarded in an orphaned one).
            jobctl::stop_self();
        }
        // Continued: `fg` gave the terminal back to us (hand it to the job, if it had it);
        // `bg` did not.
        if let Some(terminal) = spawned.terminal.as_ref().filter(|t| t.ours()) {
            if job_had_terminal {
                let _ = terminal.give_to_job();
            }
        }
        if by_terminal && spawned.exit.is_none() {
            // Job control, as a shell does it: the group the driver started, while its
            // leader lives (its id names no other group then).
            let _ = signals::send_group(spawned.leader, SIGCONT);
        }
        signal_each(
            self.counters,
            &Kernel,
            self.safety,
            &held.reached,
            JobSignal::Resume,
        );
        // A check at once: the job may have changed while the driver was stopped.
        self.check_now = true;
    }

    /// The next wake-up within `timeout`: parked until one is sent ([`WakeSender`]) or the
    /// time is up (a spurious unpark only looks at the queue again).
    fn wait(&self, timeout: Duration) -> Result<Wake, RecvTimeoutError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.wakes.try_recv() {
                Ok(wake) => return Ok(wake),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            std::thread::park_timeout(left);
        }
    }

    /// Hands the requests the loop will not take any more a last answer (the job ended).
    pub(super) fn refuse_pending(&self, why: &str) {
        while let Ok(wake) = self.wakes.try_recv() {
            if let Wake::Request { reply, .. } = wake {
                let _ = reply.try_send(Err(why.to_string()));
            }
        }
    }
}
