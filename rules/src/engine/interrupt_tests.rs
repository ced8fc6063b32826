//! `--on-budget interrupt` (`interrupt.rs`): SIGINT to the leader alone at the budget, the job
//! going on; stopped if swap still grows half a budget more; its whole budget back once swap
//! stops growing; the free floor still stops it.

use std::time::Duration;

use super::tests::{cfg, finished, has, id, moment, sample, set, signal_of, spec, MIB};
use super::*;
use crate::policy::{JobEvent, Limits, OnBudget};
use headroom_model::effects::JobSignal;

fn interrupting(budget: u64) -> Limits {
    Limits {
        on_budget: OnBudget::Interrupt,
        resume_calm: Duration::from_secs(2),
        ..cfg(budget)
    }
}

fn interrupted(actions: &[Action]) -> bool {
    has(actions, |a| {
        matches!(
            a,
            Action::Notify {
                event: JobEvent::Interrupted { .. },
                ..
            }
        )
    })
}

/// An engine with the job of process `pid` that interrupts at `limits`, seen once at swap 0.
fn notebook(pid: u32, limits: Limits) -> (Engine, headroom_model::process::ProcessIdentity) {
    let leader = id(pid);
    let mut jobs = Engine::default();
    jobs.add(
        set(leader),
        spec("notebook", JobMode::Guard, limits),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, 0, leader, true));
    (jobs, leader)
}

#[test]
fn the_budget_interrupts_the_leader_and_the_hard_limit_stops_it() {
    let (mut jobs, leader) = notebook(60, interrupting(100 * MIB));
    let a = jobs.on_sample(&sample(1, 120 * MIB, leader, true));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Interrupt, vec![60])),
        "{a:?}"
    );
    assert!(interrupted(&a), "{a:?}");
    // It goes on: growth under half a budget past the interrupt is no stop.
    let a = jobs.on_sample(&sample(2, 160 * MIB, leader, true));
    assert!(signal_of(&a).is_none(), "{a:?}");
    // Half a budget (50 MiB) past the interrupt (120 MiB): stopped.
    let a = jobs.on_sample(&sample(3, 175 * MIB, leader, true));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Terminate, vec![60])),
        "{a:?}"
    );
}

#[test]
fn calm_swap_gives_the_whole_budget_back_and_the_next_crossing_interrupts_again() {
    let (mut jobs, leader) = notebook(61, interrupting(100 * MIB));
    assert!(interrupted(&jobs.on_sample(&sample(
        1,
        120 * MIB,
        leader,
        true
    ))));
    // Swap stays at 130 MiB for the calm (2 s: four samples 500 ms apart).
    let mut rearmed = false;
    for seq in 2..8 {
        let a = jobs.on_sample(&sample(seq, 130 * MIB, leader, true));
        assert!(signal_of(&a).is_none(), "{a:?}");
        rearmed |= has(&a, |x| {
            matches!(
                x,
                Action::Notify {
                    event: JobEvent::Rearmed { swap_used_bytes },
                    ..
                } if *swap_used_bytes == 130 * MIB
            )
        });
    }
    assert!(rearmed);
    // 90 MiB more is within the whole budget again (the hard limit was 50).
    assert!(signal_of(&jobs.on_sample(&sample(8, 220 * MIB, leader, true))).is_none());
    // A second crossing interrupts again.
    let a = jobs.on_sample(&sample(9, 240 * MIB, leader, true));
    assert_eq!(
        signal_of(&a),
        Some((JobSignal::Interrupt, vec![61])),
        "{a:?}"
    );
    // The job ends on its own: its verdict is its own.
    let verdict = finished(&jobs.on_sample(&sample(10, 240 * MIB, leader, false))).unwrap();
    assert!(!verdict.ended.by_the_guard(), "{verdict:?}");
}

#[test]
fn the_free_floor_stops_an_interrupting_job() {
    let limits = Limits {
        kill_free_percent: 10.0,
        ..interrupting(100 * GIB)
    };
    let (mut jobs, leader) = notebook(62, limits);
    let mut stopped = false;
    for seq in 1..10 {
        let a = jobs.on_sample(&super::tests::at_free(seq, 0, 2.0, leader));
        assert!(!interrupted(&a), "{a:?}");
        stopped |= signal_of(&a) == Some((JobSignal::Terminate, vec![62]));
    }
    assert!(stopped);
}

const GIB: u64 = 1 << 30;
