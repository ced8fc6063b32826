//! Start and end of the app's state: settings and the store loaded (a damaged file is moved
//! aside and reported), jobs taken up again, the sampler started; on exit, the history not
//! yet written is saved.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use headroom_core::monitor::Monitor;
use headroom_core::sampler::{read_sample, ErrorOnce, Sampler};
use headroom_core::settings::Settings;
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::enforce::Safety;
use headroom_os::members::{MemberSet, Members};
use headroom_os::paths::Dirs;

use crate::state::AppState;
use headroom_os::process::ProcessLookup;

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
        let first = read_sample(
            &counters,
            &[],
            &mut ErrorOnce::default(),
            0,
            Duration::ZERO,
            None,
        );
        // The first reading is for the history and the header: it tracks no process yet.
        let _ = monitor.on_sample(first);
        let sampler = Sampler::start(counters.clone(), settings.sample_interval)
            .context("starting the sampler")?;
        // The jobs taken up again: the sampler follows their processes.
        for root in monitor.jobs.tracked() {
            sampler.track(&MemberSet::new(Members::of_process(root)));
        }
        // A hint (macOS): a memory-pressure event brings the next tick forward.
        let waker = sampler.waker();
        headroom_os::unix::pressure::on_memory_pressure(Box::new(move || waker.tick_now()));
        let marks = headroom_core::socket::JobSocket::bind(&dirs)
            .map_err(|e| tracing::warn!(error = %e, "stage marks are off"))
            .ok();
        let boot_id = counters.boot_id().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "no boot id: guards will not be taken up after a restart");
            String::new()
        });
        let job_files = headroom_model::process::ProcessIdentity::of(&counters, std::process::id())
            .map_err(|e| tracing::warn!(error = %e, "the app's jobs are not published"))
            .ok()
            .and_then(|me| crate::jobfiles::start(dirs.jobs_dir(), me));
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
            job_files,
            metrics: Mutex::default(),
            panics: AtomicU64::new(0),
            quitting: AtomicBool::new(false),
            #[cfg(test)]
            inject_panic: AtomicBool::new(false),
        })
    }

    /// Called once on exit: saves the history not yet written.
    pub fn shutdown(&self) {
        self.quitting
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut since = i64::MIN;
        crate::persist::save_history(self, &mut since);
        tracing::info!("headroom-app exiting");
    }
}
