//! The command a driver starts: its own process group, the terminal handed over, its exit
//! status reaped (never by std), a pause that is the driver's and not a Ctrl-Z; and the stop
//! that runs if the driver unwinds from a panic.

use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{DriveError, Launch};
use crate::counters::{CounterSource, Counters};
use crate::enforce::{resume_members, stop_members, Safety};
use crate::marks::{MarkServer, MARK_ENV};
use crate::members::{MemberSet, Members};
use crate::policy::EndReason;
use crate::process::ProcessIdentity;
use crate::unix::jobctl::{self, ChildStatus, Terminal};
use crate::unix::signals::{self, SIGCONT};

/// How long to wait for a stopped leader's exit status.
pub(super) const REAP_WAIT: Duration = Duration::from_secs(2);

/// A command this driver started.
pub(super) struct Spawned {
    pub(super) leader: u32,
    pub(super) terminal: Option<Terminal>,
    pub(super) exit: Option<EndReason>,
    /// The driver paused the job: the leader's stop is ours, not a Ctrl-Z.
    pub(super) paused: bool,
}

impl Spawned {
    /// Reaps what changed state; returns the leader's end once it exited. A leader stopped
    /// by Ctrl-Z suspends the driver too; once continued, the job is continued.
    pub(super) fn reap(&mut self) -> Option<EndReason> {
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

    pub(super) fn suspended(&self) {
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
    pub(super) fn reap_leader(&mut self) {
        let started = std::time::Instant::now();
        while self.reap().is_none() && started.elapsed() < REAP_WAIT {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Paused: the driver takes the terminal, so Ctrl-C reaches it (and stops the job).
    /// Resumed: the job gets it back.
    pub(super) fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
        if let Some(terminal) = &self.terminal {
            let _ = if paused {
                terminal.take_back()
            } else {
                terminal.give_to(self.leader)
            };
        }
    }

    pub(super) fn finish(&mut self) {
        if let Some(terminal) = &self.terminal {
            let _ = terminal.take_back();
            terminal.restore_settings();
        }
        self.reap();
    }
}

/// Stops a started job if the driver unwinds from a panic: a bug in Headroom must not leave
/// the job running unguarded. A watched process is left alone, continued if it was paused.
pub(super) struct StopOnUnwind<'a> {
    pub(super) counters: &'a Counters,
    pub(super) safety: &'a Safety,
    pub(super) members: MemberSet,
    pub(super) armed: bool,
    pub(super) paused: Arc<AtomicBool>,
}

impl Drop for StopOnUnwind<'_> {
    fn drop(&mut self) {
        if !self.armed && self.paused.load(Ordering::SeqCst) && std::thread::panicking() {
            resume_members(self.counters, self.safety, &self.members);
        }
        if self.armed && std::thread::panicking() {
            tracing::error!("the driver panicked: stopping its job");
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

/// Starts the command of `launch` (its own process group, the terminal handed over, the
/// mark socket in its environment), or takes the watched process; returns the job's members.
pub(super) fn launch_job(
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
