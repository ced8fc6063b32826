//! When a job's next readings may be quiet ones ([`crate::policy::quiet`]): only while it
//! runs far from its limits and nothing in its rules waits for time to pass.

use super::tests::{at_free, cfg, id, moment, set, spec, MIB};
use super::*;
use crate::policy::quiet::Quiet;
use headroom_model::effects::Control;

#[test]
fn readings_are_quiet_only_while_the_job_runs_far_from_its_limits_and_no_event_waits() {
    let leader = id(42);
    let (mut jobs, job) = far_from_its_budget(leader, 1000 * MIB);
    assert_eq!(jobs.quiet(job), None, "before its first reading");
    // (seq, swap MiB, free %, quiet after it)
    let table: [(u64, u64, f64, Option<Quiet>); 9] = [
        (0, 1000, 50.0, Some(quiet(1000, 50.0))),
        (1, 1000, 50.05, Some(quiet(1000, 50.05))),
        // Free memory within 10 points of the floor (10 %): every check is a full one.
        (2, 1000, 19.0, None),
        (3, 1000, 50.0, Some(quiet(1000, 50.0))),
        // Swap grew past a step: told at once.
        (4, 1150, 50.0, Some(quiet(1150, 50.0))),
        // Past the next step within the minute: the event waits for the minute to pass,
        // swap moving or not, so no reading is quiet until it is told.
        (5, 1250, 50.0, None),
        (6, 1250, 50.0, None),
        // A minute after the first event (sample 124 is 62 s in): told, quiet again.
        (124, 1250, 50.0, Some(quiet(1250, 50.0))),
        (125, 1250, 50.0, Some(quiet(1250, 50.0))),
    ];
    for (seq, swap_mib, free, want) in table {
        jobs.on_sample(&at_free(seq, swap_mib * MIB, free, leader));
        assert_eq!(jobs.quiet(job), want, "after sample {seq}");
    }
    // Paused: its checks verify the pause, none is quiet; resumed: not until a reading.
    jobs.request(job, Control::Pause, moment(62_600))
        .expect("pause");
    assert_eq!(jobs.quiet(job), None, "paused");
    jobs.request(job, Control::Resume, moment(62_700))
        .expect("resume");
    assert_eq!(jobs.quiet(job), None, "resumed, before a reading");
}

#[test]
fn no_reading_is_quiet_where_memory_in_use_is_judged_over_time() {
    // macOS's page counts: the rise of memory in use is weighed over a window of time.
    let leader = id(7);
    let (mut jobs, job) = far_from_its_budget(leader, 0);
    let mut sample = at_free(0, 0, 50.0, leader);
    if let Some(system) = sample.system.as_mut() {
        system.in_use_bytes = Some(8 * 1024 * MIB);
    }
    jobs.on_sample(&sample);
    assert_eq!(jobs.quiet(job), None);
}

/// A guarded job of `leader` started with `swap_bytes` in use, its budget far away (no
/// projection aims at it), a swap step of 100 MiB.
fn far_from_its_budget(
    leader: headroom_model::process::ProcessIdentity,
    swap_bytes: u64,
) -> (Engine, u64) {
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(leader),
        spec("train", JobMode::Guard, cfg(100 * 1024 * MIB)),
        StartMemory::swap(swap_bytes),
        moment(0),
    );
    (jobs, job)
}

fn quiet(swap_mib: u64, free_percent: f64) -> Quiet {
    Quiet {
        swap_used_bytes: swap_mib * MIB,
        free_percent,
    }
}
