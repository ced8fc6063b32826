//! The queue's files: one JSON file per guard in line, `<dir>/<pid>-<start_time>.json`
//! (the guard's own identity), written atomically, and `<dir>/.lock`, held (an advisory
//! `flock`) while a guard takes a ticket or decides. A place whose guard is gone (its pid
//! and start time no longer name a live process: a crashed or SIGKILLed guard) is removed
//! by whoever reads it next, so it holds nobody up, unless the guard was admitted and its
//! job runs on without it (its job file says so, [`crate::jobfile`]): that job's
//! reservation stays until its last process ends. A guard leaves the line when its job
//! ends, or when it stops waiting (Ctrl-C, `headroom stop`, `--start-timeout`): dropping its
//! [`HeldPlace`] removes its file.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{decide, Memory, Place};
use crate::drive::Sink;
use crate::jobfile::JobFile;
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;
use headroom_os::counters::CounterSource;
use headroom_os::paths::{read_json_files, write_atomic};
use headroom_os::process::ProcessLookup;
use headroom_rules::engine::JobView;
use headroom_rules::fit::Room;
use headroom_rules::policy::WaitReason;

/// The lock file's name in the queue's folder.
const LOCK_FILE: &str = ".lock";
/// A running job's use is rewritten when it has grown by this much (or reached its need).
const USED_STEP_BYTES: u64 = 64 << 20;

/// The places in `dir`, in turn (waiting and admitted alike); stale places are removed
/// (an admitted guard's is kept while its job runs on without it: its job file in
/// `jobs_dir` says so). Unreadable files are skipped with a warning. A missing `dir` is an
/// empty queue.
pub fn places(dir: &Path, jobs_dir: &Path, counters: &impl CounterSource) -> Vec<Place> {
    let mut orphans: Option<Vec<JobFile>> = None;
    let runs_on = |place: &Place| {
        let orphans = orphans.get_or_insert_with(|| {
            JobFile::list(jobs_dir, counters)
                .into_iter()
                .filter(|f| f.unguarded)
                .collect()
        });
        orphans.iter().any(|f| f.guard == Some(place.guard))
    };
    places_at(dir, |id| id.is_alive(counters), runs_on)
}

/// [`places`] with `is_alive` saying whether a guard lives, and `runs_on` whether the job
/// of an admitted guard that is gone runs on.
pub(super) fn places_at(
    dir: &Path,
    is_alive: impl Fn(&ProcessIdentity) -> bool,
    mut runs_on: impl FnMut(&Place) -> bool,
) -> Vec<Place> {
    let mut places = Vec::new();
    for (path, place) in read_json_files::<Place>(dir, "queue") {
        if is_alive(&place.guard) || (!place.is_waiting() && runs_on(&place)) {
            places.push(place);
        } else {
            tracing::debug!(
                "queue: removing the place of a guard gone, {}",
                path.display()
            );
            let _ = fs::remove_file(&path);
        }
    }
    places.sort_by_key(|p| p.ticket);
    places
}

/// The held lock of a queue's folder; released when dropped.
struct Locked(File);

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

fn lock(dir: &Path) -> io::Result<Locked> {
    use std::os::unix::fs::OpenOptionsExt;
    headroom_os::paths::Dirs::current().make_private(dir)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join(LOCK_FILE))?;
    file.lock()?;
    Ok(Locked(file))
}

/// A guard's place in line, from joining to leaving (its file is removed when dropped).
#[derive(Debug)]
pub struct HeldPlace {
    dir: PathBuf,
    /// Where the job files are (an admitted place whose guard is gone counts while its job
    /// runs).
    jobs_dir: PathBuf,
    me: Place,
}

impl HeldPlace {
    /// Joins the queue in `dir` with `place` (its ticket is taken here: after every place
    /// there); the job files are in `jobs_dir`.
    pub fn join(
        dir: &Path,
        jobs_dir: &Path,
        mut place: Place,
        counters: &impl CounterSource,
    ) -> io::Result<Self> {
        let _locked = lock(dir)?;
        let last = places(dir, jobs_dir, counters)
            .iter()
            .map(|p| p.ticket)
            .max();
        place.ticket = last.map_or(1, |t| t + 1);
        let line = HeldPlace {
            dir: dir.to_path_buf(),
            jobs_dir: jobs_dir.to_path_buf(),
            me: place,
        };
        line.write()?;
        Ok(line)
    }

    /// This guard's place.
    pub fn place(&self) -> &Place {
        &self.me
    }

    fn path(&self) -> PathBuf {
        self.dir.join(format!(
            "{}-{}.json",
            self.me.guard.pid, self.me.guard.start_time
        ))
    }

    fn write(&self) -> io::Result<()> {
        let json = serde_json::to_vec_pretty(&self.me).map_err(io::Error::other)?;
        write_atomic(&self.path(), &json)
    }

    /// Decides, under the lock, whether this guard may start in `room`; when it may, it is
    /// admitted at once (its reservation counts for every guard deciding after it).
    pub fn admit(
        &mut self,
        room: Room,
        counters: &impl CounterSource,
    ) -> io::Result<Result<(), WaitReason>> {
        let _locked = lock(&self.dir)?;
        let others: Vec<Place> = places(&self.dir, &self.jobs_dir, counters)
            .into_iter()
            .filter(|p| p.guard != self.me.guard)
            .collect();
        let memory = Memory {
            room,
            now_ms: unix_ms(SystemTime::now()),
        };
        let decision = decide(&self.me, &others, memory);
        if decision.is_ok() {
            self.me.admitted_at_ms = Some(memory.now_ms);
            self.write()?;
        }
        Ok(decision)
    }

    /// What the job has taken so far, as its need counts it (`JobView::taken_bytes`):
    /// written when it has grown by `USED_STEP_BYTES` (64 MiB) or reached the need, so the
    /// reservation shrinks as the job takes its memory.
    pub fn used(&mut self, peak_bytes: u64) -> io::Result<()> {
        let need = self.me.need_bytes.unwrap_or(0);
        let was = self.me.used_bytes;
        let reached = peak_bytes >= need && was < need;
        if peak_bytes > was && (peak_bytes - was >= USED_STEP_BYTES || reached) {
            self.me.used_bytes = peak_bytes;
            self.write()?;
        }
        Ok(())
    }
}

impl Drop for HeldPlace {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(self.path()) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!("queue: cannot remove {}: {e}", self.path().display());
            }
        }
    }
}

/// An admitted guard's place while its job runs: a sink of the driver that keeps the
/// reservation up to date, and leaves the line when the job is over.
#[derive(Debug)]
pub struct PlaceSink {
    line: Option<HeldPlace>,
}

impl PlaceSink {
    /// The sink for an admitted guard's `line`.
    pub fn new(line: HeldPlace) -> Self {
        PlaceSink { line: Some(line) }
    }
}

impl Sink for PlaceSink {
    fn name(&self) -> String {
        "the queue".to_string()
    }

    fn sample(
        &mut self,
        _sample: &headroom_rules::sample::Sample,
        view: &JobView,
    ) -> io::Result<()> {
        match (&mut self.line, view.taken_bytes) {
            (Some(line), Some(taken)) => line.used(taken),
            _ => Ok(()),
        }
    }

    fn finish(&mut self, _view: &JobView) -> io::Result<()> {
        self.line = None;
        Ok(())
    }
}
