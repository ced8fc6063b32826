//! Acting on the app's jobs: pause, resume and stop from the popover, from a notification's
//! buttons, and from `headroom resume|pause|stop PID` (through the app's mark socket). The
//! engine decides; this only hands its actions to the ticker's executor.

use headroom_core::marks::{not_here, Control};
use tauri::{AppHandle, Manager, Runtime};

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
            Control::Pause => jobs.pause(job_id),
            Control::Resume if !paused => return Err("the job is not paused".into()),
            Control::Resume => jobs.resume(job_id),
            Control::Stop => jobs.stop(job_id),
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
        crate::ticker::carry_out(app, action);
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
#[cfg(target_os = "linux")]
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

fn past(control: Control) -> &'static str {
    match control {
        Control::Pause => "paused",
        Control::Resume => "resumed",
        Control::Stop => "stopped",
    }
}

/// The engine's id of a page's job id (`job-3`).
fn job_id(id: &str) -> Result<u64, String> {
    id.strip_prefix("job-")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("job '{id}' is not one of the app's jobs"))
}

/// Pause a job now (SIGSTOP to each of its processes).
#[tauri::command]
pub fn pause_job<R: Runtime>(app: AppHandle<R>, id: String) -> Result<(), String> {
    act(&app, job_id(&id)?, Control::Pause)
}

/// Continue a paused job, with a new budget from swap in use now.
#[tauri::command]
pub fn resume_job<R: Runtime>(app: AppHandle<R>, id: String) -> Result<(), String> {
    act(&app, job_id(&id)?, Control::Resume)
}

/// Stop a job now (SIGTERM, continued if paused, then SIGKILL after the grace).
#[tauri::command]
pub fn stop_job<R: Runtime>(app: AppHandle<R>, id: String) -> Result<(), String> {
    act(&app, job_id(&id)?, Control::Stop)
}
