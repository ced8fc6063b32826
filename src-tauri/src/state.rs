//! The app's shared state: counters, the one sampler, the monitor (history + jobs),
//! settings, and what the tray and page need to know.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use headroom_core::counters::Counters;
use headroom_core::guard::Safety;
use headroom_core::monitor::Monitor;
use headroom_core::paths::Dirs;
use headroom_core::sampler::{read_sample, ErrorOnce, Sampler};
use headroom_core::settings::Settings;

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
    pub marks: Mutex<Option<headroom_core::marks::MarkServer>>,
    /// The metrics endpoint, when the setting is on.
    pub metrics: Mutex<crate::metrics::Endpoint>,
    /// Panics caught in the job loop (logged; the loop goes on).
    pub panics: AtomicU64,
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

/// Locks a mutex, recovering from poisoning (a panicked holder must not take the app down).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    /// Loads settings (a corrupt file is moved aside and reported), reads a first sample and
    /// starts the sampler.
    pub fn new(dirs: Dirs) -> anyhow::Result<AppState> {
        let mut problems = Vec::new();
        let (settings, problem) = Settings::load(&dirs.settings_path());
        if let Some(p) = problem {
            tracing::warn!(problem = %p, "settings");
            problems.push(p.to_string());
        }
        let counters = Counters::new();
        let mut monitor = Monitor::default();
        let mut store = crate::persist::open(&dirs, &mut problems);
        if let Some(store) = store.as_mut() {
            crate::persist::restore(store, &mut monitor, &settings, &counters);
        }
        let first = read_sample(&counters, &[], &mut ErrorOnce::default(), 0, Duration::ZERO);
        monitor.on_sample(&first);
        let sampler = Sampler::start(counters.clone(), settings.sample_interval)
            .context("starting the sampler")?;
        for set in monitor.jobs.tracked() {
            sampler.track(&set);
        }
        let marks = headroom_core::marks::MarkServer::bind(&dirs.marks_dir())
            .map_err(|e| tracing::warn!(error = %e, "stage marks are off"))
            .ok();
        let boot_id = counters.boot_id().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "no boot id: guards will not be taken up after a restart");
            String::new()
        });
        Ok(AppState {
            safety: Safety::new(&counters),
            counters,
            sampler,
            monitor: Mutex::new(monitor),
            settings: Mutex::new(settings),
            dirs,
            visible: AtomicBool::new(false),
            paused_until: Mutex::new(None),
            startup_problems: Mutex::new(problems),
            store: Mutex::new(store),
            boot_id,
            marks: Mutex::new(marks),
            metrics: Mutex::default(),
            panics: AtomicU64::new(0),
            #[cfg(test)]
            inject_panic: AtomicBool::new(false),
        })
    }

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

    /// Called once on exit: saves the history not yet written.
    pub fn shutdown(&self) {
        let mut since = i64::MIN;
        crate::persist::save_history(self, &mut since);
        tracing::info!("headroom-app exiting");
    }
}
