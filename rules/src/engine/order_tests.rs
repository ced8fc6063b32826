//! The pause order among several guarded jobs (`crate::policy::order`) as the engine
//! carries it out: its own jobs (the app's), and other guards' jobs through
//! [`Action::MakeRoom`].

use std::collections::HashSet;

use super::tests::{
    cfg, has, id, moment, pausing, reached, running, set, signal_of, spec, stopped, t0, MIB,
};
use super::*;
use crate::policy::order::{Peer, PeerAt};
use crate::policy::StopReason;
use crate::sample::{Sample, TrackedSample};
use headroom_model::effects::{Control, JobSignal};
use headroom_model::members::Member;
use headroom_model::process::{ProcessIdentity, TreeMemory};

/// Sample `seq` (every 500 ms) of several one-process jobs; those in `paused` are stopped.
fn sample_of(
    seq: u64,
    swap: u64,
    free: f64,
    roots: &[ProcessIdentity],
    paused: &HashSet<u32>,
) -> Sample {
    let tracked = roots
        .iter()
        .map(|&root| {
            let member: Member = if paused.contains(&root.pid) {
                stopped(root)
            } else {
                running(root)
            };
            TrackedSample {
                identity: root,
                memory: Some(TreeMemory {
                    pid: root.pid,
                    footprint_bytes: 100 * MIB,
                    resident_bytes: 100 * MIB,
                    swap_bytes: None,
                    processes: 1,
                }),
                members: vec![member],
                kernel_peak_bytes: None,
                in_own_cgroup: false,
                cgroup_oom_kills: None,
            }
        })
        .collect();
    Sample {
        aimed: false,
        seq,
        at: t0() + Duration::from_millis(seq * 500),
        since_start: Duration::from_millis(seq * 500),
        system: Some(headroom_model::testdata::system_counters(swap, free)),
        tracked,
        error: None,
    }
}

/// The pids paused and resumed by `actions`, carrying the signals out on `paused`.
fn carry(
    engine: &mut Engine,
    jobs: &[(u64, ProcessIdentity)],
    actions: &[Action],
    paused: &mut HashSet<u32>,
) -> (Vec<u32>, Vec<u32>) {
    let (mut stops, mut conts) = (Vec::new(), Vec::new());
    for action in actions {
        let Action::Signal {
            job_id,
            signal,
            members,
        } = action
        else {
            continue;
        };
        let root = jobs.iter().find(|(j, _)| j == job_id).map(|(_, r)| *r);
        let Some(root) = root else { continue };
        match signal {
            JobSignal::Pause => {
                paused.insert(root.pid);
                stops.push(root.pid);
            }
            JobSignal::Resume => {
                paused.remove(&root.pid);
                conts.push(root.pid);
            }
            _ => {}
        }
        reached(engine, *job_id, *signal, members);
    }
    (stops, conts)
}

fn made_room(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| {
            matches!(
                a,
                Action::Notify {
                    event: JobEvent::MadeRoom { .. },
                    ..
                }
            )
        })
        .count()
}

#[test]
fn the_youngest_guard_pauses_first_and_resumes_first() {
    let mut engine = Engine::default();
    let roots = [id(60), id(61), id(62)];
    // Started a second apart: 60 is the oldest, 62 the youngest.
    let jobs: Vec<(u64, ProcessIdentity)> = roots
        .iter()
        .enumerate()
        .map(|(k, &root)| {
            let limits = pausing(100 * MIB, 3, Some(40.0));
            let job = engine.add(
                set(root),
                spec("hog", JobMode::Guard, limits),
                StartMemory::swap(0),
                moment(k as u64 * 1000),
            );
            (job, root)
        })
        .collect();
    let mut paused = HashSet::new();
    let feed = |engine: &mut Engine, seq: u64, swap: u64, free: f64, paused: &mut HashSet<u32>| {
        let actions = engine.on_sample(&sample_of(seq, swap, free, &roots, paused));
        let (stops, conts) = carry(engine, &jobs, &actions, paused);
        (stops, conts, made_room(&actions))
    };
    feed(&mut engine, 4, 0, 50.0, &mut paused);
    // Swap grows past every budget at once: only the youngest pauses; the two older ones
    // go on, their budgets counted again from 150 MiB.
    let (stops, _, room) = feed(&mut engine, 5, 150 * MIB, 50.0, &mut paused);
    assert_eq!(stops, vec![62]);
    assert_eq!(room, 2);
    for seq in 6..10 {
        let (stops, conts, _) = feed(&mut engine, seq, 150 * MIB, 20.0, &mut paused);
        assert!(stops.is_empty() && conts.is_empty(), "{seq}");
    }
    // It goes on growing: the next youngest.
    let (stops, _, room) = feed(&mut engine, 10, 300 * MIB, 20.0, &mut paused);
    assert_eq!(stops, vec![61]);
    assert_eq!(room, 1, "the oldest goes on");
    // And again: the oldest, last.
    let (stops, _, _) = feed(&mut engine, 16, 450 * MIB, 20.0, &mut paused);
    assert_eq!(stops, vec![60]);
    assert_eq!(paused.len(), 3);
    // Memory back, swap calm: resumed youngest first, one calm period (2 s) apart.
    let mut resumed: Vec<(u32, u64)> = Vec::new();
    for seq in 17..60 {
        let (_, conts, _) = feed(&mut engine, seq, 450 * MIB, 60.0, &mut paused);
        resumed.extend(conts.iter().map(|&pid| (pid, seq)));
    }
    let order: Vec<u32> = resumed.iter().map(|r| r.0).collect();
    assert_eq!(order, vec![62, 61, 60], "{resumed:?}");
    for pair in resumed.windows(2) {
        assert!(
            pair[1].1 - pair[0].1 >= 4,
            "a calm period apart: {resumed:?}"
        );
    }
}

fn remote(pid: u32, started_ms: u64, paused_since_ms: Option<i64>) -> Peer {
    Peer {
        at: PeerAt::Guard {
            guard_pid: pid + 1000,
        },
        pid,
        started_at_ms: headroom_model::units::unix_ms(t0() + Duration::from_millis(started_ms)),
        paused_since_ms,
        resumed_at_ms: None,
        resumes_by_itself: true,
        pausable: paused_since_ms.is_none(),
    }
}

#[test]
fn another_guards_younger_job_is_asked_and_a_refusal_is_not_asked_again() {
    let leader = id(70);
    let mut engine = Engine::default();
    let job = engine.add(
        set(leader),
        spec("old", JobMode::Guard, pausing(100 * MIB, 3, None)),
        StartMemory::swap(0),
        moment(0),
    );
    let none = HashSet::new();
    engine.on_sample(&sample_of(0, 0, 50.0, &[leader], &none));
    let younger = remote(71, 5_000, None);
    let older = remote(69, 0, None);
    engine.set_peers(vec![older, younger.clone()]);
    let a = engine.on_sample(&sample_of(12, 150 * MIB, 50.0, &[leader], &none));
    let asked: Vec<&Peer> = a
        .iter()
        .filter_map(|x| match x {
            Action::MakeRoom { peer, .. } => Some(peer),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        vec![&younger],
        "the younger one is asked, not the older"
    );
    assert!(
        signal_of(&a).is_none(),
        "no pause of its own while the ask is out"
    );
    let a = engine.room_made(job, &younger, Ok(()), moment(6_000));
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::MadeRoom {
                younger_pid: 71,
                asked: true,
                ..
            },
            ..
        }
    )));
    assert!(!engine.is_paused(job));
    // Its budget counts from 150 MiB: 200 is within it.
    let a = engine.on_sample(&sample_of(13, 200 * MIB, 50.0, &[leader], &none));
    assert!(signal_of(&a).is_none() && made_room(&a) == 0, "{a:?}");
    // Past it again, the younger one refuses (no pauses left): it is not asked again, and
    // the next check pauses this one.
    let a = engine.on_sample(&sample_of(14, 300 * MIB, 50.0, &[leader], &none));
    assert!(has(&a, |x| matches!(x, Action::MakeRoom { .. })));
    assert!(engine
        .room_made(job, &younger, Err("no pauses left".into()), moment(7_000))
        .is_empty());
    let a = engine.on_sample(&sample_of(15, 310 * MIB, 50.0, &[leader], &none));
    assert!(!has(&a, |x| matches!(x, Action::MakeRoom { .. })));
    assert_eq!(signal_of(&a), Some((JobSignal::Pause, vec![70])));
}

#[test]
fn a_younger_job_paused_by_the_same_growth_answers_the_crossing() {
    let leader = id(80);
    let mut engine = Engine::default();
    engine.add(
        set(leader),
        spec("old", JobMode::Guard, pausing(100 * MIB, 3, None)),
        StartMemory::swap(0),
        moment(0),
    );
    let none = HashSet::new();
    engine.on_sample(&sample_of(0, 0, 50.0, &[leader], &none));
    let paused_ms = headroom_model::units::unix_ms(t0() + Duration::from_millis(5_500));
    engine.set_peers(vec![remote(81, 2_000, Some(paused_ms))]);
    let a = engine.on_sample(&sample_of(12, 150 * MIB, 50.0, &[leader], &none));
    assert!(signal_of(&a).is_none() && !has(&a, |x| matches!(x, Action::MakeRoom { .. })));
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::MadeRoom {
                younger_pid: 81,
                asked: false,
                ..
            },
            ..
        }
    )));
}

#[test]
fn make_room_is_for_running_guards_that_pause_with_pauses_left() {
    let mut engine = Engine::default();
    let stopper = engine.add(
        set(id(90)),
        spec("s", JobMode::Guard, cfg(100 * MIB)),
        StartMemory::swap(0),
        moment(0),
    );
    let watch = engine.add(
        set(id(91)),
        spec("w", JobMode::Watch, cfg(0)),
        StartMemory::swap(0),
        moment(0),
    );
    let spent = engine.add(
        set(id(92)),
        spec("p", JobMode::Guard, pausing(100 * MIB, 0, None)),
        StartMemory::swap(0),
        moment(0),
    );
    let pauser = engine.add(
        set(id(93)),
        spec("p", JobMode::Guard, pausing(100 * MIB, 2, None)),
        StartMemory::swap(0),
        moment(0),
    );
    for (job, pid) in [(stopper, 90), (watch, 91), (spent, 92)] {
        assert!(
            matches!(
                engine.make_room(job, Some(7), moment(10)),
                Err(RequestError::WontYield(p, _)) if p == pid
            ),
            "{pid}"
        );
    }
    let a = engine.make_room(pauser, Some(7), moment(10)).unwrap();
    assert_eq!(signal_of(&a), Some((JobSignal::Pause, vec![93])));
    assert!(has(&a, |x| matches!(
        x,
        Action::Notify {
            event: JobEvent::Paused {
                reason: Some(StopReason::MakesRoom { for_pid: Some(7) }),
                ..
            },
            ..
        }
    )));
    // Asked again while paused: done, nothing more to do.
    assert!(engine
        .make_room(pauser, Some(7), moment(20))
        .unwrap()
        .is_empty());
    assert_eq!(
        engine
            .request(pauser, Control::Yield, moment(30))
            .map(|a| a.len()),
        Ok(0)
    );
}
