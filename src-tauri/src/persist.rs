//! Persistence glue: the SQLite store (history at 1-minute resolution for 30 days, finished
//! jobs, jobs to take up after a restart) fed from the monitor. A store that cannot be
//! opened leaves the app running without persistence, reported once.

use std::time::{Duration, SystemTime};

use headroom_core::history::{HISTORY_RETENTION, MINUTE_TIER};
use headroom_core::monitor::Monitor;
use headroom_core::settings::Settings;
use headroom_core::store::Store;
use headroom_model::members::JobIds;
use headroom_model::units::unix_ms;
use headroom_os::paths::Dirs;
use headroom_rules::engine::JobSpec;

use crate::state::{lock, AppState};

/// How often the minute buckets are written.
pub const SAVE_EVERY: Duration = Duration::from_secs(60);

/// Opens the store; on failure returns the problem for a notification.
pub fn open(dirs: &Dirs, problems: &mut Vec<String>) -> Option<Store> {
    match Store::open(&dirs.history_db_path()) {
        Ok((store, problem)) => {
            if let Some(p) = problem {
                tracing::warn!(problem = %p, "history database");
                problems.push(p.to_string());
            }
            Some(store)
        }
        Err(e) => {
            tracing::error!(error = %e, "history database unusable; running without it");
            problems.push(format!("history is not saved: {e}"));
            None
        }
    }
}

/// Loads saved history and takes up saved jobs whose process still runs.
pub fn restore(
    store: &mut Store,
    monitor: &mut Monitor,
    settings: &Settings,
    counters: &headroom_os::counters::Counters,
) {
    let retention_ms = i64::try_from(HISTORY_RETENTION.as_millis()).unwrap_or(i64::MAX);
    let since = unix_ms(SystemTime::now()).saturating_sub(retention_ms);
    match store.load_points(since) {
        Ok(points) => {
            let n = monitor.history.restore(MINUTE_TIER, &points);
            tracing::info!(points = n, "history restored");
        }
        Err(e) => tracing::warn!(error = %e, "cannot load history"),
    }
    match store.restorable_jobs(counters) {
        Ok(guards) => {
            for g in guards {
                let base = JobSpec::new(
                    g.command.clone(),
                    g.mode,
                    settings.limits(),
                    settings.sample_interval,
                );
                let now = headroom_rules::engine::Moment {
                    at: SystemTime::now(),
                    clock: Duration::ZERO,
                };
                monitor
                    .jobs
                    .restore(&g, JobIds::of_process(g.identity), base, now);
                tracing::info!(pid = g.identity.pid, "job taken up again");
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot restore jobs"),
    }
}

/// Writes the minute buckets since the last save, and prunes old history now and then.
pub fn save_history(state: &AppState, last_saved_ms: &mut i64) {
    let points = {
        let monitor = lock(&state.monitor);
        monitor.history.points(MINUTE_TIER)
    };
    let fresh: Vec<_> = points
        .into_iter()
        .filter(|p| p.start_ms >= *last_saved_ms)
        .collect();
    let Some(newest) = fresh.last().map(|p| p.start_ms) else {
        return;
    };
    let mut store = lock(&state.store);
    let Some(store) = store.as_mut() else {
        return;
    };
    match store.save_points(&fresh) {
        // The newest bucket is still filling: write it again next time.
        Ok(_) => *last_saved_ms = newest,
        Err(e) => tracing::warn!(error = %e, "cannot save history"),
    }
    if let Err(e) = store.prune(SystemTime::now()) {
        tracing::warn!(error = %e, "cannot prune history");
    }
}

/// Saves a running job so it is taken up again after a restart.
pub fn job_started(state: &AppState, job_id: u64) {
    let record = lock(&state.monitor)
        .jobs
        .active_record(job_id, &state.boot_id);
    if let (Some(record), Some(store)) = (record, lock(&state.store).as_mut()) {
        if let Err(e) = store.save_active_job(&record) {
            tracing::warn!(error = %e, "cannot save the job");
        }
    }
}

/// Records a finished job in the run history (its key, and the memory it ran in: what it
/// took is measured as the CLI measures it), and forgets it as active.
pub fn job_finished(state: &AppState, job_id: u64) {
    let (run, machine) = {
        let monitor = lock(&state.monitor);
        (
            monitor.jobs.finished_run(job_id),
            monitor.last_system().cloned(),
        )
    };
    let Some(run) = run else {
        return;
    };
    if let Some(store) = lock(&state.store).as_mut() {
        if let Err(e) = store.record_finished(&run, machine.as_ref(), None) {
            tracing::warn!(error = %e, "cannot record the job");
        }
        let _ = store.remove_active_job(run.job.identity);
    }
}

/// Forgets a job the user let go of (Unwatch, Unguard).
pub fn job_removed(state: &AppState, identity: headroom_model::process::ProcessIdentity) {
    if let Some(store) = lock(&state.store).as_mut() {
        let _ = store.remove_active_job(identity);
    }
}
