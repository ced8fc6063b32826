//! Criterion benchmark of the popover's history chart.
//!
//! Builds 24 hours of history through `History::add` at 5 s steps (free %, swap, compressed,
//! and a watched job's footprint that comes and goes), queries at most 300 points for the day
//! and renders them to SVG with `chart::history_chart_svg`, light and dark. Prints the SVG
//! size; the budget is 60 KB and 5 ms a render in release.

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, Criterion};
use headroom_core::chart::{history_chart_svg, HistoryChartOptions};
use headroom_core::history::{History, METRICS};

const GIB: f64 = (1u64 << 30) as f64;

/// 24 h of readings at 5 s; returns the history and "now".
fn day_of_history() -> (History, SystemTime) {
    let mut history = History::default();
    let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let steps: u32 = 24 * 3600 / 5;
    for i in 0..steps {
        let f = f64::from(i);
        let job = (i / 2000) % 2 == 1;
        let values: [Option<f64>; METRICS] = [
            Some(50.0 + 40.0 * (f / 900.0).sin()),
            Some(4.0 * GIB + f / f64::from(steps) * 6.0 * GIB),
            (i % 3000 > 200).then_some(2.0 * GIB + (f / 500.0).cos() * GIB),
            job.then_some(10.0 * GIB + (f / 50.0).sin() * GIB),
        ];
        history.add(start + Duration::from_secs(u64::from(i) * 5), values);
    }
    (history, start + Duration::from_secs(u64::from(steps) * 5))
}

fn history_chart(c: &mut Criterion) {
    let (history, now) = day_of_history();
    let points = history.query(Duration::from_secs(24 * 3600), now, 300);
    let mut group = c.benchmark_group("history_chart_svg");
    for dark in [false, true] {
        let opts = HistoryChartOptions {
            dark,
            ..HistoryChartOptions::default()
        };
        let name = if dark { "day_dark" } else { "day_light" };
        match history_chart_svg(&points, &opts) {
            Ok(svg) => println!("{name}: {} points, SVG {} bytes", points.len(), svg.len()),
            Err(e) => println!("{name}: {e}"),
        }
        group.bench_function(name, |b| {
            b.iter(|| history_chart_svg(black_box(&points), black_box(&opts)))
        });
    }
    group.finish();
}

criterion_group!(benches, history_chart);
criterion_main!(benches);
