//! Criterion benchmark of reading the terminal guards' job files, as the app's metrics do on
//! every sample when "Serve metrics" is on: a fresh `JobFile::list` (a folder read, a JSON
//! parse and a liveness check per file) against `jobfile::Listing`, which reads at most once
//! a second and otherwise hands back the last listing. Twenty files: one running job (this
//! process) and nineteen finished ones, the most a folder keeps.
//! Results: `docs/benchmarks.md`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use headroom_core::jobfile::{JobFile, Listing, FINISHED_KEEP_COUNT};
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;
use headroom_os::counters::Counters;
use headroom_os::process::ProcessLookup;
use headroom_rules::engine::JobStatus;
use headroom_rules::policy::OnBudget;

fn file(pid: u32, start_time: u64, state: JobStatus) -> JobFile {
    let now_ms = unix_ms(std::time::SystemTime::now());
    JobFile {
        pid,
        start_time,
        command: "python generate.py --steps 50 --offload cpu".into(),
        started_at_ms: now_ms - 60_000,
        updated_at_ms: now_ms,
        swap_budget_bytes: 8 << 30,
        swap_start_bytes: 1 << 30,
        swap_growth_bytes: 300 << 20,
        peak_footprint_bytes: Some(18 << 30),
        footprint_bytes: None,
        state,
        verdict: None,
        on_budget: OnBudget::Stop,
        pauses: 0,
        guard: None,
        members: vec![ProcessIdentity { pid, start_time }],
        unguarded: false,
        mode: headroom_rules::engine::JobMode::Guard,
        paused_since_ms: None,
        resumed_at_ms: None,
        resumes_by_itself: false,
        yields: false,
        cgroup: None,
    }
}

fn job_files(c: &mut Criterion) {
    let counters = Counters::new();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let me = ProcessIdentity::of(&counters, std::process::id()).expect("our own identity");
    file(me.pid, me.start_time, JobStatus::Running)
        .write_atomic(dir.path())
        .expect("writing a job file");
    let finished = u32::try_from(FINISHED_KEEP_COUNT).unwrap_or(20) - 1;
    for n in 0..finished {
        file(900_000 + n, 1, JobStatus::Stopped)
            .write_atomic(dir.path())
            .expect("writing a job file");
    }
    assert_eq!(JobFile::list(dir.path(), &counters).len(), 20);

    let mut group = c.benchmark_group("job_files");
    group.bench_function("list", |b| {
        b.iter(|| black_box(JobFile::list(dir.path(), &counters)))
    });
    let mut listing = Listing::default();
    let start = Instant::now();
    group.bench_function("listing_within_a_second", |b| {
        b.iter(|| {
            let now = start + Duration::from_millis(1);
            black_box(
                listing
                    .get(now, || JobFile::list(dir.path(), &counters))
                    .len(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, job_files);
criterion_main!(benches);
