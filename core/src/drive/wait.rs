//! Waiting for room before a guarded job starts: the start gate's loop. Every `poll` it
//! reads the counters (and, with busy patterns, the process list), asks the pure
//! [`StartGate`] whether the job may start, and shows why it waits through `show`, until the
//! gate says go or gives up, or the driver is interrupted. The queue of jobs that wait for
//! one another (`crate::queue`) comes in as `admit`: asked once the gate says go, with the
//! counters of that poll, it may keep the job waiting, for its own reason. Every decision
//! (go, wait, give up past `--start-timeout`) is the gate's
//! ([`StartGate::decide_queued`]); this loop only reads, sleeps and shows. It is not a
//! step of the engine: no job is in one before it starts.

use std::time::{Duration, Instant};

use super::Interrupts;
use headroom_model::counters::SystemCounters;
use headroom_os::counters::{CounterError, CounterSource};
use headroom_os::process::ancestors;
use headroom_rules::policy::{Limits, Observation, StartDecision, StartGate, WaitReason};

/// How waiting for room ended, if not with a start.
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    /// The gate gave up (`--start-timeout`), for this reason.
    GaveUp(WaitReason),
    /// The driver received this signal while it waited.
    Interrupted(i32),
}

/// The queue's last word on a start (see [`wait_for_room`]): `Err` keeps the job waiting.
pub type Admit<'a> = &'a mut dyn FnMut(&SystemCounters) -> Result<(), WaitReason>;

/// Waits until `limits`' start gate lets the job start (`Ok(Ok(()))`). `busy` says whether a
/// process's command line is one the job waits on (`--busy`); Headroom itself, its ancestors
/// and other Headroom processes (guards waiting in line, whose command lines hold the very
/// patterns) are never busy. Once the gate says go, `admit` (the queue, for
/// `--wait-fit`) has the last word: `Err` keeps the job waiting, for its reason, and past
/// `--start-timeout` gives up. `show` hears each reason it waits for, every poll.
pub fn wait_for_room(
    counters: &impl CounterSource,
    limits: &Limits,
    busy: Option<&dyn Fn(&str) -> bool>,
    poll: Duration,
    interrupts: &dyn Interrupts,
    admit: Option<Admit<'_>>,
    show: &mut dyn FnMut(&WaitReason),
) -> Result<Result<(), Waited>, CounterError> {
    let mut admit = admit;
    let started = Instant::now();
    let mut gate = StartGate::default();
    let me = std::process::id();
    let mut excluded: Vec<u32> = ancestors(counters, me).iter().map(|a| a.pid).collect();
    excluded.push(me);
    let own_name = counters.identity(me).map(|info| info.name).ok();
    loop {
        if let Some(signal) = interrupts.received() {
            return Ok(Err(Waited::Interrupted(signal)));
        }
        let system = counters.read_system()?;
        let busy_now = busy.and_then(|busy| {
            counters
                .list_processes()
                .unwrap_or_default()
                .into_iter()
                .filter(|p| !excluded.contains(&p.pid))
                .filter(|p| own_name.as_deref() != Some(p.name.as_str()))
                .map(|p| p.display_command().to_string())
                .find(|c| busy(c))
        });
        let obs = Observation::of_system(started.elapsed(), &system);
        let queue = || admit.as_mut().map_or(Ok(()), |admit| admit(&system));
        match gate.decide_queued(limits, &obs, busy_now.as_deref(), queue) {
            StartDecision::Go => return Ok(Ok(())),
            StartDecision::GiveUp(reason) => return Ok(Err(Waited::GaveUp(reason))),
            StartDecision::Wait(reason) => show(&reason),
        }
        std::thread::sleep(poll);
    }
}
