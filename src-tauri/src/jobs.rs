//! Acting on the app's jobs: the app's [`Effects`] (signals under the safety rules, a
//! notification, the saved state, an ask to a terminal guard to make room), carried out with
//! core's one `carry_out`, and the requests that lead to them: the popover's buttons, a
//! notification's buttons, `headroom resume|pause|stop PID` and a terminal guard's `yield`
//! (through the app's mark socket). The engine decides whether a request makes sense; this
//! carries out.
//!
//! Signals are sent while the engine is locked (they are quick and their reports go straight
//! back to it); notifications and the store are done after it is unlocked, so a slow D-Bus
//! or disk never holds up the ticker's next sample.

use std::time::{Duration, SystemTime};

use headroom_core::drive::{check_due, Input};
use headroom_core::monitor::{StatusView, TICK_WINDOW_SECONDS};
use headroom_core::socket::{Answer, Request};
use headroom_model::effects::Control;
use headroom_model::effects::{JobSignal, SignalReport};
use headroom_model::process::ProcessIdentity;
use headroom_os::enforce::signal_each;
use headroom_os::unix::signals::Kernel;
use headroom_rules::engine;
use headroom_rules::engine::{Effects, Moment};
use headroom_rules::policy::order::Peer;
use headroom_rules::policy::JobEvent;
use headroom_rules::sample::Sample;
use tauri::{AppHandle, Manager, Runtime};

use crate::error::CommandResult;
use crate::state::{lock, AppState};

/// The app's effects of one batch of actions: signals now, the rest after the engine is
/// unlocked ([`Effects::notify`] queues).
struct AppEffects<'a> {
    state: &'a AppState,
    /// Events to notify, and jobs to save, once the engine is unlocked.
    events: Vec<(u64, String, JobEvent)>,
    /// Jobs whose saved state changed (paused, resumed).
    changed: Vec<u64>,
}

impl Effects for AppEffects<'_> {
    fn signal(&mut self, job: u64, signal: JobSignal, members: &[ProcessIdentity]) -> SignalReport {
        let state = self.state;
        let report = signal_each(&state.counters, &Kernel, &state.safety, members, signal);
        tracing::warn!(
            job,
            ?signal,
            reached = report.reached.len(),
            "signalled a job"
        );
        if matches!(signal, JobSignal::Pause | JobSignal::Resume) {
            self.changed.push(job);
        }
        report
    }

    fn notify(&mut self, job: u64, command: &str, event: &JobEvent) {
        self.events.push((job, command.to_string(), event.clone()));
    }

    /// Asks a terminal guard to pause its younger job in this one's place (its socket; the
    /// answer comes within `socket::ANSWER_WAIT`, while the engine stays locked as the
    /// guard's own loop waits for it).
    fn make_room(&mut self, job: u64, peer: &Peer) -> Result<(), String> {
        let asked = headroom_core::peers::ask(&self.state.dirs, peer);
        tracing::info!(
            job,
            peer = peer.pid,
            ?asked,
            "asked another guard to make room"
        );
        asked
    }
}

/// Now, on the sampler's clock and the wall clock.
pub fn now(state: &AppState) -> Moment {
    Moment {
        at: SystemTime::now(),
        clock: state.sampler.clock(),
    }
}

/// What a step left, read under the same lock of the engine: for the ticker.
pub struct Stepped {
    /// The sample, when the input was one.
    pub sample: Option<Sample>,
    /// The popover's header, for a sample while the popover is shown.
    pub status: Option<StatusView>,
    /// The tray's title.
    pub title: String,
    /// Whether a watched job's swap grows (the tray's red icon).
    pub growing: bool,
    /// The roots of the jobs not yet ended (the sampler tracks only these).
    pub tracked: Vec<ProcessIdentity>,
}

/// The app's one step: `input` into the engine with core's step (as a terminal guard takes
/// it: `drive::step`), its actions carried out, the next check timed (`drive::check_due`),
/// the jobs published; the engine locked once for all of it. Notifications and the store
/// come after it is unlocked. `None` while the app shuts down.
pub fn step<R: Runtime>(app: &AppHandle<R>, input: Input) -> Option<Stepped> {
    let state = app.try_state::<AppState>()?;
    let base = lock(&state.settings).sample_interval;
    let now = now(&state);
    let mut effects = AppEffects {
        state: &state,
        events: Vec::new(),
        changed: Vec::new(),
    };
    let (stepped, check, views) = {
        let mut monitor = lock(&state.monitor);
        let step = monitor.step(input, now);
        engine::carry_out(&mut monitor.jobs, &mut effects, step.actions, now);
        let status = step
            .sample
            .as_ref()
            .filter(|_| state.is_visible())
            .and_then(|_| monitor.status(Duration::from_secs(TICK_WINDOW_SECONDS)));
        let stepped = Stepped {
            sample: step.sample,
            status,
            title: monitor.tray_title(),
            growing: monitor.jobs.any_growing(),
            tracked: monitor.jobs.tracked(),
        };
        let check = check_due(&monitor.jobs, base);
        (stepped, check, monitor.jobs.views())
    };
    state.sampler.set_interval(check);
    crate::jobfiles::publish_views(&state, views);
    let AppEffects {
        events, changed, ..
    } = effects;
    after(app, &state, events, changed);
    Some(stepped)
}

/// Sets the sampler's interval now (the settings changed): [`step`] does it after each
/// input.
pub fn retune(state: &AppState) {
    let base = lock(&state.settings).sample_interval;
    let check = check_due(&lock(&state.monitor).jobs, base);
    state.sampler.set_interval(check);
}

/// What the engine's actions leave for after its lock: the saved state of jobs paused or
/// resumed, the store's record of a finished job, the notifications.
fn after<R: Runtime>(
    app: &AppHandle<R>,
    state: &AppState,
    events: Vec<(u64, String, JobEvent)>,
    changed: Vec<u64>,
) {
    for job in changed {
        crate::persist::job_started(state, job);
    }
    for (job_id, command, event) in events {
        if matches!(event, JobEvent::Finished { .. }) {
            crate::persist::job_finished(state, job_id);
        }
        // A stage beginning is shown in the job's row, not notified; nor is a load.
        if matches!(
            event,
            JobEvent::Stage { .. } | JobEvent::StageEnded { .. } | JobEvent::Reported { .. }
        ) {
            continue;
        }
        crate::notify::job_event(app, &command, &event, on_button(app, job_id));
    }
}

/// A request on the app's socket (or the page's, `peer` 0) through [`step`]: the engine's
/// answer.
pub fn request<R: Runtime>(app: &AppHandle<R>, peer: u32, request: Request) -> Answer {
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    if step(app, Input::requested(peer, request, reply)).is_none() {
        return Answer::Refused("Headroom is shutting down".into());
    }
    match answer.try_recv() {
        Ok(Ok(())) => Answer::Done,
        Ok(Err(why)) => Answer::Refused(why),
        Err(_) => Answer::Refused("the request was not answered".into()),
    }
}

/// What a button of job `job_id`'s notification does: [`answer`], a failure logged.
pub fn on_button<R: Runtime>(app: &AppHandle<R>, job_id: u64) -> impl FnOnce(&str) + Send {
    let handle = app.clone();
    move |key: &str| {
        if let Err(e) = answer(&handle, job_id, key) {
            tracing::warn!(job_id, key, error = %e, "notification button");
        }
    }
}

/// Carries out `control` on job `job_id`; the error says why nothing happened.
pub fn act<R: Runtime>(app: &AppHandle<R>, job_id: u64, control: Control) -> Result<(), String> {
    act_for(app, job_id, control, None)
}

/// [`act`], asked by process `asker` (`yield`: the guard whose older job needs the room):
/// a request for the job's leader, through the one step.
fn act_for<R: Runtime>(
    app: &AppHandle<R>,
    job_id: u64,
    control: Control,
    asker: Option<u32>,
) -> Result<(), String> {
    let state = state_of(app)?;
    let pid = lock(&state.monitor)
        .jobs
        .view(job_id)
        .map(|view| view.pid)
        .ok_or_else(|| "the job is gone".to_string())?;
    match request(app, asker.unwrap_or(0), Request::Control { control, pid }) {
        Answer::Refused(why) => return Err(why),
        Answer::Done | Answer::Queued => {}
    }
    tracing::info!(job_id, control = control.as_str(), ?asker, "job control");
    crate::persist::job_started(&state, job_id);
    Ok(())
}

/// The app's state, unless the app shuts down.
fn state_of<R: Runtime>(app: &AppHandle<R>) -> Result<tauri::State<'_, AppState>, String> {
    app.try_state::<AppState>()
        .ok_or_else(|| "Headroom is shutting down".to_string())
}

/// Spares job `job_id` ("Spare it"): it is no longer guarded; its processes keep running. A
/// paused job is resumed first, never let go while stopped.
pub fn spare<R: Runtime>(app: &AppHandle<R>, job_id: u64) -> Result<(), String> {
    let state = state_of(app)?;
    if lock(&state.monitor).jobs.is_paused(job_id) {
        act(app, job_id, Control::Resume)?;
    }
    release(app, job_id)
}

/// Stops watching or guarding job `job_id` (its processes keep running), through the one
/// step ([`Input::Release`]); refused while it is paused: a paused job is never let go.
pub fn release<R: Runtime>(app: &AppHandle<R>, job_id: u64) -> Result<(), String> {
    let state = state_of(app)?;
    let identity = lock(&state.monitor)
        .jobs
        .view(job_id)
        .map(|view| ProcessIdentity {
            pid: view.pid,
            start_time: view.start_time,
        })
        .ok_or_else(|| "the job is gone".to_string())?;
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    step(app, Input::Release { job: job_id, reply })
        .ok_or_else(|| "Headroom is shutting down".to_string())?;
    answer
        .try_recv()
        .unwrap_or_else(|_| Err("the request was not answered".into()))?;
    // What the app holds of the job besides the engine: the sampler's tracking, its saved
    // state (the step published the job files).
    state.sampler.untrack(identity);
    crate::persist::job_removed(&state, identity);
    Ok(())
}

/// Carries out a notification's button `key` on job `job_id`.
pub fn answer<R: Runtime>(app: &AppHandle<R>, job_id: u64, key: &str) -> Result<(), String> {
    tracing::info!(job_id, key, "notification answered");
    match key {
        crate::notify::SPARE => spare(app, job_id),
        "pause" => act(app, job_id, Control::Pause),
        "resume" => act(app, job_id, Control::Resume),
        "stop" => act(app, job_id, Control::Stop),
        _ => Ok(()), // closed, or the notification's body clicked
    }
}

/// The page's id of an engine job (`job-3`); [`job_id`] reads it back.
pub fn page_id(id: u64) -> String {
    format!("job-{id}")
}

/// The engine's id of a page's job id (`job-3`).
pub fn job_id(id: &str) -> Result<u64, String> {
    id.strip_prefix("job-")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("job '{id}' is not one of the app's jobs"))
}

/// Pause a job now (SIGSTOP to each of its processes).
#[tauri::command]
pub fn pause_job<R: Runtime>(app: AppHandle<R>, id: String) -> CommandResult<()> {
    Ok(act(&app, job_id(&id)?, Control::Pause)?)
}

/// Continue a paused job, with a new budget from swap in use now.
#[tauri::command]
pub fn resume_job<R: Runtime>(app: AppHandle<R>, id: String) -> CommandResult<()> {
    Ok(act(&app, job_id(&id)?, Control::Resume)?)
}

/// Stop a job now (SIGTERM, continued if paused, then SIGKILL after the grace).
#[tauri::command]
pub fn stop_job<R: Runtime>(app: AppHandle<R>, id: String) -> CommandResult<()> {
    Ok(act(&app, job_id(&id)?, Control::Stop)?)
}
