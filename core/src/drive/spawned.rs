//! The command a driver starts: its own process group, the terminal handed over, its exit
//! status reaped here and nowhere else (never by std), and a Ctrl-Z told from Headroom's own
//! pause by the signal that stopped the leader.

use std::os::unix::process::CommandExt;

use super::{DriveError, Launch};
use crate::counters::CounterSource;
use crate::marks::MARK_ENV;
use crate::members::Members;
use crate::policy::EndReason;
use crate::process::ProcessIdentity;
use crate::unix::jobctl::{self, ChildStatus, Terminal};
use crate::unix::signals::{SIGTSTP, SIGTTIN, SIGTTOU};

/// A command this driver started.
#[derive(Debug)]
pub(super) struct Spawned {
    pub(super) leader: u32,
    pub(super) terminal: Option<Terminal>,
    pub(super) exit: Option<EndReason>,
}

/// What reaping found about the leader.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reaped {
    /// It exited (or a signal ended it).
    Exit(EndReason),
    /// The terminal stopped it (Ctrl-Z, or reading from the background): the user
    /// suspended the job, and the driver with it.
    TerminalStop,
}

impl Spawned {
    /// Reaps whatever changed state (adopted orphans of the job included); says what
    /// happened to the leader, if anything. A SIGSTOP of the leader (Headroom's own pause,
    /// or anyone's `kill -STOP`) is not a Ctrl-Z and is left to the engine's checks.
    pub(super) fn reap(&mut self) -> Option<Reaped> {
        let mut news = None;
        while let Ok(Some((pid, status))) = jobctl::reap_any() {
            if pid != self.leader {
                continue; // an adopted orphan of the job, or a stopped member
            }
            let end = match status {
                ChildStatus::Exited(code) => EndReason::Exited { code },
                ChildStatus::Signaled(signal) => EndReason::Signaled { signal },
                ChildStatus::Stopped(signal) if [SIGTSTP, SIGTTIN, SIGTTOU].contains(&signal) => {
                    news = Some(Reaped::TerminalStop);
                    continue;
                }
                ChildStatus::Stopped(_) => continue,
            };
            self.exit = Some(end.clone());
            news = Some(Reaped::Exit(end));
        }
        news
    }

    /// The job ended: the terminal is ours again, as it was; the last children reaped.
    pub(super) fn finish(&mut self) {
        if let Some(terminal) = &self.terminal {
            let _ = terminal.take_back();
            terminal.restore_settings();
        }
        let _ = self.reap();
    }
}

/// Starts the command of `launch` (its own process group, the terminal handed over, the
/// mark socket in its environment), or takes the watched process; returns the job's members.
pub(super) fn launch_job(
    counters: &impl CounterSource,
    launch: Launch,
    mark_socket: Option<&std::path::Path>,
) -> Result<(Members, Option<Spawned>), DriveError> {
    let (mut command, terminal) = match launch {
        Launch::Process(id) => return Ok((Members::of_process(id), None)),
        Launch::Command { command, terminal } => (command, terminal),
    };
    let reaper = jobctl::become_subreaper();
    command.process_group(0);
    if let Some(path) = mark_socket {
        command.env(MARK_ENV, path);
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
    // Not reaped yet, so readable even if it already exited (a zombie).
    let id = ProcessIdentity {
        pid: leader,
        start_time: counters.start_time_even_exited(leader).unwrap_or(0),
    };
    let spawned = Spawned {
        leader,
        terminal,
        exit: None,
    };
    let reaper = reaper.then(std::process::id);
    Ok((Members::of_command(id, reaper), Some(spawned)))
}
