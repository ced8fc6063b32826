//! What carrying out a job's actions does, as plain data: the signals a job's members may
//! get ([`JobSignal`]), and for each signal sent which members it reached, which the safety
//! rules refused and why, and which were already gone ([`SignalReport`]). The enforcer
//! (`crate::enforce`) fills the reports; the job engine reads them back, so it knows what was
//! done, not only what it asked for. [`StopReport`] is what a whole stop did, as `--json`
//! shows it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::process::ProcessIdentity;

/// How long a stop waits after SIGKILL for every member to be gone before it says which
/// are left (the enforcer's wait, and the engine's stop phase).
pub const KILL_WAIT: Duration = Duration::from_secs(2);

/// What the owner of a job may ask of it (`headroom pause|resume|stop PID`, the app's
/// buttons); the job engine decides whether it makes sense now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    /// Pause it now.
    Pause,
    /// Continue it, paused.
    Resume,
    /// Stop it (SIGTERM, then SIGKILL after the grace).
    Stop,
    /// Pause it to make room for an older guarded job whose budget was crossed (sent by
    /// that job's guard: `headroom_rules::policy::order`); refused unless it pauses at its budget
    /// and has pauses left. A job already paused answers done.
    Yield,
}

impl Control {
    /// `pause`, `resume` or `stop`.
    pub fn as_str(self) -> &'static str {
        match self {
            Control::Pause => "pause",
            Control::Resume => "resume",
            Control::Stop => "stop",
            Control::Yield => "yield",
        }
    }
}

/// A signal for a job's members, as the engine asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobSignal {
    /// SIGSTOP: pause.
    Pause,
    /// SIGCONT: continue a paused member.
    Resume,
    /// SIGTERM, then SIGCONT so that a paused member wakes to act on it.
    Terminate,
    /// SIGKILL, after the grace period.
    Kill,
    /// SIGINT: the terminal's Ctrl-C, sent on to every member once the driver holds the
    /// terminal for the job (its leader has exited).
    Interrupt,
    /// SIGQUIT: the terminal's Ctrl-\, sent on likewise.
    Quit,
}

impl JobSignal {
    /// `pause`, `resume`, `terminate` or `kill`, for people (`cannot pause pid 42: …`).
    pub fn verb(self) -> &'static str {
        match self {
            JobSignal::Pause => "pause",
            JobSignal::Resume => "resume",
            JobSignal::Terminate | JobSignal::Kill => "stop",
            JobSignal::Interrupt => "interrupt",
            JobSignal::Quit => "quit",
        }
    }
}

/// A member a signal was not sent to, and why (the safety rules, or the OS).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// The member.
    pub id: ProcessIdentity,
    /// Why, in words (`pid 42 belongs to uid 65534, not to us (uid 0)`).
    pub why: String,
}

/// What one signal to some of a job's members did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SignalReport {
    /// Members it was delivered to.
    pub reached: Vec<ProcessIdentity>,
    /// Members it was not sent to, and why.
    pub refused: Vec<Refused>,
    /// Members that had exited, or whose pid names another process now.
    pub gone: Vec<ProcessIdentity>,
}

impl SignalReport {
    /// Adds `other`'s members to this report.
    pub fn merge(&mut self, other: SignalReport) {
        self.reached.extend(other.reached);
        self.refused.extend(other.refused);
        self.gone.extend(other.gone);
    }
}

/// What a stop did, as verified at its end: `--json`'s `stop`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StopReport {
    /// Pids sent SIGTERM.
    pub terminated: Vec<u32>,
    /// Pids sent SIGKILL after the grace period.
    pub killed: Vec<u32>,
    /// Pids the safety rules (or the OS) kept a signal from, and why.
    pub refused: Vec<(u32, String)>,
    /// Pids still alive at the last check, from a complete, fresh look at the job: empty
    /// when the stop held.
    pub survivors: Vec<u32>,
}

impl StopReport {
    /// True when a signal reached at least one member.
    pub fn signalled(&self) -> bool {
        !self.terminated.is_empty() || !self.killed.is_empty()
    }
}
