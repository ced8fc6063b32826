//! The engine: every job of one process (the app's, or the one job of a CLI run), and the
//! requests on them (add, pause, resume, stop, mark, samples, ends, what signals did), each
//! answered with the [`Action`]s to carry out; plus the views and records the UI, the sinks
//! and the store read. The engine alone decides whether a request makes sense now.

use std::time::{Duration, SystemTime};

use super::job::{Around, Calm, Job, Phase};
use super::phase::PausePhase;
use super::records::{FinishedJob, FinishedRun, RunStart, SavedJob};
use super::{Action, JobMode, JobSpec, JobStatus, JobView, Moment, StartMemory};
use crate::policy::order::{Peer, PeerAt};
use crate::policy::quiet::Quiet;
use crate::policy::share::OtherJob;
use crate::policy::{EndReason, JobEvent, Limits, StopReason, Verdict};
use crate::sample::Sample;
use headroom_model::effects::{Control, JobSignal, SignalReport, StopReport};
use headroom_model::members::{JobIds, Member};
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;

/// Every job of one process (the app's, or the one job of a CLI run).
#[derive(Debug, Default)]
pub struct Engine {
    next_id: u64,
    jobs: Vec<Job>,
    /// Pausable jobs of other guards on this machine (the pause order's view of them).
    peers: Vec<Peer>,
    /// Other guards' running jobs and their footprints (what a job's share of memory in
    /// use is weighed against, [`crate::policy::share`]).
    other_jobs: Vec<OtherJob>,
}

/// Why a request on a job was not carried out (said to whoever asked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// No such job.
    #[error("no such job")]
    NoJob,
    /// The job ended.
    #[error("the job of pid {0} has ended")]
    Ended(u32),
    /// Resume, but it is not paused.
    #[error("the job of pid {0} is not paused")]
    NotPaused(u32),
    /// Pause, but it is paused already.
    #[error("the job of pid {0} is already paused")]
    AlreadyPaused(u32),
    /// A stop is under way.
    #[error("the job of pid {0} is being stopped")]
    Stopping(u32),
    /// Asked to make room, but it does not pause for others now.
    #[error("the job of pid {0} does not pause to make room: {1}")]
    WontYield(u32, &'static str),
}

impl Engine {
    /// Adds the job `ids` names, started from `start` (read by the caller before the job
    /// ran: a job that ends before its first sample still knows what it started with, and its
    /// need counts from there) at `at` (the caller's clocks; the engine reads none); returns
    /// its id. A process that already has a running
    /// job keeps it: watch never weakens a guard (its budget stays), guard turns a watch into
    /// a guard with the new budget.
    pub fn add(&mut self, ids: JobIds, spec: JobSpec, start: StartMemory, at: Moment) -> u64 {
        let root = ids.root;
        if let Some(existing) = self.jobs.iter_mut().find(|j| j.root == root && j.live()) {
            if spec.mode == JobMode::Guard {
                existing.spec.mode = JobMode::Guard;
                existing.spec.limits = spec.limits;
            }
            return existing.id;
        }
        self.next_id += 1;
        self.jobs.push(Job::new(self.next_id, ids, spec, start, at));
        self.next_id
    }

    fn job_mut(&mut self, id: u64) -> Option<&mut Job> {
        self.jobs.iter_mut().find(|j| j.id == id)
    }

    fn job(&self, id: u64) -> Option<&Job> {
        self.jobs.iter().find(|j| j.id == id)
    }

    /// Carries out `control` on job `id` at `at` if it makes sense now (pause a running job,
    /// resume a paused one, stop one that runs or is paused), else says why not. The answer
    /// to `headroom pause|resume|stop`, the app's buttons and a notification's.
    pub fn request(
        &mut self,
        id: u64,
        control: Control,
        at: Moment,
    ) -> Result<Vec<Action>, RequestError> {
        let job = self.job_mut(id).ok_or(RequestError::NoJob)?;
        let pid = job.root.pid;
        job.saw(at);
        let mut actions = Vec::new();
        match (control, &job.phase) {
            (_, Phase::Ended) => return Err(RequestError::Ended(pid)),
            (_, Phase::Stopping(_)) => return Err(RequestError::Stopping(pid)),
            (Control::Pause, Phase::Paused(_)) => return Err(RequestError::AlreadyPaused(pid)),
            (Control::Resume, Phase::Running) => return Err(RequestError::NotPaused(pid)),
            (Control::Pause, Phase::Running) => job.pause(None, &mut actions),
            (Control::Resume, Phase::Paused(_)) => job.resume(None, &mut actions),
            (Control::Stop, _) => job.stop(StopReason::Requested, None, &mut actions),
            (Control::Yield, _) => return self.make_room(id, None, at),
        }
        Ok(actions)
    }

    /// An older guarded job (its guard or leader `for_pid`) asks job `id` to pause in its
    /// place ([`crate::policy::order`]): a running guard that pauses at its budget and has
    /// pauses left does (its pause, verified and counted like any); one already paused
    /// answers done; any other says why not.
    pub fn make_room(
        &mut self,
        id: u64,
        for_pid: Option<u32>,
        at: Moment,
    ) -> Result<Vec<Action>, RequestError> {
        let job = self.job_mut(id).ok_or(RequestError::NoJob)?;
        let pid = job.root.pid;
        job.saw(at);
        let mut actions = Vec::new();
        match &job.phase {
            Phase::Ended => return Err(RequestError::Ended(pid)),
            Phase::Stopping(_) => return Err(RequestError::Stopping(pid)),
            Phase::Paused(_) => {}
            Phase::Running if job.yields() => {
                job.pause(Some(StopReason::MakesRoom { for_pid }), &mut actions);
            }
            Phase::Running => {
                let why = if job.spec.mode != JobMode::Guard
                    || job.spec.limits.on_budget != crate::policy::OnBudget::Pause
                {
                    "it is not guarded with --on-budget pause"
                } else {
                    "it has no pauses left"
                };
                return Err(RequestError::WontYield(pid, why));
            }
        }
        Ok(actions)
    }

    /// What asking another guard's job to make room ([`Action::MakeRoom`]) for job `id`
    /// gave, at `at`: paused, so job `id` goes on with its budget counted again from now; or
    /// refused (`Err(why)`), so that job is not asked again and the next check answers the
    /// crossing anew (the next youngest, or this job itself).
    pub fn room_made(
        &mut self,
        id: u64,
        peer: &Peer,
        result: Result<(), String>,
        at: Moment,
    ) -> Vec<Action> {
        let mut actions = Vec::new();
        let Some(job) = self.job_mut(id) else {
            return actions;
        };
        job.saw(at);
        let Some(reason) = job.making_room.take() else {
            return actions;
        };
        match result {
            Ok(()) if matches!(job.phase, Phase::Running) => {
                job.made_room(reason, peer.pid, true, &mut actions);
            }
            Ok(()) => {}
            Err(why) => {
                tracing::debug!("pid {} does not make room: {why}", peer.pid);
                job.declined.push(peer.at);
            }
        }
        actions
    }

    /// The pausable jobs of other guards on this machine, as last listed (the pause order
    /// weighs them with this engine's own jobs).
    pub fn set_peers(&mut self, peers: Vec<Peer>) {
        self.peers = peers;
    }

    /// Other guards' running jobs and their footprints now, as their job files say: where
    /// memory is counted by pages (macOS), a job's share of the machine's rise is weighed
    /// against their growth and this engine's other jobs' ([`crate::policy::share`]).
    pub fn set_other_jobs(&mut self, others: Vec<OtherJob>) {
        self.other_jobs = others;
    }

    /// The jobs beside `me` as a sample finds them: this engine's other tracked jobs, then
    /// other guards' (one of this engine's own listed there too counts once).
    fn others_of(&self, sample: &Sample, me: ProcessIdentity) -> Vec<OtherJob> {
        let here = sample.tracked.iter().filter_map(|t| {
            let footprint_bytes = t.memory?.footprint_bytes;
            (t.identity != me).then_some(OtherJob {
                leader: t.identity,
                footprint_bytes,
                read_at_ms: unix_ms(sample.at),
            })
        });
        let away = self
            .other_jobs
            .iter()
            .filter(|o| o.leader != me && !sample.tracked.iter().any(|t| t.identity == o.leader))
            .copied();
        here.chain(away).collect()
    }

    /// The driver itself was interrupted by `signal` at `at`: a job Headroom started is
    /// stopped (SIGKILL at once on a second interrupt); a picked process is let go, continued
    /// first if it was paused.
    pub fn interrupt(&mut self, id: u64, signal: i32, second: bool, at: Moment) -> Vec<Action> {
        let mut actions = Vec::new();
        let Some(job) = self.job_mut(id) else {
            return actions;
        };
        job.saw(at);
        let ended = EndReason::Interrupted { signal };
        match (&job.phase, job.spec.owned) {
            (Phase::Ended, _) => {}
            (Phase::Stopping(_), _) => {
                if second {
                    job.escalate();
                }
            }
            (_, true) => {
                job.stop(StopReason::Requested, Some(ended), &mut actions);
                if second {
                    job.escalate();
                }
            }
            (Phase::Paused(_), false) => {
                job.resume(None, &mut actions);
                actions.retain(|a| matches!(a, Action::Signal { .. }));
                job.finish(ended, &mut actions);
            }
            (Phase::Running, false) => job.finish(ended, &mut actions),
        }
        actions
    }

    /// A key of the terminal for job `id` at `at` (Ctrl-C: [`JobSignal::Interrupt`], Ctrl-\:
    /// [`JobSignal::Quit`]; `signal` its number), once the driver holds the terminal for the
    /// job (its leader has exited): sent on to every member of a running job, as a terminal
    /// sends it to its foreground job; on a job paused or being stopped it is the driver's
    /// interrupt ([`Engine::interrupt`]: a stop, SIGKILL at once on the next).
    pub fn key(&mut self, id: u64, key: JobSignal, signal: i32, at: Moment) -> Vec<Action> {
        let Some(job) = self.job_mut(id) else {
            return Vec::new();
        };
        job.saw(at);
        match job.phase {
            Phase::Running => {
                let members = job.seen.iter().map(|m| m.id).collect();
                vec![Action::Signal {
                    job_id: id,
                    signal: key,
                    members,
                }]
            }
            Phase::Paused(_) => self.interrupt(id, signal, false, at),
            Phase::Stopping(_) => self.interrupt(id, signal, true, at),
            Phase::Ended => Vec::new(),
        }
    }

    /// What carrying out a [`Action::Signal`] of job `id` did, at `at`; returns what follows
    /// (a warning for members the safety rules refused).
    pub fn signalled(
        &mut self,
        id: u64,
        signal: JobSignal,
        report: &SignalReport,
        at: Moment,
    ) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.job_mut(id) {
            job.saw(at);
            job.signalled(signal, report, &mut actions);
        }
        actions
    }

    /// The status of job `id`.
    pub fn status(&self, id: u64) -> Option<JobStatus> {
        self.job(id).map(Job::status)
    }

    /// True while job `id` is paused.
    pub fn is_paused(&self, id: u64) -> bool {
        self.status(id) == Some(JobStatus::Paused)
    }

    /// A process of job `id` marked the start of `stage` at `since_start` on the sampler's
    /// clock; returns the stage event (nothing once the job ended).
    pub fn mark(&mut self, id: u64, stage: &str, since_start: Duration) -> Vec<Action> {
        let Some(job) = self.running_mut(id) else {
            return Vec::new();
        };
        let since = *job.started_since.get_or_insert(since_start);
        let t = since_start.saturating_sub(since);
        if !job.stages.mark(stage, t.as_secs_f64()) {
            return Vec::new();
        }
        vec![job.notify(JobEvent::Stage {
            stage: stage.to_string(),
        })]
    }

    /// Job `id` ends the stage it is in (`since_start` as for [`Engine::mark`]); returns
    /// its event, for the outputs (nothing when no stage was under way, or the job ended).
    pub fn end_stage(&mut self, id: u64, since_start: Duration) -> Vec<Action> {
        let Some(job) = self.running_mut(id) else {
            return Vec::new();
        };
        let since = *job.started_since.get_or_insert(since_start);
        let t = since_start.saturating_sub(since);
        let Some(stage) = job.stages.end(t.as_secs_f64()).map(str::to_string) else {
            return Vec::new();
        };
        vec![job.notify(JobEvent::StageEnded { stage })]
    }

    /// Job `id` reports a load, release or mark (its stage, when it names none, is the
    /// current one); returns its event, for the trace (nothing once the job ended). The
    /// engine decides nothing on it.
    pub fn report(&mut self, id: u64, mut event: crate::stages::Reported) -> Vec<Action> {
        let Some(job) = self.running_mut(id) else {
            return Vec::new();
        };
        if event.stage.is_none() {
            event.stage = job.stages.current().map(|s| s.stage.clone());
        }
        vec![job.notify(JobEvent::Reported { report: event })]
    }

    /// Job `id`, while it runs.
    fn running_mut(&mut self, id: u64) -> Option<&mut Job> {
        self.jobs
            .iter_mut()
            .find(|j| j.id == id && matches!(j.phase, Phase::Running))
    }

    /// The running job whose members, as the last sample found them, include `pid` (for a
    /// mark from that process).
    pub fn job_of(&self, pid: u32) -> Option<u64> {
        self.jobs
            .iter()
            .filter(|j| matches!(j.phase, Phase::Running))
            .find(|j| j.seen.iter().any(|m| m.id.pid == pid))
            .map(|j| j.id)
    }

    /// A complete, fresh look at running job `id`'s members, taken outside a sample (the
    /// app's socket, for a sender born since the last one): [`Engine::job_of`] knows them
    /// from now on, as it would after the next sample.
    pub fn looked(&mut self, id: u64, members: Vec<Member>) {
        if let Some(job) = self.running_mut(id) {
            job.ever.extend(members.iter().map(|m| m.id));
            job.seen = members;
        }
    }

    /// The job not yet ended whose root is `pid` (the app's socket, `headroom pause PID`).
    pub fn job_with_root(&self, pid: u32) -> Option<u64> {
        self.jobs
            .iter()
            .find(|j| j.root.pid == pid && j.active())
            .map(|j| j.id)
    }

    /// Removes a job (Unwatch, Unguard); never stops its processes. Returns its root.
    /// Refused while it is paused: a paused job is never let go (resume or stop it first).
    pub fn remove(&mut self, id: u64) -> Result<ProcessIdentity, RequestError> {
        let index = self
            .jobs
            .iter()
            .position(|j| j.id == id)
            .ok_or(RequestError::NoJob)?;
        if let Phase::Paused(_) = self.jobs[index].phase {
            return Err(RequestError::AlreadyPaused(self.jobs[index].root.pid));
        }
        Ok(self.jobs.remove(index).root)
    }

    /// The roots of the jobs not yet ended: the jobs whoever samples is to track.
    pub fn tracked(&self) -> Vec<ProcessIdentity> {
        self.jobs
            .iter()
            .filter(|j| j.active())
            .map(|j| j.root)
            .collect()
    }

    /// The interval the sampler should tick at for these jobs: the shortest check any job
    /// not yet ended wants (faster near a budget, and while a stop is verified), or `None`
    /// without such jobs.
    pub fn check_interval(&self) -> Option<Duration> {
        self.jobs.iter().filter_map(Job::next_check).min()
    }

    /// Whether job `id`'s next check may be a light one: it runs (a pause or a stop under
    /// way is verified by full looks) and is far from its limits (see
    /// [`crate::policy::light_check_ok`]).
    pub fn light_ok(&self, id: u64) -> bool {
        self.job(id)
            .is_some_and(|j| matches!(j.phase, Phase::Running) && j.light_ok)
    }

    /// Whether the readings after job `id`'s last check may be quiet ones, held by the
    /// driver and judged later with the next one that moves ([`crate::policy::quiet`]): what
    /// that check read, while the job runs far from its limits and its rules wait for no
    /// time to pass.
    pub fn quiet(&self, id: u64) -> Option<Quiet> {
        self.job(id)
            .filter(|j| matches!(j.phase, Phase::Running))
            .and_then(|j| j.quiet)
    }

    /// For a driver that takes looks aimed at the crossing between regular checks (a
    /// guard's: `headroom guard`, `watch`): the interval to the next look, and whether it is
    /// an aimed one (its sample is to say so, [`crate::sample::Sample::aimed`]).
    pub fn next_look(&self) -> Option<(Duration, bool)> {
        self.jobs.iter().filter_map(Job::next_look).min()
    }

    /// Feeds one sample; returns what to do.
    pub fn on_sample(&mut self, sample: &Sample) -> Vec<Action> {
        let mut actions = Vec::new();
        let here: Vec<Peer> = self.jobs.iter().filter_map(Job::as_peer).collect();
        let by_pages = sample
            .system
            .as_ref()
            .is_some_and(|s| s.in_use_bytes.is_some());
        let others: Vec<Vec<OtherJob>> = self
            .jobs
            .iter()
            .map(|j| {
                if by_pages && j.active() {
                    self.others_of(sample, j.root)
                } else {
                    Vec::new()
                }
            })
            .collect();
        for (job, others) in self.jobs.iter_mut().zip(&others) {
            if !job.active() {
                continue;
            }
            let me = PeerAt::Job { id: job.id };
            let peers: Vec<Peer> = here
                .iter()
                .filter(|p| p.at != me)
                .chain(&self.peers)
                .cloned()
                .collect();
            let around = Around {
                peers: &peers,
                others,
            };
            job.observe(sample, around, &mut actions);
        }
        self.make_room_here(
            actions,
            Moment {
                at: sample.at,
                clock: sample.since_start,
            },
        )
    }

    /// Carries out the asks to make room among this engine's own jobs (the app's); the asks
    /// to other guards stay actions for the caller.
    fn make_room_here(&mut self, actions: Vec<Action>, at: Moment) -> Vec<Action> {
        let mut out = Vec::with_capacity(actions.len());
        for action in actions {
            let Action::MakeRoom { job_id, peer } = &action else {
                out.push(action);
                continue;
            };
            let PeerAt::Job { id } = peer.at else {
                out.push(action);
                continue;
            };
            let asker = self.job(*job_id).map(|j| j.root.pid);
            let (job_id, peer) = (*job_id, peer.clone());
            let answer = self.make_room(id, asker, at);
            let result = match answer {
                Ok(paused) => {
                    out.extend(paused);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            };
            out.extend(self.room_made(job_id, &peer, result, at));
        }
        out
    }

    /// Records how job `id`'s leader ended (the exit status of a command we started); the
    /// job itself ends when its last member does.
    pub fn set_exit(&mut self, id: u64, exit: EndReason) {
        if let Some(job) = self.job_mut(id) {
            job.exit = Some(exit);
        }
    }

    /// Ends job `id` with `ended` at `at` whatever its members do (a recorded trace ran
    /// out); returns the verdict.
    pub fn end(&mut self, id: u64, ended: EndReason, at: Moment) -> Vec<Action> {
        let mut actions = Vec::new();
        if let Some(job) = self.job_mut(id).filter(|j| j.active()) {
            job.saw(at);
            job.finish(ended, &mut actions);
        }
        actions
    }

    /// The verdict of job `id`, once it ended.
    pub fn verdict(&self, id: u64) -> Option<&Verdict> {
        self.job(id)?.verdict.as_ref()
    }

    /// What stopping job `id` did, once it was stopped (or tried to be).
    pub fn stop_report(&self, id: u64) -> Option<&StopReport> {
        self.job(id)?.stop_report.as_ref()
    }

    /// Job `id`'s run as the run history records it, once it has ended.
    pub fn finished_run(&self, id: u64) -> Option<FinishedRun> {
        let job = self.job(id)?;
        let finished = FinishedJob {
            identity: job.root,
            command: job.spec.command.clone(),
            mode: job.spec.mode,
            started_at_ms: unix_ms(job.started_at),
            ended_at_ms: unix_ms(job.ended_at?),
            verdict: job.verdict.clone()?,
        };
        Some(FinishedRun {
            job: finished,
            start: self.run_start(id)?,
        })
    }

    /// The key job `id`'s run is recorded under and free memory at its start.
    pub fn run_start(&self, id: u64) -> Option<RunStart> {
        let job = self.job(id)?;
        Some(RunStart {
            key: job.spec.history_key(),
            free_start_percent: job.ledger.free_start_percent(),
            in_use_start_bytes: job.ledger.in_use_start_bytes(),
        })
    }

    /// What to save so the job is taken up again after a restart (in boot `boot_id`).
    pub fn active_record(&self, id: u64, boot_id: &str) -> Option<SavedJob> {
        let job = self.job(id)?;
        Some(SavedJob {
            identity: job.root,
            command: job.spec.command.clone(),
            mode: job.spec.mode,
            started_at_ms: unix_ms(job.started_at),
            swap_budget_bytes: job.spec.limits.swap_budget_bytes,
            kill_free_percent: job.spec.limits.kill_free_percent,
            swap_start_bytes: job.ledger.swap_start_bytes(),
            boot_id: boot_id.to_string(),
            on_budget: job.spec.limits.on_budget,
            pauses: job.pauses.count,
            paused_since_ms: job.pauses.current.map(|(at, _)| unix_ms(at)),
            key: job.spec.key.clone(),
            free_start_percent: job.ledger.free_start_percent(),
            in_use_start_bytes: job.ledger.in_use_start_bytes(),
        })
    }

    /// Takes up a job saved before a restart (its process must still match; see
    /// `Store::restorable_jobs`) at `at`, keeping its start time and swap baseline.
    pub fn restore(&mut self, saved: &SavedJob, ids: JobIds, base: JobSpec, at: Moment) -> u64 {
        let spec = JobSpec {
            command: saved.command.clone(),
            mode: saved.mode,
            limits: Limits {
                swap_budget_bytes: saved.swap_budget_bytes,
                kill_free_percent: saved.kill_free_percent,
                on_budget: saved.on_budget,
                ..base.limits
            },
            key: saved.key.clone(),
            ..base
        };
        let start = StartMemory {
            swap_used_bytes: saved.swap_start_bytes,
            free_percent: saved.free_start_percent,
            in_use_bytes: saved.in_use_start_bytes,
        };
        let id = self.add(ids, spec, start, at);
        if let Some(job) = self.job_mut(id) {
            let at = |ms: i64| {
                std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
            };
            job.started_at = at(saved.started_at_ms);
            job.pauses.count = saved.pauses;
            // Still stopped (SIGSTOP outlives us): taken up as paused, resumed on request,
            // and verified like any pause from the first sample on.
            if let Some(ms) = saved.paused_since_ms {
                job.phase = Phase::Paused(PausePhase::default());
                let calm = Calm {
                    swap_bytes: u64::MAX,
                    since: Duration::ZERO,
                };
                job.pauses.current = Some((at(ms), calm));
            }
        }
        id
    }

    /// Changes the check interval the user set for every job (the app's settings).
    pub fn set_poll(&mut self, poll: Duration) {
        for job in &mut self.jobs {
            job.spec.poll = poll;
            job.check = job.check.min(poll);
        }
    }

    /// The view of job `id`.
    pub fn view(&self, id: u64) -> Option<JobView> {
        self.job(id).map(view)
    }

    /// [`Engine::view`] into `view`, reusing what it holds (a driver's loop, at every
    /// check); false when there is no such job.
    pub fn view_into(&self, id: u64, view: &mut JobView) -> bool {
        self.job(id).map(|j| view_into(j, view)).is_some()
    }

    /// Jobs for the UI, newest first.
    pub fn views(&self) -> Vec<JobView> {
        self.jobs.iter().rev().map(view).collect()
    }

    /// True while any of its jobs takes part in the pause order (a live guard that pauses
    /// at its budget): only then are other guards' jobs worth listing ([`Engine::set_peers`]).
    pub fn in_pause_order(&self) -> bool {
        self.jobs.iter().any(|j| j.as_peer().is_some())
    }

    /// True while any running job's swap is growing (for the tray's colored icon).
    pub fn any_growing(&self) -> bool {
        self.jobs.iter().any(|j| {
            matches!(j.phase, Phase::Running) && j.growth_bytes > j.spec.limits.fits_tolerance_bytes
        })
    }

    /// Drops finished jobs that ended more than `keep` ago.
    pub fn prune(&mut self, now: SystemTime, keep: Duration) {
        self.jobs.retain(|j| {
            j.ended_at
                .is_none_or(|end| now.duration_since(end).unwrap_or_default() < keep)
        });
    }
}

fn view(j: &Job) -> JobView {
    let mut view = JobView::default();
    view_into(j, &mut view);
    view
}

/// The view of `j` into `v`, reusing what `v` holds: no allocation when nothing grew.
fn view_into(j: &Job, v: &mut JobView) {
    v.id = j.id;
    v.pid = j.root.pid;
    v.start_time = j.root.start_time;
    v.command.clone_from(&j.spec.command);
    v.mode = j.spec.mode;
    v.state = j.status();
    v.swap_start_bytes = j.ledger.swap_start_bytes();
    v.free_start_percent = j.ledger.free_start_percent();
    v.in_use_start_bytes = j.ledger.in_use_start_bytes();
    v.swap_growth_bytes = j.growth_bytes;
    v.swap_budget_bytes =
        (j.spec.mode == JobMode::Guard).then_some(j.spec.limits.swap_budget_bytes);
    v.peak_footprint_bytes = j.ledger.peak_footprint_bytes();
    v.footprint_bytes = j.last.and_then(|o| o.footprint_bytes);
    v.taken_bytes = j
        .ledger
        .in_use_taken_bytes()
        .or(j.ledger.peak_footprint_bytes());
    v.verdict.clone_from(&j.verdict);
    v.started_at_ms = unix_ms(j.started_at);
    v.stages.clear();
    v.stages.extend_from_slice(j.stages.stages());
    v.current_stage = j.stages.current().map(|s| s.stage.clone());
    v.on_budget = j.spec.limits.on_budget;
    v.pauses = j.pauses.count;
    v.paused_since_ms = j.pauses.current.map(|(at, _)| unix_ms(at));
    v.resumed_at_ms = j.pauses.resumed_at.map(unix_ms);
    v.resumes_by_itself = j.spec.limits.resume_free_percent.is_some();
    v.yields = j.yields();
    v.members.clear();
    v.members.extend(j.seen.iter().map(|m| m.id));
    v.refused.clear();
    v.refused
        .extend(j.refused.iter().map(|(id, why)| (id.pid, why.clone())));
    if v.cgroup != j.ids.cgroup {
        v.cgroup.clone_from(&j.ids.cgroup); // not at every check: it never changes
    }
}
