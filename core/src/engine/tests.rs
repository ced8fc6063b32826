//! Tests of the job engine with synthetic samples.

use super::*;
use crate::counters::SystemCounters;
use crate::process::TreeMemory;
use crate::sampler::TrackedSample;

const MIB: u64 = 1 << 20;

fn system(swap: u64, free: f64) -> SystemCounters {
    SystemCounters::example(swap, free)
}

fn sample(seq: u64, swap: u64, id: ProcessIdentity, alive: bool) -> Sample {
    Sample {
        seq,
        at: SystemTime::now(),
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

fn spec(command: &str, mode: JobMode, cfg: GuardConfig) -> JobSpec {
    JobSpec {
        command: command.into(),
        mode,
        cfg,
        poll: Duration::from_millis(500),
    }
}

fn signalled() -> StopReport {
    StopReport {
        terminated: vec![42],
        ..StopReport::default()
    }
}

fn cfg(budget: u64) -> GuardConfig {
    GuardConfig {
        swap_budget_bytes: budget,
        notify_step_bytes: 100 * MIB,
        lookahead: Duration::ZERO,
        ..GuardConfig::default()
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
    let done = jobs.stop_done(job, &signalled());
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
    jobs.add(set(id), spec("sleep", JobMode::Watch, cfg(MIB)), 0);
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
    let a = jobs.add(set(id), spec("x", JobMode::Watch, cfg(MIB)), 0);
    let b = jobs.add(set(id), spec("x", JobMode::Guard, cfg(MIB)), 0);
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
    jobs.add(set(id), spec("x", JobMode::Watch, cfg(MIB)), 0);
    jobs.on_sample(&sample(0, 0, id, false));
    jobs.prune(SystemTime::now(), Duration::from_secs(3600));
    assert_eq!(jobs.views().len(), 1);
    jobs.prune(
        SystemTime::now() + Duration::from_secs(7200),
        Duration::from_secs(3600),
    );
    assert!(jobs.views().is_empty());
}
