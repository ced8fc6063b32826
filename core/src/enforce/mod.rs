//! Enforcement: stopping every member of a job (SIGTERM, SIGCONT so a paused member can act
//! on it, then SIGKILL), and pausing or resuming one (SIGSTOP, SIGCONT).
//!
//! Safety rules (ARCHITECTURE.md, README "Safety rules"): a process is identified by (pid, start time) and re-checked
//! before every signal, so a recycled pid is never signalled; pid 0 and 1, Headroom itself,
//! its ancestors and other users' processes are never signalled. A job is a set of
//! processes ([`crate::members`]): its members are signalled one by one, each re-checked.
//! Every signal is logged.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::counters::{CounterSource, Counters, ProcessInfo};
use crate::members::MemberSet;
use crate::process::{ancestors, ProcessIdentity};
use crate::unix::signals::{self, SIGCONT, SIGKILL, SIGSTOP, SIGTERM};

/// Default time between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);
/// How long to wait for processes to vanish after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Why a process may not be signalled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// Pid 0 or 1.
    #[error("pid {0} is never signalled")]
    Reserved(u32),
    /// Headroom itself.
    #[error("pid {0} is Headroom itself")]
    Ourselves(u32),
    /// An ancestor of Headroom (its shell, terminal, session).
    #[error("pid {0} is an ancestor of Headroom")]
    OurAncestor(u32),
    /// Another user's process.
    #[error("pid {pid} belongs to uid {uid}, not to us (uid {our_uid})")]
    OtherUser {
        /// The process.
        pid: u32,
        /// Its owner.
        uid: u32,
        /// Our uid.
        our_uid: u32,
    },
    /// The process has exited, or its pid now names another process.
    #[error("pid {0} is gone or was reused")]
    Gone(u32),
    /// The OS would not say who the process is (never taken for "gone").
    #[error("pid {0} cannot be checked: {1}")]
    Unreadable(u32, String),
}

/// Who we are, to refuse signalling ourselves, our ancestors and other users.
#[derive(Debug, Clone)]
pub struct Safety {
    self_pid: u32,
    ancestors: Vec<u32>,
    uid: u32,
}

impl Safety {
    /// Reads our pid, ancestors and uid.
    pub fn new(counters: &Counters) -> Self {
        let self_pid = std::process::id();
        Safety {
            self_pid,
            ancestors: ancestors(counters, self_pid),
            uid: signals::current_uid(),
        }
    }

    /// Checks that `id` may be signalled now; returns its current info.
    pub fn check(&self, counters: &Counters, id: &ProcessIdentity) -> Result<ProcessInfo, Refusal> {
        if id.pid <= 1 {
            return Err(Refusal::Reserved(id.pid));
        }
        if id.pid == self.self_pid {
            return Err(Refusal::Ourselves(id.pid));
        }
        if self.ancestors.contains(&id.pid) {
            return Err(Refusal::OurAncestor(id.pid));
        }
        let info = match counters.identity(id.pid) {
            Ok(info) => info,
            Err(e) if e.is_gone() => return Err(Refusal::Gone(id.pid)),
            Err(e) => return Err(Refusal::Unreadable(id.pid, e.to_string())),
        };
        if info.start_time != id.start_time {
            return Err(Refusal::Gone(id.pid));
        }
        if info.uid != self.uid {
            return Err(Refusal::OtherUser {
                pid: id.pid,
                uid: info.uid,
                our_uid: self.uid,
            });
        }
        Ok(info)
    }
}

/// What a stop did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StopReport {
    /// Pids sent SIGTERM.
    pub terminated: Vec<u32>,
    /// Pids sent SIGKILL after the grace period.
    pub killed: Vec<u32>,
    /// Pids left alone, and why.
    pub refused: Vec<(u32, String)>,
    /// Pids still there at the end (should be empty).
    pub survivors: Vec<u32>,
}

impl StopReport {
    /// True when a signal reached at least one member: only then was the job "stopped".
    pub fn signalled(&self) -> bool {
        !self.terminated.is_empty() || !self.killed.is_empty()
    }
}

/// Sends `signal` to `id` if the safety rules allow it now; the identity check and the
/// signal name the same process (a pidfd on Linux). True when it was delivered.
pub fn signal_checked(
    counters: &Counters,
    safety: &Safety,
    id: &ProcessIdentity,
    signal: i32,
    report: &mut StopReport,
) -> bool {
    let mut checked = None;
    let sent = signals::send_if(id.pid, signal, || {
        let check = safety.check(counters, id);
        let ok = check.is_ok();
        checked = Some(check);
        ok
    });
    match (sent, checked) {
        (Ok(true), check) => {
            let name = check.and_then(Result::ok).map(|info| info.name);
            tracing::warn!(pid = id.pid, name = ?name, signal, "signalled");
            true
        }
        (Ok(false), Some(Err(refusal))) if !matches!(refusal, Refusal::Gone(_)) => {
            tracing::warn!(pid = id.pid, %refusal, "refused to signal");
            report.refused.push((id.pid, refusal.to_string()));
            false
        }
        (Ok(false), _) => false,
        (Err(e), _) => {
            report.refused.push((id.pid, e.to_string()));
            false
        }
    }
}

/// Stops every member of a job: SIGTERM to each live member (identity re-checked before
/// each signal) followed by SIGCONT, so a paused member wakes to handle it and exit
/// cleanly; then SIGKILL to every member still alive after `grace`, or at once when
/// `escalate()` turns true. Members that appear during the grace period (a supervisor's
/// new children) are found again and included in the SIGKILL round.
pub fn stop_members(
    counters: &Counters,
    safety: &Safety,
    members: &MemberSet,
    grace: Duration,
    escalate: &dyn Fn() -> bool,
) -> StopReport {
    let mut report = StopReport::default();
    // Parents first, so a supervisor cannot respawn children between the signals.
    for id in members.discover(counters) {
        if signal_checked(counters, safety, &id, SIGTERM, &mut report) {
            report.terminated.push(id.pid);
        }
    }
    // A stopped process keeps SIGTERM pending until it is continued.
    for id in members.discover(counters) {
        signal_checked(counters, safety, &id, SIGCONT, &mut report);
    }
    let started = Instant::now();
    while !members.discover(counters).is_empty() && started.elapsed() < grace && !escalate() {
        std::thread::sleep(POLL);
    }
    for id in members.discover(counters) {
        if signal_checked(counters, safety, &id, SIGKILL, &mut report) {
            report.killed.push(id.pid);
        }
    }
    let killed_at = Instant::now();
    while !members.discover(counters).is_empty() && killed_at.elapsed() < KILL_WAIT {
        std::thread::sleep(POLL);
    }
    report.survivors = members.live().iter().map(|id| id.pid).collect();
    report
}

/// Sends `signal` (SIGSTOP to pause, SIGCONT to resume) to every live member of a job,
/// parents first, each identity re-checked; returns the pids it reached. Refusals are
/// logged, as for a stop.
pub fn signal_members(
    counters: &Counters,
    safety: &Safety,
    members: &MemberSet,
    signal: i32,
) -> Vec<u32> {
    let mut report = StopReport::default();
    let mut reached = Vec::new();
    for id in members.discover(counters) {
        if signal_checked(counters, safety, &id, signal, &mut report) {
            reached.push(id.pid);
        }
    }
    reached
}

/// Pauses every member of a job (SIGSTOP; see [`signal_members`]).
pub fn pause_members(counters: &Counters, safety: &Safety, members: &MemberSet) -> Vec<u32> {
    signal_members(counters, safety, members, SIGSTOP)
}

/// Continues every member of a paused job (SIGCONT; see [`signal_members`]).
pub fn resume_members(counters: &Counters, safety: &Safety, members: &MemberSet) -> Vec<u32> {
    signal_members(counters, safety, members, SIGCONT)
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
