//! Table tests of the pure policy: start gate, stop rules, verdicts and event hysteresis.

use super::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn obs(t_ms: u64, swap: u64, free: f64) -> Observation {
    Observation {
        t: Duration::from_millis(t_ms),
        swap_used_bytes: swap,
        free_percent: free,
        footprint_bytes: None,
        compressed_bytes: None,
        in_use_bytes: None,
        others: None,
        room_bytes: None,
        oom_kills: None,
        limit_bytes: None,
        kernel_peak_bytes: None,
    }
}

#[test]
fn start_gate_table() {
    let limits = Limits::default();
    // (t ms, free %, busy command, expected) in sequence on one gate.
    type Step = (u64, f64, Option<&'static str>, &'static str);
    let steps: &[Step] = &[
        (0, 30.0, None, "wait:low"),
        (500, 39.9, None, "wait:low"),
        (1000, 40.0, Some("python train.py"), "wait:busy"),
        (30_000, 80.0, None, "wait:busy"),
        (61_000, 80.0, None, "go"),
    ];
    let mut gate = StartGate::default();
    for (t, free, busy, want) in steps {
        let got = match gate.decide(&limits, &obs(*t, 0, *free), *busy) {
            StartDecision::Go => "go",
            StartDecision::Wait(WaitReason::LowFree { .. }) => "wait:low",
            StartDecision::Wait(WaitReason::Busy { .. }) => "wait:busy",
            other => panic!("{other:?}"),
        };
        assert_eq!(got, *want, "at {t} ms");
    }
}

#[test]
fn the_queue_has_the_last_word_only_once_the_gate_says_go() {
    let limits = Limits {
        start_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let queued = || WaitReason::LowFree {
        free_percent: 50.0,
        need_percent: 60.0,
    };
    let mut gate = StartGate::default();
    // The gate's own reason first: the queue is not asked.
    let d = gate.decide_queued(&limits, &obs(0, 0, 5.0), None, || panic!("asked"));
    assert!(
        matches!(d, StartDecision::Wait(WaitReason::LowFree { free_percent, .. }) if free_percent == 5.0),
        "{d:?}"
    );
    // The gate says go, the queue says wait; past the time-out, give up for its reason.
    let d = gate.decide_queued(&limits, &obs(1999, 0, 80.0), None, || Err(queued()));
    assert_eq!(d, StartDecision::Wait(queued()));
    let d = gate.decide_queued(&limits, &obs(2000, 0, 80.0), None, || Err(queued()));
    assert_eq!(d, StartDecision::GiveUp(queued()));
    // Both say go.
    let d = gate.decide_queued(&limits, &obs(2500, 0, 80.0), None, || Ok(()));
    assert_eq!(d, StartDecision::Go);
}

#[test]
fn start_gate_goes_at_once_without_busy_and_gives_up_at_timeout() {
    let limits = Limits {
        start_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    assert_eq!(
        StartGate::default().decide(&limits, &obs(0, 0, 41.0), None),
        StartDecision::Go
    );
    let mut gate = StartGate::default();
    assert!(matches!(
        gate.decide(&limits, &obs(1999, 0, 5.0), None),
        StartDecision::Wait(_)
    ));
    let d = gate.decide(&limits, &obs(2000, 0, 5.0), None);
    assert!(
        matches!(d, StartDecision::GiveUp(WaitReason::LowFree { .. })),
        "{d:?}"
    );
}

#[test]
fn start_gate_waits_while_swap_plus_budget_passes_the_limit() {
    let limits = Limits {
        swap_budget_bytes: 2 * GIB,
        swap_limit_bytes: Some(10 * GIB),
        ..Limits::default()
    };
    let mut gate = StartGate::default();
    let d = gate.decide(&limits, &obs(0, 9 * GIB, 90.0), None);
    assert!(
        matches!(d, StartDecision::Wait(WaitReason::SwapLimit { .. })),
        "{d:?}"
    );
    assert_eq!(
        gate.decide(&limits, &obs(500, 8 * GIB, 90.0), None),
        StartDecision::Go
    );
}

#[test]
fn stop_rules_table() {
    let limits = Limits {
        swap_budget_bytes: 100 * MIB,
        swap_limit_bytes: Some(5 * GIB),
        lookahead: Duration::ZERO,
        ..Limits::default()
    };
    // Each case: swap at start, then a sequence of (swap, free); index of the stopping
    // observation and the reason kind.
    type Case = (u64, &'static [(u64, f64)], Option<(usize, &'static str)>);
    let cases: &[Case] = &[
        (GIB, &[(GIB, 50.0), (GIB + 100 * MIB, 50.0)], None),
        (
            GIB,
            &[(GIB, 50.0), (GIB + 100 * MIB + 1, 50.0)],
            Some((1, "budget")),
        ),
        (GIB, &[(GIB - 50 * MIB, 50.0), (GIB + 99 * MIB, 50.0)], None),
        (4 * GIB, &[(5 * GIB + 1, 50.0)], Some((0, "budget"))),
        (
            4 * GIB + 950 * MIB,
            &[(5 * GIB + 1, 50.0)],
            Some((0, "limit")),
        ),
        (0, &[(0, 9.0), (0, 50.0), (0, 9.0), (0, 12.0)], None),
        (0, &[(0, 9.0), (0, 9.9)], Some((1, "low"))),
        (0, &[(0, 10.0), (0, 10.0), (0, 10.0)], None),
    ];
    for (i, (start, seq, want)) in cases.iter().enumerate() {
        let mut job = Ledger::new(*start);
        let mut got = None;
        for (k, (swap, free)) in seq.iter().enumerate() {
            if let Some(r) = job.observe(Some(&limits), &obs(k as u64 * 500, *swap, *free)) {
                let kind = match r {
                    StopReason::SwapBudget { .. } => "budget",
                    StopReason::SwapBudgetProjected { .. } => "projected",
                    StopReason::SwapLimit { .. } => "limit",
                    StopReason::LowFree { .. } => "low",
                    StopReason::Requested | StopReason::MakesRoom { .. } => "requested",
                };
                got = Some((k, kind));
                break;
            }
        }
        assert_eq!(got, *want, "case {i}");
    }
}

#[test]
fn fast_growth_stops_before_passing_the_budget() {
    let limits = Limits {
        swap_budget_bytes: GIB,
        ..Limits::default()
    };
    let mut job = Ledger::new(0);
    assert_eq!(job.observe(Some(&limits), &obs(0, 0, 50.0)), None);
    assert_eq!(job.observe(Some(&limits), &obs(500, 300 * MIB, 50.0)), None);
    // 700 MiB growth at 800 MiB/s: 0.5 s more would pass 1 GiB; once is not enough.
    assert_eq!(
        job.observe(Some(&limits), &obs(1000, 700 * MIB, 50.0)),
        None
    );
    // Still 950 MiB, under the budget, at 500 MiB/s: the second crossing in a row stops it.
    let r = job.observe(Some(&limits), &obs(1500, 950 * MIB, 50.0));
    assert!(
        matches!(r, Some(StopReason::SwapBudgetProjected { .. })),
        "{r:?}"
    );
    // Watch mode (no limits) never stops.
    let mut watch = Ledger::new(0);
    assert_eq!(watch.observe(None, &obs(0, 100 * GIB, 1.0)), None);
}

#[test]
fn a_recorded_run_is_judged_by_the_live_rule() {
    let tol = 64 * MIB;
    let run = |growth: u64, ended: EndReason| RecordedRun {
        swap_growth_bytes: growth,
        swap_start_bytes: GIB,
        peak_footprint_bytes: None,
        lowest_free_percent: None,
        in_use_taken_bytes: None,
        duration: Duration::from_secs(10),
        ended,
        stages: Vec::new(),
    };
    let exited = EndReason::Exited { code: 0 };
    let at_budget = EndReason::Stopped {
        reason: StopReason::SwapBudget {
            growth_bytes: 0,
            budget_bytes: 0,
        },
    };
    let requested = EndReason::Stopped {
        reason: StopReason::Requested,
    };
    // (growth, how it ended, fits)
    let table = [
        (0, exited.clone(), true),
        (tol, exited.clone(), true),
        (tol + 1, exited, false),
        // Stopped at a limit: it did not fit, whatever swap did (stageload's killed run).
        (0, at_budget, false),
        // Stopped on request: judged by its swap.
        (0, requested, true),
    ];
    for (growth, ended, fits) in table {
        let v = Verdict::recorded(run(growth, ended.clone()), tol);
        assert_eq!(v.fits, fits, "{growth} {ended:?}");
        assert_eq!(v.fits, Verdict::fit_by(growth, tol, &ended, None));
        assert_eq!(v.swap_growth_bytes, growth);
    }
}

#[test]
fn verdicts() {
    let mut job = Ledger::new(GIB);
    for (t, swap, free, fp) in [
        (0, GIB, 60.0, 1),
        (500, GIB + 64 * MIB, 40.0, 5),
        (900, GIB, 45.0, 3),
    ] {
        job.observe(
            None,
            &Observation {
                footprint_bytes: Some(fp * GIB),
                ..obs(t, swap, free)
            },
        );
    }
    let v = job.verdict(64 * MIB, EndReason::Exited { code: 0 });
    assert!(v.fits);
    assert_eq!(v.swap_growth_bytes, 64 * MIB);
    assert_eq!(v.peak_footprint_bytes, Some(5 * GIB));
    assert_eq!(v.lowest_free_percent, Some(40.0));
    assert_eq!(v.duration, Duration::from_millis(900));
    assert_eq!(
        v.to_string(),
        "fits: swap +64 MiB, peak footprint 5.0 GiB, lowest free 40%, 900 ms, exited with code 0"
    );
    let v = job.verdict(63 * MIB, EndReason::Exited { code: 1 });
    assert!(!v.fits);
    assert!(v.to_string().starts_with("doesn't fit: swap +64 MiB"));
    let stopped = job.verdict(
        GIB,
        EndReason::Stopped {
            reason: StopReason::LowFree {
                free_percent: 5.0,
                floor_percent: 10.0,
            },
        },
    );
    assert!(!stopped.fits, "a stopped job does not fit");
}

#[test]
fn growth_events_have_hysteresis() {
    let limits = Limits {
        swap_budget_bytes: 2 * GIB,
        ..Limits::default()
    };
    let mut gate = EventGate::default();
    let count = |gate: &mut EventGate, t_s: u64, growth: u64| {
        gate.observe(
            &limits,
            true,
            (growth, growth),
            &obs(t_s * 1000, growth, 50.0),
        )
    };
    assert!(count(&mut gate, 0, 100 * MIB).is_empty());
    let e = count(&mut gate, 1, 600 * MIB);
    assert!(
        matches!(e.as_slice(), [JobEvent::SwapGrew { step: 1, .. }]),
        "{e:?}"
    );
    // Hovering around the 512 MiB step: nothing more.
    for t in 2..100 {
        let growth = if t % 2 == 0 { 500 * MIB } else { 530 * MIB };
        assert!(count(&mut gate, t, growth).is_empty(), "t={t}");
    }
    // Next step, but within a minute of the last event: held back...
    let mut gate2 = EventGate::default();
    assert_eq!(count(&mut gate2, 0, 600 * MIB).len(), 1);
    assert!(count(&mut gate2, 30, 1100 * MIB).is_empty());
    // ...and sent once the minute has passed, with the current growth.
    let e = count(&mut gate2, 61, 1200 * MIB);
    assert!(
        matches!(e.as_slice(), [JobEvent::SwapGrew { step: 2, .. }]),
        "{e:?}"
    );
}

#[test]
fn budget_warning_once_until_rearmed() {
    let limits = Limits {
        swap_budget_bytes: 1000 * MIB,
        notify_step_bytes: 100 * GIB,
        ..Limits::default()
    };
    let mut gate = EventGate::default();
    let mut warns = 0;
    for (t, growth) in [
        (0, 790),
        (1, 800),
        (2, 790),
        (3, 810),
        (4, 700),
        (5, 850),
        (6, 590),
        (7, 820),
    ] {
        let ev = gate.observe(
            &limits,
            true,
            (growth * MIB, growth * MIB),
            &obs(t * 1000, 0, 50.0),
        );
        warns += ev
            .iter()
            .filter(|e| matches!(e, JobEvent::Warning { .. }))
            .count();
    }
    // Warned at 800, re-armed only by falling under 600 (590), warned again at 820.
    assert_eq!(warns, 2);
    // Watch (not guarded): no warnings.
    let mut watch = EventGate::default();
    assert!(watch
        .observe(&limits, false, (990 * MIB, 990 * MIB), &obs(0, 0, 50.0))
        .is_empty());
}

#[test]
fn reasons_read_well() {
    let r = StopReason::SwapBudget {
        growth_bytes: 7 * GIB / 2,
        budget_bytes: 3 * GIB,
    };
    assert_eq!(r.to_string(), "swap grew 3.5 GiB (budget 3.0 GiB)");
    let w = WaitReason::LowFree {
        free_percent: 22.4,
        need_percent: 40.0,
    };
    assert_eq!(w.to_string(), "free memory 22% < 40% needed");
}

#[test]
fn a_one_sample_burst_that_fits_is_not_stopped() {
    // 100 ms checks near a 200 MiB budget; swap jumps 150 MiB in one check, then stays.
    let limits = Limits {
        swap_budget_bytes: 200 * MIB,
        lookahead: Duration::from_millis(100),
        ..Limits::default()
    };
    let mut job = Ledger::new(0);
    let mut t = 0;
    for swap in [0, 0, 0, 150 * MIB, 150 * MIB, 150 * MIB, 150 * MIB] {
        assert_eq!(
            job.observe(Some(&limits), &obs(t, swap, 50.0)),
            None,
            "t={t}"
        );
        t += 100;
    }
    // A late wake-up right after an early one: 20 MiB in 5 ms is 4 GiB/s over one gap, but
    // the rate spans the look-ahead at least, and it does not hold.
    assert_eq!(
        job.observe(Some(&limits), &obs(t - 95, 170 * MIB, 50.0)),
        None
    );
    assert_eq!(
        job.observe(Some(&limits), &obs(t + 100, 170 * MIB, 50.0)),
        None
    );
    // Growth that keeps going is still stopped before the budget.
    let mut stopped = None;
    for (k, swap) in [186, 199].into_iter().enumerate() {
        stopped = job.observe(
            Some(&limits),
            &obs(t + 200 + 100 * k as u64, swap * MIB, 50.0),
        );
        if stopped.is_some() {
            break;
        }
    }
    assert!(
        matches!(stopped, Some(StopReason::SwapBudgetProjected { .. })),
        "{stopped:?}"
    );
}

#[test]
fn check_interval_shortens_near_the_budget_and_when_growing_fast() {
    let limits = Limits {
        swap_budget_bytes: 8 * GIB,
        ..Limits::default()
    };
    let base = Duration::from_millis(500);
    let ms = |d: Duration| d.as_millis();
    // (growth, rate B/s, expected ms)
    let cases: &[(u64, f64, u128)] = &[
        (0, 0.0, 500),                 // far from the budget: the poll
        (6 * GIB, 0.0, 500),           // 2 GiB left at 1 GiB/s: 0.5 s
        (7 * GIB, 0.0, 250),           // 1 GiB left: four checks in a second
        (7 * GIB + GIB / 2, 0.0, 125), // 512 MiB left
        (8 * GIB, 0.0, 100),           // at the budget: the fastest
        (0, 16.0 * GIB as f64, 125),   // growing fast, far from it
    ];
    for &(growth, rate, want) in cases {
        assert_eq!(
            ms(check_interval(&limits, growth, growth, rate, base)),
            want,
            "growth {growth}, rate {rate}"
        );
    }
    // Never slower than the poll, never faster than the floor.
    assert_eq!(
        ms(check_interval(&limits, 0, 0, 0.0, Duration::from_secs(5))),
        2000
    );
    assert_eq!(
        ms(check_interval(
            &limits,
            0,
            0,
            0.0,
            Duration::from_millis(10)
        )),
        100
    );
    // A swap limit closer than the budget counts.
    let limited = Limits {
        swap_limit_bytes: Some(GIB),
        ..limits.clone()
    };
    assert_eq!(
        ms(check_interval(&limited, 0, GIB - GIB / 4, 0.0, base)),
        100
    );
}

#[test]
fn tight_when_compressed_grew_or_free_fell_though_swap_did_not() {
    let limits = Limits::default(); // 2 GiB of compressed growth, 20 % free
                                    // (compressed GiB per reading, free % per reading, expected words)
    let cases: &[(&[u64], &[f64], Option<&str>)] = &[
        (&[1, 2, 3], &[60.0, 50.0, 55.0], None),
        (&[1, 4, 2], &[60.0, 50.0, 55.0], Some("compressed +3.0 GiB")),
        (&[1, 1, 1], &[60.0, 8.0, 55.0], Some("lowest free 8%")),
        (
            &[0, 7, 7],
            &[30.0, 15.0, 19.0],
            Some("compressed +7.0 GiB, lowest free 15%"),
        ),
    ];
    for (compressed, free, want) in cases {
        let mut job = Ledger::new(GIB);
        for (k, (c, f)) in compressed.iter().zip(free.iter()).enumerate() {
            job.observe(
                None,
                &Observation {
                    compressed_bytes: Some(c * GIB),
                    ..obs(k as u64 * 500, GIB, *f)
                },
            );
        }
        let words = job.tightness(&limits).map(|t| t.to_string());
        assert_eq!(words.as_deref(), *want, "{compressed:?} {free:?}");
    }
    // In a verdict: "tight" instead of "fits", with the reasons; still a success.
    let mut job = Ledger::new(0);
    job.observe(
        None,
        &Observation {
            compressed_bytes: Some(0),
            ..obs(0, 0, 50.0)
        },
    );
    job.observe(
        None,
        &Observation {
            compressed_bytes: Some(6 * GIB + GIB / 5),
            ..obs(500, 0, 8.0)
        },
    );
    let mut v = job.verdict(64 * MIB, EndReason::Exited { code: 0 });
    v.tight = job.tightness(&limits);
    assert!(v.fits);
    assert!(
        v.to_string()
            .starts_with("tight: compressed +6.2 GiB, lowest free 8%; swap +0 B"),
        "{v}"
    );
}

#[test]
fn an_oom_kill_is_a_verdict_only_with_sigkill_and_a_rising_count() {
    let run = |kills: [u64; 2], ended: EndReason| {
        let mut job = Ledger::new(0);
        for (k, count) in kills.into_iter().enumerate() {
            job.observe(
                None,
                &Observation {
                    oom_kills: Some(count),
                    limit_bytes: Some(128 * MIB),
                    ..obs(k as u64 * 500, 0, 90.0)
                },
            );
        }
        job.verdict(64 * MIB, ended)
    };
    let killed = run([4, 5], EndReason::Signaled { signal: 9 });
    assert!(!killed.fits);
    assert_eq!(killed.word(), "doesn't fit");
    assert!(
        killed
            .to_string()
            .starts_with("doesn't fit: killed by the OOM killer (limit 128 MiB); swap +0 B"),
        "{killed}"
    );
    // A SIGKILL from someone else, with no OOM kill meanwhile: the job's own end.
    let sigkill = run([5, 5], EndReason::Signaled { signal: 9 });
    assert!(sigkill.fits && sigkill.oom_killed.is_none());
    // An OOM kill of another process while the job exited on its own.
    let exited = run([4, 5], EndReason::Exited { code: 0 });
    assert!(exited.fits && exited.oom_killed.is_none());
    // Where the OS has no count (macOS), never an OOM verdict.
    let mut job = Ledger::new(0);
    job.observe(None, &obs(0, 0, 90.0));
    assert!(job
        .verdict(64 * MIB, EndReason::Signaled { signal: 9 })
        .oom_killed
        .is_none());
}

#[test]
fn under_a_memory_limit_checks_quicken_as_room_runs_out_and_one_low_look_stops() {
    let limits = Limits::default(); // floor 10 %
    let base = Duration::from_millis(500);
    let under = |limit: u64, free: f64| Observation {
        limit_bytes: Some(limit),
        ..obs(0, 0, free)
    };
    // (limit, free %, expected ms)
    let cases: &[(u64, f64, u128)] = &[
        (256 * MIB, 90.0, 100), // 205 MiB above the floor: 50 ms at 1 GiB/s, the fastest
        (8 * GIB, 90.0, 500),   // 6.4 GiB of room: the poll
        (8 * GIB, 20.0, 200),   // 819 MiB of room: four checks in 0.8 s
        (8 * GIB, 5.0, 100),    // under the floor: the fastest
    ];
    for &(limit, free, want) in cases {
        let got = room_check_interval(&limits, &under(limit, free), base).as_millis();
        assert_eq!(got, want, "limit {limit} free {free}");
    }
    assert_eq!(
        room_check_interval(&limits, &obs(0, 0, 12.0), base),
        base,
        "no limit"
    );
    // One look under the floor stops a job under a limit; on the host it takes two.
    let mut job = Ledger::new(0);
    let stop = job.observe(Some(&limits), &under(256 * MIB, 9.0));
    assert!(matches!(stop, Some(StopReason::LowFree { .. })), "{stop:?}");
    let mut job = Ledger::new(0);
    assert_eq!(job.observe(Some(&limits), &obs(0, 0, 9.0)), None);
    assert!(job.observe(Some(&limits), &obs(500, 0, 9.0)).is_some());
}

#[test]
fn a_look_is_aimed_just_after_a_crossing_foreseen_before_the_next_check() {
    let limits = Limits {
        swap_budget_bytes: 100 << 20,
        swap_limit_bytes: Some(1 << 30),
        ..Limits::default()
    };
    let ms = Duration::from_millis;
    let mib_s = |m: u64| (m << 20) as f64;
    // (growth, swap in use, rate, next check: the look aimed)
    let table = [
        // 30 MiB left at 400 MiB/s: 75 ms, and 2.
        ((70 << 20, 0, mib_s(400), ms(100)), Some(ms(77))),
        // The crossing after the next check: that check's to see.
        ((70 << 20, 0, mib_s(200), ms(100)), None),
        // Foreseen 99 ms ahead: at the check itself, not after it.
        ((70 << 20, 0, mib_s(303), ms(100)), Some(ms(100))),
        // A millisecond away: never sooner than AIM_MIN after this look.
        ((99 << 20, 0, mib_s(1024), ms(100)), Some(AIM_MIN)),
        // No growth, or no budget left: nothing to aim at.
        ((70 << 20, 0, 0.0, ms(100)), None),
        ((100 << 20, 0, mib_s(400), ms(100)), None),
        // The swap limit comes first: 4 MiB left of it.
        (
            (0, (1 << 30) - (4 << 20), mib_s(400), ms(100)),
            Some(ms(12)),
        ),
    ];
    for ((growth, used, rate, next), want) in table {
        let got = aim(&limits, growth, used, rate, next);
        let close = match (got, want) {
            (Some(g), Some(w)) => g.abs_diff(w) < Duration::from_micros(1),
            (g, w) => g == w,
        };
        assert!(
            close,
            "growth {growth}, used {used}, rate {rate}, next {next:?}: {got:?}, not {want:?}"
        );
    }
}

#[test]
fn light_checks_only_well_above_the_free_floor() {
    let limits = Limits {
        kill_free_percent: 10.0,
        ..Limits::default()
    };
    // (free %, light)
    for (free, light) in [
        (90.0, true),
        (20.0, true),
        (19.9, false),
        (10.0, false),
        (0.0, false),
    ] {
        assert_eq!(
            light_check_ok(&limits, &obs(0, 0, free)),
            light,
            "{free}% free"
        );
    }
}
