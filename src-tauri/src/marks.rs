//! Stage marks from jobs picked in the popover: the app listens on its own mark socket
//! (`headroom_core::marks`), and a mark from a process of one of its running jobs starts a
//! stage of that job. The kernel says who is marking; a process of no job is refused (the
//! jobs' members are looked at afresh for a sender the last sample has not seen).

use headroom_core::marks::{Answer, Request};
use tauri::{AppHandle, Manager, Runtime};

use crate::state::{lock, AppState};

/// Starts serving the app's mark socket, if it could be bound at start.
pub fn serve<R: Runtime>(app: AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let mut server = lock(&state.marks);
    let Some(server) = server.as_mut() else {
        return;
    };
    let handle = app.clone();
    let served = server.serve(move |pid, request| match request {
        Request::Mark(stage) => {
            mark(&handle, pid, &stage).map_or_else(Answer::Refused, |()| Answer::Done)
        }
        Request::Hello => {
            job_of_sender(&handle, pid).map_or_else(Answer::Refused, |_| Answer::Done)
        }
        Request::Event(event) => {
            report(&handle, pid, event).map_or_else(Answer::Refused, |()| Answer::Done)
        }
        Request::Control { control, pid: job } => crate::jobs::control(&handle, control, job, pid),
    });
    if let Err(e) = served {
        tracing::warn!(error = %e, "stage marks are off");
    }
}

/// A mark from `pid`: a stage of the running job it belongs to.
fn mark<R: Runtime>(app: &AppHandle<R>, pid: u32, stage: &str) -> Result<(), String> {
    let job = job_of_sender(app, pid)?;
    let state = app
        .try_state::<AppState>()
        .ok_or_else(|| "Headroom is shutting down".to_string())?;
    let clock = state.sampler.clock();
    let actions = lock(&state.monitor).jobs.mark(job, stage, clock);
    if actions.is_empty() {
        return Err(format!(
            "the job has {} stages already: no more are recorded",
            headroom_core::stages::MAX_STAGES
        ));
    }
    tracing::info!(pid, stage, "stage marked");
    crate::jobs::carry_out(app, actions);
    Ok(())
}

/// A load, release or mark reported by `pid`, for its job's record.
fn report<R: Runtime>(
    app: &AppHandle<R>,
    pid: u32,
    event: headroom_core::stages::Reported,
) -> Result<(), String> {
    let job = job_of_sender(app, pid)?;
    let state = app
        .try_state::<AppState>()
        .ok_or_else(|| "Headroom is shutting down".to_string())?;
    let actions = lock(&state.monitor).jobs.report(job, event);
    if actions.is_empty() {
        return Err("the job has ended".into());
    }
    crate::jobs::carry_out(app, actions);
    Ok(())
}

/// The running job process `pid` belongs to.
fn job_of_sender<R: Runtime>(app: &AppHandle<R>, pid: u32) -> Result<u64, String> {
    let state = app
        .try_state::<AppState>()
        .ok_or_else(|| "Headroom is shutting down".to_string())?;
    let known = lock(&state.monitor).jobs.job_of(pid);
    // A process born since the last sample (`headroom mark` itself, often): look at the
    // jobs' members afresh, outside the engine's lock.
    known
        .or_else(|| {
            let sets = lock(&state.monitor).jobs.tracked();
            let set = sets.into_iter().find(|set| {
                set.discover(&state.counters)
                    .iter()
                    .any(|m| m.id.pid == pid)
            })?;
            lock(&state.monitor).jobs.job_with_root(set.root().pid)
        })
        .ok_or_else(|| format!("pid {pid} is not a process of a job Headroom watches"))
}
