//! The queue's rules, table-tested: room and reservations, first come first admitted, and
//! when a later job may pass an earlier one; the files: tickets, stale places, leaving.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use super::files::{places, HeldPlace};
use super::*;
use headroom_os::counters::Counters;
use headroom_os::process::ProcessLookup;

const GIB: u64 = 1 << 30;
const MIN_MS: i64 = 60_000;
const NOW_MS: i64 = 1_000 * MIN_MS;

fn place(ticket: u64, need_gib: Option<u64>, run_time_min: Option<u64>) -> Place {
    Place {
        guard: ProcessIdentity {
            pid: 1000 + u32::try_from(ticket).unwrap(),
            start_time: ticket,
        },
        ticket,
        key: format!("job{ticket}"),
        command: format!("job{ticket}"),
        need_bytes: need_gib.map(|n| n * GIB),
        run_time_ms: run_time_min.map(|m| m * 60_000),
        joined_at_ms: NOW_MS - 10 * MIN_MS,
        admitted_at_ms: None,
        used_bytes: 0,
    }
}

/// `place` admitted `ago_min` minutes ago, having used `used_gib` of its need.
fn running(ticket: u64, need_gib: u64, run_time_min: u64, ago_min: i64, used_gib: u64) -> Place {
    Place {
        admitted_at_ms: Some(NOW_MS - ago_min * MIN_MS),
        used_bytes: used_gib * GIB,
        ..place(ticket, Some(need_gib), Some(run_time_min))
    }
}

/// `free_bytes` of room, no floor.
fn room(free_bytes: u64) -> Room {
    Room {
        free_bytes,
        floor_bytes: 0,
    }
}

fn memory(free_gib: u64, floor_gib: u64) -> Memory {
    Memory {
        room: Room {
            free_bytes: free_gib * GIB,
            floor_bytes: floor_gib * GIB,
        },
        now_ms: NOW_MS,
    }
}

/// The decision as a short word: "go", or "wait N" (N its position) with "behind KEY".
fn word(decision: Result<(), WaitReason>) -> String {
    match decision {
        Ok(()) => "go".to_string(),
        Err(WaitReason::InLine {
            position, behind, ..
        }) => match behind {
            Some(key) => format!("wait {position} behind {key}"),
            None => format!("wait {position}"),
        },
        Err(other) => format!("other: {other}"),
    }
}

#[test]
fn admission_by_room_reservations_and_turn() {
    let cases: Vec<(&str, Place, Vec<Place>, Memory, &str)> =
        vec![
        (
            "alone, fits",
            place(1, Some(10), None),
            vec![],
            memory(20, 2),
            "go",
        ),
        (
            "alone, the floor makes it short",
            place(1, Some(10), None),
            vec![],
            memory(11, 2),
            "wait 1",
        ),
        (
            "alone, no past run: goes (the start gate judged --wait-free)",
            place(1, None, None),
            vec![],
            memory(1, 0),
            "go",
        ),
        (
            "a job just admitted reserves its need: free looks large, the room is not",
            place(2, Some(12), None),
            vec![running(1, 12, 20, 0, 0)],
            memory(20, 0),
            "wait 1",
        ),
        (
            "the reservation shrinks as the running job takes its memory",
            place(2, Some(6), None),
            vec![running(1, 12, 20, 1, 8)],
            memory(12, 0),
            "go",
        ),
        (
            "a running job past its need reserves nothing more",
            place(2, Some(6), None),
            vec![running(1, 4, 20, 1, 9)],
            memory(7, 0),
            "go",
        ),
        (
            "first come, first admitted: an earlier waiter that does not fit holds the line",
            place(2, Some(4), None),
            vec![place(1, Some(30), None)],
            memory(20, 0),
            "wait 2 behind job1",
        ),
        (
            "a later job passes when the earlier one still fits beside it",
            place(2, Some(4), None),
            vec![place(1, Some(10), None)],
            memory(20, 0),
            "go",
        ),
        (
            "the earlier one would not fit beside it: no pass",
            place(2, Some(12), None),
            vec![place(1, Some(10), None)],
            memory(20, 0),
            "wait 2 behind job1",
        ),
        (
            "backfill: it ends before the earlier one could start (the running job ends in 30 min)",
            place(2, Some(8), Some(10)),
            vec![place(1, Some(20), None), running(3, 12, 40, 10, 12)],
            memory(10, 0),
            "go",
        ),
        (
            "backfill refused: it would still run when the earlier one could start",
            place(2, Some(8), Some(40)),
            vec![place(1, Some(20), None), running(3, 12, 40, 10, 12)],
            memory(10, 0),
            "wait 2 behind job1",
        ),
        (
            "backfill refused: the running job's end is not predicted",
            place(2, Some(8), Some(1)),
            vec![
                place(1, Some(20), None),
                Place {
                    run_time_ms: None,
                    ..running(3, 12, 40, 10, 12)
                },
            ],
            memory(10, 0),
            "wait 2 behind job1",
        ),
        (
            "backfill refused: its own run time is unknown",
            place(2, Some(8), None),
            vec![place(1, Some(20), None), running(3, 12, 40, 10, 12)],
            memory(10, 0),
            "wait 2 behind job1",
        ),
        (
            "an earlier job with no past run is never passed",
            place(2, Some(1), Some(1)),
            vec![place(1, None, None)],
            memory(20, 0),
            "wait 2 behind job1",
        ),
        (
            "a job with no past run waits its turn",
            place(2, None, None),
            vec![place(1, Some(30), None)],
            memory(20, 0),
            "wait 2 behind job1",
        ),
        (
            "later waiters do not hold an earlier one up",
            place(1, Some(10), None),
            vec![place(2, Some(5), None), place(3, Some(5), None)],
            memory(12, 0),
            "go",
        ),
        (
            "its position counts only the earlier waiters",
            place(3, Some(50), None),
            vec![place(1, Some(1), None), place(2, Some(1), None), running(4, 1, 1, 0, 1)],
            memory(20, 0),
            "wait 3",
        ),
        (
            "it must not delay any earlier waiter, not just the first",
            place(3, Some(8), None),
            vec![place(1, Some(2), None), place(2, Some(14), None)],
            memory(20, 0),
            "wait 3 behind job2",
        ),
    ];
    for (name, me, others, memory, want) in cases {
        assert_eq!(word(decide(&me, &others, memory)), want, "{name}");
    }
}

#[test]
fn the_waiting_reason_says_the_need_the_room_and_the_reservation() {
    let me = place(2, Some(12), None);
    let others = [running(1, 12, 20, 0, 2)];
    let reason = decide(&me, &others, memory(20, 2)).unwrap_err();
    assert_eq!(
        reason.to_string(),
        "needs 12 GiB, 8.0 GiB free above the floor (10 GiB held for jobs just started); 1st in line"
    );
    let behind = decide(
        &place(2, Some(4), None),
        &[place(1, Some(30), None)],
        memory(20, 0),
    );
    assert!(
        behind
            .unwrap_err()
            .to_string()
            .ends_with("; 2nd in line, behind job1"),
        "the job it waits behind is named"
    );
}

#[test]
fn a_line_takes_tickets_in_turn_admits_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let counters = Counters::new();
    let me = headroom_model::process::ProcessIdentity::of(&counters, std::process::id()).unwrap();
    let first = Place {
        guard: me,
        ..place(0, Some(1), None)
    };
    let mut line = HeldPlace::join(dir.path(), &dir.path().join("jobs"), first, &counters).unwrap();
    assert_eq!(line.place().ticket, 1);
    let listed = places(dir.path(), &dir.path().join("jobs"), &counters);
    assert_eq!(listed.len(), 1);
    assert!(listed[0].is_waiting());
    // Not enough room: it stays waiting; then room: admitted, and its file says so.
    let short = line.admit(room(GIB / 2), &counters).unwrap();
    assert!(short.is_err());
    assert!(places(dir.path(), &dir.path().join("jobs"), &counters)[0].is_waiting());
    line.admit(room(4 * GIB), &counters).unwrap().unwrap();
    let listed = places(dir.path(), &dir.path().join("jobs"), &counters);
    assert!(!listed[0].is_waiting());
    assert_eq!(listed[0].reserved_bytes(), GIB);
    line.used(GIB).unwrap();
    assert_eq!(
        places(dir.path(), &dir.path().join("jobs"), &counters)[0].reserved_bytes(),
        0
    );
    drop(line);
    assert!(places(dir.path(), &dir.path().join("jobs"), &counters).is_empty());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != ".lock")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_place_whose_guard_is_gone_is_removed_and_holds_nobody_up() {
    let dir = tempfile::tempdir().unwrap();
    let counters = Counters::new();
    // A guard that has exited: a real process, reaped, so its identity names nobody.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = headroom_model::process::ProcessIdentity::of(&counters, child.id()).unwrap_or(
        ProcessIdentity {
            pid: child.id(),
            start_time: 1,
        },
    );
    child.wait().unwrap();
    let stale = Place {
        guard: gone,
        ..place(1, Some(100), None)
    };
    let path = dir
        .path()
        .join(format!("{}-{}.json", gone.pid, gone.start_time));
    std::fs::write(&path, serde_json::to_vec(&stale).unwrap()).unwrap();
    let me = headroom_model::process::ProcessIdentity::of(&counters, std::process::id()).unwrap();
    let mine = Place {
        guard: me,
        ..place(0, Some(1), None)
    };
    let mut line = HeldPlace::join(dir.path(), &dir.path().join("jobs"), mine, &counters).unwrap();
    assert!(!path.exists(), "the stale place was removed");
    assert_eq!(line.place().ticket, 1, "the stale ticket is not counted");
    line.admit(room(4 * GIB), &counters).unwrap().unwrap();
}

#[test]
fn an_admitted_place_whose_guard_is_gone_stays_while_its_job_runs_on() {
    // A guard admitted and killed outright: its job runs on without it, and so does the
    // need it was admitted with. A waiting place of a guard gone holds nothing.
    let dir = tempfile::tempdir().unwrap();
    let gone = |pid| ProcessIdentity { pid, start_time: 1 };
    let admitted = Place {
        guard: gone(10),
        admitted_at_ms: Some(5),
        ..place(1, Some(GIB), None)
    };
    let waiting = Place {
        guard: gone(11),
        ..place(2, Some(GIB), None)
    };
    for p in [&admitted, &waiting] {
        let path = dir
            .path()
            .join(format!("{}-{}.json", p.guard.pid, p.guard.start_time));
        std::fs::write(&path, serde_json::to_vec(p).unwrap()).unwrap();
    }
    let listed = super::files::places_at(dir.path(), |_| false, |_| true);
    assert_eq!(listed, vec![admitted.clone()], "the job runs on: kept");
    let listed = super::files::places_at(dir.path(), |_| false, |_| false);
    assert!(listed.is_empty(), "its job ended: removed");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
