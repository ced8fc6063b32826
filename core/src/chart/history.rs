//! The popover's small history chart: free %, swap, compressed and watched footprint over
//! the chosen window, with the stages of watched jobs.

use super::*;
use crate::history::{Metric, Point};

/// Size and theme of the popover's history chart.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryChartOptions {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Light text and grid for a dark background.
    pub dark: bool,
    /// Leave the background unpainted, for the page's to show through.
    pub transparent: bool,
    /// The time labelled "now", ms since the Unix epoch; default: the last point's.
    pub now_ms: Option<i64>,
    /// Stage starts of watched jobs: (label, ms since the Unix epoch), drawn as dashed
    /// lines; those outside the chart's time span are left out.
    pub stages: Vec<(String, i64)>,
}

impl Default for HistoryChartOptions {
    fn default() -> Self {
        HistoryChartOptions {
            width: 360,
            height: 220,
            dark: false,
            transparent: false,
            now_ms: None,
            stages: Vec::new(),
        }
    }
}

/// How far past the latest reading a stage mark may be and still be drawn (at "now").
const MARK_AHEAD_S: f64 = 10.0;

/// Legend labels of the history series, in [`Metric`] order.
const HISTORY_LABELS: [&str; 4] = ["free %", "swap", "compressed", "footprint"];

/// Draws the popover chart of `points` (oldest first) as SVG: free % on the right axis
/// (0–100), swap, compressed and watched footprint in GiB on the left, time relative to now
/// ("-20m" … "now"). Missing values break the lines. No points draws empty axes.
pub fn history_chart_svg(
    points: &[Point],
    opts: &HistoryChartOptions,
) -> Result<String, ChartError> {
    ensure_font()?;
    let mut svg = String::with_capacity(24 * 1024);
    let size = (opts.width.max(160), opts.height.max(100));
    let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
    draw_history(root, points, opts)?;
    Ok(svg)
}

fn draw_history<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    points: &[Point],
    opts: &HistoryChartOptions,
) -> Result<(), ChartError> {
    let pal = if opts.dark { &DARK } else { &LIGHT };
    if !opts.transparent {
        root.fill(&pal.get(BACKGROUND))?;
    }
    let (now_ms, span_s, (unit_s, unit)) = time_axis(points, opts);
    let x0 = -span_s / unit_s;
    let x_of = |ms: i64| (ms - now_ms) as f64 / 1000.0 / unit_s;
    let series = history_series(points, &x_of);
    let y_max = round_up(max(series[1..].iter().flatten().flatten().map(|p| p.1)) * 1.1);

    let (legend_area, plot_area) = root.split_vertically(18);
    let items: Vec<_> = Metric::ALL
        .iter()
        .filter(|&&m| !series[m as usize].is_empty())
        .map(|&m| (HISTORY_LABELS[m as usize].to_string(), pal.line(m), false))
        .collect();
    draw_legend(&legend_area, &items, 6, 10.0, pal.get(TEXT))?;

    let prec = usize::from(y_max < 10.0);
    let x_fmt = |v: &f64| match v.round() {
        0.0 => "now".to_string(),
        r => format!("{r}{unit}"),
    };
    let frame = Frame {
        pal,
        x: x0..0.0,
        y_max,
        sizes: [4, 4, 6, 14, 28, 30],
        descs: ["", "", ""],
        fmts: [&x_fmt, &|v| format!("{v:.prec$}G"), &|v| format!("{v:.0}%")],
        label_px: 10.0,
    };
    let mut chart = frame.draw(&plot_area)?;
    if points.is_empty() {
        let style = font(12.0, pal.get(MUTED)).pos(Pos::new(HPos::Center, VPos::Center));
        let text = Text::new("no history yet", (0, 0), style);
        let at = EmptyElement::at((x0 / 2.0, y_max / 2.0));
        chart.draw_series(std::iter::once(at + text))?;
    }
    let marks: Vec<(String, f64)> = opts
        .stages
        .iter()
        .map(|(name, ms)| (name.clone(), x_of(*ms)))
        // A mark made since the latest reading (a poll ago at most) is drawn at "now".
        .filter(|(_, x)| (x0..=MARK_AHEAD_S / unit_s).contains(x))
        .map(|(name, x)| (name, x.min(0.0)))
        .collect();
    let marks: Vec<_> = marks.iter().collect();
    let lines = StageLines {
        marks: &marks,
        y_max,
        color: pal.get(MUTED),
        label: font(9.0, pal.get(TEXT)),
        px: 0.7,
    };
    lines.draw(&mut chart, &plot_area)?;
    for (m, runs) in Metric::ALL.iter().zip(&series) {
        let free = *m == Metric::FreePercent;
        let style = pal.line(*m).stroke_width(if free { 1 } else { 2 });
        for run in runs {
            let line = LineSeries::new(run.iter().copied(), style);
            if free {
                chart.draw_secondary_series(line)?;
            } else {
                chart.draw_series(line)?;
            }
        }
    }
    Ok(root.present()?)
}

/// The history chart's time axis: "now" (ms since the epoch), the span shown (seconds, at
/// least a minute), and its unit (seconds, minutes or hours, by the span).
fn time_axis(points: &[Point], opts: &HistoryChartOptions) -> (i64, f64, (f64, &'static str)) {
    let last_ms = points.last().map(|p| p.start_ms);
    let now_ms = opts.now_ms.or(last_ms).unwrap_or(0);
    let first_ms = points.first().map_or(now_ms, |p| p.start_ms);
    let span_s = ((now_ms - first_ms) as f64 / 1000.0).max(60.0);
    let unit = match span_s {
        s if s <= 180.0 => (1.0, "s"),
        s if s <= 3.0 * 3600.0 => (60.0, "m"),
        _ => (3600.0, "h"),
    };
    (now_ms, span_s, unit)
}

/// Per metric (in [`Metric`] order), the runs of present values as (x, value) with bytes in
/// GB: a missing value breaks the line.
type Runs = Vec<Vec<(f64, f64)>>;

fn history_series(points: &[Point], x_of: &dyn Fn(i64) -> f64) -> Vec<Runs> {
    Metric::ALL
        .iter()
        .map(|&m| {
            let scale = if m == Metric::FreePercent { 1.0 } else { GB };
            let xy = |p: &Point| (x_of(p.start_ms), f64::from(p.get(m).mean) / scale);
            let runs = points.split(|p| p.get(m).is_empty() || !p.get(m).mean.is_finite());
            runs.filter(|r| !r.is_empty())
                .map(|r| r.iter().map(xy).collect())
                .collect()
        })
        .collect()
}

/// `v` rounded up to a tidy axis maximum (half steps of its power of ten), at least 1.
fn round_up(v: f64) -> f64 {
    let v = v.max(1.0);
    let step = 10f64.powf(v.log10().floor()) / 2.0;
    (v / step).ceil() * step
}
