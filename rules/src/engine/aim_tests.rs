//! Looks aimed at the crossing (`aim.rs`): a guard that takes them stops a job at the
//! crossing itself, within milliseconds, and never on the projection alone; samples not
//! aimed (a trace written before, the app) are judged as they always were.

use super::tests::{id, moment, running, set, spec, t0, MIB};
use super::*;
use crate::policy::{Limits, StopReason};
use crate::sample::{Sample, TrackedSample};

/// A look at `ms` of job `root` with swap grown by `swap`, aimed or not.
fn look(
    seq: u64,
    ms: u64,
    swap: u64,
    aimed: bool,
    root: headroom_model::process::ProcessIdentity,
) -> Sample {
    Sample {
        aimed,
        seq,
        at: t0() + Duration::from_millis(ms),
        since_start: Duration::from_millis(ms),
        system: Some(headroom_model::testdata::system_counters(swap, 50.0)),
        tracked: vec![TrackedSample {
            identity: root,
            memory: None,
            members: vec![running(root)],
            kernel_peak_bytes: None,
            in_own_cgroup: false,
            cgroup_oom_kills: None,
        }],
        error: None,
    }
}

/// A guard of a 100 MiB budget checked every 100 ms (its fastest), past 30 MiB at 100 ms
/// and 70 MiB at 200 ms: 400 MiB/s, the crossing 75 ms ahead, before the next check.
fn growing() -> (Engine, u64, headroom_model::process::ProcessIdentity) {
    let root = id(40);
    let limits = Limits {
        swap_budget_bytes: 100 * MIB,
        notify_step_bytes: 1 << 40,
        ..Limits::default()
    };
    let spec = JobSpec {
        min_check: Duration::from_millis(100),
        ..spec("hog", JobMode::Guard, limits)
    };
    let mut engine = Engine::default();
    let job = engine.add(set(root), spec, StartMemory::swap(0), moment(0));
    for (seq, (ms, swap)) in [(0, 0), (100, 30 * MIB), (200, 70 * MIB)]
        .into_iter()
        .enumerate()
    {
        let actions = engine.on_sample(&look(seq as u64, ms, swap, false, root));
        assert!(stop_of(&actions).is_none(), "{actions:?}");
    }
    (engine, job, root)
}

fn stop_of(actions: &[Action]) -> Option<StopReason> {
    actions.iter().find_map(|a| match a {
        Action::Notify {
            event: JobEvent::Stopped { reason },
            ..
        } => Some(reason.clone()),
        _ => None,
    })
}

#[test]
fn the_next_look_is_aimed_just_after_the_crossing_the_rate_foresees() {
    let (engine, _, _) = growing();
    let (due, aimed) = engine.next_look().unwrap();
    assert!(aimed);
    assert_eq!(
        due,
        Duration::from_millis(77),
        "75 ms to the crossing, and 2"
    );
    // The app's sampler takes the regular checks only.
    assert_eq!(engine.check_interval(), Some(Duration::from_millis(100)));
}

#[test]
fn an_aimed_look_stops_a_job_at_its_crossing_and_not_before() {
    let (mut engine, _, root) = growing();
    // Still under the budget at the aimed look (it grew slower): the projection, which
    // passes the budget a second time here, does not stop it.
    let actions = engine.on_sample(&look(3, 277, 95 * MIB, true, root));
    assert_eq!(stop_of(&actions), None, "{actions:?}");
    let (due, aimed) = engine.next_look().unwrap();
    assert!(
        aimed && due < Duration::from_millis(23),
        "aimed again before the check at 300 ms: {due:?}"
    );
    // Past it at the next aimed look: stopped, for the budget itself.
    let actions = engine.on_sample(&look(4, 290, 101 * MIB, true, root));
    assert!(
        matches!(stop_of(&actions), Some(StopReason::SwapBudget { .. })),
        "{actions:?}"
    );
}

#[test]
fn looks_not_aimed_are_judged_as_before_by_the_projection() {
    // The same readings with no look aimed (a trace written before aimed looks, or the
    // app's ticks): the projection passes the budget twice and stops the job before it.
    let (mut engine, _, root) = growing();
    let actions = engine.on_sample(&look(3, 277, 95 * MIB, false, root));
    assert!(
        matches!(
            stop_of(&actions),
            Some(StopReason::SwapBudgetProjected { .. })
        ),
        "{actions:?}"
    );
}

#[test]
fn an_aimed_look_at_the_regular_check_is_that_check_too() {
    // Aimed at the time of the check at 300 ms (the crossing foreseen just before it), and
    // grown slower since (100 MiB/s): it is the regular check, and the next one is due a
    // whole interval after it, none aimed.
    let (mut engine, _, root) = growing();
    let actions = engine.on_sample(&look(3, 300, 80 * MIB, true, root));
    assert_eq!(stop_of(&actions), None);
    assert_eq!(
        engine.next_look(),
        Some((Duration::from_millis(100), false))
    );
}
