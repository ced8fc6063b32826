//! A job whose guard is gone (killed outright: its job file says so, see [`crate::jobfile`]),
//! taken over for one request of `headroom pause|resume|stop`, and verified exactly as the
//! live guard verifies it: the same engine, the same checks, the same signals.
//!
//! The job is what its processes are now, not what its guard last wrote: its own cgroup
//! where its file names one (its processes and those of the cgroups beneath it, frozen and
//! thawed by the freezer), else the members its file lists and, from then on, everything they
//! fork (a complete, fresh look at every check; on macOS also what carries the job's mark). It is taken up by an [`Engine`] as paused
//! when every process is stopped, else as running, and driven through its checks until the
//! request holds or clearly cannot:
//!
//! - a pause holds when every process is seen stopped (frozen);
//! - a resume holds when none is seen stopped any more;
//! - a stop holds when no process is left. No subreaper catches what the job forks while it
//!   is stopped, so a running job is paused first (nothing held still forks), then stopped:
//!   SIGTERM, SIGKILL after the grace, every process looked for again at each check.
//!
//! What the safety rules refuse, and every process the request did not reach, is named in
//! the [`TakenOver`]; its job file is written with what is true now (a job not stopped stays
//! listed, so it can be tried again), and a stop that held removes the job's cgroup: the
//! guard that would have is gone. (A job that ends on its own without its guard leaves its
//! file and cgroup to the next reader of the job files: `JobFile::list`.)

use std::collections::HashSet;
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use crate::drive::{Input, LiveEffects, Outputs};
use crate::jobfile::{JobFile, MAX_LISTED_MEMBERS};
use crate::sampler::InlineSampler;
use headroom_model::counters::{JobCgroup, RunState};
use headroom_model::effects::Control;
use headroom_model::effects::KILL_WAIT;
use headroom_model::members::Member;
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;
use headroom_os::counters::Counters;
use headroom_os::enforce::Safety;
use headroom_os::members::{MemberSet, Members};
use headroom_rules::engine::{
    carry_out, Engine, JobMode, JobSpec, JobStatus, JobView, Moment, RequestError, SavedJob,
    PAUSE_SETTLE, STOP_CHECK,
};
use headroom_rules::policy::{EndReason, Limits, Survivor};

/// What a request on a job whose guard is gone did, verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenOver {
    /// True when it holds: every process stopped (pause), none stopped (resume), none left
    /// (stop).
    pub done: bool,
    /// The processes of the job the checks saw.
    pub processes: usize,
    /// The processes it did not hold for, and why (a safety rule's refusal, or what the
    /// last check saw).
    pub survivors: Vec<Survivor>,
    /// The job file could not be written (the request was carried out all the same).
    pub file_error: Option<String>,
    /// The job's cgroup could not be removed after a stop that held.
    pub cgroup_left: Option<String>,
}

/// Carries out `control` (pause, resume, stop; a yield is a pause) on the job of `file`,
/// whose guard is gone, and verifies it (see the module docs); SIGKILL comes `grace` after
/// SIGTERM. Updates its file in `jobs_dir`. `Err` when the job is not in a state for it (no
/// process of it lives; resume, but nothing of it is stopped; pause, but all of it is).
pub fn take_over(
    counters: &Counters,
    safety: &Safety,
    jobs_dir: &Path,
    file: &JobFile,
    control: Control,
    grace: Duration,
) -> Result<TakenOver, String> {
    let cgroup = file.job_cgroup().cloned();
    let mut members = Members::taken_over(file.identity(), &file.members);
    if let Some(guard) = file.guard {
        // Where the OS tracks lineage (macOS), what the job forked and re-parented is found
        // by the mark its guard gave it.
        members = members.with_mark(Members::mark_of(guard));
    }
    if let Some(cgroup) = cgroup.clone() {
        members = members.in_cgroup(cgroup);
    }
    let set = MemberSet::new(members);
    let live = set.discover(counters);
    if live.is_empty() {
        return Err(RequestError::Ended(file.pid).to_string());
    }
    let mut taking = Taking::new(counters, safety, cgroup, &set, file, &live, grace);
    taking.look();
    let verified = taking.carry(control)?;
    Ok(taking.finish(jobs_dir, file, control, verified))
}

/// One job being taken over: its engine, its sampler, its effects, what the checks saw.
struct Taking<'a> {
    engine: Engine,
    job: u64,
    /// The pid of its leader, which requests name.
    root_pid: u32,
    sampler: InlineSampler,
    effects: LiveEffects<'a>,
    /// The job's own cgroup, where it has one (removed after a stop that held).
    cgroup: Option<JobCgroup>,
    /// Every process the checks saw.
    seen: HashSet<ProcessIdentity>,
    /// The members the last check saw, with their states.
    last: Vec<Member>,
    /// Time between SIGTERM and SIGKILL.
    grace: Duration,
}

impl<'a> Taking<'a> {
    /// The job in an engine: paused when every process in `live` is stopped, else running.
    fn new(
        counters: &'a Counters,
        safety: &'a Safety,
        cgroup: Option<JobCgroup>,
        set: &MemberSet,
        file: &JobFile,
        live: &[Member],
        grace: Duration,
    ) -> Self {
        // Every look verifies a request by the members' states: each one reads them all (no
        // light ones, `InlineSampler::allow_light`).
        let mut sampler = InlineSampler::new(counters.clone(), STOP_CHECK);
        sampler.track(set);
        let now_ms = unix_ms(SystemTime::now());
        let paused = live.iter().all(|m| held(m.state));
        let saved = SavedJob {
            identity: file.identity(),
            command: file.command.clone(),
            // Judged by nothing but the request: no budget applies while it is taken over.
            mode: JobMode::Watch,
            started_at_ms: file.started_at_ms,
            swap_budget_bytes: file.swap_budget_bytes,
            kill_free_percent: 0.0,
            swap_start_bytes: file.swap_start_bytes,
            boot_id: String::new(),
            on_budget: file.on_budget,
            pauses: file.pauses,
            paused_since_ms: paused.then(|| file.paused_since_ms.unwrap_or(now_ms)),
            key: None,
            free_start_percent: None,
            in_use_start_bytes: None,
        };
        let spec = JobSpec {
            grace,
            owned: true,
            ..JobSpec::new(
                file.command.clone(),
                JobMode::Watch,
                Limits::default(),
                STOP_CHECK,
            )
        };
        let mut engine = Engine::default();
        let at = Moment {
            at: SystemTime::now(),
            clock: sampler.clock(),
        };
        let job = engine.restore(&saved, set.ids(), spec, at);
        // The live guard's effects, with no outputs: what the request did is said from the
        // checks ([`TakenOver`]), not from the engine's events.
        let mut effects = LiveEffects::new(
            counters,
            safety,
            Outputs::none(),
            Instant::now(),
            None,
            Arc::new(JobView::default()),
        );
        effects.freeze_with(cgroup.clone());
        Taking {
            engine,
            job,
            root_pid: file.pid,
            sampler,
            effects,
            cgroup,
            seen: live.iter().map(|m| m.id).collect(),
            last: live.to_vec(),
            grace,
        }
    }

    /// One check: a complete, fresh look at the job, the engine's decisions carried out.
    fn look(&mut self) {
        std::thread::sleep(self.sampler.until_next());
        let sample = self.sampler.tick();
        if let Some(tracked) = sample.tracked.first() {
            self.last.clone_from(&tracked.members);
            self.seen.extend(tracked.members.iter().map(|m| m.id));
        }
        let at = Moment {
            at: sample.at,
            clock: sample.since_start,
        };
        let stepped =
            crate::drive::step(&mut self.engine, Some(self.job), Input::Sample(sample), at);
        carry_out(&mut self.engine, &mut self.effects, stepped.actions, at);
    }

    /// Looks until `holds` says the request holds, for `patience` at most; true if it did.
    fn until(&mut self, patience: Duration, holds: impl Fn(&Self) -> bool) -> bool {
        let end = self.sampler.clock() + patience;
        loop {
            self.look();
            if holds(self) {
                return true;
            }
            if self.sampler.clock() >= end || self.engine.verdict(self.job).is_some() {
                return false;
            }
        }
    }

    /// Asks for `control` now, as any driver does: a request into [`crate::drive::step`],
    /// the answer on its reply.
    fn request(&mut self, control: Control) -> Result<(), String> {
        let at = Moment {
            at: SystemTime::now(),
            clock: self.sampler.clock(),
        };
        let (reply, answer) = mpsc::sync_channel(1);
        let input = Input::Request {
            peer: 0,
            control,
            pid: self.root_pid,
            reply,
        };
        let stepped = crate::drive::step(&mut self.engine, Some(self.job), input, at);
        carry_out(&mut self.engine, &mut self.effects, stepped.actions, at);
        answer
            .try_recv()
            .unwrap_or_else(|_| Err("the request was not answered".to_string()))
    }

    /// Carries out `control` and looks until it holds or clearly cannot; true if it holds.
    fn carry(&mut self, control: Control) -> Result<bool, String> {
        let settle = PAUSE_SETTLE + STOP_CHECK * 4;
        match control {
            Control::Pause | Control::Yield => {
                self.request(Control::Pause)?;
                Ok(self.until(settle, Self::paused))
            }
            Control::Resume => {
                self.request(Control::Resume)?;
                Ok(self.until(settle, |t| !t.last.iter().any(|m| held(m.state))))
            }
            Control::Stop => {
                // Held still first: nothing stopped forks, nothing forked escapes.
                if !self.engine.is_paused(self.job) && self.request(Control::Pause).is_ok() {
                    self.until(settle, |t| t.paused() || !t.engine.is_paused(t.job));
                }
                self.request(Control::Stop)?;
                let patience = self.grace + KILL_WAIT + STOP_CHECK * 20;
                self.until(patience, |t| t.engine.verdict(t.job).is_some());
                // Done once no process is left: stopped, or ended on its own meanwhile.
                Ok(self
                    .engine
                    .verdict(self.job)
                    .is_some_and(|v| !matches!(v.ended, EndReason::NotStopped { .. })))
            }
        }
    }

    /// Paused, and every process the last check saw is stopped.
    fn paused(&self) -> bool {
        self.engine.is_paused(self.job) && self.last.iter().all(|m| held(m.state))
    }

    /// Whom the request did not hold for, and why (see [`TakenOver::survivors`]).
    fn survivors(&self, control: Control, done: bool) -> Vec<Survivor> {
        if done {
            return Vec::new();
        }
        if let Some(EndReason::NotStopped { survivors, .. }) =
            self.engine.verdict(self.job).map(|v| &v.ended)
        {
            return survivors.clone();
        }
        let refused = self
            .engine
            .view(self.job)
            .map(|v| v.refused)
            .unwrap_or_default();
        let (left, what) = match control {
            Control::Resume => (true, "still stopped"),
            Control::Pause | Control::Yield => (false, "runs (not stopped, or continued)"),
            Control::Stop => (false, "still alive"),
        };
        self.last
            .iter()
            .filter(|m| control == Control::Stop || held(m.state) == left)
            .map(|m| Survivor {
                pid: m.id.pid,
                why: refused
                    .iter()
                    .find(|(pid, _)| *pid == m.id.pid)
                    .map_or_else(|| what.to_string(), |(_, why)| why.clone()),
            })
            .collect()
    }

    /// What it all did; the job file written with what is true now, and after a stop that
    /// held, the job's cgroup removed.
    fn finish(self, jobs_dir: &Path, file: &JobFile, control: Control, done: bool) -> TakenOver {
        let survivors = self.survivors(control, done);
        let stopped = done && control == Control::Stop;
        let cgroup_left = self
            .cgroup
            .as_ref()
            .filter(|_| stopped)
            .and_then(remove_cgroup);
        let view = self.engine.view(self.job).unwrap_or_default();
        let now_ms = unix_ms(SystemTime::now());
        let paused = !self.last.is_empty() && self.last.iter().all(|m| held(m.state));
        let mut updated = JobFile {
            updated_at_ms: now_ms,
            state: match (stopped, paused) {
                (true, _) => JobStatus::Stopped,
                (false, true) => JobStatus::Paused,
                (false, false) => JobStatus::Running,
            },
            members: self
                .last
                .iter()
                .filter(|_| !stopped)
                .map(|m| m.id)
                .take(MAX_LISTED_MEMBERS)
                .collect(),
            pauses: view.pauses.max(file.pauses),
            paused_since_ms: (paused && !stopped).then(|| {
                view.paused_since_ms
                    .or(file.paused_since_ms)
                    .unwrap_or(now_ms)
            }),
            resumed_at_ms: view.resumed_at_ms.or(file.resumed_at_ms),
            yields: false,
            ..file.clone()
        };
        if stopped && cgroup_left.is_none() {
            updated.cgroup = None;
        }
        let file_error = updated.write_atomic(jobs_dir).err().map(|e| e.to_string());
        TakenOver {
            done,
            processes: self.seen.len(),
            survivors,
            file_error,
            cgroup_left,
        }
    }
}

/// Removes the cgroup of a job stopped whole (its guard would have); why not, if it could
/// not.
fn remove_cgroup(cgroup: &JobCgroup) -> Option<String> {
    #[cfg(target_os = "linux")]
    if !headroom_os::unix::cgroup::remove(cgroup, headroom_os::unix::cgroup::REMOVE_WAIT) {
        return Some(format!("cannot remove its cgroup {}", cgroup.path));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cgroup;
    None
}

/// A process that runs none of its code: stopped (frozen), or on its way out.
fn held(state: RunState) -> bool {
    matches!(state, RunState::Stopped | RunState::Exiting)
}
