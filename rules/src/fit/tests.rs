//! Keys, needs, predictions and answers, table-tested (the recorded Mac traces as past runs:
//! `core/tests/it/fit_fixtures.rs`, where traces are read).

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use std::time::Duration;

use super::*;
use crate::policy::StopReason;
use crate::testdata::verdict;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const HOUR: Duration = Duration::from_secs(3600);

fn argv(line: &str) -> Vec<String> {
    line.split(' ').map(str::to_string).collect()
}

#[test]
fn keys_name_the_program_and_script_and_keep_the_arguments() {
    let cases = [
        (
            "/usr/bin/python3.11 /home/a/gen.py --steps 20",
            "gen.py --steps 20",
        ),
        ("python3 gen.py --steps 20", "gen.py --steps 20"),
        ("/opt/venv/bin/python -u ./src/gen.py x", "gen.py x"),
        // One script, one key, however it is started.
        ("./gen.py x", "gen.py x"),
        ("/usr/bin/env python3 gen.py x", "gen.py x"),
        ("env PYTHONHASHSEED=0 python3 gen.py x", "gen.py x"),
        ("python -m headroom_memory gen.py x", "gen.py x"),
        ("python3 -X importtime gen.py x", "gen.py x"),
        (
            "python3 -m diffusers.cli --fast",
            "python3 -m diffusers.cli --fast",
        ),
        ("python3 -c print(1)", "python3 -c print(1)"),
        (
            "/usr/local/bin/llama-server -m model.gguf",
            "llama-server -m model.gguf",
        ),
        ("node /srv/app/index.js", "index.js"),
        ("bash", "bash"),
        ("./build/hog 600M", "hog 600M"),
    ];
    for (line, want) in cases {
        assert_eq!(job_key(&argv(line), None), want, "{line}");
    }
    assert_eq!(
        job_key(&argv("python3 a.py --seed 1"), Some(" render ")),
        "render"
    );
    assert_eq!(job_key(&[], None), "");
    assert_eq!(
        key_of_command_line("/usr/bin/python3  gen.py  -n 2"),
        "gen.py -n 2"
    );
}

#[test]
fn the_need_counts_what_swapped_and_raises_a_run_that_was_ended() {
    // The footprint illusion: 18.5 GB footprint, 9.6 GB swapped: it needed both.
    let exited = verdict(18_500 * MIB, 9_600 * MIB, EndReason::Exited { code: 0 });
    assert_eq!(need_of(&exited, Taken::Footprint), (28_100 * MIB, false));
    // A Mac's run without page counts (a recorded trace): a footprint that passed the
    // machine's memory without swapping is compression: what it took is the drop of the level
    // (the compressor's and wired pages it forced) or what stayed available at its lowest,
    // whichever is larger, never its footprint.
    let compressed = Verdict {
        lowest_free_percent: Some(33.0),
        ..verdict(69 * GIB, 0, EndReason::Exited { code: 0 })
    };
    let mac = |base_bytes, free_start_percent| Taken::Machine {
        base_bytes,
        free_start_percent,
    };
    let (need, _) = need_of(&compressed, mac(48 * GIB, 89.0));
    assert_eq!(need, (0.56 * (48 * GIB) as f64) as u64);
    // A run that filled RAM with pages it touched: the level did not move (active pages count
    // as free), the footprint (up to what stayed available) is what it took.
    let touched = Verdict {
        lowest_free_percent: Some(89.0),
        ..verdict(17 * GIB, 0, EndReason::Exited { code: 0 })
    };
    assert_eq!(need_of(&touched, mac(48 * GIB, 90.0)).0, 17 * GIB);
    // With the kernel's page counts (a live Mac run) the rise of memory in use is what it
    // took, whatever the footprint and the level say.
    let counted = Verdict {
        in_use_taken_bytes: Some(21 * GIB),
        ..touched.clone()
    };
    assert_eq!(need_of(&counted, mac(48 * GIB, 90.0)).0, 21 * GIB);
    // A run that swapped filled the RAM it found (75 % of 40 GiB free at its start), then
    // pushed out what did not fit: it needed both.
    let swapped = Verdict {
        lowest_free_percent: Some(50.0),
        ..verdict(10 * GIB, 2 * GIB, EndReason::Exited { code: 0 })
    };
    assert_eq!(need_of(&swapped, mac(40 * GIB, 75.0)).0, 32 * GIB);
    let stopped = verdict(
        10 * GIB,
        GIB,
        EndReason::Stopped {
            reason: StopReason::LowFree {
                free_percent: 5.0,
                floor_percent: 10.0,
            },
        },
    );
    let (need, lower) = need_of(&stopped, Taken::Footprint);
    assert!(lower);
    assert_eq!(
        need,
        (11.0 * GIB as f64 * 1.2) as u64,
        "× 1.2 beats + 100 MiB here"
    );
    let small = verdict(100 * MIB, 0, EndReason::Signaled { signal: 9 });
    assert_eq!(
        need_of(&small, Taken::Footprint),
        (200 * MIB, true),
        "+ 100 MiB beats × 1.2 here"
    );
}

fn run(gib: f64, hours: u64) -> PastRun {
    PastRun {
        need_bytes: (gib * GIB as f64) as u64,
        age: HOUR * hours as u32,
        did_not_fit: false,
        run_time: Some(Duration::from_secs(60 + hours)),
    }
}

#[test]
fn predictions_from_one_two_and_many_runs() {
    assert_eq!(predict(&[]), None);
    let one = predict(&[run(10.0, 1)]).unwrap();
    assert_eq!(one.need_bytes, (10.0 * GIB as f64 * MARGIN) as u64);
    let two = predict(&[run(10.0, 1), run(12.0, 30)]).unwrap();
    assert_eq!(
        two.need_bytes,
        (12.0 * GIB as f64 * MARGIN) as u64,
        "the larger of two"
    );
    // Many runs: an old outlier (a week ago) weighs little; the recent ones decide.
    let mut many = vec![run(10.0, 1), run(10.2, 2), run(9.9, 3), run(10.1, 5)];
    many.push(run(30.0, 24 * 7));
    let p = predict(&many).unwrap();
    let need = run(10.2, 0).need_bytes;
    assert_eq!(p.need_bytes, (need as f64 * MARGIN) as u64, "{p:?}");
    assert_eq!((p.runs, p.oldest), (5, HOUR * 24 * 7));
    assert_eq!(
        p.run_time,
        Some(Duration::from_secs(60 + 24 * 7).mul_f64(MARGIN)),
        "the longest run, with the margin"
    );
    // A recent large run is never averaged away.
    let p = predict(&[run(20.0, 0), run(10.0, 1), run(10.0, 2), run(10.0, 3)]).unwrap();
    assert_eq!(p.need_bytes, (20.0 * GIB as f64 * MARGIN) as u64);
}

#[test]
fn answers_count_the_free_floor() {
    let p = Prediction {
        need_bytes: 29 * GIB,
        runs: 4,
        oldest: HOUR,
        did_not_fit: 1,
        run_time: None,
    };
    let room = |free_gib: u64| Room {
        free_bytes: free_gib * GIB,
        floor_bytes: 4 * GIB,
    };
    assert_eq!(answer(&p, room(40)), Ok(7 * GIB));
    assert_eq!(answer(&p, room(33)), Ok(0));
    assert_eq!(answer(&p, room(25)), Err(8 * GIB));
    assert_eq!(answer(&p, room(0)), Err(29 * GIB));
}

proptest::proptest! {
    /// "Will it fit" never contradicts its own history: with one run that did not fit
    /// (swapped) from F free, a start with F or less free is never "fits".
    #[test]
    fn a_run_that_did_not_fit_from_f_free_never_fits_in_f(
        base_gib in 8u64..256,
        free_start_percent in 1.0f64..100.0,
        lowest_drop in 0.0f64..1.0,
        growth_mib in 65u64..20_000,
        footprint_gib in 0u64..300,
        free_now_share in 0.0f64..=1.0,
        floor_share in 0.0f64..0.2,
    ) {
        let base_bytes = base_gib * GIB;
        let ran = Verdict {
            lowest_free_percent: Some(free_start_percent * (1.0 - lowest_drop)),
            ..verdict(footprint_gib * GIB, growth_mib * MIB, EndReason::Exited { code: 0 })
        };
        proptest::prop_assume!(!ran.fits && ran.swap_growth_bytes > ran.fits_tolerance_bytes);
        let taken = Taken::Machine { base_bytes, free_start_percent };
        let (need_bytes, _) = need_of(&ran, taken);
        let past = PastRun {
            need_bytes,
            age: Duration::from_secs(60),
            did_not_fit: true,
            run_time: None,
        };
        let prediction = predict(&[past]).unwrap();
        let free_then = headroom_model::units::percent_of_bytes(free_start_percent, base_bytes);
        let room = Room {
            free_bytes: (free_then as f64 * free_now_share) as u64,
            floor_bytes: (base_bytes as f64 * floor_share) as u64,
        };
        proptest::prop_assert!(answer(&prediction, room).is_err(), "{need_bytes} fits in {room:?}");
    }
}

#[test]
fn making_room_names_the_largest_until_the_shortfall_is_covered() {
    let rows = |sizes: &[(&str, u64)]| -> Vec<(String, u64)> {
        sizes.iter().map(|(n, b)| ((*n).to_string(), *b)).collect()
    };
    let procs = rows(&[("mail", GIB), ("chrome", 5 * GIB), ("xcode", 3 * GIB)]);
    // (short by, the names in order)
    let table: &[(u64, &[&str])] = &[
        (0, &[]),
        (1, &["chrome"]),
        (5 * GIB, &["chrome"]),
        (5 * GIB + 1, &["chrome", "xcode"]),
        (8 * GIB + 1, &["chrome", "xcode", "mail"]),
        (100 * GIB, &["chrome", "xcode", "mail"]),
    ];
    for (short, want) in table {
        let got: Vec<String> = making_room(procs.clone(), *short)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(got, *want, "short by {short}");
    }
}

#[test]
fn a_line_with_a_known_need_waits_by_it_not_by_wait_free() {
    let limits = Limits {
        wait_free_percent: 40.0,
        ..Limits::default()
    };
    assert_eq!(line_gate(&limits, Some(GIB)).wait_free_percent, 0.0);
    assert_eq!(line_gate(&limits, None).wait_free_percent, 40.0);
    // Nothing else of the limits changes.
    assert_eq!(
        line_gate(&limits, Some(GIB)).swap_budget_bytes,
        limits.swap_budget_bytes
    );
}
