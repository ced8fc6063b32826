//! Charts of memory traces and history, drawn with plotters.
//!
//! [`trace_chart`] plots a recorded trace for reports (SVG or PNG): footprint and swap in use
//! in GB on the left axis, free % on the right, stage starts as labelled lines, so that "the
//! footprint stays flat while swap grows" shows at a glance. [`history_chart_svg`] draws the
//! popover's small history chart (free %, swap, compressed, watched footprint) as an SVG
//! string in a light or dark palette; missing values break the lines instead of dropping to 0.
//!
//! PNG text is rasterised with the bundled DejaVu Sans (`core/assets`, Bitstream Vera license,
//! no system font libraries); SVG text stays plain `<text>` in `sans-serif`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::chart::DualCoordChartContext;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use crate::history::{Metric, Point};
use crate::trace::{SampleRecord, Trace};

const GB: f64 = (1u64 << 30) as f64;
const FAMILY: &str = "sans-serif";
static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChartError {
    /// The trace has no sample with a finite time.
    #[error("the trace has no samples to plot")]
    EmptyTrace,
    /// The output path ends neither in `.svg` nor in `.png`.
    #[error("cannot tell the chart format of {}: use .svg or .png", .0.display())]
    UnknownFormat(PathBuf),
    /// The bundled font was rejected.
    #[error("the bundled font could not be loaded")]
    Font,
    /// plotters failed (a PNG that could not be written lands here).
    #[error("drawing the chart failed: {0}")]
    Draw(String),
    /// Writing an SVG file failed.
    #[error("writing the chart: {0}")]
    Io(#[from] std::io::Error),
}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        ChartError::Draw(e.to_string())
    }
}

/// Where a chart goes.
#[derive(Debug)]
pub enum ChartOutput<'a> {
    /// SVG text, replacing the string's contents.
    Svg(&'a mut String),
    /// A PNG file.
    Png(&'a Path),
}

/// The output for `path` by its extension: `.svg` into `svg`, `.png` straight to the file.
pub fn output_for_path<'a>(
    path: &'a Path,
    svg: &'a mut String,
) -> Result<ChartOutput<'a>, ChartError> {
    let ext = path.extension().and_then(|e| e.to_str());
    match ext.map(str::to_ascii_lowercase).as_deref() {
        Some("svg") => Ok(ChartOutput::Svg(svg)),
        Some("png") => Ok(ChartOutput::Png(path)),
        _ => Err(ChartError::UnknownFormat(path.to_path_buf())),
    }
}

/// [`trace_chart`] into the file `path`, SVG or PNG by its extension.
pub fn save_trace_chart(
    trace: &Trace,
    stages: &[(String, f64)],
    opts: &TraceChartOptions,
    path: &Path,
) -> Result<(), ChartError> {
    let mut svg = String::new();
    let out = output_for_path(path, &mut svg)?;
    let is_svg = matches!(out, ChartOutput::Svg(_));
    trace_chart(trace, stages, opts, out)?;
    if is_svg {
        std::fs::write(path, svg)?;
    }
    Ok(())
}

/// Registers the bundled font once; plotters needs it to lay out text, for SVG too.
fn ensure_font() -> Result<(), ChartError> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_ok());
    ok.then_some(()).ok_or(ChartError::Font)
}

/// Colours of one theme, 0xRRGGBB: background, text, muted, grid, then the lines in
/// [`Metric`] order (free, swap, compressed, footprint).
struct Palette([u32; 8]);

const LIGHT: Palette = Palette([
    0xFFFFFF, 0x1D1D1F, 0x6E6E73, 0xE2E2E6, 0x34A048, 0xD62728, 0x9467BD, 0x1F6FD1,
]);
const DARK: Palette = Palette([
    0x1E1E20, 0xE5E5EA, 0x9898A0, 0x3E3E44, 0x4CD964, 0xFF6961, 0xC996FF, 0x64A8FF,
]);
const BACKGROUND: usize = 0;
const TEXT: usize = 1;
const MUTED: usize = 2;
const GRID: usize = 3;

impl Palette {
    fn get(&self, i: usize) -> RGBColor {
        let [_, r, g, b] = self.0[i].to_be_bytes();
        RGBColor(r, g, b)
    }

    fn line(&self, metric: Metric) -> RGBColor {
        self.get(4 + metric as usize)
    }
}

/// A text style of `px` pixels (plotters' sizes are 1.24 × the em size).
fn font(px: f64, color: RGBColor) -> TextStyle<'static> {
    let style = TextStyle::from((FAMILY, px * 1.24).into_font());
    TextStyle {
        color: color.to_backend_color(),
        ..style
    }
}

/// Draws legend entries (label, colour, dashed) left to right from `x`, centred in `area`.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[(String, RGBColor, bool)],
    mut x: i32,
    px: f64,
    text: RGBColor,
) -> Result<(), ChartError> {
    let y = i32::try_from(area.dim_in_pixel().1 / 2).unwrap_or(0);
    let (swatch, gap) = ((px * 2.2) as i32, (px * 0.4) as i32);
    let style = font(px, text).pos(Pos::new(HPos::Left, VPos::Center));
    for (label, color, dashed) in items {
        let line = [(x, y), (x + swatch, y)];
        let shape = color.stroke_width(2.max(px as u32 / 6));
        if *dashed {
            area.draw(&DashedPathElement::new(line, gap * 2, gap, shape))?;
        } else {
            area.draw(&PathElement::new(line, shape))?;
        }
        let at = (x + swatch + gap, y);
        area.draw(&Text::new(label.as_str(), at, style.clone()))?;
        let width = area.estimate_text_size(label, &style)?.0;
        x += swatch + gap + i32::try_from(width).unwrap_or(0) + (px * 1.6) as i32;
    }
    Ok(())
}

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

/// Plots a trace: footprint and swap in use (GB, left axis), free % (right axis), and stage
/// starts (`stages` as from [`crate::summary::stage_windows`]; non-finite times are skipped).
/// Samples are sorted by time first. An empty trace is [`ChartError::EmptyTrace`].
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
    let swap_label = format!("swap in use ({swap_growth:+.1} GB, peak {swap_peak:.1} GB)");
    let items = [
        (format!("footprint (peak {foot_peak:.1} GB)"), foot, false),
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
        descs: ["time (s)", "GB (footprint, swap in use)", "free memory %"],
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

type Xy = Cartesian2d<RangedCoordf64, RangedCoordf64>;

/// Stage starts drawn as dashed lines with their names along the top (a row lower while
/// names would touch; near the right edge a name goes left of its line).
struct StageLines<'s> {
    /// (name, x) of each line inside the x range.
    marks: &'s [&'s (String, f64)],
    y_max: f64,
    color: RGBColor,
    label: TextStyle<'static>,
    /// Scale of line widths and gaps (1.0 = a 700 px tall trace chart).
    px: f64,
}

impl StageLines<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        chart: &mut DualCoordChartContext<'_, DB, Xy, Xy>,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), ChartError> {
        let px = |v: f64| v * self.px;
        let (mut row, mut prev_end) = (0, i32::MIN);
        let y_max = self.y_max;
        for (name, t) in self.marks.iter().map(|m| (&m.0, m.1)) {
            let style = self.color.stroke_width(px(1.5).max(1.0) as u32);
            let line = DashedPathElement::new([(t, 0.0), (t, y_max)], px(6.0), px(4.0), style);
            chart.draw_series(std::iter::once(line))?;
            let x = chart.backend_coord(&(t, y_max)).0;
            let (w, h) = area.estimate_text_size(name, &self.label)?;
            let (w, h) = (i32::try_from(w).unwrap_or(0), i32::try_from(h).unwrap_or(0));
            row = if x <= prev_end { row + 1 } else { 0 };
            prev_end = x + w + px(8.0) as i32;
            let dy = px(4.0) as i32 + row * (h + 4);
            let right = chart.plotting_area().get_pixel_range().0.end;
            let dx = if x + w + px(8.0) as i32 > right {
                -w - px(4.0) as i32
            } else {
                px(4.0) as i32
            };
            let text = Text::new(name.clone(), (dx, dy), self.label.clone());
            chart.draw_series(std::iter::once(EmptyElement::at((t, y_max)) + text))?;
        }
        Ok(())
    }
}

/// Plot area and axes of both charts: GB on the left, free % (0–100) on the right.
struct Frame<'s> {
    pal: &'s Palette,
    x: std::ops::Range<f64>,
    y_max: f64,
    /// Margins left, right, top/bottom; label areas bottom, left, right (pixels).
    sizes: [u32; 6],
    /// Descriptions of the x, left and right axes ("" for none).
    descs: [&'s str; 3],
    /// Tick label formats of the x, left and right axes.
    fmts: [&'s dyn Fn(&f64) -> String; 3],
    label_px: f64,
}

impl Frame<'_> {
    fn draw<'a, DB: DrawingBackend>(
        &self,
        area: &'a DrawingArea<DB, Shift>,
    ) -> Result<DualCoordChartContext<'a, DB, Xy, Xy>, ChartError> {
        let [left, right, vertical, bottom_area, left_area, right_area] = self.sizes;
        let mut chart = ChartBuilder::on(area)
            .margin(vertical)
            .margin_left(left)
            .margin_right(right)
            .x_label_area_size(bottom_area)
            .y_label_area_size(left_area)
            .right_y_label_area_size(right_area)
            .build_cartesian_2d(self.x.clone(), 0.0..self.y_max)?
            .set_secondary_coord(self.x.clone(), 0.0..100.0);
        let (w, h) = area.dim_in_pixel();
        let muted = self.pal.get(MUTED);
        let label = font(self.label_px, muted);
        let desc = font(self.label_px * 1.07, muted);
        let ticks = |len: u32, per: f64| (f64::from(len) / (self.label_px * per)) as usize;
        let mut mesh = chart.configure_mesh();
        mesh.x_labels(ticks(w, 7.0))
            .y_labels(ticks(h, 3.5))
            .x_label_formatter(self.fmts[0])
            .y_label_formatter(self.fmts[1])
            .label_style(label.clone())
            .axis_desc_style(desc.clone())
            .axis_style(muted)
            .bold_line_style(self.pal.get(GRID))
            .light_line_style(TRANSPARENT)
            .set_all_tick_mark_size(self.label_px / 3.0);
        if !self.descs[0].is_empty() {
            mesh.x_desc(self.descs[0]).y_desc(self.descs[1]);
        }
        mesh.draw()?;
        let mut right_axis = chart.configure_secondary_axes();
        right_axis
            .y_labels(ticks(h, 3.5))
            .y_label_formatter(self.fmts[2])
            .label_style(label)
            .axis_desc_style(desc)
            .axis_style(muted)
            .set_all_tick_mark_size(self.label_px / 3.0);
        if !self.descs[2].is_empty() {
            right_axis.y_desc(self.descs[2]);
        }
        right_axis.draw()?;
        Ok(chart)
    }
}

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
/// (0–100), swap, compressed and watched footprint in GB on the left, time relative to now
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

/// The largest value, at least 0.
fn max(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, f64::max)
}

#[cfg(test)]
#[path = "chart_tests.rs"]
mod tests;
