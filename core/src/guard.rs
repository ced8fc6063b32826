//! Enforcement: stopping a process tree or a process group, SIGTERM then SIGKILL.
//!
//! Safety rules (design.md): a process is identified by (pid, start time) and re-checked
//! before every signal, so a recycled pid is never signalled; pid 0 and 1, Headroom itself,
//! its ancestors and other users' processes are never signalled. A command Headroom started
//! runs in its own process group and the group is stopped; a process picked from a list is
//! stopped with its descendants (by parent pid). Every signal is logged.

use std::process::Child;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::counters::signals::{self, SIGKILL, SIGTERM};
use crate::counters::{Counters, ProcessInfo};
use crate::process::{ancestors, tree_pids, ProcessIdentity};

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
        let info = counters
            .process_info(id.pid)
            .map_err(|_| Refusal::Gone(id.pid))?;
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
    /// Pids sent SIGTERM (or the group id, for a group stop).
    pub terminated: Vec<u32>,
    /// Pids sent SIGKILL after the grace period (or the group id).
    pub killed: Vec<u32>,
    /// Pids left alone, and why.
    pub refused: Vec<(u32, String)>,
    /// Pids still there at the end (should be empty).
    pub survivors: Vec<u32>,
}

fn signal_checked(
    counters: &Counters,
    safety: &Safety,
    id: &ProcessIdentity,
    signal: i32,
    report: &mut StopReport,
) -> bool {
    match safety.check(counters, id) {
        Ok(info) => match signals::send(id.pid, signal) {
            Ok(()) => {
                tracing::warn!(pid = id.pid, name = %info.name, signal, "signalled");
                true
            }
            Err(e) => {
                report.refused.push((id.pid, e.to_string()));
                false
            }
        },
        Err(Refusal::Gone(_)) => false,
        Err(refusal) => {
            tracing::warn!(pid = id.pid, %refusal, "refused to signal");
            report.refused.push((id.pid, refusal.to_string()));
            false
        }
    }
}

/// Stops `root` and its descendants: SIGTERM to each (identity re-checked), then SIGKILL to
/// what is left after `grace`, or at once when `escalate()` turns true. Descendants that
/// appear during the grace period are included in the SIGKILL round.
pub fn stop_tree(
    counters: &Counters,
    safety: &Safety,
    root: ProcessIdentity,
    grace: Duration,
    escalate: &dyn Fn() -> bool,
) -> Result<StopReport, Refusal> {
    safety.check(counters, &root)?;
    let mut report = StopReport::default();
    let tree = identities(counters, root);
    // Parents first, so a supervisor cannot respawn children between the signals.
    for id in &tree {
        if signal_checked(counters, safety, id, SIGTERM, &mut report) {
            report.terminated.push(id.pid);
        }
    }
    let started = Instant::now();
    let alive = |ids: &[ProcessIdentity]| ids.iter().filter(|id| id.is_alive(counters)).count();
    while alive(&tree) > 0 && started.elapsed() < grace && !escalate() {
        std::thread::sleep(POLL);
    }
    let mut remaining: Vec<ProcessIdentity> = tree.clone();
    if root.is_alive(counters) {
        for id in identities(counters, root) {
            if !remaining.contains(&id) {
                remaining.push(id);
            }
        }
    }
    for id in remaining.iter().filter(|id| id.is_alive(counters)) {
        if signal_checked(counters, safety, id, SIGKILL, &mut report) {
            report.killed.push(id.pid);
        }
    }
    let killed_at = Instant::now();
    while alive(&remaining) > 0 && killed_at.elapsed() < KILL_WAIT {
        std::thread::sleep(POLL);
    }
    report.survivors = remaining
        .iter()
        .filter(|id| id.is_alive(counters))
        .map(|id| id.pid)
        .collect();
    Ok(report)
}

/// `root` and its live descendants with their identities.
fn identities(counters: &Counters, root: ProcessIdentity) -> Vec<ProcessIdentity> {
    let mut out = vec![root];
    for pid in tree_pids(counters, root.pid).into_iter().skip(1) {
        if let Ok(id) = ProcessIdentity::of(counters, pid) {
            out.push(id);
        }
    }
    out
}

/// Stops the process group led by `child`, a command Headroom started in its own group:
/// SIGTERM to the group, SIGKILL to what is left after `grace` (or at once on `escalate()`).
/// Reaps `child`; returns when the group is empty or `KILL_WAIT` after SIGKILL.
pub fn stop_group(child: &mut Child, grace: Duration, escalate: &dyn Fn() -> bool) -> StopReport {
    let pgid = child.id();
    let mut report = StopReport::default();
    if pgid <= 1 || pgid == signals::current_pgid() || pgid == std::process::id() {
        report.refused.push((
            pgid,
            format!("group {pgid} is not a group Headroom started"),
        ));
        return report;
    }
    let gone = |child: &mut Child| {
        let _ = child.try_wait();
        !signals::group_exists(pgid)
    };
    if gone(child) {
        return report;
    }
    if signals::send_group(pgid, SIGTERM).is_ok() {
        tracing::warn!(pgid, "sent SIGTERM to the group");
        report.terminated.push(pgid);
    }
    let started = Instant::now();
    while !gone(child) && started.elapsed() < grace && !escalate() {
        std::thread::sleep(POLL);
    }
    if !gone(child) {
        if signals::send_group(pgid, SIGKILL).is_ok() {
            tracing::warn!(pgid, "sent SIGKILL to the group");
            report.killed.push(pgid);
        }
        let killed_at = Instant::now();
        while !gone(child) && killed_at.elapsed() < KILL_WAIT {
            std::thread::sleep(POLL);
        }
    }
    if !gone(child) {
        report.survivors.push(pgid);
    }
    report
}

#[cfg(all(test, target_os = "linux"))]
#[path = "guard_tests.rs"]
mod tests;
