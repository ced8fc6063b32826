//! One job's life inside the engine: what it remembers ([`Job`], its pauses), and each step
//! of it (observe a sample, pause, resume, stop, verify, finish), each pushing the
//! [`Action`]s the caller carries out. [`super::jobs`] holds the jobs and routes requests.

use std::time::{Duration, SystemTime};

use super::aim::Looks;
use super::phase::{PauseCheck, PausePhase, RefusedMembers, StopCheck, StopPhase};
use super::{Action, JobMode, JobSpec, JobStatus, Moment, StartMemory, STOP_CHECK};
use crate::policy::order::{self, Me, Peer, PeerAt};
use crate::policy::quiet::Quiet;
use crate::policy::share::{self, OtherJob};
use crate::policy::{
    aim, check_interval, light_check_ok, room_check_interval, EndReason, EventGate, JobEvent,
    Ledger, Observation, OnBudget, StopReason, Verdict, CALM_TOLERANCE_BYTES,
};
use crate::sample::Sample;
use crate::stages::{Reading, StageTracker};
use headroom_model::effects::{JobSignal, SignalReport, StopReport};
use headroom_model::members::{JobIds, Member};
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;

/// Where a job is: what its next checks verify.
#[derive(Debug, Clone)]
pub(super) enum Phase {
    /// Running: its limits apply.
    Running,
    /// Paused: every member must be seen stopped.
    Paused(PausePhase),
    /// Being stopped: every member must be seen gone.
    Stopping(Box<StopPhase>),
    /// Ended, with its verdict.
    Ended,
}

/// What runs around a job as a sample is observed: the pause order's peers, and the other
/// jobs whose footprints its share of memory in use is weighed against.
#[derive(Debug, Clone, Copy)]
pub(super) struct Around<'a> {
    pub(super) peers: &'a [Peer],
    pub(super) others: &'a [OtherJob],
}

/// One job.
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub(super) id: u64,
    pub(super) root: ProcessIdentity,
    /// Who it is, as plain ids: its root and its own cgroup (the processes are followed by
    /// whoever samples them: the engine reads only the samples).
    pub(super) ids: JobIds,
    /// The live members the last sample found (complete and fresh).
    pub(super) seen: Vec<Member>,
    /// How many distinct processes the samples have shown.
    pub(super) ever: std::collections::HashSet<ProcessIdentity>,
    pub(super) spec: JobSpec,
    pub(super) ledger: Ledger,
    pub(super) events: EventGate,
    pub(super) phase: Phase,
    pub(super) verdict: Option<Verdict>,
    pub(super) started_at: SystemTime,
    pub(super) started_since: Option<Duration>,
    pub(super) growth_bytes: u64,
    pub(super) ended_at: Option<SystemTime>,
    /// Wall time of the latest sample or request the job saw (its start before the first):
    /// the job's "now" for pauses, its duration and its end.
    pub(super) seen_at: SystemTime,
    /// The sampler's clock at the latest sample or request: the stop's grace counts on it.
    pub(super) clock: Duration,
    /// How the job's leader ended, once known (the exit status of a command we started).
    pub(super) exit: Option<EndReason>,
    /// The interval between this job's regular checks.
    pub(super) check: Duration,
    /// When its next looks come while it runs: a look aimed at the crossing between two
    /// regular checks (`super::aim`), for a driver that takes them.
    pub(super) looks: Looks,
    /// Its next check may be a light one ([`crate::policy::light_check_ok`]; always for a
    /// watched job, which is stopped at no limit).
    pub(super) light_ok: bool,
    /// The last check let the readings after it be quiet ones, held and judged later
    /// ([`crate::policy::quiet`]): what it read, while the job runs.
    pub(super) quiet: Option<Quiet>,
    /// Its stages, as marked.
    pub(super) stages: StageTracker,
    /// Its pauses so far.
    pub(super) pauses: Pauses,
    /// The latest good observation.
    pub(super) last: Option<Observation>,
    /// Members the safety rules kept a signal from, and why.
    pub(super) refused: RefusedMembers,
    /// What its stop did, once it was stopped.
    pub(super) stop_report: Option<StopReport>,
    /// A crossing waiting for a younger job's answer (asked to pause in this one's place).
    pub(super) making_room: Option<StopReason>,
    /// Younger jobs that refused to pause for it: not asked again.
    pub(super) declined: Vec<PeerAt>,
    /// The other jobs running when its first reading with page counts came (macOS), as its
    /// share of the rise of memory in use is weighed ([`crate::policy::share`]).
    pub(super) others_at_start: Option<Vec<OtherJob>>,
    /// Since when its budget counts (wall clock): its start, last resume or last room made.
    pub(super) budget_since: SystemTime,
    /// An interrupt at its budget under way (`--on-budget interrupt`, `super::interrupt`).
    pub(super) interrupted: Option<Interrupted>,
}

/// An interrupt under way (`super::interrupt`): the calm watch that gives the job its
/// budget back.
#[derive(Debug, Clone, Copy)]
pub(super) struct Interrupted {
    pub(super) calm: Calm,
}

/// The pauses of a job.
#[derive(Debug, Clone, Default)]
pub(super) struct Pauses {
    /// How many.
    pub(super) count: u32,
    /// Paused time of the pauses that ended.
    pub(super) total: Duration,
    /// The pause under way: since when (wall clock), and the calm watch for a resume by
    /// itself.
    pub(super) current: Option<(SystemTime, Calm)>,
    /// When it was last resumed (wall clock).
    pub(super) resumed_at: Option<SystemTime>,
}

/// Whether swap has stopped growing, for a resume by itself.
#[derive(Debug, Clone, Copy)]
pub(super) struct Calm {
    /// Swap in use it is compared against.
    pub(super) swap_bytes: u64,
    /// When swap last grew past the tolerance (job clock).
    pub(super) since: Duration,
}

impl Pauses {
    /// Paused time so far, the pause under way included.
    pub(super) fn total(&self, now: SystemTime) -> Duration {
        let current = self.current.map_or(Duration::ZERO, |(at, _)| {
            now.duration_since(at).unwrap_or_default()
        });
        self.total + current
    }

    /// Ends the pause under way at `now`; returns how long it lasted.
    pub(super) fn end(&mut self, now: SystemTime) -> Duration {
        let Some((since, _)) = self.current.take() else {
            return Duration::ZERO;
        };
        let paused = now.duration_since(since).unwrap_or_default();
        self.total += paused;
        paused
    }
}

impl Job {
    /// A new running job.
    pub(super) fn new(id: u64, ids: JobIds, spec: JobSpec, start: StartMemory, at: Moment) -> Self {
        let root = ids.root;
        let mut ledger = Ledger::new(start.swap_used_bytes);
        ledger.set_free_start_percent(start.free_percent);
        ledger.set_in_use_start_bytes(start.in_use_bytes);
        Job {
            id,
            root,
            ids,
            // Until the first sample, the job is its root.
            seen: vec![Member {
                id: root,
                state: headroom_model::counters::RunState::Running,
            }],
            ever: std::collections::HashSet::from([root]),
            check: spec.poll,
            looks: Looks::default(),
            light_ok: false,
            quiet: None,
            spec,
            ledger,
            events: EventGate::default(),
            phase: Phase::Running,
            verdict: None,
            started_at: at.at,
            seen_at: at.at,
            clock: at.clock,
            started_since: None,
            growth_bytes: 0,
            ended_at: None,
            exit: None,
            stages: StageTracker::new(Some(start.swap_used_bytes)),
            pauses: Pauses::default(),
            last: None,
            refused: RefusedMembers::new(),
            stop_report: None,
            making_room: None,
            declined: Vec::new(),
            others_at_start: None,
            budget_since: at.at,
            interrupted: None,
        }
    }

    /// The job as the pause order sees it ([`crate::policy::order`]): guards that pause at
    /// their budget and are running or paused; `None` for the others.
    pub(super) fn as_peer(&self) -> Option<Peer> {
        let pausing =
            self.spec.mode == JobMode::Guard && self.spec.limits.on_budget == OnBudget::Pause;
        (pausing && self.live()).then(|| Peer {
            at: PeerAt::Job { id: self.id },
            pid: self.root.pid,
            started_at_ms: unix_ms(self.started_at),
            paused_since_ms: self.paused_since().map(unix_ms),
            resumed_at_ms: self.pauses.resumed_at.map(unix_ms),
            resumes_by_itself: self.spec.limits.resume_free_percent.is_some(),
            pausable: self.yields(),
        })
    }

    /// Since when it is paused, while it is.
    pub(super) fn paused_since(&self) -> Option<SystemTime> {
        match self.phase {
            Phase::Paused(_) => self.pauses.current.map(|(at, _)| at),
            _ => None,
        }
    }

    /// An older job may pause it to make room now: a running guard that pauses at its
    /// budget, with pauses left.
    pub(super) fn yields(&self) -> bool {
        self.spec.mode == JobMode::Guard
            && self.spec.limits.on_budget == OnBudget::Pause
            && matches!(self.phase, Phase::Running)
            && self.pauses.count < self.spec.limits.max_pauses
    }

    /// The job in the pause order: its start and pid.
    fn me(&self) -> Me {
        Me {
            started_at_ms: unix_ms(self.started_at),
            pid: self.root.pid,
            budget_since_ms: unix_ms(self.budget_since),
        }
    }

    /// The status the UI shows.
    pub(super) fn status(&self) -> JobStatus {
        match &self.phase {
            Phase::Running => JobStatus::Running,
            Phase::Paused(_) => JobStatus::Paused,
            Phase::Stopping(_) => JobStatus::Stopping,
            Phase::Ended => match self.verdict.as_ref().map(|v| &v.ended) {
                Some(ended) if ended.by_the_guard() => JobStatus::Stopped,
                _ => JobStatus::Finished,
            },
        }
    }

    /// Running or paused: not ended, no stop under way.
    pub(super) fn live(&self) -> bool {
        matches!(self.phase, Phase::Running | Phase::Paused(_))
    }

    /// Not ended yet.
    pub(super) fn active(&self) -> bool {
        !matches!(self.phase, Phase::Ended)
    }

    pub(super) fn notify(&self, event: JobEvent) -> Action {
        Action::Notify {
            job_id: self.id,
            command: self.spec.command.clone(),
            event,
        }
    }

    pub(super) fn signal(&self, signal: JobSignal, members: Vec<ProcessIdentity>) -> Action {
        Action::Signal {
            job_id: self.id,
            signal,
            members,
        }
    }

    /// Moves the job's "now" to `at`, never back.
    pub(super) fn saw(&mut self, at: Moment) {
        self.seen_at = self.seen_at.max(at.at);
        self.clock = self.clock.max(at.clock);
    }

    /// The interval until this job's next check.
    pub(super) fn next_check(&self) -> Option<Duration> {
        match &self.phase {
            Phase::Running => Some(self.check),
            // Checked at once until every member is seen stopped.
            Phase::Paused(pause) if !pause.settled() => Some(STOP_CHECK),
            // Then as often as it was checked when it paused (near its budget, fast): a job
            // continued from outside runs unguarded one such interval at most.
            Phase::Paused(_) => Some(self.check),
            Phase::Stopping(_) => Some(STOP_CHECK),
            Phase::Ended => None,
        }
    }

    /// The interval to this job's next look and whether it is one aimed at the crossing
    /// (`super::aim`), for a driver that takes such looks; else as [`Job::next_check`].
    pub(super) fn next_look(&self) -> Option<(Duration, bool)> {
        match self.phase {
            Phase::Running => Some(self.looks.next_look().unwrap_or((self.check, false))),
            _ => self.next_check().map(|d| (d, false)),
        }
    }

    /// One sample: the members it found (verifying a pause or a stop under way), then the
    /// limits and events of a running job.
    pub(super) fn observe(
        &mut self,
        sample: &Sample,
        around: Around<'_>,
        actions: &mut Vec<Action>,
    ) {
        let peers = around.peers;
        self.saw(Moment {
            at: sample.at,
            clock: sample.since_start,
        });
        // Set again by a running job's rules, when this sample allows it.
        self.quiet = None;
        let tracked = sample.tracked.iter().find(|t| t.identity == self.root);
        if let Some(tracked) = tracked {
            self.seen.clone_from(&tracked.members);
            self.ever.extend(tracked.members.iter().map(|m| m.id));
        }
        let obs = sample.system.as_ref().and_then(|_| {
            let since = *self.started_since.get_or_insert(sample.since_start);
            let mut obs =
                sample.observation(self.root, sample.since_start.saturating_sub(since))?;
            if obs.in_use_bytes.is_some() {
                let at_start = self
                    .others_at_start
                    .get_or_insert_with(|| around.others.to_vec());
                obs.others = share::others_of(at_start, around.others, unix_ms(sample.at));
            }
            Some(obs)
        });
        if let Some(obs) = &obs {
            self.last = Some(*obs);
        }
        if let Phase::Stopping(_) = self.phase {
            if let Some(obs) = &obs {
                self.ledger.observe(None, obs);
                self.record(obs);
            }
            if tracked.is_some() {
                self.check_stop(actions);
            }
            return;
        }
        if tracked.is_some() && self.seen.is_empty() {
            // No member lives any more. (A failed read never gets here: only death does.)
            if let Some(obs) = &obs {
                self.ledger.record_end(obs);
            }
            let ended = self.exit.clone().unwrap_or(EndReason::Vanished);
            self.finish(ended, actions);
            return;
        }
        if tracked.is_some() {
            self.check_pause(actions);
        }
        let Some(obs) = obs else {
            return; // a failed read: the job goes on, judged at the next good sample
        };
        if let Phase::Paused(_) = self.phase {
            self.looks.clear();
            self.observe_paused(&obs, peers, actions);
        } else {
            self.observe_running(&obs, sample.aimed, peers, actions);
        }
    }

    /// A running job's observation: the stop rules, events, the next check interval.
    fn observe_running(
        &mut self,
        obs: &Observation,
        aimed: bool,
        peers: &[Peer],
        actions: &mut Vec<Action>,
    ) {
        let guarded = self.spec.mode == JobMode::Guard;
        // A look aimed at the crossing between two regular checks (`super::aim`).
        let between = guarded && aimed;
        // The rate is measured over the interval that led to this check; it spaces the next
        // one, and the growth is projected to it.
        let window = if guarded { self.check } else { Duration::ZERO };
        self.ledger.record(obs, window);
        let growth = self.ledger.budget_growth_bytes(obs);
        // After an interrupt, the hard limit in place of the budget (`super::interrupt`).
        let mut limits = self.judged_limits(self.spec.limits.clone());
        if guarded && (!between || self.looks.regular_due(obs.t)) {
            self.check = check_interval(
                &limits,
                growth,
                obs.swap_used_bytes,
                self.ledger.rate_bytes_per_second(),
                self.spec.poll,
            )
            .min(room_check_interval(&self.spec.limits, obs, self.spec.poll))
            .max(self.spec.min_check);
            self.looks.regular(obs.t, self.check);
        }
        limits.lookahead = self.check;
        self.light_ok = !guarded || light_check_ok(&limits, obs);
        let stop = match (guarded, between) {
            (false, _) => None,
            (true, false) => self.ledger.judge(&limits, obs),
            (true, true) => self.ledger.judge_between(&limits, obs),
        };
        let aim_at = (guarded && stop.is_none())
            .then(|| {
                aim(
                    &limits,
                    growth,
                    obs.swap_used_bytes,
                    self.ledger.rate_bytes_per_second(),
                    self.looks.until_regular(obs.t, self.check),
                )
            })
            .flatten();
        self.looks.next(obs.t, aim_at, self.check);
        self.record(obs);
        let total = self.ledger.growth_bytes(obs);
        for event in self.events.observe(&limits, guarded, (total, growth), obs) {
            // A warning "will be stopped at the budget" is stale when it is stopped now.
            if stop.is_some() && matches!(event, JobEvent::Warning { .. }) {
                continue;
            }
            actions.push(self.notify(event));
        }
        // Quiet readings may follow only where nothing in the rules moves with time alone
        // (`crate::policy::quiet`); on macOS the rise of memory in use is judged over a
        // window of time too, so none are quiet there.
        let calm = self.light_ok
            && stop.is_none()
            && aim_at.is_none()
            && self.interrupted.is_none()
            && self.making_room.is_none()
            && obs.limit_bytes.is_none()
            && obs.in_use_bytes.is_none()
            && !self.events.growth_event_waits(&limits, total);
        self.quiet = calm.then(|| Quiet::around(obs));
        match stop {
            Some(reason) if self.interrupts(&reason) => self.interrupt(reason, obs, actions),
            Some(reason) if self.yields() => self.answer_crossing(reason, peers, actions),
            Some(reason) => self.stop(reason, None, actions),
            None => self.watch_calm(obs, actions),
        }
    }

    /// A crossing of a job that pauses at its budget: the youngest running job pauses
    /// ([`crate::policy::order`]): a younger one paused a moment ago answers it, else the
    /// youngest younger one is asked, else this one pauses.
    fn answer_crossing(&mut self, reason: StopReason, peers: &[Peer], actions: &mut Vec<Action>) {
        if self.making_room.is_some() {
            return; // an ask is out: its answer decides
        }
        let now_ms = unix_ms(self.seen_at);
        match order::answer_crossing(self.me(), now_ms, peers, &self.declined) {
            order::Answer::Answered(younger) => self.made_room(reason, younger.pid, false, actions),
            order::Answer::Ask(younger) => {
                self.making_room = Some(reason);
                actions.push(Action::MakeRoom {
                    job_id: self.id,
                    peer: younger.clone(),
                });
            }
            order::Answer::PauseSelf => self.pause(Some(reason), actions),
        }
    }

    /// A younger job was paused in this one's place (`asked`: at its request): it goes on,
    /// its budget counting again from swap in use now.
    pub(super) fn made_room(
        &mut self,
        reason: StopReason,
        younger_pid: u32,
        asked: bool,
        actions: &mut Vec<Action>,
    ) {
        let swap = self
            .last
            .map_or(self.ledger.swap_start_bytes(), |o| o.swap_used_bytes);
        self.ledger.rebase(swap);
        self.events.rearm();
        self.budget_since = self.seen_at;
        actions.push(self.notify(JobEvent::MadeRoom {
            reason,
            younger_pid,
            asked,
            swap_used_bytes: swap,
        }));
    }

    /// A paused job's observation: figures for the verdict (no stop rule: it is not
    /// running), and a resume by itself once free memory is back and swap has stopped
    /// growing.
    fn observe_paused(&mut self, obs: &Observation, peers: &[Peer], actions: &mut Vec<Action>) {
        self.ledger.observe(None, obs);
        self.record(obs);
        let Some((_, calm)) = self.pauses.current.as_mut() else {
            return;
        };
        // (u64::MAX: restored after a restart, nothing to compare with yet.)
        let grew = obs.swap_used_bytes > calm.swap_bytes.saturating_add(CALM_TOLERANCE_BYTES);
        if calm.swap_bytes == u64::MAX || grew {
            *calm = Calm {
                swap_bytes: obs.swap_used_bytes,
                since: obs.t,
            };
        } else {
            calm.swap_bytes = calm.swap_bytes.min(obs.swap_used_bytes);
        }
        let calm_for = obs.t.saturating_sub(calm.since);
        let limits = &self.spec.limits;
        if let Some(free) = limits.resume_free_percent {
            let in_turn =
                || order::may_resume(self.me(), unix_ms(self.seen_at), limits.resume_calm, peers);
            if obs.free_percent >= free && calm_for >= limits.resume_calm && in_turn() {
                self.resume(Some(obs.free_percent), actions);
            }
        }
    }

    /// Verifies a pause under way against the members just seen: pauses members the pause
    /// has not reached; a member that runs again makes the job run again.
    fn check_pause(&mut self, actions: &mut Vec<Action>) {
        let clock = self.clock;
        let Phase::Paused(pause) = &mut self.phase else {
            return;
        };
        match pause.check(&self.seen, &self.refused, clock) {
            PauseCheck::Holds => {}
            PauseCheck::Pause(members) => actions.push(self.signal(JobSignal::Pause, members)),
            PauseCheck::RunsAgain { pids, continued } => {
                self.pauses.end(self.seen_at);
                self.phase = Phase::Running;
                self.check = self.spec.poll.min(self.check);
                actions.push(self.notify(JobEvent::RunsAgain { pids, continued }));
            }
        }
    }

    /// Verifies a stop under way against the members just seen: signals what is left, and
    /// ends the job once none is (or once it is clear that some cannot be stopped).
    fn check_stop(&mut self, actions: &mut Vec<Action>) {
        let (clock, grace) = (self.clock, self.spec.grace);
        let Phase::Stopping(stop) = &mut self.phase else {
            return;
        };
        match stop.check(&self.seen, &self.refused, grace, clock) {
            StopCheck::Wait => {}
            StopCheck::Signal(signal, members) => actions.push(self.signal(signal, members)),
            StopCheck::Done => {
                let ended = if !stop.report.signalled() {
                    // It ended on its own before any signal reached it: its own end.
                    self.exit.clone().unwrap_or(EndReason::Vanished)
                } else {
                    stop.ends_as.clone().unwrap_or(EndReason::Stopped {
                        reason: stop.reason.clone(),
                    })
                };
                self.finish(ended, actions);
            }
            StopCheck::Failed(survivors) => {
                let ended = EndReason::NotStopped {
                    reason: stop.reason.clone(),
                    survivors,
                };
                self.finish(ended, actions);
            }
        }
    }

    /// What carrying out a signal did: refusals are said at once; what a stop's or a
    /// pause's signals reached is recorded for their verification.
    pub(super) fn signalled(
        &mut self,
        signal: JobSignal,
        report: &SignalReport,
        actions: &mut Vec<Action>,
    ) {
        let fresh: Vec<(u32, String)> = report
            .refused
            .iter()
            .filter(|r| self.refused.insert(r.id, r.why.clone()).is_none())
            .map(|r| (r.id.pid, r.why.clone()))
            .collect();
        if !fresh.is_empty() {
            actions.push(self.notify(JobEvent::Refused {
                action: signal.verb().to_string(),
                members: fresh,
            }));
        }
        match &mut self.phase {
            Phase::Stopping(stop) => stop.reached(signal, &report.reached),
            Phase::Paused(pause) if signal == JobSignal::Pause => {
                pause.sent(&report.reached, self.clock);
            }
            _ => {}
        }
    }

    /// Records `obs` in the stage figures and the peak growth (after the policy saw it).
    pub(super) fn record(&mut self, obs: &Observation) {
        self.stages.observe(&Reading {
            t_seconds: obs.t.as_secs_f64(),
            swap_used_bytes: obs.swap_used_bytes,
            footprint_bytes: obs.footprint_bytes,
            free_percent: obs.free_percent,
        });
        self.growth_bytes = self.ledger.peak_growth_bytes();
    }

    /// Pauses the job: on a crossing (`reason`), or on request.
    pub(super) fn pause(&mut self, reason: Option<StopReason>, actions: &mut Vec<Action>) {
        let t = self.last.map_or(Duration::ZERO, |o| o.t);
        let swap = self
            .last
            .map_or(self.ledger.swap_start_bytes(), |o| o.swap_used_bytes);
        self.pauses.count += 1;
        let calm = Calm {
            swap_bytes: swap,
            since: t,
        };
        self.pauses.current = Some((self.seen_at, calm));
        self.phase = Phase::Paused(PausePhase::default());
        actions.push(self.notify(JobEvent::Paused {
            reason,
            growth_bytes: self.growth_bytes,
            pause: self.pauses.count,
            max_pauses: self.spec.limits.max_pauses.max(self.pauses.count),
        }));
        let members = self.seen_ids();
        actions.push(self.signal(JobSignal::Pause, members));
    }

    /// Continues the paused job with a new budget from swap in use now; `free_percent` when
    /// free memory brought it back by itself.
    pub(super) fn resume(&mut self, free_percent: Option<f64>, actions: &mut Vec<Action>) {
        let paused = self.pauses.end(self.seen_at);
        self.pauses.resumed_at = Some(self.seen_at);
        self.budget_since = self.seen_at;
        let swap = self
            .last
            .map_or(self.ledger.swap_start_bytes(), |o| o.swap_used_bytes);
        self.ledger.rebase(swap);
        self.events.rearm();
        self.phase = Phase::Running;
        // A resume comes without a sample: the readings before the pause are no band.
        self.quiet = None;
        self.check = self.spec.poll.min(self.check);
        actions.push(self.notify(JobEvent::Resumed {
            free_percent,
            paused,
            swap_used_bytes: swap,
        }));
        let members = self.seen_ids();
        actions.push(self.signal(JobSignal::Resume, members));
    }

    /// Starts stopping the job: SIGTERM to every member now; the next checks verify it.
    /// `ends_as`: how it ends once stopped, when not "stopped by the guard" (an interrupted
    /// driver).
    pub(super) fn stop(
        &mut self,
        reason: StopReason,
        ends_as: Option<EndReason>,
        actions: &mut Vec<Action>,
    ) {
        self.pauses.end(self.seen_at);
        let quiet = ends_as.is_some();
        let mut stop = StopPhase::new(reason.clone(), ends_as, self.clock);
        let members = stop.first(&self.seen);
        self.phase = Phase::Stopping(Box::new(stop));
        if !quiet {
            actions.push(self.notify(JobEvent::Stopped { reason }));
        }
        if !members.is_empty() {
            actions.push(self.signal(JobSignal::Terminate, members));
        }
    }

    /// A second interrupt while stopping: SIGKILL at the next check.
    pub(super) fn escalate(&mut self) {
        if let Phase::Stopping(stop) = &mut self.phase {
            stop.escalate = true;
        }
    }

    /// The ids of the members the last sample found.
    fn seen_ids(&self) -> Vec<ProcessIdentity> {
        self.seen.iter().map(|m| m.id).collect()
    }

    /// Ends the job with `ended`: the verdict, and what its stop did.
    pub(super) fn finish(&mut self, ended: EndReason, actions: &mut Vec<Action>) {
        if let Phase::Stopping(stop) = &self.phase {
            let mut report = stop.report.clone();
            report.refused = self
                .refused
                .iter()
                .map(|(id, why)| (id.pid, why.clone()))
                .collect();
            report.refused.sort();
            report.survivors = self.seen.iter().map(|m| m.id.pid).collect();
            self.stop_report = Some(report);
        }
        let mut verdict = self
            .ledger
            .verdict(self.spec.limits.fits_tolerance_bytes, ended);
        verdict.duration = self
            .seen_at
            .duration_since(self.started_at)
            .unwrap_or(verdict.duration);
        verdict.processes = u32::try_from(self.ever.len()).unwrap_or(u32::MAX);
        if verdict.fits {
            verdict.tight = self.ledger.tightness(&self.spec.limits);
        }
        verdict.stages = self.stages.stages().to_vec();
        verdict.pauses = self.pauses.count;
        verdict.paused = self.pauses.total(self.seen_at);
        self.pauses.current = None;
        self.verdict = Some(verdict.clone());
        self.phase = Phase::Ended;
        self.ended_at = Some(self.seen_at);
        actions.push(self.notify(JobEvent::Finished { verdict }));
    }
}
