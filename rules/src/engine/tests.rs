//! Tests of the job engine with synthetic samples: the policy's decisions, and the
//! verification of every stop and pause against the members each sample finds.

use std::time::SystemTime;

use super::*;
use crate::policy::EndReason;
use crate::sample::{Sample, TrackedSample};
use headroom_model::counters::{RunState, SystemCounters};
use headroom_model::effects::{Control, JobSignal, Refused, SignalReport};
use headroom_model::members::{JobIds, Member};
use headroom_model::process::{ProcessIdentity, TreeMemory};

pub(super) const MIB: u64 = 1 << 20;
const GRACE: Duration = Duration::from_secs(2);

pub(super) fn system(swap: u64, free: f64) -> SystemCounters {
    headroom_model::testdata::system_counters(swap, free)
}

/// When the test jobs start: samples are dated from it, so the engine's durations are exact.
pub(super) fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

pub(super) fn moment(ms: u64) -> Moment {
    Moment {
        at: t0() + Duration::from_millis(ms),
        clock: Duration::from_millis(ms),
    }
}

pub(super) fn running(id: ProcessIdentity) -> Member {
    Member {
        id,
        state: RunState::Running,
    }
}

pub(super) fn stopped(id: ProcessIdentity) -> Member {
    Member {
        id,
        state: RunState::Stopped,
    }
}

/// Sample `seq` (every 500 ms) of job `root` with these live members.
fn at(seq: u64, swap: u64, free: f64, root: ProcessIdentity, members: &[Member]) -> Sample {
    at_ms(seq, seq * 500, swap, free, root, members)
}

/// Sample `seq`, taken `ms` after the start, of job `root` with these live members.
fn at_ms(
    seq: u64,
    ms: u64,
    swap: u64,
    free: f64,
    root: ProcessIdentity,
    members: &[Member],
) -> Sample {
    Sample {
        aimed: false,
        seq,
        at: t0() + Duration::from_millis(ms),
        since_start: Duration::from_millis(ms),
        system: Some(system(swap, free)),
        tracked: vec![TrackedSample {
            identity: root,
            memory: (!members.is_empty()).then_some(TreeMemory {
                pid: root.pid,
                footprint_bytes: 100 * MIB,
                resident_bytes: 100 * MIB,
                swap_bytes: None,
                processes: u32::try_from(members.len()).unwrap_or(0),
            }),
            members: members.to_vec(),
            kernel_peak_bytes: None,
            in_own_cgroup: false,
            cgroup_oom_kills: None,
        }],
        error: None,
    }
}

/// A sample of a one-process job: alive (running) or gone.
pub(super) fn sample(seq: u64, swap: u64, id: ProcessIdentity, alive: bool) -> Sample {
    let members: &[Member] = if alive { &[running(id)][..] } else { &[] };
    at(seq, swap, 50.0, id, members)
}

/// Sample `seq` of a live one-process job with `free` percent free memory.
pub(super) fn at_free(seq: u64, swap: u64, free: f64, id: ProcessIdentity) -> Sample {
    at(seq, swap, free, id, &[running(id)])
}

pub(super) fn set(id: ProcessIdentity) -> JobIds {
    JobIds::of_process(id)
}

pub(super) fn spec(command: &str, mode: JobMode, limits: Limits) -> JobSpec {
    JobSpec {
        grace: GRACE,
        ..JobSpec::new(command.into(), mode, limits, Duration::from_millis(500))
    }
}

pub(super) fn cfg(budget: u64) -> Limits {
    Limits {
        swap_budget_bytes: budget,
        notify_step_bytes: 100 * MIB,
        lookahead: Duration::ZERO,
        ..Limits::default()
    }
}

pub(super) fn id(pid: u32) -> ProcessIdentity {
    ProcessIdentity { pid, start_time: 7 }
}

pub(super) fn has(actions: &[Action], f: impl Fn(&Action) -> bool) -> bool {
    actions.iter().any(f)
}

/// The signal an action list asks for, and to whom.
pub(super) fn signal_of(actions: &[Action]) -> Option<(JobSignal, Vec<u32>)> {
    actions.iter().find_map(|a| match a {
        Action::Signal {
            signal, members, ..
        } => Some((*signal, members.iter().map(|m| m.pid).collect())),
        Action::Notify { .. } | Action::MakeRoom { .. } => None,
    })
}

pub(super) fn finished(actions: &[Action]) -> Option<Verdict> {
    actions.iter().find_map(|a| match a {
        Action::Notify {
            event: JobEvent::Finished { verdict },
            ..
        } => Some(verdict.clone()),
        _ => None,
    })
}

/// Reports that a signal reached every one of `pids`.
pub(super) fn reached(jobs: &mut Engine, job: u64, signal: JobSignal, pids: &[ProcessIdentity]) {
    let report = SignalReport {
        reached: pids.to_vec(),
        ..SignalReport::default()
    };
    jobs.signalled(job, signal, &report, moment(0));
}

#[test]
fn a_stop_is_done_only_when_no_member_is_left() {
    let leader = id(42);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("gen", JobMode::Guard, cfg(300 * MIB)),
        StartMemory::swap(1000 * MIB),
        moment(0),
    );
    assert!(jobs
        .on_sample(&sample(0, 1000 * MIB, leader, true))
        .is_empty());
    let a = jobs.on_sample(&sample(1, 1150 * MIB, leader, true));
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::SwapGrew { .. },
            ..
        }
    )));
    let a = jobs.on_sample(&sample(2, 1350 * MIB, leader, true));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Terminate, vec![42])),
        "{a:?}"
    );
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::Stopped { .. },
            ..
        }
    )));
    reached(&mut jobs, job, JobSignal::Terminate, &[leader]);
    assert_eq!(jobs.status(job), Some(JobStatus::Stopping));
    assert_eq!(
        jobs.check_interval(),
        Some(STOP_CHECK),
        "a stop is checked often"
    );
    // SIGTERM sent is not a stop done: the member still lives at the next check.
    let a = jobs.on_sample(&sample(3, 1400 * MIB, leader, true));
    assert!(finished(&a).is_none(), "{a:?}");
    // Gone: now it is stopped.
    let a = jobs.on_sample(&sample(4, 1400 * MIB, leader, false));
    let verdict = finished(&a).expect("finished");
    assert!(!verdict.fits);
    assert!(matches!(verdict.ended, EndReason::Stopped { .. }));
    assert_eq!(jobs.status(job), Some(JobStatus::Stopped));
    let report = jobs.stop_report(job).unwrap();
    assert_eq!(report.terminated, vec![42]);
    assert!(report.survivors.is_empty());
    assert!(jobs.tracked().is_empty());
}

#[test]
fn a_stop_kills_after_the_grace_and_reaches_members_born_during_it() {
    let (leader, child, late) = (id(60), id(61), id(62));
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, cfg(8 << 30)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&at(0, 0, 50.0, leader, &[running(leader), running(child)]));
    let a = jobs.request(job, Control::Stop, moment(600)).unwrap();
    assert_eq!(signal_of(&a), Some((JobSignal::Terminate, vec![60, 61])));
    reached(&mut jobs, job, JobSignal::Terminate, &[leader, child]);
    // A new member appears while stopping (a supervisor's respawn): SIGTERM to it alone.
    let a = jobs.on_sample(&at(2, 0, 50.0, leader, &[running(leader), running(late)]));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Terminate, vec![62])),
        "{a:?}"
    );
    // Past the grace: SIGKILL to every member left.
    let a = jobs.on_sample(&at(6, 0, 50.0, leader, &[running(leader), running(late)]));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Kill, vec![60, 62])),
        "{a:?}"
    );
    let a = jobs.on_sample(&at(7, 0, 50.0, leader, &[]));
    let verdict = finished(&a).unwrap();
    assert_eq!(
        verdict.ended.to_string(),
        "stopped by the guard: on request"
    );
    assert!(!verdict.judged(), "a stop on request is not judged");
    assert!(
        verdict
            .to_string()
            .starts_with("stopped on request: swap +0 B"),
        "{verdict}"
    );
}

#[test]
fn a_member_the_rules_refuse_is_said_at_once_and_the_job_ends_not_stopped() {
    let (leader, theirs) = (id(70), id(71));
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, cfg(100 * MIB)),
        StartMemory::swap(0),
        moment(0),
    );
    let both = [running(leader), running(theirs)];
    jobs.on_sample(&at(0, 0, 50.0, leader, &both));
    let a = jobs.on_sample(&at(1, 200 * MIB, 50.0, leader, &both));
    assert_eq!(signal_of(&a), Some((JobSignal::Terminate, vec![70, 71])));
    let report = SignalReport {
        reached: vec![leader],
        refused: vec![Refused {
            id: theirs,
            why: "pid 71 belongs to uid 65534, not to us (uid 0)".into(),
        }],
        gone: Vec::new(),
    };
    let a = jobs.signalled(job, JobSignal::Terminate, &report, moment(500));
    let Some(Action::Notify {
        event: JobEvent::Refused { action, members },
        command,
        ..
    }) = a.first()
    else {
        panic!("{a:?}");
    };
    assert_eq!((action.as_str(), members[0].0), ("stop", 71));
    assert!(
        members[0].1.contains("uid 65534"),
        "{members:?} of {command}"
    );
    // Our member gone, theirs left: the stop cannot hold; said at the grace's end.
    let a = jobs.on_sample(&at(2, 200 * MIB, 50.0, leader, &[running(theirs)]));
    assert!(finished(&a).is_none() && signal_of(&a).is_none(), "{a:?}");
    let a = jobs.on_sample(&at(6, 200 * MIB, 50.0, leader, &[running(theirs)]));
    let verdict = finished(&a).expect("ends once the grace is over");
    let EndReason::NotStopped { survivors, .. } = &verdict.ended else {
        panic!("{verdict:?}");
    };
    assert_eq!(survivors[0].pid, 71);
    assert!(survivors[0].why.contains("uid 65534"));
    assert!(!verdict.fits);
    assert!(verdict.to_string().contains("NOT stopped"), "{verdict}");
    let report = jobs.stop_report(job).unwrap();
    assert_eq!(report.survivors, vec![71]);
    assert_eq!(report.refused.len(), 1);
}

#[test]
fn a_member_that_outlives_sigkill_is_a_survivor() {
    let leader = id(72);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, cfg(8 << 30)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    jobs.request(job, Control::Stop, moment(500)).unwrap();
    assert_eq!(
        signal_of(&jobs.on_sample(&sample(6, 0, leader, true))).map(|s| s.0),
        Some(JobSignal::Kill)
    );
    // Stuck (in the kernel, say): still there two seconds after SIGKILL.
    assert!(finished(&jobs.on_sample(&sample(8, 0, leader, true))).is_none());
    let verdict = finished(&jobs.on_sample(&sample(10, 0, leader, true))).unwrap();
    let EndReason::NotStopped { survivors, .. } = &verdict.ended else {
        panic!("{verdict:?}");
    };
    assert_eq!(survivors[0].why, "still alive after SIGKILL");
}

#[test]
fn a_job_that_ended_as_it_was_stopped_keeps_its_exit() {
    let leader = id(73);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, cfg(8 << 30)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    jobs.request(job, Control::Stop, moment(500)).unwrap();
    let gone = SignalReport {
        gone: vec![leader],
        ..SignalReport::default()
    };
    jobs.signalled(job, JobSignal::Terminate, &gone, moment(500));
    jobs.set_exit(job, EndReason::Exited { code: 7 });
    let verdict = finished(&jobs.on_sample(&sample(2, 0, leader, false))).unwrap();
    assert_eq!(verdict.ended, EndReason::Exited { code: 7 });
}

#[test]
fn watch_never_stops_and_judges_at_exit() {
    let leader = id(43);
    let mut jobs = Engine::default();
    jobs.add(
        set(leader),
        spec("sleep", JobMode::Watch, cfg(MIB)),
        StartMemory::swap(0),
        moment(0),
    );
    for seq in 0..5 {
        let a = jobs.on_sample(&sample(seq, seq * 200 * MIB, leader, true));
        assert!(signal_of(&a).is_none());
    }
    assert!(jobs.any_growing());
    let verdict = finished(&jobs.on_sample(&sample(5, 800 * MIB, leader, false))).unwrap();
    assert!(!verdict.fits);
    assert_eq!(verdict.ended, EndReason::Vanished);
    assert!(!jobs.any_growing());
}

#[test]
fn adding_twice_upgrades_and_remove_forgets() {
    let leader = id(44);
    let mut jobs = Engine::default();
    let a = jobs.add(
        set(leader),
        spec("x", JobMode::Watch, cfg(MIB)),
        StartMemory::swap(0),
        moment(0),
    );
    let b = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, cfg(MIB)),
        StartMemory::swap(0),
        moment(0),
    );
    assert_eq!(a, b);
    assert_eq!(jobs.views()[0].mode, JobMode::Guard);
    assert_eq!(jobs.remove(a), Ok(leader));
    assert!(jobs.views().is_empty());
    assert_eq!(jobs.remove(a), Err(RequestError::NoJob));
}

#[test]
fn prune_drops_old_finished_jobs() {
    let leader = id(45);
    let mut jobs = Engine::default();
    jobs.add(
        set(leader),
        spec("x", JobMode::Watch, cfg(MIB)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, false));
    jobs.prune(t0(), Duration::from_secs(3600));
    assert_eq!(jobs.views().len(), 1);
    jobs.prune(t0() + Duration::from_secs(7200), Duration::from_secs(3600));
    assert!(jobs.views().is_empty());
}

pub(super) fn pausing(budget: u64, max_pauses: u32, resume_free: Option<f64>) -> Limits {
    Limits {
        on_budget: OnBudget::Pause,
        max_pauses,
        resume_free_percent: resume_free,
        resume_calm: Duration::from_secs(2),
        ..cfg(budget)
    }
}

/// A sample of a paused one-process job: its member stopped.
fn paused_sample(seq: u64, swap: u64, free: f64, leader: ProcessIdentity) -> Sample {
    at(seq, swap, free, leader, &[stopped(leader)])
}

/// A job of process `pid` that pauses at a 100 MiB budget (`max_pauses`), its budget just
/// crossed by 150 MiB; with the crossing's actions (the pause not yet reported reached).
fn crossed_pausing(pid: u32, max_pauses: u32) -> (Engine, u64, ProcessIdentity, Vec<Action>) {
    let leader = id(pid);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, pausing(100 * MIB, max_pauses, None)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    let crossing = jobs.on_sample(&sample(1, 150 * MIB, leader, true));
    (jobs, job, leader, crossing)
}

#[test]
fn pause_mode_pauses_at_the_budget_and_a_resume_grants_a_new_budget() {
    let leader = id(50);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("train", JobMode::Guard, pausing(300 * MIB, 3, None)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    let a = jobs.on_sample(&sample(1, 350 * MIB, leader, true));
    assert_eq!(signal_of(&a), Some((JobSignal::Pause, vec![50])), "{a:?}");
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::Paused {
                pause: 1,
                max_pauses: 3,
                reason: Some(_),
                ..
            },
            ..
        }
    )));
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    assert!(jobs.is_paused(job));
    assert!(jobs.views()[0].paused_since_ms.is_some());
    // Paused and seen stopped: still tracked, never stopped, not resumed without a request.
    assert_eq!(jobs.tracked().len(), 1);
    for seq in 2..10 {
        assert!(jobs
            .on_sample(&paused_sample(seq, 900 * MIB, 50.0, leader))
            .is_empty());
    }
    assert_eq!(
        jobs.request(job, Control::Pause, moment(5000)).unwrap_err(),
        RequestError::AlreadyPaused(50)
    );
    let a = jobs.request(job, Control::Resume, moment(5000)).unwrap();
    assert_eq!(signal_of(&a), Some((JobSignal::Resume, vec![50])));
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify { event: JobEvent::Resumed { free_percent: None, swap_used_bytes, .. }, .. }
            if *swap_used_bytes == 900 * MIB
    )));
    // The new budget counts from 900 MiB: 1100 MiB is 200 MiB into it.
    let a = jobs.on_sample(&sample(10, 1100 * MIB, leader, true));
    assert!(signal_of(&a).is_none(), "{a:?}");
    assert_eq!(
        jobs.request(job, Control::Resume, moment(5500))
            .unwrap_err(),
        RequestError::NotPaused(50)
    );
    let verdict = finished(&jobs.on_sample(&sample(11, 1250 * MIB, leader, false))).unwrap();
    assert_eq!(verdict.pauses, 1);
    assert_eq!(
        verdict.swap_growth_bytes,
        1100 * MIB,
        "the whole growth, from the start"
    );
    assert!(
        verdict.to_string().contains("paused once for "),
        "{verdict}"
    );
}

#[test]
fn a_pause_reaches_members_it_missed() {
    // A member not seen when the pause went out (born in between) is paused at the next
    // check; one sent SIGSTOP a moment ago is given time to stop.
    let (leader, late) = (id(80), id(81));
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, pausing(8 << 30, 3, None)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    let a = jobs.request(job, Control::Pause, moment(500)).unwrap();
    assert_eq!(signal_of(&a), Some((JobSignal::Pause, vec![80])));
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    let a = jobs.on_sample(&at(1, 0, 50.0, leader, &[running(leader), running(late)]));
    // The leader, sent SIGSTOP a moment ago, gets it again; the new member for the first time.
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Pause, vec![80, 81])),
        "{a:?}"
    );
    reached(&mut jobs, job, JobSignal::Pause, &[leader, late]);
    let a = jobs.on_sample(&at(2, 0, 50.0, leader, &[stopped(leader), stopped(late)]));
    assert!(a.is_empty(), "{a:?}");
    assert!(jobs.is_paused(job));
}

#[test]
fn a_paused_job_continued_from_outside_runs_under_its_budget_again() {
    let (mut jobs, job, leader, a) = crossed_pausing(82, 2);
    assert_eq!(signal_of(&a).map(|s| s.0), Some(JobSignal::Pause));
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    jobs.on_sample(&paused_sample(2, 150 * MIB, 50.0, leader));
    // Paused past its budget, it is checked as often as near it, not every 500 ms: a
    // continue from outside is seen within one such check.
    let paused_check = jobs.check_interval().unwrap();
    assert!(
        paused_check < Duration::from_millis(500),
        "{paused_check:?}"
    );
    // `kill -CONT` from outside: it runs again, the budget it passed applies at once.
    let a = jobs.on_sample(&sample(3, 160 * MIB, leader, true));
    assert!(continued_from_outside(&a), "{a:?}");
    assert_eq!(
        signal_of(&a).map(|s| s.0),
        Some(JobSignal::Pause),
        "paused again: {a:?}"
    );
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::Paused { pause: 2, .. },
            ..
        }
    )));
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    jobs.on_sample(&paused_sample(4, 170 * MIB, 50.0, leader));
    // Continued again, past its last pause: stopped.
    let a = jobs.on_sample(&sample(5, 180 * MIB, leader, true));
    assert_eq!(
        signal_of(&a).map(|s| s.0),
        Some(JobSignal::Terminate),
        "{a:?}"
    );
    assert_eq!(jobs.views()[0].pauses, 2);
}

#[test]
fn a_paused_job_killed_from_outside_is_not_one_that_runs_again() {
    let (mut jobs, job, leader, _) = crossed_pausing(84, 2);
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    jobs.on_sample(&paused_sample(2, 150 * MIB, 50.0, leader));
    // SIGKILL from outside: in exit, freeing its swap, for a few checks.
    let exiting = Member {
        id: leader,
        state: RunState::Exiting,
    };
    for seq in 3..6 {
        let a = jobs.on_sample(&at(seq, 150 * MIB, 50.0, leader, &[exiting]));
        assert!(a.is_empty(), "check {seq}: {a:?}");
        assert!(jobs.is_paused(job));
    }
    // Gone: the job ends, as a paused job whose processes all ended.
    let a = jobs.on_sample(&sample(6, 0, leader, false));
    assert!(
        has(&a, |x| matches!(
            x,
            Action::Notify {
                event: JobEvent::Finished { .. },
                ..
            }
        )),
        "{a:?}"
    );
}

/// True when `actions` say a paused job runs again, continued from outside.
fn continued_from_outside(actions: &[Action]) -> bool {
    has(actions, |x| {
        matches!(
            x,
            Action::Notify {
                event: JobEvent::RunsAgain {
                    continued: true,
                    ..
                },
                ..
            }
        )
    })
}

/// A one-process guarded job (pid `pid`) that pauses at its budget, paused on request at
/// 500 ms: SIGSTOP reached it, no check has seen it stopped yet.
fn paused_on_request(pid: u32) -> (Engine, u64, ProcessIdentity) {
    let leader = id(pid);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, pausing(8 << 30, 3, None)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    jobs.request(job, Control::Pause, moment(500)).unwrap();
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    (jobs, job, leader)
}

#[test]
fn a_sigstop_never_seen_taking_effect_counts_as_continued() {
    let (mut jobs, job, leader) = paused_on_request(83);
    // Waiting in the kernel (D) half a second later, then once more: SIGSTOP takes effect
    // only once it leaves the wait; it goes again.
    let waiting = Member {
        id: leader,
        state: RunState::Waiting,
    };
    for seq in [1, 2] {
        let a = jobs.on_sample(&at(seq, 0, 50.0, leader, &[waiting]));
        assert_eq!(signal_of(&a).map(|s| s.0), Some(JobSignal::Pause), "{a:?}");
    }
    assert_eq!(
        jobs.check_interval(),
        Some(STOP_CHECK),
        "checked at once until seen stopped"
    );
    // Running a whole second after it: continued before any check saw it stopped.
    let a = jobs.on_sample(&sample(4, 0, leader, true));
    assert!(continued_from_outside(&a), "{a:?}");
    assert!(!jobs.is_paused(job));
}

#[test]
fn a_member_running_at_two_checks_after_its_sigstop_was_continued() {
    // A stop stops a running (or interruptibly sleeping) process at once: one seen running
    // at the check after its SIGSTOP is sent it again, and seen running at the next (here
    // 100 ms after the first, far less than PAUSE_SETTLE) it was continued from outside in
    // between: the pause does not hold, its budget applies.
    let (mut jobs, job, leader) = paused_on_request(84);
    let a = jobs.on_sample(&at_ms(1, 550, 0, 50.0, leader, &[running(leader)]));
    assert_eq!(signal_of(&a).map(|s| s.0), Some(JobSignal::Pause), "{a:?}");
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    assert!(jobs.is_paused(job));
    let a = jobs.on_sample(&at_ms(2, 600, 0, 50.0, leader, &[running(leader)]));
    assert!(continued_from_outside(&a), "{a:?}");
    assert!(!jobs.is_paused(job));
}

#[test]
fn the_crossing_after_the_last_pause_stops_the_job() {
    let leader = id(51);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("render", JobMode::Guard, pausing(100 * MIB, 2, None)),
        StartMemory::swap(0),
        moment(0),
    );
    let (mut swap, mut seq, mut pauses) = (0, 0, 0);
    loop {
        seq += 1;
        swap += 150 * MIB;
        let a = jobs.on_sample(&sample(seq, swap, leader, true));
        match signal_of(&a).map(|s| s.0) {
            Some(JobSignal::Pause) => {
                pauses += 1;
                jobs.request(job, Control::Resume, moment(seq * 500))
                    .unwrap();
            }
            Some(JobSignal::Terminate) => {
                reached(&mut jobs, job, JobSignal::Terminate, &[leader]);
                break;
            }
            _ => {}
        }
        assert!(seq < 20, "never stopped");
    }
    assert_eq!(pauses, 2);
    let verdict = finished(&jobs.on_sample(&sample(seq + 1, swap, leader, false))).unwrap();
    assert_eq!(verdict.pauses, 2);
    assert!(matches!(verdict.ended, EndReason::Stopped { .. }));
    assert!(verdict.to_string().contains("paused twice, "), "{verdict}");
}

#[test]
fn resume_free_waits_for_room_and_calm_swap() {
    let leader = id(52);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, pausing(100 * MIB, 3, Some(40.0))),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&at(0, 0, 50.0, leader, &[running(leader)]));
    let a = jobs.on_sample(&at(1, 150 * MIB, 50.0, leader, &[running(leader)]));
    assert_eq!(signal_of(&a).map(|s| s.0), Some(JobSignal::Pause));
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    // 0.5 s per sample, calm for 2 s wanted. Low free: no resume, however calm.
    for seq in 2..12 {
        assert!(jobs
            .on_sample(&paused_sample(seq, 150 * MIB, 20.0, leader))
            .is_empty());
    }
    // Room again, but swap still growing (another process): no resume.
    let mut seq = 12;
    for step in 0..6 {
        let swap = (200 + step * 50) * MIB;
        assert!(
            jobs.on_sample(&paused_sample(seq, swap, 60.0, leader))
                .is_empty(),
            "{seq}"
        );
        seq += 1;
    }
    // Room and calm swap for 2 s: resumed by itself.
    let mut resumed = None;
    for _ in 0..8 {
        let a = jobs.on_sample(&paused_sample(seq, 450 * MIB, 60.0, leader));
        seq += 1;
        if signal_of(&a).map(|s| s.0) == Some(JobSignal::Resume) {
            resumed = Some(a);
            break;
        }
    }
    let a = resumed.expect("resumed by itself");
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify { event: JobEvent::Resumed { free_percent: Some(f), .. }, .. } if *f >= 40.0
    )));
    assert!(!jobs.is_paused(job));
}

#[test]
fn requests_are_decided_by_the_engine() {
    let leader = id(53);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("x", JobMode::Guard, cfg(8 << 30)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    assert_eq!(
        jobs.request(job, Control::Resume, moment(1)).unwrap_err(),
        RequestError::NotPaused(53)
    );
    let a = jobs.request(job, Control::Pause, moment(1)).unwrap();
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::Paused {
                reason: None,
                pause: 1,
                ..
            },
            ..
        }
    )));
    assert_eq!(
        jobs.remove(job),
        Err(RequestError::AlreadyPaused(53)),
        "a paused job is never let go"
    );
    let a = jobs.request(job, Control::Stop, moment(2)).unwrap();
    assert_eq!(signal_of(&a).map(|s| s.0), Some(JobSignal::Terminate));
    reached(&mut jobs, job, JobSignal::Terminate, &[leader]);
    assert_eq!(
        jobs.request(job, Control::Stop, moment(3)).unwrap_err(),
        RequestError::Stopping(53)
    );
    let verdict = finished(&jobs.on_sample(&sample(1, 0, leader, false))).unwrap();
    assert_eq!(verdict.pauses, 1);
    assert_eq!(
        verdict.ended.to_string(),
        "stopped by the guard: on request"
    );
    assert_eq!(
        jobs.request(job, Control::Pause, moment(4)).unwrap_err(),
        RequestError::Ended(53)
    );
    assert_eq!(
        RequestError::NotPaused(53).to_string(),
        "the job of pid 53 is not paused"
    );
}

#[test]
fn an_interrupt_stops_a_command_and_lets_a_picked_process_go() {
    let leader = id(90);
    let mut jobs = Engine::default();
    let owned = JobSpec {
        owned: true,
        ..spec("x", JobMode::Guard, cfg(8 << 30))
    };
    let job = jobs.add(set(leader), owned, StartMemory::swap(0), moment(0));
    jobs.on_sample(&sample(0, 0, leader, true));
    let a = jobs.interrupt(job, 2, false, moment(100));
    assert_eq!(signal_of(&a).map(|s| s.0), Some(JobSignal::Terminate));
    reached(&mut jobs, job, JobSignal::Terminate, &[leader]);
    assert!(!has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::Stopped { .. },
            ..
        }
    )));
    // A second interrupt: SIGKILL at the next check, grace or not.
    jobs.interrupt(job, 2, true, moment(200));
    assert_eq!(
        signal_of(&jobs.on_sample(&sample(1, 0, leader, true))).map(|s| s.0),
        Some(JobSignal::Kill)
    );
    let verdict = finished(&jobs.on_sample(&sample(2, 0, leader, false))).unwrap();
    assert_eq!(verdict.ended, EndReason::Interrupted { signal: 2 });

    let picked = id(91);
    let job = jobs.add(
        set(picked),
        spec("y", JobMode::Guard, cfg(8 << 30)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, picked, true));
    jobs.request(job, Control::Pause, moment(10)).unwrap();
    let a = jobs.interrupt(job, 15, false, moment(20));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Resume, vec![91])),
        "continued before let go"
    );
    assert_eq!(
        finished(&a).unwrap().ended,
        EndReason::Interrupted { signal: 15 }
    );
}

#[test]
fn warning_says_what_happens_at_the_budget() {
    let leader = id(54);
    let mut jobs = Engine::default();
    jobs.add(
        set(leader),
        spec("x", JobMode::Guard, pausing(1000 * MIB, 3, None)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    let a = jobs.on_sample(&sample(1, 850 * MIB, leader, true));
    let Some(Action::Notify { event, command, .. }) = a.iter().find(|x| {
        matches!(
            x,
            Action::Notify {
                event: JobEvent::Warning { .. },
                ..
            }
        )
    }) else {
        panic!("{a:?}");
    };
    // (Its words: `headroom_core::words`.)
    assert!(
        matches!(
            event,
            JobEvent::Warning {
                then: OnBudget::Pause,
                ..
            }
        ),
        "{event:?} of {command}"
    );
}

#[test]
fn a_paused_job_is_saved_and_restored_paused() {
    let (jobs, job, leader, _) = crossed_pausing(55, 3);
    let saved = jobs.active_record(job, "boot").unwrap();
    assert_eq!(saved.on_budget, OnBudget::Pause);
    assert_eq!(saved.pauses, 1);
    assert!(saved.paused_since_ms.is_some());
    let mut after = Engine::default();
    let base = spec("x", JobMode::Guard, Limits::default());
    let restored = after.restore(&saved, set(leader), base, moment(0));
    assert!(after.is_paused(restored));
    let view = &after.views()[0];
    assert_eq!((view.pauses, view.on_budget), (1, OnBudget::Pause));
    // Verified like any pause: still stopped after the restart.
    assert!(after
        .on_sample(&paused_sample(2, 150 * MIB, 50.0, leader))
        .is_empty());
    let a = after
        .request(restored, Control::Resume, moment(1500))
        .unwrap();
    assert_eq!(signal_of(&a).map(|s| s.0), Some(JobSignal::Resume));
}

#[test]
fn pauses_and_the_duration_are_measured_on_the_times_given() {
    // The engine reads no clock: a pause lasts from the sample that paused the job to the
    // resume request (dated by its caller), and the verdict's duration ends at the last
    // sample.
    let leader = id(56);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("train", JobMode::Guard, pausing(300 * MIB, 3, None)),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    jobs.on_sample(&sample(1, 350 * MIB, leader, true)); // paused at 0.5 s
    reached(&mut jobs, job, JobSignal::Pause, &[leader]);
    for seq in 2..10 {
        jobs.on_sample(&paused_sample(seq, 350 * MIB, 50.0, leader)); // the last at 4.5 s
    }
    let a = jobs.request(job, Control::Resume, moment(4800)).unwrap();
    assert!(
        has(&a, |x| matches!(
            x,
            Action::Notify { event: JobEvent::Resumed { paused, .. }, .. }
                if *paused == Duration::from_millis(4300)
        )),
        "{a:?}"
    );
    jobs.on_sample(&sample(10, 360 * MIB, leader, true));
    let verdict = finished(&jobs.on_sample(&sample(11, 360 * MIB, leader, false))).unwrap();
    assert_eq!(verdict.paused, Duration::from_millis(4300));
    assert_eq!(verdict.duration, Duration::from_millis(5500));
}

#[test]
fn a_run_is_recorded_under_its_key_from_the_free_memory_at_its_start() {
    let leader = id(57);
    let mut jobs = Engine::default();
    let named = JobSpec {
        key: Some("qwen image".into()),
        ..spec("python gen.py --steps 30", JobMode::Guard, cfg(8 << 30))
    };
    let job = jobs.add(set(leader), named, StartMemory::swap(0), moment(0));
    let other = jobs.add(
        set(id(58)),
        spec(
            "/usr/bin/python3 /home/me/gen.py --steps 9",
            JobMode::Watch,
            cfg(8 << 30),
        ),
        StartMemory::swap(0),
        moment(0),
    );
    assert_eq!(jobs.run_start(job).unwrap().free_start_percent, None);
    jobs.on_sample(&at(0, 0, 62.5, leader, &[running(leader)]));
    jobs.on_sample(&at(1, 0, 20.0, leader, &[running(leader)]));
    let start = jobs.run_start(job).unwrap();
    assert_eq!(
        (start.key.as_str(), start.free_start_percent),
        ("qwen image", Some(62.5))
    );
    // No key named: the command line's (the script by file name, however it is started).
    assert_eq!(jobs.run_start(other).unwrap().key, "gen.py --steps 9");
    // Taken up after a restart: the key and the start's free memory are kept, not the first
    // sample's after it.
    let saved = jobs.active_record(job, "boot").unwrap();
    let mut after = Engine::default();
    let base = spec("x", JobMode::Guard, Limits::default());
    let restored = after.restore(&saved, set(leader), base, moment(0));
    after.on_sample(&at(2, 0, 10.0, leader, &[running(leader)]));
    assert_eq!(after.run_start(restored), Some(start));
}

#[test]
fn a_macs_run_is_measured_by_the_rise_of_memory_in_use_also_after_a_restart() {
    let leader = id(59);
    let mut jobs = Engine::default();
    let watched = spec("python gen.py", JobMode::Watch, cfg(8 << 30));
    let job = jobs.add(set(leader), watched, StartMemory::swap(0), moment(0));
    // A Mac's samples: memory in use from the page counts, the level unmoved.
    let in_use = |seq: u64, gib: u64| {
        let mut sample = at(seq, 0, 62.5, leader, &[running(leader)]);
        sample.system.as_mut().unwrap().in_use_bytes = Some(gib << 30);
        sample
    };
    jobs.on_sample(&in_use(0, 10));
    jobs.on_sample(&in_use(1, 30));
    assert_eq!(
        jobs.run_start(job).unwrap().in_use_start_bytes,
        Some(10 << 30)
    );
    assert_eq!(
        jobs.views()[0].taken_bytes,
        Some(20 << 30),
        "not the footprint"
    );
    // Taken up after a restart, it counts from its start, not from the first sample after.
    let saved = jobs.active_record(job, "boot").unwrap();
    let mut after = Engine::default();
    let base = spec("x", JobMode::Watch, Limits::default());
    let restored = after.restore(&saved, set(leader), base, moment(0));
    after.on_sample(&in_use(2, 25));
    after.end(restored, EndReason::Exited { code: 0 }, moment(1500));
    let verdict = after.verdict(restored).unwrap();
    assert_eq!(verdict.in_use_taken_bytes, Some(15 << 30));
    assert_eq!(verdict.lowest_free_percent, Some(62.5));
}

#[test]
fn a_terminal_key_goes_to_every_member_of_a_running_job_and_stops_a_paused_one() {
    // Once the driver holds the terminal for a job whose leader has exited: Ctrl-C is sent
    // on to every member the last check saw; on a paused job it is the driver's interrupt.
    let (leader, setsid) = (id(85), id(86));
    let mut jobs = Engine::default();
    let owned = JobSpec {
        owned: true,
        ..spec("x", JobMode::Guard, pausing(8 << 30, 3, None))
    };
    let job = jobs.add(set(leader), owned, StartMemory::swap(0), moment(0));
    jobs.on_sample(&at(1, 0, 50.0, leader, &[running(setsid)]));
    let a = jobs.key(job, JobSignal::Interrupt, 2, moment(600));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Interrupt, vec![86])),
        "{a:?}"
    );
    assert!(!jobs.is_paused(job), "a key is no pause");
    jobs.request(job, Control::Pause, moment(700)).unwrap();
    reached(&mut jobs, job, JobSignal::Pause, &[setsid]);
    let a = jobs.key(job, JobSignal::Quit, 3, moment(800));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Terminate, vec![86])),
        "{a:?}"
    );
    assert_eq!(jobs.status(job), Some(JobStatus::Stopping));
}
