//! The pause and the stop under way, and how each is verified at every check against the
//! job's members as that check found them (a complete, fresh look). Pure: members, their
//! states and the time in; what to do next out. Table-tested in `tests.rs`.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::policy::{EndReason, StopReason, Survivor};
use headroom_model::counters::RunState;
use headroom_model::effects::KILL_WAIT;
use headroom_model::effects::{JobSignal, StopReport};
use headroom_model::members::Member;
use headroom_model::process::ProcessIdentity;

/// How long a member sent SIGSTOP and waiting in the kernel ([`RunState::Waiting`]: a stop
/// takes effect only once it leaves the wait) may take to be seen stopped before it counts
/// as continued from outside. One that runs or sleeps interruptibly stops at once: seen
/// running at two checks after its SIGSTOP (sent again at the first), it was continued in
/// between, however soon.
pub const PAUSE_SETTLE: Duration = Duration::from_secs(1);

/// Members the safety rules refused, and why.
pub(super) type RefusedMembers = HashMap<ProcessIdentity, String>;

/// A pause under way.
#[derive(Debug, Clone, Default)]
pub(super) struct PausePhase {
    /// Members sent SIGSTOP and not yet seen stopped, with when (job clock).
    sent: HashMap<ProcessIdentity, Duration>,
    /// Members seen stopped since the pause began.
    confirmed: HashSet<ProcessIdentity>,
    /// Members sent SIGSTOP and seen running at a later check once (sent it again then).
    running_after: HashSet<ProcessIdentity>,
}

/// What a check of a pause found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PauseCheck {
    /// Every member is stopped, or will be (SIGSTOP sent a moment ago).
    Holds,
    /// These members are not seen stopped yet: never sent SIGSTOP (born since, or not seen
    /// at the pause), or sent it a moment ago.
    Pause(Vec<ProcessIdentity>),
    /// These members run: continued from outside (`continued`), or out of the pause's
    /// reach (the safety rules refused them).
    RunsAgain {
        /// Their pids.
        pids: Vec<u32>,
        /// True when continued from outside.
        continued: bool,
    },
}

impl PausePhase {
    /// True once every member SIGSTOP was sent to has been seen stopped: the pause may be
    /// checked at the poll, not at once.
    pub(super) fn settled(&self) -> bool {
        self.sent.is_empty()
    }

    /// Records that SIGSTOP reached `members` at `now`.
    pub(super) fn sent(&mut self, members: &[ProcessIdentity], now: Duration) {
        for id in members {
            self.sent.entry(*id).or_insert(now);
        }
    }

    /// Checks the pause against the members one check found, at `now`.
    pub(super) fn check(
        &mut self,
        members: &[Member],
        refused: &RefusedMembers,
        now: Duration,
    ) -> PauseCheck {
        let (mut continued, mut escaped, mut unpaused) = (Vec::new(), Vec::new(), Vec::new());
        for member in members {
            let id = member.id;
            // A member in exit runs none of its code again: as good as paused.
            if matches!(member.state, RunState::Stopped | RunState::Exiting) {
                self.sent.remove(&id);
                self.running_after.remove(&id);
                self.confirmed.insert(id);
                continue;
            }
            if self.confirmed.contains(&id) {
                continued.push(id.pid);
            } else if refused.contains_key(&id) {
                escaped.push(id.pid);
            } else {
                match self.sent.get(&id) {
                    None => unpaused.push(id),
                    Some(at) if now.saturating_sub(*at) >= PAUSE_SETTLE => continued.push(id.pid),
                    // Running at a check after its SIGSTOP: the first time it is sent again,
                    // the second it was continued (a stop stops a running process at once).
                    Some(at) if member.state == RunState::Running && now > *at => {
                        if self.running_after.insert(id) {
                            unpaused.push(id);
                        } else {
                            continued.push(id.pid);
                        }
                    }
                    // Not seen stopped yet: SIGSTOP again (it is idempotent); a member waiting
                    // in the kernel stops on its way out.
                    Some(_) => unpaused.push(id),
                }
            }
        }
        if !continued.is_empty() {
            PauseCheck::RunsAgain {
                pids: continued,
                continued: true,
            }
        } else if !escaped.is_empty() {
            PauseCheck::RunsAgain {
                pids: escaped,
                continued: false,
            }
        } else if !unpaused.is_empty() {
            PauseCheck::Pause(unpaused)
        } else {
            PauseCheck::Holds
        }
    }
}

/// A stop under way.
#[derive(Debug, Clone)]
pub(super) struct StopPhase {
    /// Why the job is stopped.
    pub(super) reason: StopReason,
    /// How the job ends once it is stopped, when not "stopped by the guard" (the driver was
    /// interrupted).
    pub(super) ends_as: Option<EndReason>,
    /// When the stop began (job clock).
    began: Duration,
    /// When SIGKILL went out, if it did.
    killed_at: Option<Duration>,
    /// SIGKILL now, without waiting for the grace (a second interrupt).
    pub(super) escalate: bool,
    /// Members sent SIGTERM (or that it was tried on).
    terminated: HashSet<ProcessIdentity>,
    /// Members sent SIGKILL (or that it was tried on).
    killed: HashSet<ProcessIdentity>,
    /// What the stop did so far, as `--json` shows it.
    pub(super) report: StopReport,
}

/// What a check of a stop found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StopCheck {
    /// No member lives: the stop held.
    Done,
    /// Send this to these members.
    Signal(JobSignal, Vec<ProcessIdentity>),
    /// Members are on their way out: look again at the next check.
    Wait,
    /// The stop cannot hold: these members still run.
    Failed(Vec<Survivor>),
}

impl StopPhase {
    /// A stop for `reason` beginning at `now`; the first SIGTERM goes to the members the
    /// caller sends it to (see [`StopPhase::first`]).
    pub(super) fn new(reason: StopReason, ends_as: Option<EndReason>, now: Duration) -> Self {
        StopPhase {
            reason,
            ends_as,
            began: now,
            killed_at: None,
            escalate: false,
            terminated: HashSet::new(),
            killed: HashSet::new(),
            report: StopReport::default(),
        }
    }

    /// The first SIGTERM: to every member the last check saw.
    pub(super) fn first(&mut self, members: &[Member]) -> Vec<ProcessIdentity> {
        let ids: Vec<ProcessIdentity> = members.iter().map(|m| m.id).collect();
        self.terminated.extend(ids.iter().copied());
        ids
    }

    /// Records what a signal of the stop reached.
    pub(super) fn reached(&mut self, signal: JobSignal, reached: &[ProcessIdentity]) {
        let pids = reached.iter().map(|id| id.pid);
        match signal {
            JobSignal::Terminate => self.report.terminated.extend(pids),
            JobSignal::Kill => self.report.killed.extend(pids),
            JobSignal::Pause | JobSignal::Resume | JobSignal::Interrupt | JobSignal::Quit => {}
        }
    }

    /// Checks the stop against the members one check found, at `now`, after `grace`.
    pub(super) fn check(
        &mut self,
        members: &[Member],
        refused: &RefusedMembers,
        grace: Duration,
        now: Duration,
    ) -> StopCheck {
        if members.is_empty() {
            return StopCheck::Done;
        }
        let signallable: Vec<ProcessIdentity> = members
            .iter()
            .map(|m| m.id)
            .filter(|id| !refused.contains_key(id))
            .collect();
        let survivors = || {
            members
                .iter()
                .map(|m| Survivor {
                    pid: m.id.pid,
                    why: refused
                        .get(&m.id)
                        .cloned()
                        .unwrap_or_else(|| "still alive after SIGKILL".into()),
                })
                .collect()
        };
        if let Some(killed_at) = self.killed_at {
            if now.saturating_sub(killed_at) >= KILL_WAIT {
                return StopCheck::Failed(survivors());
            }
            let new = self.not_in(&signallable, Which::Killed);
            return if new.is_empty() {
                StopCheck::Wait
            } else {
                StopCheck::Signal(JobSignal::Kill, new)
            };
        }
        if self.escalate || now.saturating_sub(self.began) >= grace {
            if signallable.is_empty() {
                return StopCheck::Failed(survivors());
            }
            self.killed_at = Some(now);
            let all = self.not_in(&signallable, Which::Killed);
            return StopCheck::Signal(JobSignal::Kill, all);
        }
        let new = self.not_in(&signallable, Which::Terminated);
        if new.is_empty() {
            StopCheck::Wait
        } else {
            StopCheck::Signal(JobSignal::Terminate, new)
        }
    }

    /// The members of `ids` not yet sent SIGTERM (or SIGKILL), now marked as sent.
    fn not_in(&mut self, ids: &[ProcessIdentity], which: Which) -> Vec<ProcessIdentity> {
        let set = match which {
            Which::Terminated => &mut self.terminated,
            Which::Killed => &mut self.killed,
        };
        ids.iter().copied().filter(|id| set.insert(*id)).collect()
    }
}

#[derive(Clone, Copy)]
enum Which {
    Terminated,
    Killed,
}
