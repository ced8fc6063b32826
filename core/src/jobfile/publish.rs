//! Writing job files: one rule of when a job's file is written again ([`due_after`]), used by
//! the guard's [`Publisher`] (a sink of its one job, whose samples it is woken for are picked
//! on the driver's thread by [`DueGate`]) and by the app's [`Board`] (every job of its engine,
//! [`Written`]). A file is written when its job's state changes at once, when its members
//! change within [`MEMBERS_EVERY`] (at once while the job is not running: a paused job's
//! members must be named for anyone else to resume them), and when its figures change at
//! most every [`PUBLISH_EVERY`]. A failure to write is said once (the guard's terminal lines
//! print it) and never stops a guard.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use super::{list_at, JobFile, MEMBERS_EVERY, PUBLISH_EVERY};
use crate::drive::{SampleGate, Sink};
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;
use headroom_rules::engine::{JobStatus, JobView};
use headroom_rules::policy::JobEvent;
use headroom_rules::sample::Sample;

/// What was last written for one job, and when.
#[derive(Debug, Default)]
struct Written {
    last: Option<(Instant, JobFile)>,
}

impl Written {
    /// Whether `file` is to be written now: `force`d, the first, its state changed, its
    /// members changed (see the module docs), or its figures changed and are due.
    fn due(&self, file: &JobFile, force: bool) -> bool {
        let Some((at, last)) = &self.last else {
            return true;
        };
        let same = JobFile {
            updated_at_ms: file.updated_at_ms,
            ..last.clone()
        } == *file;
        force
            || due_after(
                *at,
                (last.state, file.state),
                last.members == file.members,
                same,
            )
    }
}

/// The rule of the module docs, after a write at `at`: a state change (`states`: then and
/// now) at once; a change of members within [`MEMBERS_EVERY`] (at once while the job is not
/// running); other figures every [`PUBLISH_EVERY`]; nothing when nothing changed (`same`).
fn due_after(at: Instant, states: (JobStatus, JobStatus), same_members: bool, same: bool) -> bool {
    if states.0 != states.1 {
        return true;
    }
    let wait = match (same_members, states.1) {
        (true, _) => PUBLISH_EVERY,
        (false, JobStatus::Running) => MEMBERS_EVERY,
        (false, _) => Duration::ZERO,
    };
    !same && at.elapsed() >= wait
}

/// The guard's side of the rule, on the driver's thread: a sample goes to the [`Publisher`]'s
/// thread only when the job's file is due for it (compared with the view that went last, no
/// file built), so its thread is not woken at every check for nothing.
#[derive(Debug, Default)]
struct DueGate {
    last: Option<(Instant, JobView)>,
}

impl SampleGate for DueGate {
    fn wants(&mut self, view: &JobView) -> bool {
        let due = match &self.last {
            None => true,
            Some((at, last)) => due_after(
                *at,
                (last.state, view.state),
                last.members == view.members,
                last == view,
            ),
        };
        if due {
            self.last = Some((Instant::now(), view.clone()));
        }
        due
    }
}

/// Writes `file` into `dir`; the first failure is logged (`failed` remembers it) and
/// returned, the others are not.
fn write(dir: &std::path::Path, file: &JobFile, failed: &mut bool) -> Option<String> {
    match file.write_atomic(dir) {
        Err(e) if !*failed => {
            *failed = true;
            let text = format!(
                "the job file cannot be written ({e}): `headroom status`, `serve`, the app and \
                 other guards do not see this job's progress until it can (said once; the job \
                 stays guarded)"
            );
            tracing::warn!("{text}");
            Some(text)
        }
        _ => None,
    }
}

/// Publishes a guarded command's progress (the engine's view of it) for the menu-bar app,
/// `status` and `serve`: written when the job is under guard, then by the rule of the
/// module docs, and with the verdict at the end. It runs on an output thread of its own; a
/// failure to write is logged once and never stops the guard (so this sink never fails).
#[derive(Debug)]
pub struct Publisher {
    dir: PathBuf,
    guard: ProcessIdentity,
    written: Written,
    failed: bool,
    /// The first failure to write, until the terminal's lines have it.
    problem: Option<String>,
}

impl Publisher {
    /// A publisher into `dir` for the guard `guard` (this process).
    pub fn new(dir: PathBuf, guard: ProcessIdentity) -> Self {
        Publisher {
            dir,
            guard,
            written: Written::default(),
            failed: false,
            problem: None,
        }
    }

    /// Writes the file for `view` when `force`d, or when it is due.
    fn publish(&mut self, view: &JobView, force: bool) {
        let file = JobFile::of_view(view, self.guard, unix_ms(SystemTime::now()));
        if self.written.due(&file, force) {
            if let Some(text) = write(&self.dir, &file, &mut self.failed) {
                self.problem = Some(text);
            }
            self.written.last = Some((Instant::now(), file));
        }
    }
}

impl Sink for Publisher {
    fn name(&self) -> String {
        format!("the job file in {}", self.dir.display())
    }

    fn written_before_requests(&self) -> bool {
        true
    }

    fn started(&mut self, view: &JobView) -> io::Result<()> {
        // Prunes old finished files (the liveness test is not needed for those).
        list_at(&self.dir, unix_ms(SystemTime::now()), |_| true, |_| true);
        self.publish(view, true);
        Ok(())
    }

    fn sample_gate(&self) -> Option<Box<dyn SampleGate>> {
        Some(Box::new(DueGate::default()))
    }

    fn sample(&mut self, _sample: &Sample, view: &JobView) -> io::Result<()> {
        // Only the samples the gate found due come here: written (its clock decided).
        self.publish(view, true);
        Ok(())
    }

    fn event(&mut self, _t: Duration, event: &JobEvent, view: &JobView) -> io::Result<()> {
        // A stage or a report changes nothing the file holds: written when due, like a
        // sample (a job that marks thousands of times must not write its file as often).
        let force = !matches!(
            event,
            JobEvent::Stage { .. } | JobEvent::StageEnded { .. } | JobEvent::Reported { .. }
        );
        self.publish(view, force);
        Ok(())
    }

    fn finish(&mut self, view: &JobView) -> io::Result<()> {
        self.publish(view, true);
        Ok(())
    }

    fn take_problem(&mut self) -> Option<String> {
        self.problem.take()
    }
}

/// The job files of every job of one engine (the app's), so that `status`, `serve`,
/// `headroom resume|stop` and other guards' pause order see the app's jobs as they see a
/// terminal guard's: each written by the rule of the module docs, naming `guard` (the app),
/// and removed once its job leaves the engine (let go, or finished long enough ago).
#[derive(Debug)]
pub struct Board {
    dir: PathBuf,
    guard: ProcessIdentity,
    written: HashMap<u64, Written>,
    failed: bool,
}

impl Board {
    /// A board into `dir` for the jobs of `guard` (this process).
    pub fn new(dir: PathBuf, guard: ProcessIdentity) -> Self {
        Board {
            dir,
            guard,
            written: HashMap::new(),
            failed: false,
        }
    }

    /// Publishes `views`, every job of the engine now: the files of jobs no longer among
    /// them are removed, then each file that is due is written.
    pub fn publish(&mut self, views: &[JobView]) {
        let dir = &self.dir;
        self.written.retain(|id, written| {
            let kept = views.iter().any(|v| v.id == *id);
            if let (false, Some((_, file))) = (kept, &written.last) {
                if let Err(e) = file.remove(dir) {
                    tracing::debug!(error = %e, "job files");
                }
            }
            kept
        });
        // After the removals: a process let go of and picked again keeps its new file.
        let now_ms = unix_ms(SystemTime::now());
        for view in views {
            let file = JobFile::of_view(view, self.guard, now_ms);
            let written = self.written.entry(view.id).or_default();
            if written.due(&file, false) {
                // The app has no terminal: the failure is in its log (said once).
                let _ = write(&self.dir, &file, &mut self.failed);
                written.last = Some((Instant::now(), file));
            }
        }
    }
}
