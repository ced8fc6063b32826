//! Keys, needs, predictions and answers, table-tested; the recorded Mac traces as past runs.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use std::time::Duration;

use super::*;
use crate::policy::StopReason;

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
            "python3 gen.py --steps 20",
        ),
        ("python3 gen.py --steps 20", "python3 gen.py --steps 20"),
        (
            "/opt/venv/bin/python -u ./src/gen.py x",
            "python -u gen.py x",
        ),
        (
            "python3 -m diffusers.cli --fast",
            "python3 -m diffusers.cli --fast",
        ),
        ("python3 -c print(1)", "python3 -c print(1)"),
        (
            "/usr/local/bin/llama-server -m model.gguf",
            "llama-server -m model.gguf",
        ),
        ("node /srv/app/index.js", "node index.js"),
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
        "python3 gen.py -n 2"
    );
}

fn verdict(footprint: u64, growth: u64, ended: EndReason) -> Verdict {
    Verdict {
        fits: growth <= 64 * MIB,
        swap_growth_bytes: growth,
        swap_start_bytes: 0,
        peak_footprint_bytes: Some(footprint),
        lowest_free_percent: None,
        in_use_rise_bytes: None,
        duration: Duration::from_secs(60),
        ended,
        processes: 1,
        fits_tolerance_bytes: 64 * MIB,
        stages: Vec::new(),
        tight: None,
        pauses: 0,
        paused: Duration::ZERO,
        oom_killed: None,
    }
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
        in_use_rise_bytes: Some(21 * GIB),
        ..touched.clone()
    };
    assert_eq!(need_of(&counted, mac(48 * GIB, 90.0)).0, 21 * GIB);
    // What swapped out came back into free memory: the two add up to what it took.
    let swapped = Verdict {
        lowest_free_percent: Some(50.0),
        ..verdict(10 * GIB, 2 * GIB, EndReason::Exited { code: 0 })
    };
    assert_eq!(need_of(&swapped, mac(40 * GIB, 75.0)).0, 12 * GIB);
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

#[test]
fn the_recorded_mac_runs_predict_themselves() {
    // Each fixture run as the one past run of its key: a run that swapped from its starting
    // free memory is predicted not to fit there; one that did not swap fits at its own.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/macos-traces");
    let total = 48 * GIB; // the M5 Pro's memory (the traces do not say)
    for (file, swapped) in [
        ("qwen-image-2026-10-06/eager-1.trace.jsonl", true),
        (
            "qwen-image-2026-10-06/first-attempt/eager-1.trace.jsonl",
            true,
        ),
        ("qwen-image-2026-10-06/staged-1.trace.jsonl", false),
        ("pixal3d-2026-10-05/eager-1.trace.jsonl", true),
        ("pixal3d-2026-10-05/staged-1.trace.jsonl", false),
    ] {
        let trace = crate::trace::read_trace(&dir.join(file)).unwrap();
        let first = &trace.samples[0];
        let peak_fp = trace.samples.iter().map(|s| s.footprint).max().unwrap();
        let growth = trace.samples.iter().map(|s| s.swap_used).max().unwrap() - first.swap_used;
        let lowest = trace
            .samples
            .iter()
            .map(|s| s.level)
            .fold(f64::MAX, f64::min);
        let ran = Verdict {
            lowest_free_percent: Some(lowest),
            ..verdict(peak_fp, growth, EndReason::Exited { code: 0 })
        };
        let (need, _) = need_of(
            &ran,
            Taken::Machine {
                base_bytes: total,
                free_start_percent: first.level,
            },
        );
        let p = predict(&[PastRun {
            need_bytes: need,
            age: HOUR,
            did_not_fit: swapped,
            run_time: None,
        }])
        .unwrap();
        let free_at_start = (first.level / 100.0 * total as f64) as u64;
        let floor = total / 10;
        let room = Room {
            free_bytes: free_at_start,
            floor_bytes: floor,
        };
        let fits = answer(&p, room).is_ok();
        assert_eq!(fits, !swapped, "{file}: need {need}, free {free_at_start}");
    }
}

/// A fixture run cut at `until_seconds`, judged as `history import` judges a trace: its
/// verdict and its level at the start.
fn fixture_run(file: &str, until_seconds: f64) -> (Verdict, f64) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/macos-traces");
    let trace = crate::trace::read_trace(&dir.join(file)).unwrap();
    let samples: Vec<_> = trace
        .samples
        .iter()
        .filter(|s| s.t <= until_seconds)
        .collect();
    let first = samples[0];
    let peak_footprint = samples.iter().map(|s| s.footprint).max().unwrap();
    let swap_peak = samples.iter().map(|s| s.swap_used).max().unwrap();
    let lowest = samples.iter().map(|s| s.level).fold(f64::MAX, f64::min);
    let ran = Verdict {
        lowest_free_percent: Some(lowest),
        ..verdict(
            peak_footprint,
            swap_peak - first.swap_used,
            EndReason::Exited { code: 0 },
        )
    };
    (ran, first.level)
}

#[test]
fn each_recorded_mac_run_needs_what_its_rule_says() {
    let ram = 48 * GIB; // the M5 Pro's memory (the traces do not say)
    let need = |file: &str, until: f64| {
        let (ran, start) = fixture_run(file, until);
        let taken = Taken::Machine {
            base_bytes: ram,
            free_start_percent: start,
        };
        (need_of(&ran, taken).0, ran, start)
    };
    // Filled RAM with pages it touched: footprint 0.3 → 17.7 GB in the first 59 s at a level
    // of 90 (the drop of the level alone said about 0).
    let (eager_60, ran, _) = need("pixal3d-2026-10-05/eager-1.trace.jsonl", 60.0);
    assert_eq!(ran.swap_growth_bytes, 0, "no swap in the first minute");
    assert!(eager_60 >= 15 * GIB, "{eager_60}");
    // A staged run whose footprint passed the machine's memory without swapping: compression.
    let (staged, ran, _) = need("pixal3d-2026-10-05/staged-1.trace.jsonl", f64::MAX);
    assert!(ran.peak_footprint_bytes.unwrap() > ram && ran.swap_growth_bytes == 0);
    assert!(staged < ram, "{staged}");
    // A staged run that stayed well inside memory: its footprint.
    let (qwen_staged, ran, _) = need("qwen-image-2026-10-06/staged-1.trace.jsonl", f64::MAX);
    assert_eq!(qwen_staged, ran.peak_footprint_bytes.unwrap());
    // The runs that swapped keep their answers: the drop of the level plus the swap growth.
    for file in [
        "qwen-image-2026-10-06/eager-1.trace.jsonl",
        "qwen-image-2026-10-06/first-attempt/eager-1.trace.jsonl",
        "pixal3d-2026-10-05/eager-1.trace.jsonl",
    ] {
        let (got, ran, start) = need(file, f64::MAX);
        let drop = start - ran.lowest_free_percent.unwrap();
        let before = (drop / 100.0 * ram as f64) as u64 + ran.swap_growth_bytes;
        assert!(ran.swap_growth_bytes > GIB, "{file} swapped");
        assert_eq!(got, before, "{file}");
    }
}
