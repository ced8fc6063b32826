//! One step: one input into the engine, the step every driver takes. The terminal's guard
//! and watch (`driver.rs`), a replayed trace (`replay.rs`) and the menu-bar app (its ticker
//! and its socket) all hand their inputs to [`step`] and carry out the actions it returns
//! with [`headroom_rules::engine::carry_out`], then time their next check with [`check_due`]: a
//! request is dispatched, a mark accepted and the next check timed in one place, whoever
//! drives.
//!
//! Inputs about a job are routed by the engine's own word: a request by the pid of the
//! job's leader ([`Engine::job_with_root`]), a mark, hello or report by the job whose
//! members include the sender ([`Engine::job_of`]); the app letting a job go, by its id. Inputs only a driver of one job has
//! (its leader's exit, its own signals, the terminal's keys, the end of a trace) go to
//! that job, `own`.

use std::time::Duration;

use super::{Input, Reply};
use crate::socket::{not_here, Request};
use headroom_model::effects::Control;
use headroom_rules::engine::{Action, Engine, Moment, RequestError};
use headroom_rules::sample::Sample;

/// What one input did.
#[derive(Debug, Default)]
pub struct Step {
    /// The actions to carry out.
    pub actions: Vec<Action>,
    /// The sample, when the input was one (for the outputs, after the actions).
    pub sample: Option<Sample>,
}

/// When the next check is due, asked once a step's actions are carried out (a stop just
/// sent wants its verification checks): the shortest check a job not yet ended wants
/// (faster near a budget, while a pause or a stop is verified), else `base`, the driver's
/// own interval (the guard's `--interval`, the app's setting).
pub fn check_due(engine: &Engine, base: Duration) -> Duration {
    engine.check_interval().unwrap_or(base)
}

/// For a driver that also takes looks aimed at a crossing between regular checks (the
/// terminal's guard and watch, [`Engine::next_look`]): when the next look is due and whether
/// it is an aimed one; `base` as for [`check_due`]. The app takes regular checks only.
pub fn look_due(engine: &Engine, base: Duration) -> (Duration, bool) {
    engine.next_look().unwrap_or((base, false))
}

/// Takes `input` into `engine` at `now`; `own` is the job of a driver that runs one (guard,
/// watch, replay), `None` for the app.
pub fn step(engine: &mut Engine, own: Option<u64>, input: Input, now: Moment) -> Step {
    let mut sample = None;
    let actions = match input {
        Input::Sample(s) => {
            let actions = engine.on_sample(&s);
            sample = Some(s);
            actions
        }
        Input::Request {
            peer,
            control,
            pid,
            reply,
        } => request(engine, peer, control, pid, &reply, now),
        Input::Mark { peer, stage, reply } => from_member(engine, peer, &reply, |e, job| {
            let actions = e.mark(job, &stage, now.clock);
            let full = format!(
                "the job has {} stage names already: no new name is recorded (marks of those \
                 names are)",
                headroom_rules::stages::MAX_STAGES
            );
            (actions.is_empty().then_some(full), actions)
        }),
        Input::EndStage { peer, reply } => from_member(engine, peer, &reply, |e, job| {
            (None, e.end_stage(job, now.clock))
        }),
        Input::Hello { peer, reply } => from_member(engine, peer, &reply, |_, _| (None, vec![])),
        Input::Report { peer, event, reply } => from_member(engine, peer, &reply, |e, job| {
            let actions = e.report(job, event);
            let ended = actions.is_empty().then(|| "the job has ended".to_string());
            (ended, actions)
        }),
        Input::Release { job, reply } => {
            let answer = engine.remove(job).map(drop).map_err(|e| match e {
                RequestError::AlreadyPaused(_) => {
                    "it is paused: resume or stop it first (a paused job is never let go)"
                        .to_string()
                }
                _ => "the job is gone".to_string(),
            });
            let _ = reply.try_send(answer);
            Vec::new()
        }
        Input::LeaderExit(exit) => {
            if let Some(job) = own {
                engine.set_exit(job, exit);
            }
            Vec::new()
        }
        Input::Interrupt { signal, second } => own
            .map(|job| engine.interrupt(job, signal, second, now))
            .unwrap_or_default(),
        Input::Key { key, signal } => own
            .map(|job| engine.key(job, key, signal, now))
            .unwrap_or_default(),
        Input::Ended(ended) => own
            .map(|job| engine.end(job, ended, now))
            .unwrap_or_default(),
    };
    Step { actions, sample }
}

/// `control` for the job whose leader is `pid`, from process `peer` (0: unknown, or the
/// app's own page); the answer goes to `reply`.
fn request(
    engine: &mut Engine,
    peer: u32,
    control: Control,
    pid: u32,
    reply: &Reply,
    now: Moment,
) -> Vec<Action> {
    let Some(job) = engine.job_with_root(pid) else {
        let _ = reply.try_send(Err(not_here(pid)));
        return Vec::new();
    };
    let answer = match control {
        Control::Yield => engine.make_room(job, (peer != 0).then_some(peer), now),
        _ => engine.request(job, control, now),
    };
    let _ = reply.try_send(answer.as_ref().map(|_| ()).map_err(ToString::to_string));
    answer.unwrap_or_default()
}

/// A request only a live member of a job may make: refused for anyone else; else `act`
/// says what it does to that job (the actions) and why it was not taken, if it was not.
fn from_member(
    engine: &mut Engine,
    peer: u32,
    reply: &Reply,
    act: impl FnOnce(&mut Engine, u64) -> (Option<String>, Vec<Action>),
) -> Vec<Action> {
    let Some(job) = engine.job_of(peer) else {
        let _ = reply.try_send(Err(format!(
            "pid {peer} is not a process of a job Headroom watches here"
        )));
        return Vec::new();
    };
    let (refused, actions) = act(engine, job);
    let _ = reply.try_send(refused.map_or(Ok(()), Err));
    actions
}

impl Input {
    /// The input a request on a job's socket makes, from process `peer` (the kernel's
    /// word); the engine's answer goes to `reply`.
    pub fn requested(peer: u32, request: Request, reply: Reply) -> Input {
        match request {
            Request::Mark(stage) => Input::Mark { peer, stage, reply },
            Request::EndStage => Input::EndStage { peer, reply },
            Request::Hello => Input::Hello { peer, reply },
            Request::Event(event) => Input::Report { peer, event, reply },
            Request::Control { control, pid } => Input::Request {
                peer,
                control,
                pid,
                reply,
            },
        }
    }
}
