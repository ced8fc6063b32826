//! Criterion benchmark of "will it fit?" over a long history: reading the 1,000 runs of one
//! key from a real SQLite file (the store's query, as `headroom fit` makes it) and
//! predicting from them. Results: `docs/benchmarks.md`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use headroom_core::store::{RunContext, Store};
use headroom_model::process::ProcessIdentity;
use headroom_model::units::unix_ms;
use headroom_rules::engine::{FinishedJob, JobMode};
use headroom_rules::fit::predict;
use headroom_rules::policy::{EndReason, Verdict};
use headroom_rules::testdata::verdict;

fn run(i: i64, now_ms: i64) -> FinishedJob {
    FinishedJob {
        identity: ProcessIdentity {
            pid: 1000,
            start_time: 1,
        },
        command: "python3 gen.py --steps 20".into(),
        mode: JobMode::Guard,
        started_at_ms: now_ms - i * 3_600_000 - 60_000,
        ended_at_ms: now_ms - i * 3_600_000,
        verdict: Verdict {
            lowest_free_percent: Some(40.0),
            ..verdict(
                (10 << 30) + (i as u64 % 7) * (100 << 20),
                0,
                EndReason::Exited { code: 0 },
            )
        },
    }
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("headroom-bench-fit-{}", std::process::id()));
    let (mut store, _) = Store::open(&dir.join("history.db")).expect("a store");
    let now_ms = unix_ms(std::time::SystemTime::now());
    let context = RunContext {
        key: "python3 gen.py --steps 20".into(),
        ..RunContext::default()
    };
    for i in 0..1000 {
        store
            .record_run(&run(i, now_ms), &context)
            .expect("a record");
    }
    c.bench_function("fit: read 1000 runs and predict", |b| {
        b.iter(|| {
            let rows = store
                .runs_of(black_box("python3 gen.py --steps 20"), 1000)
                .expect("runs");
            let runs: Vec<_> = rows.iter().map(|r| r.past_run(now_ms)).collect();
            black_box(predict(&runs))
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
