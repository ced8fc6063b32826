//! The chart of a recorded trace, for reports and `trace plot`: footprint and swap in GiB,
//! free % on the right axis, stage starts as labelled lines.

use super::*;

/// Size and title of a trace chart.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceChartOptions {
    /// Chart title.
    pub title: String,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
}

impl Default for TraceChartOptions {
    fn default() -> Self {
        let title = "Memory trace".to_string();
        TraceChartOptions {
            title,
            width: 1200,
            height: 700,
        }
    }
}

/// A chart is drawn from at most this many buckets of samples ([`bounded`]): a chart is a
/// few hundred pixels wide, and a trace of a day at 10 checks a second has 864,000.
pub const PLOTTED_BUCKETS: usize = 1000;

/// `samples` (in time order) cut to at most four per bucket of `buckets`: from each run of
/// consecutive samples, its first, and those with the highest swap, the highest footprint
/// and the lowest free memory, in time order. Every peak and trough of the chart stays.
pub fn bounded<'a>(samples: &[&'a SampleRecord], buckets: usize) -> Vec<&'a SampleRecord> {
    let per = samples.len().div_ceil(buckets.max(1));
    if per <= 1 {
        return samples.to_vec();
    }
    let mut kept = Vec::with_capacity(buckets * 4);
    for chunk in samples.chunks(per) {
        let pick = |key: &dyn Fn(&SampleRecord) -> f64| {
            (0..chunk.len())
                .max_by(|&a, &b| key(chunk[a]).total_cmp(&key(chunk[b])))
                .unwrap_or(0)
        };
        let mut at = [
            0,
            pick(&|s| s.swap_used as f64),
            pick(&|s| s.footprint as f64),
            pick(&|s| -s.level),
        ];
        at.sort_unstable();
        let mut last = None;
        for i in at {
            if last != Some(i) {
                kept.push(chunk[i]);
                last = Some(i);
            }
        }
    }
    kept
}

/// Plots a trace: footprint and swap in use (GiB, left axis), free % (right axis), and stage
/// starts (`stages` as from [`crate::summary::stage_windows`]; non-finite times are skipped).
/// Samples are sorted by time first, and a long trace is drawn from a bounded series
/// (`bounded`). An empty trace is [`ChartError::EmptyTrace`].
pub fn trace_chart(
    trace: &Trace,
    stages: &[(String, f64)],
    opts: &TraceChartOptions,
    out: ChartOutput<'_>,
) -> Result<(), ChartError> {
    let mut samples: Vec<&SampleRecord> =
        trace.samples.iter().filter(|s| s.t.is_finite()).collect();
    if samples.is_empty() {
        return Err(ChartError::EmptyTrace);
    }
    samples.sort_by(|a, b| a.t.total_cmp(&b.t));
    let samples = bounded(&samples, PLOTTED_BUCKETS);
    ensure_font()?;
    let size = (opts.width.max(320), opts.height.max(200));
    let data = (&samples[..], stages, opts);
    match out {
        ChartOutput::Svg(buf) => {
            buf.clear();
            draw_trace(SVGBackend::with_string(buf, size).into_drawing_area(), data)
        }
        ChartOutput::Png(path) => {
            draw_trace(BitMapBackend::new(path, size).into_drawing_area(), data)
        }
    }
}

type TraceData<'a> = (
    &'a [&'a SampleRecord],
    &'a [(String, f64)],
    &'a TraceChartOptions,
);

fn draw_trace<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    (samples, stages, opts): TraceData<'_>,
) -> Result<(), ChartError> {
    let pal = &LIGHT;
    let (text, muted) = (pal.get(TEXT), pal.get(MUTED));
    let k = (f64::from(root.dim_in_pixel().1) / 700.0).clamp(0.5, 3.0);
    let px = |v: f64| v * k;
    root.fill(&pal.get(BACKGROUND))?;
    let root = root.titled(&opts.title, font(px(22.0), text))?;
    let (legend_area, plot_area) = root.split_vertically(px(34.0));

    let (t0, t1) = match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => (a.t, b.t.max(a.t + 1.0)),
        _ => return Err(ChartError::EmptyTrace),
    };
    let gb = |b: u64| b as f64 / GB;
    let peak = |f: fn(&SampleRecord) -> u64| max(samples.iter().map(|s| gb(f(s))));
    let (foot_peak, swap_peak) = (peak(|s| s.footprint), peak(|s| s.swap_used));
    let swap_growth = swap_peak - samples.first().map_or(0.0, |s| gb(s.swap_used));
    let [free, swap, _, foot] = Metric::ALL.map(|m| pal.line(m));
    let swap_label = format!("swap in use ({swap_growth:+.1} GiB, peak {swap_peak:.1} GiB)");
    let items = [
        (format!("footprint (peak {foot_peak:.1} GiB)"), foot, false),
        (swap_label, swap, false),
        ("free memory % (right axis)".to_string(), free, true),
    ];
    draw_legend(&legend_area, &items, px(92.0) as i32, px(15.0), text)?;

    let y_max = (foot_peak.max(swap_peak) * 1.1).max(1.0).ceil();
    let fmt = |v: &f64, fine: bool| format!("{v:.prec$}", prec = usize::from(fine));
    let frame = Frame {
        pal,
        x: t0..t1,
        y_max,
        sizes: [px(12.0), px(12.0), px(8.0), px(52.0), px(70.0), px(72.0)].map(|v| v as u32),
        descs: ["time (s)", "GiB (footprint, swap in use)", "free memory %"],
        fmts: [
            &|v| fmt(v, t1 - t0 < 10.0),
            &|v| fmt(v, y_max < 10.0),
            &|v| fmt(v, false),
        ],
        label_px: px(14.0),
    };
    let mut chart = frame.draw(&plot_area)?;

    let marks: Vec<_> = stages
        .iter()
        .filter(|(_, t)| (t0..=t1).contains(t))
        .collect();
    let marks = StageLines {
        marks: &marks,
        y_max,
        color: muted,
        label: font(px(14.0), text),
        px: k,
    };
    marks.draw(&mut chart, &plot_area)?;

    let level = samples.iter().map(|s| (s.t, s.level));
    let free_style = free.mix(0.85).stroke_width(px(2.0) as u32);
    chart.draw_secondary_series(DashedLineSeries::new(level, px(8.0), px(5.0), free_style))?;
    let width = px(3.0) as u32;
    let foot_line = samples.iter().map(|s| (s.t, gb(s.footprint)));
    chart.draw_series(LineSeries::new(foot_line, foot.stroke_width(width)))?;
    let swap_line = samples.iter().map(|s| (s.t, gb(s.swap_used)));
    chart.draw_series(LineSeries::new(swap_line, swap.stroke_width(width)))?;
    Ok(root.present()?)
}
