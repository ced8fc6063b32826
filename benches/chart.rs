//! Criterion benchmark of the popover's history chart.
//!
//! Builds 24 hours of history through `History::add` at 5 s steps (free %, swap, compressed,
//! and a watched job's footprint that comes and goes), queries at most 300 points for the day
//! and renders them to SVG with `chart::history_chart_svg`, light and dark. Prints the SVG
//! size; the budget is 60 KB and 5 ms a render in release.

use headroom_core::testdata::day_of_history;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use headroom_core::chart::{history_chart_svg, HistoryChartOptions};

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
