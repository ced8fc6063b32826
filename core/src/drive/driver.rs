//! The loop and the live driver: [`drive`] takes one input at a time from a [`Source`] into
//! the engine and carries out its actions; [`run`] sets a live job up (the command, its
//! socket, its outputs), drives it, and stops it if the loop panics.

use std::collections::VecDeque;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::effects::LiveEffects;
use super::live::{LiveSource, Wake, WakeSender, BACKLOG};
use super::outputs::{Outputs, Sink};
use super::pushes::SessionPushes;
use super::spawned::launch_job;
use super::step::{look_due, step};
use super::{DriveError, DriverEffects, Input, Interrupts, Launch, Look, Outcome, Source};
use crate::peers::{PeerBoard, PeerSource};
use crate::sampler::InlineSampler;
use crate::socket::{not_here, Answer, JobSocket, Request};
use headroom_model::effects::JobSignal;
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::enforce::{signal_each, stop_members, Safety};
use headroom_os::members::MemberSet;
use headroom_os::paths::Dirs;
use headroom_os::unix::signals::Kernel;
use headroom_rules::engine::{carry_out, Engine, JobSpec, JobStatus, JobView, Moment, StartMemory};
use headroom_rules::policy::Verdict;

/// The one loop: inputs from `source` into the engine ([`step`], as every driver takes
/// them), actions for job `job` through `effects`, until the job has a verdict.
pub fn drive(
    engine: &mut Engine,
    job: u64,
    poll: Duration,
    source: &mut dyn Source,
    effects: &mut dyn DriverEffects,
) -> Verdict {
    // The job's view, made again in place after each input (no allocation when nothing grew).
    let mut view = JobView::default();
    loop {
        let (due, aimed) = look_due(engine, poll);
        // Light checks while it runs far from its limits; near one, full reads. Quiet ones
        // while nothing moves and the rules wait for no time to pass.
        source.next_look(Look {
            light: engine.light_ok(job),
            aimed,
            quiet: engine.quiet(job),
        });
        let input = source.next(due);
        if matches!(input, Input::Sample(_)) {
            if let Some(peers) = source.peers() {
                engine.set_peers(peers.order);
                engine.set_other_jobs(peers.others);
            }
        }
        let now = source.now();
        let stepped = step(engine, Some(job), input, now);
        // The outputs see the job as the actions left it (a pause's event finds it paused).
        let known = engine.view_into(job, &mut view);
        if known {
            effects.view(&view);
        }
        if !stepped.actions.is_empty() {
            carry_out(engine, effects, stepped.actions, now);
            engine.view_into(job, &mut view);
        }
        // The sample goes to the outputs after the signals it led to.
        match stepped.sample {
            Some(sample) if known => effects.sample(sample, &view),
            _ if known => effects.view(&view),
            _ => {}
        }
        if let Some(verdict) = engine.verdict(job) {
            return verdict.clone();
        }
    }
}

/// Runs a job on `launch` under `spec` until it ends, is stopped, or the driver is
/// interrupted (a command it started is then stopped first; a watched process is left
/// alone). `sinks` see every sample and event, each on a thread of its own; `peers` lists
/// other guards' pausable jobs, for a job that pauses at its budget (the pause order).
#[expect(
    clippy::too_many_lines,
    reason = "the set-up is one sequence whose order is the guarantee (what can fail before \
              the spawn, the socket and the outputs before the loop, the stop on a panic)"
)]
pub fn run(
    counters: &Counters,
    safety: &Safety,
    launch: Launch,
    spec: JobSpec,
    sinks: Vec<Box<dyn Sink>>,
    peers: Option<Box<dyn PeerSource>>,
    interrupts: &dyn Interrupts,
) -> Result<Outcome, DriveError> {
    // A large job's members each take descriptors (kept files, exit watches): the soft
    // limit is raised to the hard one, and the command gets it back as it was (spawned.rs).
    if let Err(e) = headroom_os::counters::limits::raise_open_files() {
        tracing::warn!(error = %e, "the limit on open files could not be raised");
    }
    let sampler = InlineSampler::new(counters.clone(), spec.poll);
    let (requests, wakes, pending) = wake_on_signals(interrupts);
    let first = counters.read_system().map_err(DriveError::FirstRead)?;
    // The job's socket is optional: without it the job is guarded all the same. Its
    // sessions hear the guard's warning, pause and stop (`pushes.rs`).
    let bound = JobSocket::bind(&Dirs::current());
    let mut sinks = sinks;
    if let Ok(server) = &bound {
        sinks.push(Box::new(SessionPushes::new(server.sessions(), spec.grace)));
    }
    let mut outputs = Outputs::start(sinks).map_err(DriveError::Outputs)?;
    let mut marks = bound
        .map_err(|e| {
            outputs.problem(&format!(
                "stage marks, pause, resume and stop from another terminal are off: {e}"
            ))
        })
        .ok();
    let (members, spawned, tracking) =
        launch_job(counters, launch, marks.as_ref().map(JobSocket::path))?;
    if spawned.is_some() {
        interrupts.job_runs();
    }
    let set = MemberSet::new(members);
    let mut engine = Engine::default();
    let (command, poll, owned) = (spec.command.clone(), spec.poll, spec.owned);
    let now = Moment {
        at: std::time::SystemTime::now(),
        clock: sampler.clock(),
    };
    // What the run takes is measured from the memory it starts with (as the app does).
    let job = engine.add(set.ids(), spec, StartMemory::of(&first), now);
    let mut sampler = sampler;
    sampler.track(&set);
    let terminal = spawned.as_ref().and_then(|s| s.terminal.clone());
    // (The job was just added: its view exists.)
    let view = Arc::new(engine.view(job).unwrap_or_default());
    outputs.started(&view);
    if let Some(server) = marks.as_mut() {
        if let Err(e) = serve_requests(server, set.root().pid, requests) {
            outputs.problem(&format!("stage marks are off: {e}"));
        }
    }
    let mut source = LiveSource {
        counters,
        safety,
        sampler,
        wakes,
        spawned,
        interrupts,
        members: set.clone(),
        told: 0,
        check_now: false,
        reap_due: true,
        signal_pending: pending,
        pending: VecDeque::new(),
        peers: peers.map(PeerBoard::new),
        aimed: false,
        quiet: None,
    };
    let mut effects = LiveEffects::new(
        counters,
        safety,
        outputs,
        source.sampler.origin(),
        terminal,
        view,
    );
    effects.freeze_with(set.cgroup());
    let ran = catch_unwind(AssertUnwindSafe(|| {
        drive(&mut engine, job, poll, &mut source, &mut effects)
    }));
    let verdict = ran.unwrap_or_else(|panic| {
        unwound(counters, safety, &set, owned, engine.status(job));
        resume_unwind(panic)
    });
    source.refuse_pending("the job has ended");
    if let Some(spawned) = source.spawned.as_mut() {
        spawned.finish();
    }
    #[cfg(target_os = "linux")]
    if let Some(cgroup) = set.cgroup() {
        headroom_os::unix::cgroup::remove(&cgroup, headroom_os::unix::cgroup::REMOVE_WAIT);
    }
    drop(marks);
    let stop = engine.stop_report(job).cloned();
    let unfinished = effects.finish(engine.view(job), &|| interrupts.second());
    Ok(Outcome {
        command,
        pid: set.root().pid,
        verdict,
        stop,
        tracking,
        unfinished_outputs: unfinished,
        run: engine.finished_run(job),
    })
}

/// The driver's wake-ups: requests and signals come through one queue, with one pending
/// signal wake-up at most (a storm of SIGCHLD, a thousand members ending, must not fill the
/// queue that requests come through). Returns the requests' sender, the queue, and the
/// flag of a pending signal.
fn wake_on_signals(
    interrupts: &dyn Interrupts,
) -> (WakeSender, mpsc::Receiver<Wake>, Arc<AtomicBool>) {
    let (queue, wakes) = mpsc::sync_channel::<Wake>(BACKLOG);
    // The driver's loop runs on this thread (`run`'s caller).
    let wake = WakeSender::new(queue, std::thread::current());
    let requests = wake.clone();
    let pending = Arc::new(AtomicBool::new(false));
    let signal_pending = Arc::clone(&pending);
    let pressure = wake.clone();
    interrupts.on_signal(Box::new(move || {
        if !signal_pending.swap(true, Ordering::SeqCst) {
            wake.send(Wake::Signal);
        }
    }));
    // A hint (macOS): the next look comes at once; the counters decide.
    headroom_os::unix::pressure::on_memory_pressure(Box::new(move || {
        pressure.send(Wake::Pressure);
    }));
    (requests, wakes, pending)
}

/// The loop panicked: a bug in Headroom must not leave the job running unguarded, nor a
/// watched process stopped. A command it started is stopped; a paused watched process is
/// continued.
fn unwound(
    counters: &Counters,
    safety: &Safety,
    members: &MemberSet,
    owned: bool,
    status: Option<JobStatus>,
) {
    // A frozen job handles no signal: thawed first, whatever comes next.
    #[cfg(target_os = "linux")]
    if let Some(cgroup) = members.cgroup() {
        let _ = headroom_os::unix::cgroup::thaw_all(&cgroup);
    }
    if owned {
        tracing::error!("the driver panicked: stopping its job");
        stop_members(counters, &Kernel, safety, members, Duration::from_secs(1));
    } else if status == Some(JobStatus::Paused) {
        let ids: Vec<ProcessIdentity> = members.discover(counters).iter().map(|m| m.id).collect();
        signal_each(counters, &Kernel, safety, &ids, JobSignal::Resume);
    }
}

/// How long a request's sender is kept waiting for the engine's answer; past it the answer
/// is "queued": the request stays in line and will be carried out if it still makes sense.
pub const REPLY_WAIT: Duration = Duration::from_secs(1);

/// Serves the job's socket: marks from its members, pause/resume/stop from its owner, each
/// handed to the loop, which answers with the engine's decision. A request for another
/// job (its pid is not this job's leader) is answered at once.
fn serve_requests(server: &mut JobSocket, root: u32, wake: WakeSender) -> io::Result<()> {
    server.serve(move |peer, request| {
        if let Request::Control { pid, .. } = request {
            if pid != root {
                return Answer::Refused(not_here(pid));
            }
        }
        let (reply, answer) = mpsc::sync_channel(1);
        let woke = wake.send(Wake::Request {
            peer,
            request,
            reply,
        });
        if !woke {
            return Answer::Refused("Headroom is busy with this job; try again".into());
        }
        match answer.recv_timeout(REPLY_WAIT) {
            Ok(Ok(())) => Answer::Done,
            Ok(Err(why)) => Answer::Refused(why),
            Err(_) => Answer::Queued,
        }
    })
}
