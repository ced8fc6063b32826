//! Enforcement: sending a job's members a signal under the safety rules, one member at a
//! time, and saying for each what happened ([`SignalReport`]).
//!
//! Safety rules (ARCHITECTURE.md, docs/safety.md): a process is identified by (pid,
//! start time) and re-checked right before every signal, so a recycled pid is never
//! signalled; a process whose start time the OS will not give is never signalled; pid 0 and
//! 1, Headroom itself, its ancestors (each by pid and start time) and other users' processes
//! are never signalled. Every signal and every refusal is logged.
//!
//! The job engine decides what to send and verifies the effect at its next check (a stop is
//! done when no member lives; a pause when every member is stopped): [`signal_each`] only
//! sends and reports. [`stop_members`] is the one blocking stop, for a driver that unwinds
//! from a panic and can no longer trust its engine.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::counters::CounterSource;
use crate::members::MemberSet;
use crate::process::ancestors;
use crate::unix::signals::{self, SendSignal, SIGCONT, SIGINT, SIGKILL, SIGQUIT, SIGSTOP, SIGTERM};
use headroom_model::counters::{JobCgroup, ProcessInfo};
use headroom_model::effects::{JobSignal, Refused, SignalReport, StopReport, KILL_WAIT};
use headroom_model::process::ProcessIdentity;

const POLL: Duration = Duration::from_millis(20);

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
    /// The OS would not give the process's start time: it cannot be told from a process
    /// that got its pid later.
    #[error("pid {0} cannot be identified: the OS hides its start time")]
    Unidentified(u32),
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
    myself: ProcessIdentity,
    ancestors: Vec<ProcessIdentity>,
    uid: u32,
}

impl Safety {
    /// Reads our identity, our ancestors' and our uid.
    pub fn new(counters: &impl CounterSource) -> Self {
        let pid = std::process::id();
        Safety::of(
            ProcessIdentity {
                pid,
                start_time: counters.start_time(pid).unwrap_or(0),
            },
            ancestors(counters, pid),
            signals::current_uid(),
        )
    }

    /// The rules for process `myself` with these ancestors, running as `uid`.
    pub fn of(myself: ProcessIdentity, ancestors: Vec<ProcessIdentity>, uid: u32) -> Self {
        Safety {
            myself,
            ancestors,
            uid,
        }
    }

    /// Checks that `id` may be signalled now; returns its current info.
    pub fn check(
        &self,
        counters: &impl CounterSource,
        id: &ProcessIdentity,
    ) -> Result<ProcessInfo, Refusal> {
        if id.pid <= 1 {
            return Err(Refusal::Reserved(id.pid));
        }
        if id.pid == self.myself.pid {
            return Err(Refusal::Ourselves(id.pid));
        }
        let info = match counters.identity(id.pid) {
            Ok(info) => info,
            Err(e) if e.is_gone() => return Err(Refusal::Gone(id.pid)),
            Err(e) => return Err(Refusal::Unreadable(id.pid, e.to_string())),
        };
        if id.start_time == 0 || info.start_time == 0 {
            return Err(Refusal::Unidentified(id.pid));
        }
        if info.start_time != id.start_time {
            return Err(Refusal::Gone(id.pid));
        }
        if self.ancestors.contains(id) {
            return Err(Refusal::OurAncestor(id.pid));
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

/// The OS signal numbers a [`JobSignal`] sends, in order.
fn signal_numbers(signal: JobSignal) -> &'static [i32] {
    match signal {
        JobSignal::Pause => &[SIGSTOP],
        JobSignal::Resume => &[SIGCONT],
        // A stopped process keeps SIGTERM pending until it is continued.
        JobSignal::Terminate => &[SIGTERM, SIGCONT],
        JobSignal::Kill => &[SIGKILL],
        JobSignal::Interrupt => &[SIGINT],
        JobSignal::Quit => &[SIGQUIT],
    }
}

/// Sends `signal` to one member if the safety rules allow it now; the identity check and
/// the signal name the same process (a pidfd on Linux).
fn signal_one(
    counters: &impl CounterSource,
    kernel: &impl SendSignal,
    safety: &Safety,
    id: &ProcessIdentity,
    number: i32,
) -> Result<bool, Refusal> {
    let mut checked = None;
    let sent = kernel.send_if(id.pid, number, &mut || {
        let check = safety.check(counters, id);
        let ok = check.is_ok();
        checked = Some(check);
        ok
    });
    match (sent, checked) {
        (Ok(true), check) => {
            let name = check.and_then(Result::ok).map(|info| info.name);
            tracing::warn!(pid = id.pid, name = ?name, signal = number, "signalled");
            Ok(true)
        }
        (Ok(false), Some(Err(Refusal::Gone(_)))) | (Ok(false), None) => Ok(false),
        (Ok(false), Some(Err(refusal))) => {
            tracing::warn!(pid = id.pid, %refusal, "refused to signal");
            Err(refusal)
        }
        (Ok(false), Some(Ok(_))) => Ok(false),
        (Err(e), _) => Err(Refusal::Unreadable(id.pid, e.to_string())),
    }
}

/// Sends `signal` to each of `members` (parents first, as given), each identity re-checked
/// right before; says which it reached, which it refused and why, which were gone.
pub fn signal_each(
    counters: &impl CounterSource,
    kernel: &impl SendSignal,
    safety: &Safety,
    members: &[ProcessIdentity],
    signal: JobSignal,
) -> SignalReport {
    let mut report = SignalReport::default();
    for (i, &number) in signal_numbers(signal).iter().enumerate() {
        for id in members {
            // The second signal of a pair (SIGCONT after SIGTERM) goes to those the first
            // one reached.
            if i > 0 && !report.reached.contains(id) {
                continue;
            }
            match signal_one(counters, kernel, safety, id, number) {
                Ok(true) if i == 0 => report.reached.push(*id),
                Ok(true) => {}
                Ok(false) if i == 0 => report.gone.push(*id),
                Ok(false) => {}
                Err(refusal) if i == 0 => report.refused.push(Refused {
                    id: *id,
                    why: refusal.to_string(),
                }),
                Err(_) => {}
            }
        }
    }
    report
}

/// Sends `signal` to a job's `members`: through its own cgroup's freezer where it has one
/// (Linux), else to each member under the safety rules ([`signal_each`]). A pause freezes
/// the cgroup (and so every cgroup beneath it) only when every member may be signalled (the
/// freezer would stop them all, a member of another user too), else signals; a resume thaws
/// the cgroup (its own freeze, nothing beneath it: a guard inside the job keeps its own
/// pause) and continues each member (one stopped by anyone else, a Ctrl-Z, too); a stop
/// thaws every cgroup of the job first (a frozen process handles no signal), then signals.
pub fn signal_job(
    counters: &impl CounterSource,
    kernel: &impl SendSignal,
    safety: &Safety,
    cgroup: Option<&JobCgroup>,
    members: &[ProcessIdentity],
    signal: JobSignal,
) -> SignalReport {
    #[cfg(target_os = "linux")]
    if let Some(cgroup) = cgroup.filter(|c| crate::unix::cgroup::can_freeze(c)) {
        if let Some(report) = by_freezer(counters, safety, cgroup, members, signal) {
            return report;
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cgroup;
    signal_each(counters, kernel, safety, members, signal)
}

/// [`signal_job`]'s freezer: the report of a pause it froze, else `None` (then signal),
/// having thawed what a resume or a stop needs thawed.
#[cfg(target_os = "linux")]
fn by_freezer(
    counters: &impl CounterSource,
    safety: &Safety,
    cgroup: &JobCgroup,
    members: &[ProcessIdentity],
    signal: JobSignal,
) -> Option<SignalReport> {
    use crate::unix::cgroup::{set_frozen, thaw_all};
    let thawed = match signal {
        JobSignal::Pause => {
            if members.iter().any(|id| safety.check(counters, id).is_err()) {
                return None;
            }
            match set_frozen(cgroup, true) {
                Ok(()) => {
                    tracing::warn!(cgroup = %cgroup.path, "froze the job's cgroup");
                    return Some(SignalReport {
                        reached: members.to_vec(),
                        ..SignalReport::default()
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, cgroup = %cgroup.path, "the freezer failed: signalling");
                    return None;
                }
            }
        }
        JobSignal::Resume => set_frozen(cgroup, false),
        JobSignal::Terminate | JobSignal::Kill => thaw_all(cgroup),
        JobSignal::Interrupt | JobSignal::Quit => return None,
    };
    match thawed {
        Ok(()) => tracing::warn!(cgroup = %cgroup.path, "thawed the job's cgroup"),
        Err(e) => tracing::warn!(error = %e, cgroup = %cgroup.path, "cannot thaw the job's cgroup"),
    }
    None
}

/// Stops every member of a job at once and waits for it, blocking: SIGTERM (and SIGCONT) to
/// each live member, SIGKILL after `grace` to what is left, members found again before each
/// round. Only for a driver unwinding from a panic, which can no longer trust its engine;
/// everywhere else the engine drives a stop and verifies it at each check.
pub fn stop_members(
    counters: &impl CounterSource,
    kernel: &impl SendSignal,
    safety: &Safety,
    members: &MemberSet,
    grace: Duration,
) -> StopReport {
    let live =
        || -> Vec<ProcessIdentity> { members.discover(counters).iter().map(|m| m.id).collect() };
    stop_now(counters, kernel, safety, &live, grace)
}

/// [`stop_members`] for the processes `live()` says are alive now.
fn stop_now(
    counters: &impl CounterSource,
    kernel: &impl SendSignal,
    safety: &Safety,
    live: &dyn Fn() -> Vec<ProcessIdentity>,
    grace: Duration,
) -> StopReport {
    let mut report = StopReport::default();
    let term = signal_each(counters, kernel, safety, &live(), JobSignal::Terminate);
    report.terminated = term.reached.iter().map(|id| id.pid).collect();
    let refused: Vec<ProcessIdentity> = term.refused.iter().map(|r| r.id).collect();
    let signallable = || -> Vec<ProcessIdentity> {
        live()
            .into_iter()
            .filter(|id| !refused.contains(id))
            .collect()
    };
    let started = Instant::now();
    while !signallable().is_empty() && started.elapsed() < grace {
        std::thread::sleep(POLL);
    }
    let kill = signal_each(counters, kernel, safety, &signallable(), JobSignal::Kill);
    report.killed = kill.reached.iter().map(|id| id.pid).collect();
    let killed_at = Instant::now();
    while !signallable().is_empty() && killed_at.elapsed() < KILL_WAIT {
        std::thread::sleep(POLL);
    }
    report.refused = term
        .refused
        .into_iter()
        .chain(kill.refused)
        .map(|r| (r.id.pid, r.why))
        .collect();
    report.refused.sort();
    report.refused.dedup();
    report.survivors = live().iter().map(|id| id.pid).collect();
    report
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
mod tests;
