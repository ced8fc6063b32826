//! Tests of the charts: the real Qwen trace to SVG and PNG, empty input, the popover
//! history chart with gaps, size limits.

use std::time::Duration;

use super::*;
use crate::history::{Agg, Point};
use crate::summary::named_stage_windows;
use crate::testdata::day_of_history;
use crate::trace::read_trace;

fn qwen_eager() -> Trace {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/macos-traces/qwen-image-2026-10-06/eager-1.trace.jsonl");
    read_trace(&path).unwrap()
}

/// plotters writes a `<text>` element's content on its own line.
fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>"))
}

fn qwen_opts() -> TraceChartOptions {
    TraceChartOptions {
        title: "Qwen-Image-2.1 eager, 1024², M5 Pro 48 GB".into(),
        ..TraceChartOptions::default()
    }
}

fn trace_svg(trace: &Trace) -> String {
    let mut svg = String::from("left over");
    let stages = named_stage_windows(trace);
    trace_chart(trace, &stages, &qwen_opts(), ChartOutput::Svg(&mut svg)).unwrap();
    svg
}

#[test]
fn trace_svg_has_stages_legend_and_axes() {
    let svg = trace_svg(&qwen_eager());
    assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    for label in ["encode", "denoise", "decode"] {
        assert!(has_text(&svg, label), "no stage label {label}");
    }
    assert!(!has_text(&svg, "load"), "the -inf first stage is skipped");
    for label in [
        "footprint (peak",
        "swap in use (+",
        "free memory % (right axis)",
    ] {
        assert!(svg.contains(label), "no legend label {label}");
    }
    for desc in ["time (s)", "GiB (footprint, swap in use)", "free memory %"] {
        assert!(has_text(&svg, desc), "no axis description {desc}");
    }
    assert!(svg.contains("font-family=\"sans-serif\""));
    assert!(svg.contains("stroke=\"#D62728\""), "swap line in red");
    assert!(svg.contains("stroke=\"#1F6FD1\""), "footprint line in blue");
}

#[test]
fn out_of_order_samples_are_sorted() {
    let trace = qwen_eager();
    let mut shuffled = trace.clone();
    shuffled.samples.reverse();
    shuffled.samples.swap(3, 100);
    assert_eq!(trace_svg(&trace), trace_svg(&shuffled));
}

#[test]
fn trace_png_has_signature_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qwen.PNG");
    let trace = qwen_eager();
    save_trace_chart(&trace, &named_stage_windows(&trace), &qwen_opts(), &path).unwrap();
    let png = std::fs::read(&path).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 700));
}

#[test]
fn svg_file_is_written_and_format_follows_extension() {
    let dir = tempfile::tempdir().unwrap();
    let trace = qwen_eager();
    let path = dir.path().join("qwen.svg");
    save_trace_chart(&trace, &[], &qwen_opts(), &path).unwrap();
    assert!(std::fs::read_to_string(&path).unwrap().starts_with("<svg"));
    let mut buf = String::new();
    let out = output_for_path(Path::new("a/b.Svg"), &mut buf).unwrap();
    assert!(matches!(out, ChartOutput::Svg(_)));
    let e = save_trace_chart(&trace, &[], &qwen_opts(), &dir.path().join("x.txt")).unwrap_err();
    assert!(matches!(e, ChartError::UnknownFormat(_)), "{e}");
    assert!(output_for_path(Path::new("noext"), &mut buf).is_err());
}

#[test]
fn empty_trace_is_an_error() {
    let mut svg = String::new();
    let opts = TraceChartOptions::default();
    let e = trace_chart(&Trace::default(), &[], &opts, ChartOutput::Svg(&mut svg)).unwrap_err();
    assert!(matches!(e, ChartError::EmptyTrace));
    assert_eq!(e.to_string(), "the trace has no samples to plot");
    let mut nan_only = Trace::default();
    nan_only.samples.push(SampleRecord {
        t: f64::NAN,
        ..SampleRecord::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("x.png");
    let e = trace_chart(&nan_only, &[], &opts, ChartOutput::Png(&png)).unwrap_err();
    assert!(matches!(e, ChartError::EmptyTrace));
    assert!(!png.exists());
}

#[test]
fn single_sample_trace_draws() {
    let mut trace = Trace::default();
    trace.samples.push(SampleRecord {
        t: 5.0,
        footprint: 1 << 30,
        swap_used: 0,
        level: 50.0,
        ..SampleRecord::default()
    });
    let mut svg = String::new();
    let opts = TraceChartOptions::default();
    trace_chart(&trace, &[], &opts, ChartOutput::Svg(&mut svg)).unwrap();
    assert!(svg.starts_with("<svg"));
}

const GIB: f64 = (1u64 << 30) as f64;

fn agg(v: f64) -> Agg {
    let v = v as f32;
    Agg {
        min: v,
        max: v,
        mean: v,
    }
}

const EMPTY: Agg = Agg {
    min: f32::NAN,
    max: f32::NAN,
    mean: f32::NAN,
};

/// 300 points over 24 h; compressed missing in the middle, footprint only in two jobs.
fn day_of_points() -> Vec<Point> {
    let start = 1_700_000_000_000i64;
    (0..300i64)
        .map(|i| {
            let f = i as f64;
            let free = agg(60.0 + 30.0 * (f / 20.0).sin());
            let swap = agg(2.0 * GIB + f * 0.02 * GIB);
            let compressed = if (100..140).contains(&i) {
                EMPTY
            } else {
                agg(3.0 * GIB + (f / 7.0).cos() * GIB)
            };
            let job = (40..90).contains(&i) || (200..260).contains(&i);
            let foot = if job { agg(12.0 * GIB) } else { EMPTY };
            Point {
                start_ms: start + i * 288_000,
                values: [free, swap, compressed, foot],
            }
        })
        .collect()
}

fn polylines_in(svg: &str, color: &str) -> usize {
    svg.split("<polyline")
        .skip(1)
        .filter(|p| p.contains(&format!("stroke=\"{color}\"")))
        .count()
}

#[test]
fn history_chart_breaks_lines_at_gaps() {
    let svg = history_chart_svg(&day_of_points(), &HistoryChartOptions::default()).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.len() <= 60 * 1024, "{} bytes", svg.len());
    let labels = [
        "free %",
        "swap",
        "compressed",
        "footprint",
        "now",
        "-10h",
        "100%",
    ];
    for label in labels {
        assert!(has_text(&svg, label), "no {label}");
    }
    // One legend swatch plus one polyline per run of present values.
    assert_eq!(polylines_in(&svg, "#D62728"), 1 + 1, "swap: one run");
    let compressed = polylines_in(&svg, "#9467BD");
    assert_eq!(compressed, 1 + 2, "compressed: split by its gap");
    assert_eq!(polylines_in(&svg, "#1F6FD1"), 1 + 2, "footprint: two jobs");
    for size in svg.split("font-size=\"").skip(1) {
        assert!(
            size.find('"').unwrap() <= 4,
            "long font size: {}",
            &size[..20]
        );
    }
}

#[test]
fn history_chart_omits_series_without_data_and_has_dark_palette() {
    let mut points = day_of_points();
    for p in &mut points {
        p.values[Metric::WatchedFootprintBytes as usize] = EMPTY;
    }
    let opts = HistoryChartOptions {
        dark: true,
        ..HistoryChartOptions::default()
    };
    let svg = history_chart_svg(&points, &opts).unwrap();
    assert!(!has_text(&svg, "footprint"));
    assert!(svg.contains("fill=\"#1E1E20\""), "dark background");
    assert!(svg.contains("fill=\"#E5E5EA\""), "light legend text");
    let clear = HistoryChartOptions {
        transparent: true,
        ..opts
    };
    assert!(!history_chart_svg(&points, &clear)
        .unwrap()
        .contains("#1E1E20"));
}

#[test]
fn history_chart_marks_stages_inside_its_span() {
    let points = day_of_points();
    let last_ms = points.last().unwrap().start_ms;
    let first_ms = points.first().unwrap().start_ms;
    let opts = HistoryChartOptions {
        stages: vec![
            ("before the span".into(), first_ms - 60_000),
            ("load".into(), last_ms - 3_600_000),
            ("decode +6.3 GiB".into(), last_ms - 60_000),
            ("<img src=x onerror=alert(1)>".into(), last_ms - 30_000),
        ],
        ..HistoryChartOptions::default()
    };
    let svg = history_chart_svg(&points, &opts).unwrap();
    assert!(has_text(&svg, "load"), "a stage inside the span is named");
    assert!(has_text(&svg, "decode +6.3 GiB"));
    assert!(
        !has_text(&svg, "before the span"),
        "outside the span: left out"
    );
    // Stage names are the job's text and the page injects this SVG: markup is escaped.
    assert!(!svg.contains("<img"), "a stage name is never markup");
    assert!(has_text(&svg, "&lt;img src=x onerror=alert(1)&gt;"));
    // plotters draws each dash as its own short muted polyline.
    let dashes = |svg: &str| polylines_in(svg, "#6E6E73");
    let plain = history_chart_svg(&points, &HistoryChartOptions::default()).unwrap();
    let added = dashes(&svg) - dashes(&plain);
    assert!(
        (3 * 10..3 * 40).contains(&added),
        "three dashed lines over the plot's height: {added} dashes"
    );
}

#[test]
fn empty_history_draws_placeholder() {
    let svg = history_chart_svg(&[], &HistoryChartOptions::default()).unwrap();
    assert!(svg.contains("no history yet"));
}

#[test]
fn day_of_history_fits_in_60_kb() {
    let (h, now) = day_of_history();
    let points = h.query(Duration::from_secs(24 * 3600), now, 300);
    assert!(
        points.len() <= 300 && points.len() > 250,
        "{}",
        points.len()
    );
    for dark in [false, true] {
        let opts = HistoryChartOptions {
            dark,
            ..HistoryChartOptions::default()
        };
        let svg = history_chart_svg(&points, &opts).unwrap();
        assert!(svg.len() <= 60 * 1024, "{} bytes", svg.len());
    }
}

/// Regenerates `docs/trace-qwen-eager.png` and writes history charts to the temp dir:
/// `cargo test -p headroom-core chart -- --ignored`.
#[test]
#[ignore = "writes docs/trace-qwen-eager.png"]
fn write_sample_charts() {
    let trace = qwen_eager();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/trace-qwen-eager.png");
    save_trace_chart(&trace, &named_stage_windows(&trace), &qwen_opts(), &docs).unwrap();
    let (h, now) = day_of_history();
    let points = h.query(Duration::from_secs(24 * 3600), now, 300);
    let recent = h.query(Duration::from_secs(600), now, 300);
    let out = std::env::temp_dir();
    for (name, pts) in [("day", &points), ("10min", &recent)] {
        for dark in [false, true] {
            let opts = HistoryChartOptions {
                dark,
                ..HistoryChartOptions::default()
            };
            let svg = history_chart_svg(pts, &opts).unwrap();
            let theme = if dark { "dark" } else { "light" };
            std::fs::write(
                out.join(format!("headroom-history-{name}-{theme}.svg")),
                svg,
            )
            .unwrap();
        }
    }
}
