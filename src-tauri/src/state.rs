//! The app's shared state: counters, the one sampler, the monitor (history + jobs),
//! settings, and what the tray and page need to know. Data only: it is built and saved by
//! `crate::boot`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use headroom_core::monitor::Monitor;
use headroom_core::sampler::Sampler;
use headroom_core::settings::Settings;
use headroom_os::counters::Counters;
use headroom_os::enforce::Safety;
use headroom_os::paths::Dirs;

/// Everything the commands, the ticker and the tray share.
pub struct AppState {
    /// The OS counters.
    pub counters: Counters,
    /// The one sampling loop.
    pub sampler: Sampler,
    /// History and jobs.
    pub monitor: Mutex<Monitor>,
    /// Current settings.
    pub settings: Mutex<Settings>,
    /// Where settings and data live.
    pub dirs: Dirs,
    /// Who we are, for the stop safety rules.
    pub safety: Safety,
    /// True while the popover is shown: only then does the page get `tick` events.
    pub visible: AtomicBool,
    /// Notifications are paused until then (tray menu).
    pub paused_until: Mutex<Option<Instant>>,
    /// Problems found at start (corrupt settings or database), to notify once.
    pub startup_problems: Mutex<Vec<String>>,
    /// The SQLite store, if it could be opened.
    pub store: Mutex<Option<headroom_core::store::Store>>,
    /// This boot's id, saved with each guard so none outlives a reboot.
    pub boot_id: String,
    /// The stage-mark socket of jobs picked in the popover (`crate::marks`), if bound.
    pub marks: Mutex<Option<headroom_core::socket::JobSocket>>,
    /// The thread that publishes the app's jobs in job files (`crate::jobfiles`), if it
    /// started.
    pub job_files: Option<Publishing>,
    /// The metrics endpoint, when the setting is on.
    pub metrics: Mutex<MetricsEndpoint>,
    /// Panics caught in the job loop (logged; the loop goes on).
    pub panics: AtomicU64,
    /// Set when the app quits: the job loop takes no more samples (and acts on no job).
    pub quitting: AtomicBool,
    /// Tests: the job loop panics on its next sample.
    #[cfg(test)]
    pub inject_panic: AtomicBool,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("dirs", &self.dirs)
            .finish_non_exhaustive()
    }
}

/// The metrics endpoint while it runs, and the metrics it serves (see `crate::metrics`).
#[derive(Debug, Default)]
pub struct MetricsEndpoint {
    /// The server, while it runs.
    pub running: Option<headroom_serve::Running>,
    /// What it serves.
    pub metrics: Option<headroom_serve::Metrics>,
    /// Terminal guards' job files, read at most once a second (samples come faster).
    pub job_files: headroom_core::jobfile::Listing,
}

impl MetricsEndpoint {
    /// Where it listens, while it runs.
    pub fn address(&self) -> Option<std::net::SocketAddr> {
        self.running
            .as_ref()
            .map(headroom_serve::Running::local_addr)
    }
}

/// The thread that writes the app's job files (`crate::jobfiles`), fed the engine's views.
#[derive(Debug)]
pub struct Publishing {
    /// Each batch: every job of the engine, as it is now.
    pub to_thread: std::sync::mpsc::Sender<Vec<headroom_rules::engine::JobView>>,
}

/// Locks a mutex, recovering from poisoning (a panicked holder must not take the app down).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    /// True while notifications are paused.
    pub fn notifications_paused(&self) -> bool {
        lock(&self.paused_until).is_some_and(|until| Instant::now() < until)
    }

    /// Pauses notifications for `d` (or resumes them with `None`).
    pub fn pause_notifications(&self, d: Option<Duration>) {
        *lock(&self.paused_until) = d.map(|d| Instant::now() + d);
    }

    /// Whether the popover is shown.
    pub fn is_visible(&self) -> bool {
        self.visible.load(Ordering::SeqCst)
    }

    /// The jobs directory of `headroom guard` runs in terminals.
    pub fn jobs_dir(&self) -> PathBuf {
        self.dirs.jobs_dir()
    }
}
