//! Tests of the job engine with synthetic samples.

use std::time::SystemTime;

use super::*;
use crate::counters::SystemCounters;
use crate::enforce::StopReport;
use crate::policy::EndReason;
use crate::process::{ProcessIdentity, TreeMemory};
use crate::sampler::{Sample, TrackedSample};

const MIB: u64 = 1 << 20;

fn system(swap: u64, free: f64) -> SystemCounters {
    crate::testdata::system_counters(swap, free)
}

/// When the test jobs start: samples are dated from it, so the engine's durations are exact.
fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn sample(seq: u64, swap: u64, id: ProcessIdentity, alive: bool) -> Sample {
    Sample {
        seq,
        at: t0() + Duration::from_millis(seq * 500),
        since_start: Duration::from_millis(seq * 500),
        system: Some(system(swap, 50.0)),
        tracked: vec![TrackedSample {
            identity: id,
            memory: alive.then_some(TreeMemory {
                pid: id.pid,
                footprint_bytes: 100 * MIB,
                resident_bytes: 100 * MIB,
                swap_bytes: None,
                processes: 1,
            }),
        }],
        error: None,
    }
}

fn set(id: ProcessIdentity) -> MemberSet {
    MemberSet::new(crate::members::Members::of_process(id))
}

fn spec(command: &str, mode: JobMode, limits: Limits) -> JobSpec {
    JobSpec {
        command: command.into(),
        mode,
        limits,
        poll: Duration::from_millis(500),
    }
}

fn signalled() -> StopReport {
    StopReport {
        terminated: vec![42],
        ..StopReport::default()
    }
}

fn cfg(budget: u64) -> Limits {
    Limits {
        swap_budget_bytes: budget,
        notify_step_bytes: 100 * MIB,
        lookahead: Duration::ZERO,
        ..Limits::default()
    }
}

#[test]
fn guard_stops_past_budget_then_reports_stopped() {
    let id = ProcessIdentity {
        pid: 42,
        start_time: 7,
    };
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(id),
        spec("python gen.py", JobMode::Guard, cfg(300 * MIB)),
        1000 * MIB,
        t0(),
    );
    assert!(jobs.on_sample(&sample(0, 1000 * MIB, id, true)).is_empty());
    let a = jobs.on_sample(&sample(1, 1150 * MIB, id, true));
    assert!(
        matches!(
            a.as_slice(),
            [Action::Notify {
                event: JobEvent::SwapGrew { .. },
                ..
            }]
        ),
        "{a:?}"
    );
    let a = jobs.on_sample(&sample(2, 1350 * MIB, id, true));
    assert!(
        a.iter()
            .any(|x| matches!(x, Action::Stop { job_id, .. } if *job_id == job)),
        "{a:?}"
    );
    assert!(a.iter().any(|x| matches!(
        x,
        Action::Notify {
            event: JobEvent::Stopped { .. },
            ..
        }
    )));
    assert_eq!(jobs.views()[0].state, JobStatus::Stopping);
    // While stopping, samples produce nothing more.
    assert!(jobs.on_sample(&sample(3, 1500 * MIB, id, true)).is_empty());
    let done = jobs.stop_done(job, &signalled(), t0());
    assert!(matches!(
        done.as_slice(),
        [Action::Notify {
            event: JobEvent::Finished { .. },
            ..
        }]
    ));
    let view = &jobs.views()[0];
    assert_eq!(view.state, JobStatus::Stopped);
    let verdict = view.verdict.as_ref().unwrap();
    assert!(!verdict.fits);
    assert_eq!(verdict.swap_growth_bytes, 350 * MIB);
    assert!(jobs.tracked().is_empty());
}

#[test]
fn watch_never_stops_and_judges_at_exit() {
    let id = ProcessIdentity {
        pid: 43,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    jobs.add(set(id), spec("sleep", JobMode::Watch, cfg(MIB)), 0, t0());
    for seq in 0..5 {
        let a = jobs.on_sample(&sample(seq, seq * 200 * MIB, id, true));
        assert!(!a.iter().any(|x| matches!(x, Action::Stop { .. })));
    }
    assert!(jobs.any_growing());
    let a = jobs.on_sample(&sample(5, 800 * MIB, id, false));
    let Some(Action::Notify {
        event: JobEvent::Finished { verdict },
        ..
    }) = a.first()
    else {
        panic!("{a:?}");
    };
    assert!(!verdict.fits);
    assert_eq!(verdict.ended, EndReason::Vanished);
    assert!(!jobs.any_growing());
}

#[test]
fn adding_twice_upgrades_and_remove_forgets() {
    let id = ProcessIdentity {
        pid: 44,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    let a = jobs.add(set(id), spec("x", JobMode::Watch, cfg(MIB)), 0, t0());
    let b = jobs.add(set(id), spec("x", JobMode::Guard, cfg(MIB)), 0, t0());
    assert_eq!(a, b);
    assert_eq!(jobs.views()[0].mode, JobMode::Guard);
    assert_eq!(jobs.remove(a), Some(id));
    assert!(jobs.views().is_empty());
    assert_eq!(jobs.remove(a), None);
}

#[test]
fn prune_drops_old_finished_jobs() {
    let id = ProcessIdentity {
        pid: 45,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    jobs.add(set(id), spec("x", JobMode::Watch, cfg(MIB)), 0, t0());
    jobs.on_sample(&sample(0, 0, id, false));
    jobs.prune(t0(), Duration::from_secs(3600));
    assert_eq!(jobs.views().len(), 1);
    jobs.prune(t0() + Duration::from_secs(7200), Duration::from_secs(3600));
    assert!(jobs.views().is_empty());
}

fn pausing(budget: u64, max_pauses: u32, resume_free: Option<f64>) -> Limits {
    Limits {
        on_budget: OnBudget::Pause,
        max_pauses,
        resume_free_percent: resume_free,
        resume_calm: Duration::from_secs(2),
        ..cfg(budget)
    }
}

fn free_sample(seq: u64, swap: u64, free: f64, id: ProcessIdentity) -> Sample {
    Sample {
        system: Some(system(swap, free)),
        ..sample(seq, swap, id, true)
    }
}

fn has(actions: &[Action], f: impl Fn(&Action) -> bool) -> bool {
    actions.iter().any(f)
}

#[test]
fn pause_mode_pauses_at_the_budget_and_a_resume_grants_a_new_budget() {
    let id = ProcessIdentity {
        pid: 50,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(id),
        spec("train", JobMode::Guard, pausing(300 * MIB, 3, None)),
        0,
        t0(),
    );
    jobs.on_sample(&sample(0, 0, id, true));
    let a = jobs.on_sample(&sample(1, 350 * MIB, id, true));
    assert!(
        has(
            &a,
            |x| matches!(x, Action::Pause { job_id, .. } if *job_id == job)
        ),
        "{a:?}"
    );
    assert!(!has(&a, |x| matches!(x, Action::Stop { .. })));
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
    assert!(jobs.is_paused(job));
    assert_eq!(jobs.views()[0].state, JobStatus::Paused);
    assert!(jobs.views()[0].paused_since_ms.is_some());
    // Paused: still tracked and observed, never stopped, not resumed without a request.
    assert_eq!(jobs.tracked().len(), 1);
    for seq in 2..10 {
        assert!(jobs.on_sample(&sample(seq, 900 * MIB, id, true)).is_empty());
    }
    assert!(jobs.pause(job, t0()).is_empty(), "already paused");
    let a = jobs.resume(job, t0());
    assert!(has(&a, |x| matches!(x, Action::Resume { .. })), "{a:?}");
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify { event: JobEvent::Resumed { free_percent: None, swap_used_bytes, .. }, .. }
            if *swap_used_bytes == 900 * MIB
    )));
    // The new budget counts from 900 MiB: 1100 MiB is 200 MiB into it.
    let a = jobs.on_sample(&sample(10, 1100 * MIB, id, true));
    assert!(
        !has(&a, |x| matches!(
            x,
            Action::Pause { .. } | Action::Stop { .. }
        )),
        "{a:?}"
    );
    assert!(jobs.resume(job, t0()).is_empty(), "not paused");
    let a = jobs.on_sample(&sample(11, 1250 * MIB, id, false));
    let Some(Action::Notify {
        event: JobEvent::Finished { verdict },
        ..
    }) = a.last()
    else {
        panic!("{a:?}");
    };
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
fn the_crossing_after_the_last_pause_stops_the_job() {
    let id = ProcessIdentity {
        pid: 51,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(id),
        spec("render", JobMode::Guard, pausing(100 * MIB, 2, None)),
        0,
        t0(),
    );
    let mut swap = 0;
    let mut seq = 0;
    let mut pauses = 0;
    loop {
        seq += 1;
        swap += 150 * MIB;
        let a = jobs.on_sample(&sample(seq, swap, id, true));
        if has(&a, |x| matches!(x, Action::Pause { .. })) {
            pauses += 1;
            jobs.resume(job, t0());
        }
        if has(&a, |x| matches!(x, Action::Stop { .. })) {
            break;
        }
        assert!(seq < 20, "never stopped");
    }
    assert_eq!(pauses, 2);
    let done = jobs.stop_done(job, &signalled(), t0());
    let Some(Action::Notify {
        event: JobEvent::Finished { verdict },
        ..
    }) = done.last()
    else {
        panic!("{done:?}");
    };
    assert_eq!(verdict.pauses, 2);
    assert!(matches!(verdict.ended, EndReason::Stopped { .. }));
    assert!(verdict.to_string().contains("paused twice, "), "{verdict}");
}

#[test]
fn resume_free_waits_for_room_and_calm_swap() {
    let id = ProcessIdentity {
        pid: 52,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(id),
        spec("x", JobMode::Guard, pausing(100 * MIB, 3, Some(40.0))),
        0,
        t0(),
    );
    jobs.on_sample(&free_sample(0, 0, 50.0, id));
    assert!(has(
        &jobs.on_sample(&free_sample(1, 150 * MIB, 50.0, id)),
        |x| matches!(x, Action::Pause { .. })
    ));
    // 0.5 s per sample, calm for 2 s wanted. Low free: no resume, however calm.
    for seq in 2..12 {
        assert!(jobs
            .on_sample(&free_sample(seq, 150 * MIB, 20.0, id))
            .is_empty());
    }
    // Room again, but swap still growing (another process): no resume.
    let mut seq = 12;
    for step in 0..6 {
        let swap = (200 + step * 50) * MIB;
        assert!(
            jobs.on_sample(&free_sample(seq, swap, 60.0, id)).is_empty(),
            "{seq}"
        );
        seq += 1;
    }
    // Room and calm swap for 2 s: resumed by itself.
    let mut resumed = None;
    for _ in 0..8 {
        let a = jobs.on_sample(&free_sample(seq, 450 * MIB, 60.0, id));
        seq += 1;
        if has(&a, |x| matches!(x, Action::Resume { .. })) {
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
fn requests_pause_resume_and_stop_a_paused_job() {
    let id = ProcessIdentity {
        pid: 53,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    let job = jobs.add(set(id), spec("x", JobMode::Guard, cfg(8 << 30)), 0, t0());
    jobs.on_sample(&sample(0, 0, id, true));
    let a = jobs.pause(job, t0());
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
    let a = jobs.stop(job, t0());
    assert!(has(&a, |x| matches!(
        x,
        Action::Stop {
            reason: StopReason::Requested,
            ..
        }
    )));
    assert!(
        jobs.stop(job, t0()).is_empty(),
        "a stop under way is not started twice"
    );
    let done = jobs.stop_done(job, &signalled(), t0());
    let Some(Action::Notify {
        event: JobEvent::Finished { verdict },
        ..
    }) = done.last()
    else {
        panic!("{done:?}");
    };
    assert_eq!(verdict.pauses, 1);
    assert_eq!(
        verdict.ended.to_string(),
        "stopped by the guard: on request"
    );
}

#[test]
fn warning_says_what_happens_at_the_budget() {
    let id = ProcessIdentity {
        pid: 54,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    jobs.add(
        set(id),
        spec("x", JobMode::Guard, pausing(1000 * MIB, 3, None)),
        0,
        t0(),
    );
    jobs.on_sample(&sample(0, 0, id, true));
    let a = jobs.on_sample(&sample(1, 850 * MIB, id, true));
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
    assert!(words::line(event, command).contains("will be paused at the budget"));
    assert_eq!(
        words::notification(event, command).0,
        "Guard about to pause a job"
    );
}

#[test]
fn a_paused_job_is_saved_and_restored_paused() {
    let id = ProcessIdentity {
        pid: 55,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(id),
        spec("x", JobMode::Guard, pausing(100 * MIB, 3, None)),
        0,
        t0(),
    );
    jobs.on_sample(&sample(0, 0, id, true));
    jobs.on_sample(&sample(1, 150 * MIB, id, true));
    let saved = jobs.active_record(job, "boot").unwrap();
    assert_eq!(saved.on_budget, OnBudget::Pause);
    assert_eq!(saved.pauses, 1);
    assert!(saved.paused_since_ms.is_some());
    let mut after = Engine::default();
    let base = spec("x", JobMode::Guard, Limits::default());
    let restored = after.restore(&saved, set(id), base, t0());
    assert!(after.is_paused(restored));
    let view = &after.views()[0];
    assert_eq!((view.pauses, view.on_budget), (1, OnBudget::Pause));
    assert!(has(&after.resume(restored, t0()), |x| matches!(
        x,
        Action::Resume { .. }
    )));
}

#[test]
fn pauses_and_the_duration_are_measured_on_the_times_given() {
    // The engine reads no clock: a pause lasts from the sample that paused the job to the
    // resume request (dated by its caller), and the verdict's duration ends at the last
    // sample.
    let id = ProcessIdentity {
        pid: 52,
        start_time: 1,
    };
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(id),
        spec("train", JobMode::Guard, pausing(300 * MIB, 3, None)),
        0,
        t0(),
    );
    jobs.on_sample(&sample(0, 0, id, true));
    jobs.on_sample(&sample(1, 350 * MIB, id, true)); // paused at 0.5 s
    for seq in 2..10 {
        jobs.on_sample(&sample(seq, 350 * MIB, id, true)); // the last at 4.5 s
    }
    let a = jobs.resume(job, t0() + Duration::from_millis(4800));
    assert!(
        has(&a, |x| matches!(
            x,
            Action::Notify { event: JobEvent::Resumed { paused, .. }, .. }
                if *paused == Duration::from_millis(4300)
        )),
        "{a:?}"
    );
    jobs.on_sample(&sample(10, 360 * MIB, id, true));
    let a = jobs.on_sample(&sample(11, 360 * MIB, id, false)); // ends at 5.5 s
    let Some(Action::Notify {
        event: JobEvent::Finished { verdict },
        ..
    }) = a.last()
    else {
        panic!("{a:?}");
    };
    assert_eq!(verdict.paused, Duration::from_millis(4300));
    assert_eq!(verdict.duration, Duration::from_millis(5500));
}
