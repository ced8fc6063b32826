//! Job files: how `headroom guard` in a terminal and the menu-bar app show their jobs to
//! each other, to `headroom status` and `serve`, and how a job outlives its guard.
//!
//! The guard (the app: for each of its jobs) writes one JSON file per job, `<dir>/<pid>-<start_time>.json` in
//! [`headroom_os::paths::Dirs::jobs_dir`], atomically (temporary file, then rename): the engine's
//! view of the job ([`headroom_rules::engine::JobView`]) when its state changes, and at most every
//! [`PUBLISH_EVERY`] while it runs and its figures or members change. The file names the
//! guard itself (pid and start time) and the job's members as last seen, so that readers
//! tell a guarded job from one whose guard is gone (killed with SIGKILL): such a job is
//! **unguarded** ([`JobFile::unguarded`]) while any of its members lives, and
//! `headroom resume|stop PID` act on its members directly.
//!
//! Readers only read ([`JobFile::list`]; [`Listing`] keeps one for a hot path); the only
//! files they remove are stale ones: a job that finished more than [`FINISHED_KEEP`] ago,
//! and a job none of whose processes (guard, leader, members) lives any more.
//!
//! `pid` and `start_time` name the process the file is about: the guarded command's leader.
//! [`Publisher`] is the guard's side: a [`crate::drive::Sink`] of the driver. When it starts
//! it prunes finished files: those older than [`FINISHED_KEEP`], and all but the newest
//! [`FINISHED_KEEP_COUNT`]. [`Board`] is the app's: the files of every job of its engine.

mod listing;
mod publish;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::peers::{PeerSource, Peers};
use headroom_model::counters::JobCgroup;
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;
use headroom_os::counters::CounterSource;
use headroom_os::paths::{write_atomic, Dirs};
use headroom_rules::engine::{JobMode, JobSpec, JobStatus, JobView, FINISHED_KEEP};
use headroom_rules::policy::order::{Peer, PeerAt};
use headroom_rules::policy::share::OtherJob;
use headroom_rules::policy::{OnBudget, Verdict};

pub use self::listing::{Listing, LISTING_MAX_AGE};
pub use self::publish::{Board, Publisher};
use headroom_os::process::ProcessLookup;

/// How many finished jobs' files are kept at most.
pub const FINISHED_KEEP_COUNT: usize = 20;
/// How often a running job's file is rewritten at most for its figures (state changes are
/// written at once).
pub const PUBLISH_EVERY: Duration = Duration::from_secs(2);
/// How soon a change of the job's members is written at most: the file must name the
/// members for `headroom resume|stop` to reach them should the guard die.
pub const MEMBERS_EVERY: Duration = Duration::from_millis(250);
/// Members a job file lists at most (a job of thousands of processes keeps its file small;
/// the count is kept whole).
pub const MAX_LISTED_MEMBERS: usize = 4096;

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
    /// Its footprint at the guard's last reading (what other guards weigh their share of
    /// memory in use against on a Mac, [`headroom_rules::policy::share`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint_bytes: Option<u64>,
    /// Where the job is, as its guard last said.
    pub state: JobStatus,
    /// The verdict, once finished.
    pub verdict: Option<Verdict>,
    /// What passing the budget does.
    #[serde(default)]
    pub on_budget: OnBudget,
    /// Pauses so far.
    #[serde(default)]
    pub pauses: u32,
    /// The guard's own process (absent in files of older versions).
    #[serde(default)]
    pub guard: Option<ProcessIdentity>,
    /// The job's members as last seen (at most [`MAX_LISTED_MEMBERS`]).
    #[serde(default)]
    pub members: Vec<ProcessIdentity>,
    /// Set by readers, never written: the guard is gone while members live.
    #[serde(skip)]
    pub unguarded: bool,
    /// Watch or guard (files of older versions: watch).
    #[serde(default)]
    pub mode: JobMode,
    /// Since when it is paused, ms since the epoch (while paused).
    #[serde(default)]
    pub paused_since_ms: Option<i64>,
    /// When it was last resumed, ms since the epoch.
    #[serde(default)]
    pub resumed_at_ms: Option<i64>,
    /// It resumes by itself once memory is back (`--resume-free`).
    #[serde(default)]
    pub resumes_by_itself: bool,
    /// An older guard may ask it to pause to make room now ([`headroom_rules::policy::order`]).
    #[serde(default)]
    pub yields: bool,
    /// The job's own cgroup, where it has one (Linux): should the guard die, the job is
    /// thawed, frozen and stopped through it, and its processes are its members. Only a
    /// cgroup named after the file's guard is ever acted on ([`JobFile::job_cgroup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<JobCgroup>,
}

impl JobFile {
    /// The file for the job `view`, published by `guard` at `now_ms`.
    pub fn of_view(view: &JobView, guard: ProcessIdentity, now_ms: i64) -> Self {
        JobFile {
            pid: view.pid,
            start_time: view.start_time,
            command: view.command.clone(),
            started_at_ms: view.started_at_ms,
            updated_at_ms: now_ms,
            swap_budget_bytes: view.swap_budget_bytes.unwrap_or(0),
            swap_start_bytes: view.swap_start_bytes,
            swap_growth_bytes: view.swap_growth_bytes,
            peak_footprint_bytes: view.peak_footprint_bytes,
            footprint_bytes: view.footprint_bytes,
            state: view.state,
            verdict: view.verdict.clone(),
            on_budget: view.on_budget,
            pauses: view.pauses,
            guard: Some(guard),
            members: view
                .members
                .iter()
                .take(MAX_LISTED_MEMBERS)
                .copied()
                .collect(),
            unguarded: false,
            mode: view.mode,
            paused_since_ms: view.paused_since_ms,
            resumed_at_ms: view.resumed_at_ms,
            resumes_by_itself: view.resumes_by_itself,
            yields: view.yields,
            cgroup: view.cgroup.clone(),
        }
    }

    /// The job in the pause order of other guards ([`headroom_rules::policy::order`]): a guarded job
    /// that pauses at its budget, running or paused, whose guard lives; else `None`.
    pub fn as_peer(&self) -> Option<Peer> {
        let guard = self.guard.filter(|_| !self.unguarded)?;
        let taking_part = self.mode == JobMode::Guard
            && self.on_budget == OnBudget::Pause
            && matches!(self.state, JobStatus::Running | JobStatus::Paused);
        taking_part.then(|| Peer {
            at: PeerAt::Guard {
                guard_pid: guard.pid,
            },
            pid: self.pid,
            started_at_ms: self.started_at_ms,
            paused_since_ms: self
                .paused_since_ms
                .filter(|_| self.state == JobStatus::Paused),
            resumed_at_ms: self.resumed_at_ms,
            resumes_by_itself: self.resumes_by_itself,
            pausable: self.yields && self.state == JobStatus::Running,
        })
    }

    /// The job beside others in their share of memory in use ([`headroom_rules::policy::share`]):
    /// a job running or paused whose guard lives and read its footprint; else `None`.
    pub fn as_other(&self) -> Option<OtherJob> {
        let live = !self.unguarded && matches!(self.state, JobStatus::Running | JobStatus::Paused);
        live.then_some(OtherJob {
            leader: self.identity(),
            footprint_bytes: self.footprint_bytes?,
            read_at_ms: self.updated_at_ms,
        })
    }

    /// Whether the process `pid` (a guard, or the app) wrote this file: its own jobs, which
    /// it leaves out when it lists other guards' jobs.
    pub fn guarded_by(&self, pid: u32) -> bool {
        self.guard.is_some_and(|g| g.pid == pid)
    }

    /// `running`, `paused`, … as the guard said, or `unguarded` once the guard is gone
    /// (see [`JobFile::unguarded`]): what `status`, the app and the metrics show.
    pub fn state_word(&self) -> &'static str {
        if self.unguarded {
            "unguarded"
        } else {
            self.state.as_str()
        }
    }
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

    /// The jobs in `dir`, oldest first, each marked unguarded when its guard is gone. Files
    /// that cannot be read or parsed are skipped with a warning; stale files (see the module
    /// docs) are removed. A missing `dir` has no jobs.
    pub fn list(dir: &Path, counters: &impl CounterSource) -> Vec<JobFile> {
        let holds = |cgroup: &JobCgroup| match counters.job_cgroup(cgroup) {
            Ok(state) => !state.pids.is_empty(),
            // Unreadable is not empty: a job that cannot be seen is never dropped.
            Err(_) => cgroup.memory_dir.exists(),
        };
        list_at(
            dir,
            unix_ms(SystemTime::now()),
            |id| id.is_alive(counters),
            holds,
        )
    }

    /// The job's own cgroup as its file names it, if that cgroup bears the name of the
    /// file's guard (see [`headroom_os::unix::cgroup::named_for`]); else `None`: a job file can make
    /// nobody freeze, thaw or remove another cgroup.
    pub fn job_cgroup(&self) -> Option<&JobCgroup> {
        let guard = self.guard?;
        #[cfg(target_os = "linux")]
        return self
            .cgroup
            .as_ref()
            .filter(|c| headroom_os::unix::cgroup::named_for(c, guard.pid));
        #[cfg(not(target_os = "linux"))]
        {
            let _ = guard;
            None
        }
    }

    /// The processes of the job the file names: its leader and members.
    fn processes(&self) -> impl Iterator<Item = ProcessIdentity> + '_ {
        std::iter::once(self.identity()).chain(self.members.iter().copied())
    }

    /// Whether the file is stale at `now_ms` (then removed), and else whether the job lost
    /// its guard: a job whose guard is gone lives while a process it names lives, or its own
    /// cgroup `holds` one.
    fn judge(
        &self,
        now_ms: i64,
        is_alive: &impl Fn(&ProcessIdentity) -> bool,
        holds: &impl Fn(&JobCgroup) -> bool,
    ) -> Judged {
        if self.state.ended() {
            let keep_ms = i64::try_from(FINISHED_KEEP.as_millis()).unwrap_or(i64::MAX);
            return if now_ms.saturating_sub(self.updated_at_ms) > keep_ms {
                Judged::Stale
            } else {
                Judged::Guarded
            };
        }
        let guarded = match self.guard {
            Some(guard) => is_alive(&guard),
            // An older file names no guard: the leader stands for it.
            None => is_alive(&self.identity()),
        };
        if guarded {
            Judged::Guarded
        } else if self.processes().any(|id| is_alive(&id)) || self.job_cgroup().is_some_and(holds) {
            Judged::Unguarded
        } else {
            Judged::Stale
        }
    }
}

/// What a reader makes of a job file.
enum Judged {
    Guarded,
    Unguarded,
    Stale,
}

/// [`JobFile::list`] at `now_ms`, with `is_alive` deciding whether a process still exists
/// and `holds` whether a job's cgroup holds one. The file of a job that ended without its
/// guard is removed with what the job left: its cgroup, empty now.
fn list_at(
    dir: &Path,
    now_ms: i64,
    is_alive: impl Fn(&ProcessIdentity) -> bool,
    holds: impl Fn(&JobCgroup) -> bool,
) -> Vec<JobFile> {
    let mut jobs = Vec::new();
    for (path, mut job) in headroom_os::paths::read_json_files::<JobFile>(dir, "job files") {
        match job.judge(now_ms, &is_alive, &holds) {
            Judged::Stale => {
                tracing::debug!("job files: removing stale {}", path.display());
                #[cfg(target_os = "linux")]
                if let Some(cgroup) = job.job_cgroup().filter(|_| !job.state.ended()) {
                    headroom_os::unix::cgroup::remove(cgroup, Duration::ZERO);
                }
                if let Err(e) = fs::remove_file(&path) {
                    tracing::debug!("job files: cannot remove {}: {e}", path.display());
                }
                continue;
            }
            Judged::Unguarded => job.unguarded = true,
            Judged::Guarded => {}
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

/// Other guards' jobs, from their job files: the pausable ones (the pause order's view of
/// them, [`headroom_rules::policy::order`]) and the running ones with their footprints (the share of
/// memory in use, [`headroom_rules::policy::share`]); the files of guard `own_pid` left out.
#[derive(Debug)]
pub struct PeerFiles<C> {
    dir: PathBuf,
    own_pid: u32,
    counters: C,
}

impl<C: CounterSource + 'static> PeerFiles<C> {
    /// Where the peers of a job run under `spec` are listed, when it takes part in the
    /// pause order (a guard that pauses at its budget) or memory is counted by pages
    /// ([`COUNTS_PAGES`]: its share of memory in use weighs the others'): the job files in
    /// `dirs`, this process's own left out.
    pub fn for_job(spec: &JobSpec, dirs: &Dirs, counters: C) -> Option<Box<dyn PeerSource>> {
        let pausing = spec.mode == JobMode::Guard && spec.limits.on_budget == OnBudget::Pause;
        (pausing || COUNTS_PAGES).then(|| {
            let files = PeerFiles::new(dirs.jobs_dir(), std::process::id(), counters);
            Box::new(files) as Box<dyn PeerSource>
        })
    }

    /// The job files in `dir`, read for guard `own_pid` (processes checked with `counters`).
    pub fn new(dir: PathBuf, own_pid: u32, counters: C) -> Self {
        PeerFiles {
            dir,
            own_pid,
            counters,
        }
    }
}

/// Whether this OS counts memory in use by pages (macOS), so that a job's need is its share
/// of the rise and other guards' jobs are read for it ([`headroom_rules::policy::share`]).
pub const COUNTS_PAGES: bool = cfg!(target_os = "macos");

impl<C: CounterSource> PeerSource for PeerFiles<C> {
    fn peers(&mut self) -> Peers {
        let files: Vec<JobFile> = JobFile::list(&self.dir, &self.counters)
            .into_iter()
            .filter(|f| !f.guarded_by(self.own_pid))
            .collect();
        Peers {
            order: files.iter().filter_map(JobFile::as_peer).collect(),
            others: files.iter().filter_map(JobFile::as_other).collect(),
        }
    }
}

#[cfg(test)]
mod tests;
