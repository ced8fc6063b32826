//! The app's loop over samples: gives the engine the other guards' jobs (the pause order),
//! feeds the monitor (history and the job engine), carries out the engine's actions
//! (notify, stop), publishes the app's jobs, keeps the tray title current and, only while
//! the popover is shown, sends the page a `tick` event.
//!
//! A panic while handling a sample is caught and logged, and the loop goes on with the next
//! sample: the jobs live in the shared state, so every guard stays enforced.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use headroom_core::monitor::TICK_WINDOW_SECONDS;
use headroom_core::sampler::Sample;
use tauri::{AppHandle, Emitter, Manager, Runtime};

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
        if state.quitting.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        let handled = std::panic::catch_unwind(AssertUnwindSafe(|| {
            on_sample(app, &state, &sample, &mut tick);
        }));
        if handled.is_err() {
            state
                .panics
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tracing::error!(
                seq = sample.seq,
                "the job loop panicked; it goes on, jobs intact"
            );
        }
    }
}

fn on_sample<R: Runtime>(app: &AppHandle<R>, state: &AppState, sample: &Sample, tick: &mut Tick) {
    #[cfg(test)]
    if state
        .inject_panic
        .swap(false, std::sync::atomic::Ordering::SeqCst)
    {
        panic!("injected by a test");
    }
    tick.peers.update(state);
    let (actions, title, growing, status) = {
        let mut monitor = lock(&state.monitor);
        let actions = monitor.on_sample(sample);
        let status = monitor.status(Duration::from_secs(TICK_WINDOW_SECONDS));
        (
            actions,
            monitor.tray_title(),
            monitor.jobs.any_growing(),
            status,
        )
    };
    sync_tracking(state, sample);
    crate::metrics::on_sample(state, sample);
    if title != tick.title || growing != tick.growing {
        #[cfg(not(test))]
        crate::tray::update(app, &title, (growing != tick.growing).then_some(growing));
        tick.title = title;
        tick.growing = growing;
    }
    if state.is_visible() {
        if let Some(status) = status {
            let _ = app.emit("tick", status);
        }
    }
    crate::jobs::carry_out(app, actions);
    crate::jobfiles::publish(state);
    retune(state);
    if tick.last_save.elapsed() >= crate::persist::SAVE_EVERY {
        tick.last_save = Instant::now();
        crate::persist::save_history(state, &mut tick.saved_ms);
    }
}

/// Sets the sampler's interval: the settings' interval, or faster while a guarded job nears
/// its budget. The sampler ignores a value that did not change.
pub fn retune(state: &AppState) {
    let base = lock(&state.settings).sample_interval;
    let wanted = lock(&state.monitor).jobs.check_interval();
    state
        .sampler
        .set_interval(wanted.map_or(base, |w| w.min(base)));
}

/// Keeps the sampler tracking exactly the running jobs' members.
fn sync_tracking(state: &AppState, sample: &Sample) {
    let wanted = lock(&state.monitor).jobs.tracked();
    let roots: HashSet<_> = wanted.iter().map(|set| set.root()).collect();
    for t in sample
        .tracked
        .iter()
        .filter(|t| !roots.contains(&t.identity))
    {
        state.sampler.untrack(t.identity);
    }
    for set in &wanted {
        state.sampler.track(set);
    }
}
