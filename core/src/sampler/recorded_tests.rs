//! A reading written as a trace line and read back is the same reading for the guard's rules:
//! every field of its [`Observation`], its time, whether the job lives, and the swap the run
//! started from; old and stageload lines read as before.

use std::time::{Duration, UNIX_EPOCH};

use proptest::prelude::*;

use super::recorded::ToTrace;
use super::{Sample, TrackedSample};
use crate::trace::RunRecord;
use crate::trace::{parse_trace, Record, TraceWriter};
use headroom_model::counters::{CgroupMemory, PressureLevel, RunState, SystemCounters};
use headroom_model::members::Member;
use headroom_model::process::{ProcessIdentity, TreeMemory};
use headroom_model::units::MAX_BYTES;

const JOB: ProcessIdentity = ProcessIdentity {
    pid: 4242,
    start_time: 7,
};

/// A memory cgroup whose limit binds, as the counters read it.
fn cgroup(limit_bytes: u64) -> Box<CgroupMemory> {
    Box::new(CgroupMemory {
        version: 2,
        path: "/ci/job".into(),
        limit_path: "/ci".into(),
        limit_file: "memory.max".into(),
        limit_bytes,
        used_bytes: limit_bytes / 2,
        reclaimable_bytes: 1 << 20,
        swap_used_bytes: Some(0),
        swap_limit_bytes: None,
        oom_kills: Some(1),
        peak_bytes: Some(limit_bytes / 2),
        host_total_bytes: 64 << 30,
        host_free_percent: 80.0,
        host_swap_used_bytes: 1 << 30,
        pressure: None,
        host_pressure: Some(PressureLevel::Normal),
    })
}

fn bytes() -> impl Strategy<Value = u64> {
    0..=MAX_BYTES
}

prop_compose! {
    fn system()(
        free_percent in 0.0..=100.0f64,
        swap in bytes(),
        swap_total in bytes(),
        compressed in proptest::option::of(bytes()),
        in_use in proptest::option::of(bytes()),
        usable in proptest::option::of(bytes()),
        oom_kills in proptest::option::of(any::<u64>()),
        limit in proptest::option::of(1..=MAX_BYTES),
        pressure in proptest::option::of(prop_oneof![
            Just(PressureLevel::Normal),
            Just(PressureLevel::Warn),
            Just(PressureLevel::Critical),
        ]),
    ) -> SystemCounters {
        SystemCounters {
            total_bytes: limit.unwrap_or(48 << 30),
            free_percent,
            usable_bytes: usable,
            in_use_bytes: in_use,
            pressure,
            swap_used_bytes: swap,
            swap_total_bytes: swap_total,
            compressed_bytes: compressed,
            wired_bytes: Some(1 << 30),
            app_bytes: Some(2 << 30),
            reclaimable_bytes: None,
            swapped_in_bytes: 5,
            swapped_out_bytes: 6,
            paged_in_bytes: 7,
            paged_out_bytes: 8,
            oom_kills,
            cgroup: limit.map(cgroup),
            cgroup_note: None,
        }
    }
}

prop_compose! {
    fn tracked()(
        memory in proptest::option::of((bytes(), bytes(), proptest::option::of(bytes()), 1..10_000u32)),
        kernel_peak in proptest::option::of(bytes()),
        own in any::<bool>(),
        job_oom_kills in proptest::option::of(any::<u64>()),
    ) -> TrackedSample {
        let memory = memory.map(|(footprint, resident, swap, processes)| TreeMemory {
            pid: JOB.pid,
            footprint_bytes: footprint,
            resident_bytes: resident,
            swap_bytes: swap,
            processes,
        });
        TrackedSample {
            identity: JOB,
            members: memory.map_or_else(Vec::new, |_| vec![Member { id: JOB, state: RunState::Running }]),
            memory,
            kernel_peak_bytes: kernel_peak,
            in_own_cgroup: own,
            cgroup_oom_kills: job_oom_kills,
        }
    }
}

/// `sample` and its run's `start` facts through a real trace file's text: written by the
/// writer, read by the reader (its bounds included), made back into a sample.
fn through_a_trace(sample: &Sample, run: &RunRecord) -> Sample {
    let mut writer = TraceWriter::new(Vec::new());
    let start = crate::trace::StartRecord {
        run: run.clone(),
        ..crate::trace::StartRecord::headroom(UNIX_EPOCH, Duration::from_millis(500))
    };
    writer.start(&start).unwrap();
    let record = sample.to_trace_record().expect("a system reading");
    writer.write(&Record::Sample(record)).unwrap();
    let text = writer.into_inner();
    let trace = parse_trace(text.as_slice(), std::path::Path::new("t.jsonl")).unwrap();
    let back = RunRecord::of(&trace);
    assert_eq!(&back, run);
    back.sample(&trace.samples[0], sample.seq, sample.at, JOB, true)
}

/// A guard's run on `system`, started from `swap`, `free` and `in_use`.
fn run_of(system: &SystemCounters, swap: u64, free: f64, in_use: Option<u64>) -> RunRecord {
    RunRecord {
        swap_start_bytes: Some(swap),
        free_start_percent: Some(free),
        in_use_start_bytes: in_use,
        ..RunRecord::of_system(system)
    }
}

proptest! {
    #[test]
    fn every_fact_the_rules_read_survives_the_trace(
        nanos in 0..(1u64 << 20) * 1_000_000_000,
        since in 0..1_000_000_000u64,
        system in system(),
        tracked in tracked(),
        swap_start in bytes(),
        free_start in 0.0..=100.0f64,
        in_use_start in proptest::option::of(bytes()),
        aimed in proptest::bool::ANY,
    ) {
        let sample = Sample {
            aimed,
            seq: 3,
            at: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            since_start: Duration::from_nanos(nanos),
            system: Some(system.clone()),
            tracked: vec![tracked],
            error: None,
        };
        let run = run_of(&system, swap_start, free_start, in_use_start);
        let back = through_a_trace(&sample, &run);
        // What the engine is started from (`Engine::add` with a `StartMemory`): the run read
        // back is the one written (checked above).
        let start = run.start_system().unwrap();
        prop_assert_eq!(start.swap_used_bytes, swap_start);
        prop_assert_eq!(start.free_percent, free_start);
        prop_assert_eq!(start.in_use_bytes, in_use_start);
        prop_assert_eq!(back.since_start, sample.since_start);
        prop_assert_eq!(back.aimed, sample.aimed);
        let t = sample.since_start.saturating_sub(Duration::from_nanos(since));
        prop_assert_eq!(back.observation(JOB, t), sample.observation(JOB, t));
        prop_assert_eq!(
            back.tracked[0].members.is_empty(),
            sample.tracked[0].members.is_empty()
        );
        // And written again, the same line: nothing is lost on a second pass either.
        prop_assert_eq!(back.to_trace_record(), sample.to_trace_record());
    }
}

#[test]
fn a_stageload_line_reads_as_before() {
    let text = "{\"type\":\"start\",\"interval\":0.5}\n\
                {\"type\":\"sample\",\"t\":1.5,\"footprint\":7,\"swap_used\":9,\"level\":42}\n";
    let trace = parse_trace(text.as_bytes(), std::path::Path::new("s.jsonl")).unwrap();
    let run = RunRecord::of(&trace);
    assert_eq!(run, RunRecord::default());
    let sample = run.sample(&trace.samples[0], 1, UNIX_EPOCH, JOB, true);
    assert_eq!(sample.since_start, Duration::from_millis(1500));
    let obs = sample.observation(JOB, Duration::ZERO).unwrap();
    assert_eq!(obs.footprint_bytes, Some(7));
    assert_eq!((obs.swap_used_bytes, obs.free_percent), (9, 42.0));
    assert_eq!(
        (obs.limit_bytes, obs.oom_kills, obs.kernel_peak_bytes),
        (None, None, None)
    );
    assert_eq!(
        sample.tracked[0].members.len(),
        1,
        "the job lives throughout"
    );
    // Written back, stageload's four fields keep their names and values.
    let line = serde_json::to_value(Record::Sample(sample.to_trace_record().unwrap())).unwrap();
    for (field, value) in [
        ("t", 1.5),
        ("footprint", 7.0),
        ("swap_used", 9.0),
        ("level", 42.0),
    ] {
        assert_eq!(line[field].as_f64(), Some(value), "{field}: {line}");
    }
}

#[test]
fn a_job_in_its_own_cgroup_is_judged_by_its_own_oom_count_after_the_trace_too() {
    let system = SystemCounters {
        oom_kills: Some(40),
        cgroup: Some(cgroup(256 << 20)),
        ..SystemCounters::default()
    };
    let tracked = |own: bool| TrackedSample {
        identity: JOB,
        memory: None,
        members: Vec::new(),
        kernel_peak_bytes: Some(200 << 20),
        in_own_cgroup: own,
        cgroup_oom_kills: Some(1),
    };
    for (own, kills) in [(true, 1), (false, 40)] {
        let sample = Sample {
            aimed: false,
            seq: 0,
            at: UNIX_EPOCH,
            since_start: Duration::from_secs(2),
            system: Some(system.clone()),
            tracked: vec![tracked(own)],
            error: None,
        };
        let back = through_a_trace(&sample, &run_of(&system, 0, 50.0, None));
        let obs = back.observation(JOB, Duration::ZERO).unwrap();
        assert_eq!(obs.oom_kills, Some(kills), "own cgroup: {own}");
        assert_eq!(obs.limit_bytes, Some(256 << 20));
        assert_eq!(obs.kernel_peak_bytes, Some(200 << 20));
        assert_eq!(obs.footprint_bytes, None, "no member lives");
        assert!(back.tracked[0].members.is_empty());
    }
}
