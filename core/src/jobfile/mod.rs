//! Job files: how `headroom guard` in a terminal shows its job to the menu-bar app.
//!
//! The guard writes one JSON file per job, `<dir>/<pid>-<start_time>.json` in
//! [`crate::paths::Dirs::jobs_dir`], atomically (temporary file, then rename) each time its state
//! changes and about once a second while it runs. The app only reads them ([`JobFile::list`])
//! to show the job next to its own ([`Listing`] keeps one for a hot path); the only files it removes are stale ones: a job that
//! finished more than [`FINISHED_KEEP`] ago, and a job whose process is gone while its file
//! still says it is waiting, running or stopping (the guard crashed or was killed).
//!
//! `pid` and `start_time` name the process the file is about: the guarded command's leader.
//! [`Publisher`] is the guard's side: a [`Sink`] of the job engine. When it starts it prunes
//! finished files: those older than [`FINISHED_KEEP`], and all but the newest
//! [`FINISHED_KEEP_COUNT`].

mod listing;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::counters::Counters;
use crate::engine::drive::Sink;
use crate::engine::{JobStatus, FINISHED_KEEP};
use crate::paths::write_atomic;
use crate::policy::{EndReason, JobEvent, OnBudget, Verdict};
use crate::process::ProcessIdentity;
use crate::sampler::Sample;
use crate::units::unix_ms;

pub use self::listing::{Listing, LISTING_MAX_AGE};

/// How many finished jobs' files are kept at most.
pub const FINISHED_KEEP_COUNT: usize = 20;
/// How often a running job's file is rewritten.
const PUBLISH_EVERY: Duration = Duration::from_secs(2);

/// One guarded job, as published by `headroom guard`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFile {
    /// The process the file is about (see the module docs).
    pub pid: u32,
    /// Its OS start-time token, so a recycled pid is not taken for it.
    pub start_time: u64,
    /// The command line.
    pub command: String,
    /// When the guard began, ms since the Unix epoch.
    pub started_at_ms: i64,
    /// When the file was last written, ms since the Unix epoch.
    pub updated_at_ms: i64,
    /// The swap budget, bytes.
    pub swap_budget_bytes: u64,
    /// Swap in use when the job started, bytes.
    pub swap_start_bytes: u64,
    /// Swap growth so far (peak minus start), bytes.
    pub swap_growth_bytes: u64,
    /// Peak footprint of the job's process tree, bytes, once measured.
    pub peak_footprint_bytes: Option<u64>,
    /// Where the job is.
    pub state: JobStatus,
    /// The verdict, once finished.
    pub verdict: Option<Verdict>,
    /// What passing the budget does.
    #[serde(default)]
    pub on_budget: OnBudget,
    /// Pauses so far.
    #[serde(default)]
    pub pauses: u32,
}

/// Why a job file could not be written or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobFileError {
    /// Writing, renaming or removing failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The job could not be encoded as JSON.
    #[error("encoding job file: {0}")]
    Json(#[from] serde_json::Error),
}

impl JobFile {
    /// The process this file is about.
    pub fn identity(&self) -> ProcessIdentity {
        ProcessIdentity {
            pid: self.pid,
            start_time: self.start_time,
        }
    }

    /// `<dir>/<pid>-<start_time>.json`.
    pub fn path_in(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}-{}.json", self.pid, self.start_time))
    }

    /// Writes the file into `dir` atomically, creating `dir`. Returns its path.
    pub fn write_atomic(&self, dir: &Path) -> Result<PathBuf, JobFileError> {
        let path = self.path_in(dir);
        let json = serde_json::to_vec_pretty(self)?;
        write_atomic(&path, &json).map_err(|source| JobFileError::Io {
            what: "writing",
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// Removes the file from `dir`; a file that is already gone is fine.
    pub fn remove(&self, dir: &Path) -> Result<(), JobFileError> {
        let path = self.path_in(dir);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(JobFileError::Io {
                what: "removing",
                path,
                source: e,
            }),
            _ => Ok(()),
        }
    }

    /// The jobs in `dir`, oldest first. Files that cannot be read or parsed are skipped with a
    /// warning; stale files (see the module docs) are removed. A missing `dir` has no jobs.
    pub fn list(dir: &Path, counters: &Counters) -> Vec<JobFile> {
        list_at(dir, unix_ms(SystemTime::now()), |id| id.is_alive(counters))
    }

    /// True when the file should be removed at `now_ms`.
    fn is_stale(&self, now_ms: i64, is_alive: &impl Fn(&ProcessIdentity) -> bool) -> bool {
        match self.state {
            JobStatus::Finished | JobStatus::Stopped => {
                let keep_ms = i64::try_from(FINISHED_KEEP.as_millis()).unwrap_or(i64::MAX);
                now_ms.saturating_sub(self.updated_at_ms) > keep_ms
            }
            JobStatus::Running | JobStatus::Paused | JobStatus::Stopping => {
                !is_alive(&self.identity())
            }
        }
    }
}

/// [`JobFile::list`] at `now_ms`, with `is_alive` deciding whether a process still exists.
fn list_at(dir: &Path, now_ms: i64, is_alive: impl Fn(&ProcessIdentity) -> bool) -> Vec<JobFile> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!("job files: cannot list {}: {e}", dir.display());
            return Vec::new();
        }
    };
    let mut jobs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // Temporary files of an atomic write start with a dot.
        if name.starts_with('.') || path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let job = match fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<JobFile>(&bytes).map_err(|e| e.to_string()))
        {
            Ok(job) => job,
            Err(e) => {
                tracing::warn!("job files: skipping {}: {e}", path.display());
                continue;
            }
        };
        if job.is_stale(now_ms, &is_alive) {
            tracing::debug!("job files: removing stale {}", path.display());
            if let Err(e) = fs::remove_file(&path) {
                tracing::debug!("job files: cannot remove {}: {e}", path.display());
            }
            continue;
        }
        jobs.push((path, job));
    }
    jobs.sort_by_key(|(_, j)| (j.started_at_ms, j.pid));
    // Only the newest finished jobs are kept.
    let finished = jobs.iter().filter(|(_, j)| j.state.ended()).count();
    let mut excess = finished.saturating_sub(FINISHED_KEEP_COUNT);
    jobs.retain(|(path, job)| {
        if excess == 0 || !job.state.ended() {
            return true;
        }
        excess -= 1;
        if let Err(e) = fs::remove_file(path) {
            tracing::debug!("job files: cannot remove {}: {e}", path.display());
        }
        false
    });
    jobs.into_iter().map(|(_, job)| job).collect()
}

/// Publishes a guarded command's progress for the menu-bar app: written when the job is
/// under guard, every 2 s while it runs, and with the verdict at the end. A failure to write
/// is logged once and never stops the guard (so this sink never fails).
#[derive(Debug)]
pub struct Publisher {
    dir: PathBuf,
    file: Option<JobFile>,
    command: String,
    swap_budget_bytes: u64,
    on_budget: OnBudget,
    last_write: Option<std::time::Instant>,
    failed: bool,
}

impl Publisher {
    /// A publisher into `dir` for `command` under `swap_budget_bytes`, doing `on_budget`
    /// when it passes it.
    pub fn new(dir: PathBuf, command: &str, swap_budget_bytes: u64, on_budget: OnBudget) -> Self {
        Publisher {
            dir,
            file: None,
            command: command.to_string(),
            swap_budget_bytes,
            on_budget,
            last_write: None,
            failed: false,
        }
    }

    fn write(&mut self, force: bool) {
        let due = self.last_write.is_none_or(|t| t.elapsed() >= PUBLISH_EVERY);
        let Some(file) = self.file.as_mut() else {
            return;
        };
        if !(force || due) {
            return;
        }
        file.updated_at_ms = unix_ms(SystemTime::now());
        self.last_write = Some(std::time::Instant::now());
        if let Err(e) = file.write_atomic(&self.dir) {
            if !self.failed {
                tracing::warn!(error = %e, "cannot publish the job for the app");
                self.failed = true;
            }
        }
    }
}

impl Sink for Publisher {
    fn name(&self) -> String {
        format!("the job file in {}", self.dir.display())
    }

    fn started(&mut self, root: ProcessIdentity, swap_start_bytes: u64) -> io::Result<()> {
        // Prunes old finished files (the liveness test is not needed for those).
        list_at(&self.dir, unix_ms(SystemTime::now()), |_| true);
        let now = unix_ms(SystemTime::now());
        self.file = Some(JobFile {
            pid: root.pid,
            start_time: root.start_time,
            command: self.command.clone(),
            started_at_ms: now,
            updated_at_ms: now,
            swap_budget_bytes: self.swap_budget_bytes,
            swap_start_bytes,
            swap_growth_bytes: 0,
            peak_footprint_bytes: None,
            state: JobStatus::Running,
            verdict: None,
            on_budget: self.on_budget,
            pauses: 0,
        });
        self.write(true);
        Ok(())
    }

    fn sample(&mut self, sample: &Sample) -> io::Result<()> {
        let mut changed = false;
        if let Some(file) = self.file.as_mut() {
            let before = (file.swap_growth_bytes, file.peak_footprint_bytes);
            if let Some(system) = &sample.system {
                let growth = system.swap_used_bytes.saturating_sub(file.swap_start_bytes);
                file.swap_growth_bytes = file.swap_growth_bytes.max(growth);
            }
            let footprint = sample
                .tracked
                .iter()
                .find(|t| t.identity == file.identity())
                .and_then(|t| t.memory.map(|m| m.footprint_bytes));
            if let Some(f) = footprint {
                file.peak_footprint_bytes = Some(file.peak_footprint_bytes.map_or(f, |p| p.max(f)));
            }
            changed = before != (file.swap_growth_bytes, file.peak_footprint_bytes);
        }
        // Nothing new, nothing written: a steady job costs no disk writes.
        if changed {
            self.write(false);
        }
        Ok(())
    }

    fn event(&mut self, _t: Duration, event: &JobEvent) -> io::Result<()> {
        if let Some(file) = self.file.as_mut() {
            match event {
                JobEvent::Stopped { .. } => file.state = JobStatus::Stopping,
                JobEvent::Paused { pause, .. } => {
                    file.state = JobStatus::Paused;
                    file.pauses = *pause;
                }
                JobEvent::Resumed { .. } => file.state = JobStatus::Running,
                JobEvent::Finished { verdict } => {
                    let stopped = matches!(verdict.ended, EndReason::Stopped { .. });
                    file.state = if stopped {
                        JobStatus::Stopped
                    } else {
                        JobStatus::Finished
                    };
                    file.swap_growth_bytes = verdict.swap_growth_bytes;
                    file.verdict = Some(verdict.clone());
                }
                _ => return Ok(()),
            }
        }
        self.write(true);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
