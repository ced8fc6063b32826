//! The app's metrics endpoint (setting "Serve metrics", off by default): the same endpoint as
//! `headroom serve`, fed by the app's own sampler. Each sample updates the metrics with the
//! app's jobs and those of `headroom guard` runs in terminals; scrapes read the rendered
//! result only.

use std::net::SocketAddr;
use std::time::Instant;

use headroom_core::jobfile::{JobFile, Listing};
use headroom_os::counters::CounterSource;
use headroom_rules::sample::Sample;
use headroom_serve::{is_loopback, start, JobMetric, Metrics, MetricsHandle, ServerConfig};

use crate::state::{lock, AppState, MetricsEndpoint};

/// Starts, moves or stops the endpoint to match `on` and `address`; the error says why it
/// could not listen (the settings form shows it on the address field), and a running
/// endpoint then stays as it was.
pub fn apply(state: &AppState, on: bool, address: SocketAddr) -> Result<(), String> {
    let mut endpoint = lock(&state.metrics);
    let current = endpoint.address();
    if !on {
        *endpoint = MetricsEndpoint::default();
        return Ok(());
    }
    if current == Some(address) {
        return Ok(());
    }
    // Moving to another address on the same port: the old one must let go of it first.
    if current.is_some_and(|c| c.port() == address.port()) {
        *endpoint = MetricsEndpoint::default();
    }
    let mut metrics = Metrics::new(MetricsHandle::default());
    let system = state.counters.read_system().ok();
    let mut job_files = Listing::default();
    let dir = state.jobs_dir();
    let files = job_files.get(Instant::now(), || JobFile::list(&dir, &state.counters));
    metrics.update(system.as_ref(), Instant::now(), jobs(state, files));
    let running = start(ServerConfig::at(address), metrics.handle()).map_err(|e| e.to_string())?;
    if !is_loopback(&address) {
        tracing::warn!(%address, "metrics are reachable from other machines");
    }
    tracing::info!(address = %running.local_addr(), "serving metrics");
    *endpoint = MetricsEndpoint {
        running: Some(running),
        metrics: Some(metrics),
        job_files,
    };
    Ok(())
}

/// Starts the endpoint at launch when the setting is on; a failure (the port is taken) is
/// notified, and the app runs on without it.
pub fn start_if_set<R: tauri::Runtime>(app: &tauri::AppHandle<R>) {
    use tauri::Manager;
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let (on, address) = {
        let s = lock(&state.settings);
        (s.serve_metrics, s.metrics_address)
    };
    if let Err(e) = apply(&state, on, address) {
        tracing::warn!(error = %e, "metrics endpoint");
        crate::notify::show(app, "Headroom could not serve metrics", &e);
    }
}

/// Feeds one sample to the endpoint, while it runs. The job files are read at most once a
/// second ([`headroom_core::jobfile::Listing`]): samples come every 100-500 ms.
pub fn on_sample(state: &AppState, sample: &Sample) {
    // Metrics, then monitor (in `jobs`): the order `apply` takes them in too.
    let mut endpoint = lock(&state.metrics);
    let MetricsEndpoint {
        metrics: Some(metrics),
        job_files,
        ..
    } = &mut *endpoint
    else {
        return;
    };
    let dir = state.jobs_dir();
    let files = job_files.get(Instant::now(), || JobFile::list(&dir, &state.counters));
    metrics.update(sample.system.as_ref(), Instant::now(), jobs(state, files));
}

/// The app's jobs and those of terminal guards (`files`; the app's own files are its jobs).
fn jobs(state: &AppState, files: &[JobFile]) -> Vec<JobMetric> {
    let mut jobs: Vec<JobMetric> = lock(&state.monitor)
        .jobs
        .views()
        .iter()
        .map(JobMetric::from_view)
        .collect();
    jobs.extend(
        files
            .iter()
            .filter(|f| !f.guarded_by(std::process::id()))
            .map(metric_of_file),
    );
    jobs
}

/// A job of `headroom guard` in a terminal, as its job file says (the CLI's `headroom serve`
/// reads the files the same way: `src/cli/serve.rs`).
fn metric_of_file(f: &JobFile) -> JobMetric {
    JobMetric {
        key: format!("cli-{}-{}", f.pid, f.start_time),
        job: f.pid.to_string(),
        command: f.command.clone(),
        state: f.state_word(),
        swap_growth_bytes: f.swap_growth_bytes,
        peak_footprint_bytes: f.peak_footprint_bytes,
        lowest_free_percent: f.verdict.as_ref().and_then(|v| v.lowest_free_percent),
        verdict: f.verdict.clone(),
    }
}
