//! The app's loop over samples: feeds the monitor, carries out the jobs' actions (notify,
//! stop), keeps the tray title current and, only while the popover is shown, sends the page
//! a `tick` event.

use std::collections::HashSet;
use std::time::Duration;

use headroom_core::guard::{stop_tree, DEFAULT_GRACE};
use headroom_core::jobs::Action;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::commands::UiJob;
use crate::state::{lock, AppState};

/// Starts the loop on its own thread.
pub fn start<R: Runtime>(app: AppHandle<R>) {
    let spawned = std::thread::Builder::new()
        .name("headroom-ticker".into())
        .spawn(move || run(&app));
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the ticker");
    }
}

fn run<R: Runtime>(app: &AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let samples = state.sampler.subscribe();
    let mut last_title = String::new();
    let mut last_growing = false;
    let mut last_saved_ms = i64::MIN;
    let mut last_save = std::time::Instant::now();
    while let Ok(sample) = samples.recv() {
        let (actions, title, growing, status, tracked) = {
            let mut monitor = lock(&state.monitor);
            let actions = monitor.on_sample(&sample);
            let status = monitor.status(Duration::from_secs(600));
            (
                actions,
                monitor.tray_title(),
                monitor.jobs.any_growing(),
                status,
                monitor.jobs.tracked(),
            )
        };
        sync_tracking(&state, &sample, &tracked);
        if title != last_title || growing != last_growing {
            crate::notify::update_tray(app, &title, (growing != last_growing).then_some(growing));
            last_title = title;
            last_growing = growing;
        }
        if state.is_visible() {
            if let Some(status) = status {
                let _ = app.emit("tick", status);
            }
        }
        for action in actions {
            carry_out(app, action);
        }
        if last_save.elapsed() >= crate::persist::SAVE_EVERY {
            last_save = std::time::Instant::now();
            crate::persist::save_history(&state, &mut last_saved_ms);
        }
    }
}

/// Keeps the sampler tracking exactly the running jobs.
fn sync_tracking(
    state: &AppState,
    sample: &headroom_core::sampler::Sample,
    wanted: &[headroom_core::process::ProcessIdentity],
) {
    let have: HashSet<_> = sample.tracked.iter().map(|t| t.identity).collect();
    for id in have.iter().filter(|id| !wanted.contains(id)) {
        state.sampler.untrack(*id);
    }
    for id in wanted.iter().filter(|id| !have.contains(id)) {
        state.sampler.track(*id);
    }
}

fn carry_out<R: Runtime>(app: &AppHandle<R>, action: Action) {
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
            crate::notify::job_event(app, &command, &event);
        }
        Action::Stop {
            job_id, identity, ..
        } => {
            let app = app.clone();
            let spawned = std::thread::Builder::new()
                .name("headroom-stop".into())
                .spawn(move || {
                    let Some(state) = app.try_state::<AppState>() else {
                        return;
                    };
                    match stop_tree(
                        &state.counters,
                        &state.safety,
                        identity,
                        DEFAULT_GRACE,
                        &|| false,
                    ) {
                        Ok(report) => {
                            tracing::warn!(pid = identity.pid, ?report, "stopped a guarded job")
                        }
                        Err(refusal) => {
                            tracing::warn!(pid = identity.pid, %refusal, "did not stop")
                        }
                    }
                    let done = lock(&state.monitor).jobs.stop_done(job_id);
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

/// Jobs of `headroom guard` runs in terminals, read-only.
pub fn external_jobs(state: &AppState) -> Vec<UiJob> {
    headroom_core::jobfile::JobFile::list(&state.jobs_dir(), &state.counters)
        .into_iter()
        .map(UiJob::external)
        .collect()
}
