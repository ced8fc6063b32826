//! Criterion benchmarks of the counter readers against sysinfo, procfs and a `ps` spawn.
//!
//! `scripts/bench-ratios` runs these and prints/records the ratios in `docs/benchmarks.md`.
//! Groups: `system_sample` (all system counters vs sysinfo's memory refresh) and
//! `all_footprints` (footprint of every process vs sysinfo's memory-only process refresh,
//! procfs's `status()` per process, and spawning `ps -axo pid=,ppid=,rss=,command=` as
//! stageload does on every poll).

use std::hint::black_box;
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use headroom_os::counters::{CounterSource, Counters};
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System};

fn system_sample(c: &mut Criterion) {
    let counters = Counters::new();
    let mut group = c.benchmark_group("system_sample");
    group.bench_function("headroom", |b| b.iter(|| black_box(counters.read_system())));
    let mut sys = System::new();
    group.bench_function("sysinfo", |b| b.iter(|| sys.refresh_memory()));
    group.finish();
}

fn all_footprints(c: &mut Criterion) {
    let counters = Counters::new();
    let mut group = c.benchmark_group("all_footprints");
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("headroom", |b| {
        b.iter(|| black_box(counters.scan_footprints()))
    });
    let mut sys = System::new();
    sys.refresh_processes_specifics(
        ProcessesToUpdate::All,
        true,
        ProcessRefreshKind::nothing().with_memory(),
    );
    group.bench_function("sysinfo", |b| {
        b.iter(|| {
            sys.refresh_processes_specifics(
                ProcessesToUpdate::All,
                true,
                ProcessRefreshKind::nothing().with_memory(),
            )
        })
    });
    #[cfg(target_os = "linux")]
    group.bench_function("procfs", |b| {
        b.iter(|| {
            let Ok(all) = procfs::process::all_processes() else {
                return 0u64;
            };
            all.filter_map(Result::ok)
                .filter_map(|p| p.status().ok())
                .map(|s| s.rssanon.unwrap_or(0) + s.rssshmem.unwrap_or(0))
                .sum::<u64>()
        })
    });
    group.bench_function("ps", |b| {
        b.iter(|| {
            Command::new("ps")
                .args(["-axo", "pid=,ppid=,rss=,command="])
                .output()
                .map(|o| o.stdout.len())
        })
    });
    group.finish();
}

criterion_group!(benches, system_sample, all_footprints);
criterion_main!(benches);
