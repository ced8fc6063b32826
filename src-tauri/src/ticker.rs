//! The app's loop over samples: gives the engine the other guards' jobs (the pause order),
//! takes each sample with the one step every driver takes (`crate::jobs::step`: history,
//! the engine, its actions carried out, the next check timed, the jobs published), keeps
//! the sampler tracking the jobs' members and the tray title current and, only while the
//! popover is shown, sends the page a `tick` event.
//!
//! A panic while handling a sample is caught and logged, and the loop goes on with the next
//! sample: the jobs live in the shared state, so every guard stays enforced.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

use headroom_core::drive::Input;
use headroom_model::process::ProcessIdentity;
use headroom_rules::sample::Sample;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::state::AppState;

/// Starts the loop on its own thread.
pub fn start<R: Runtime>(app: AppHandle<R>) {
    let spawned = std::thread::Builder::new()
        .name("headroom-ticker".into())
        .spawn(move || run(&app));
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the ticker");
    }
}

/// What the loop remembers between samples.
struct Tick {
    title: String,
    growing: bool,
    saved_ms: i64,
    last_save: Instant,
    /// Other guards' jobs, for the pause order of the app's.
    peers: crate::jobfiles::Peers,
}

fn run<R: Runtime>(app: &AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let samples = state.sampler.subscribe();
    let mut tick = Tick {
        title: String::new(),
        growing: false,
        saved_ms: i64::MIN,
        last_save: Instant::now(),
        peers: crate::jobfiles::Peers::new(state.jobs_dir(), state.counters.clone()),
    };
    while let Ok(sample) = samples.recv() {
        let seq = sample.seq;
        if state.quitting.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        let handled = std::panic::catch_unwind(AssertUnwindSafe(|| {
            on_sample(
                app,
                &state,
                std::sync::Arc::unwrap_or_clone(sample),
                &mut tick,
            );
        }));
        if handled.is_err() {
            state
                .panics
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tracing::error!(seq, "the job loop panicked; it goes on, jobs intact");
        }
    }
}

fn on_sample<R: Runtime>(app: &AppHandle<R>, state: &AppState, sample: Sample, tick: &mut Tick) {
    #[cfg(test)]
    if state
        .inject_panic
        .swap(false, std::sync::atomic::Ordering::SeqCst)
    {
        panic!("injected by a test");
    }
    tick.peers.update(state);
    // The one step (the engine locked once): the jobs' actions carried out, the next check
    // timed, the jobs published.
    let Some(stepped) = crate::jobs::step(app, Input::Sample(sample)) else {
        return;
    };
    let Some(sample) = stepped.sample else {
        return;
    };
    sync_tracking(state, &sample, &stepped.tracked);
    crate::metrics::on_sample(state, &sample);
    if stepped.title != tick.title || stepped.growing != tick.growing {
        #[cfg(not(test))]
        crate::tray::update(
            app,
            &stepped.title,
            (stepped.growing != tick.growing).then_some(stepped.growing),
        );
        tick.title = stepped.title;
        tick.growing = stepped.growing;
    }
    if let Some(status) = stepped.status {
        let _ = app.emit("tick", status);
    }
    if tick.last_save.elapsed() >= crate::persist::SAVE_EVERY {
        tick.last_save = Instant::now();
        crate::persist::save_history(state, &mut tick.saved_ms);
    }
}

/// Keeps the sampler tracking only the jobs not yet ended (`wanted`, by their roots: each
/// was tracked when it was added).
fn sync_tracking(state: &AppState, sample: &Sample, wanted: &[ProcessIdentity]) {
    let roots: HashSet<_> = wanted.iter().collect();
    for t in sample
        .tracked
        .iter()
        .filter(|t| !roots.contains(&t.identity))
    {
        state.sampler.untrack(t.identity);
    }
}
