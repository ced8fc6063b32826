//! Acting on the app's jobs: carrying out the engine's actions (notify, stop, pause,
//! resume), and the requests that make them: the popover's buttons, a notification's
//! buttons, `headroom resume|pause|stop PID` (through the app's mark socket). The engine
//! decides; this carries out.

use std::time::SystemTime;

use headroom_core::enforce::{pause_members, resume_members, stop_members, DEFAULT_GRACE};
use headroom_core::engine::Action;
use headroom_core::marks::{not_here, Control};
use tauri::{AppHandle, Manager, Runtime};

use crate::error::CommandResult;
use crate::state::{lock, AppState};

/// Carries out `control` on job `job_id`; the error says why nothing happened.
pub fn act<R: Runtime>(app: &AppHandle<R>, job_id: u64, control: Control) -> Result<(), String> {
    let state = app
        .try_state::<AppState>()
        .ok_or_else(|| "Headroom is shutting down".to_string())?;
    let actions = {
        let mut monitor = lock(&state.monitor);
        let jobs = &mut monitor.jobs;
        let paused = jobs.is_paused(job_id);
        match control {
            Control::Pause => jobs.pause(job_id, SystemTime::now()),
            Control::Resume if !paused => return Err("the job is not paused".into()),
            Control::Resume => jobs.resume(job_id, SystemTime::now()),
            Control::Stop => jobs.stop(job_id, SystemTime::now()),
        }
    };
    if actions.is_empty() {
        return Err(format!(
            "the job cannot be {} now (it ended, or is being stopped)",
            past(control)
        ));
    }
    tracing::info!(job_id, control = control.as_str(), "job control");
    for action in actions {
        carry_out(app, action);
    }
    crate::persist::job_started(&state, job_id);
    Ok(())
}

/// `control` for the live job whose process is `pid` (a request on the mark socket).
pub fn control<R: Runtime>(app: &AppHandle<R>, control: Control, pid: u32) -> Result<(), String> {
    let state = app
        .try_state::<AppState>()
        .ok_or_else(|| "Headroom is shutting down".to_string())?;
    let job = lock(&state.monitor)
        .jobs
        .views()
        .into_iter()
        .find(|j| j.pid == pid && j.verdict.is_none())
        .map(|j| j.id)
        .ok_or_else(|| not_here(pid))?;
    act(app, job, control)
}

/// Spares job `job_id` ("Spare it"): it is no longer guarded; its processes keep running. A
/// paused job is resumed first, never let go while stopped.
pub fn spare<R: Runtime>(app: &AppHandle<R>, job_id: u64) -> Result<(), String> {
    let state = app
        .try_state::<AppState>()
        .ok_or_else(|| "Headroom is shutting down".to_string())?;
    if lock(&state.monitor).jobs.is_paused(job_id) {
        act(app, job_id, Control::Resume)?;
    }
    release(&state, job_id)
}

/// Stops watching or guarding job `job_id` (its processes keep running); refused while it
/// is paused: a paused job is never let go.
pub fn release(state: &AppState, job_id: u64) -> Result<(), String> {
    let mut monitor = lock(&state.monitor);
    if monitor.jobs.is_paused(job_id) {
        return Err("it is paused: resume or stop it first (a paused job is never let go)".into());
    }
    let identity = monitor
        .jobs
        .remove(job_id)
        .ok_or_else(|| "the job is gone".to_string())?;
    drop(monitor);
    state.sampler.untrack(identity);
    crate::persist::job_removed(state, identity);
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

fn past(control: Control) -> &'static str {
    match control {
        Control::Pause => "paused",
        Control::Resume => "resumed",
        Control::Stop => "stopped",
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

/// Carries out one of the engine's actions.
pub fn carry_out<R: Runtime>(app: &AppHandle<R>, action: Action) {
    match action {
        Action::Notify {
            job_id,
            command,
            event,
        } => {
            if matches!(event, headroom_core::policy::JobEvent::Finished { .. }) {
                if let Some(state) = app.try_state::<AppState>() {
                    crate::persist::job_finished(&state, job_id);
                }
            }
            // A stage beginning is shown in the job's row, not notified.
            if !matches!(event, headroom_core::policy::JobEvent::Stage { .. }) {
                let handle = app.clone();
                let on_button = move |key: &str| {
                    if let Err(e) = answer(&handle, job_id, key) {
                        tracing::warn!(job_id, key, error = %e, "notification button");
                    }
                };
                crate::notify::job_event(app, &command, &event, on_button);
            }
        }
        Action::Pause { job_id, members } => signal_job(app, job_id, &members, pause_members),
        Action::Resume { job_id, members } => signal_job(app, job_id, &members, resume_members),
        Action::Stop {
            job_id, members, ..
        } => {
            let app = app.clone();
            let spawned = std::thread::Builder::new()
                .name("headroom-stop".into())
                .spawn(move || {
                    let Some(state) = app.try_state::<AppState>() else {
                        return;
                    };
                    let report = stop_members(
                        &state.counters,
                        &state.safety,
                        &members,
                        DEFAULT_GRACE,
                        &|| false,
                    );
                    tracing::warn!(root = members.root().pid, ?report, "stopped a guarded job");
                    let done =
                        lock(&state.monitor)
                            .jobs
                            .stop_done(job_id, &report, SystemTime::now());
                    for action in done {
                        carry_out(&app, action);
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a stop thread");
            }
        }
    }
}

/// Pauses or resumes a job's members (`signal` is `pause_members` or `resume_members`), and
/// saves its new state so a restart finds it as it is.
fn signal_job<R: Runtime>(
    app: &AppHandle<R>,
    job_id: u64,
    members: &headroom_core::members::MemberSet,
    signal: fn(
        &headroom_core::counters::Counters,
        &headroom_core::enforce::Safety,
        &headroom_core::members::MemberSet,
    ) -> Vec<u32>,
) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let reached = signal(&state.counters, &state.safety, members);
    tracing::warn!(
        root = members.root().pid,
        ?reached,
        "paused or resumed a job"
    );
    crate::persist::job_started(&state, job_id);
}
