//! The app's job socket: marks from jobs picked in the popover (the app listens on its own
//! socket, `headroom_core::socket`), and a mark from a process of one of its running jobs starts a
//! stage of that job; `headroom pause|resume|stop PID` and a terminal guard's `yield` come
//! the same way. Each request is one input to the app's one step (`crate::jobs::step`),
//! which routes it as a terminal guard does. The kernel says who is marking; a process of
//! no job is refused (the jobs' members are looked at afresh for a sender the last sample
//! has not seen).

use headroom_core::socket::Request;
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
    // Every request goes through the app's one step (`crate::jobs::step`), which routes it
    // to its job as a terminal guard's loop does; a sender the engine does not know yet is
    // looked for first.
    let served = server.serve(move |pid, request| {
        if !matches!(request, Request::Control { .. }) {
            look_for_sender(&handle, pid);
        }
        crate::jobs::request(&handle, pid, request)
    });
    if let Err(e) = served {
        tracing::warn!(error = %e, "stage marks are off");
    }
}

/// A process the last sample has not seen (`headroom mark` itself, often) may belong to a
/// job: the jobs' members are looked at afresh (outside the engine's lock) and the engine is
/// told of the job that holds it. Nothing happens for a sender it knows.
fn look_for_sender<R: Runtime>(app: &AppHandle<R>, pid: u32) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let (known, roots) = {
        let monitor = lock(&state.monitor);
        (monitor.jobs.job_of(pid).is_some(), monitor.jobs.tracked())
    };
    if known {
        return;
    }
    let sets = state.sampler.tracked();
    for set in sets.iter().filter(|s| roots.contains(&s.root())) {
        let members = set.discover(&state.counters);
        if members.iter().any(|m| m.id.pid == pid) {
            let mut monitor = lock(&state.monitor);
            if let Some(job) = monitor.jobs.job_with_root(set.root().pid) {
                monitor.jobs.looked(job, members);
            }
            return;
        }
    }
}
