//! The effects a job may have, and the one way to carry out the engine's actions: signals
//! first (a notification never delays a signal), each signal's report fed back to the
//! engine at once (a refusal is said at once), then the notifications. The CLI's driver,
//! `trace replay` and the app each implement [`Effects`] and call [`carry_out`].

use std::collections::VecDeque;

use super::{Action, Engine, Moment};
use crate::policy::order::Peer;
use crate::policy::JobEvent;
use headroom_model::effects::{JobSignal, SignalReport};
use headroom_model::process::ProcessIdentity;

/// What a job's actions do in one place: signals to processes (or, in a replay, a record of
/// them), and events shown to people.
pub trait Effects {
    /// Sends `signal` to `members` of job `job` under the safety rules; says what it did.
    fn signal(&mut self, job: u64, signal: JobSignal, members: &[ProcessIdentity]) -> SignalReport;

    /// Shows an event of job `job` (its command line given). Must not block on output: a
    /// reader that stops reading cannot hold up the next signal.
    fn notify(&mut self, job: u64, command: &str, event: &JobEvent);

    /// Asks another guard's job `peer` to pause in job `job`'s place (the youngest pauses
    /// first); `Ok` once it is paused. Where no other guard can be reached (a replay), the
    /// ask is refused and the job pauses itself.
    fn make_room(&mut self, job: u64, peer: &Peer) -> Result<(), String> {
        let _ = (job, peer);
        Err("no other guard can be asked here".into())
    }
}

/// Carries out `actions` (and what they lead to) at `at` through `effects`.
pub fn carry_out(engine: &mut Engine, effects: &mut dyn Effects, actions: Vec<Action>, at: Moment) {
    let mut signals = VecDeque::new();
    let mut notes = VecDeque::new();
    let sort = |actions: Vec<Action>, signals: &mut VecDeque<_>, notes: &mut VecDeque<_>| {
        for action in actions {
            match action {
                Action::Signal { .. } | Action::MakeRoom { .. } => signals.push_back(action),
                Action::Notify { .. } => notes.push_back(action),
            }
        }
    };
    sort(actions, &mut signals, &mut notes);
    loop {
        match signals.pop_front() {
            Some(Action::Signal {
                job_id,
                signal,
                members,
            }) => {
                let report = effects.signal(job_id, signal, &members);
                let next = engine.signalled(job_id, signal, &report, at);
                sort(next, &mut signals, &mut notes);
                continue;
            }
            Some(Action::MakeRoom { job_id, peer }) => {
                let result = effects.make_room(job_id, &peer);
                let next = engine.room_made(job_id, &peer, result, at);
                sort(next, &mut signals, &mut notes);
                continue;
            }
            Some(Action::Notify { .. }) | None => {}
        }
        match notes.pop_front() {
            Some(Action::Notify {
                job_id,
                command,
                event,
            }) => effects.notify(job_id, &command, &event),
            Some(Action::Signal { .. } | Action::MakeRoom { .. }) => {}
            None => break,
        }
    }
}
