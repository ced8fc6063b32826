//! Charts of memory traces and history, drawn with plotters.
//!
//! [`trace_chart`] plots a recorded trace for reports (SVG or PNG): footprint and swap in use
//! in GiB on the left axis, free % on the right, stage starts as labelled lines, so that "the
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

use crate::history::Metric;
use crate::trace::{SampleRecord, Trace};

const GB: f64 = (1u64 << 30) as f64;
const FAMILY: &str = "sans-serif";
static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

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

/// [`trace_chart`] as SVG text.
pub fn trace_chart_svg(
    trace: &Trace,
    stages: &[(String, f64)],
    opts: &TraceChartOptions,
) -> Result<String, ChartError> {
    let mut svg = String::new();
    trace_chart(trace, stages, opts, ChartOutput::Svg(&mut svg))?;
    Ok(svg)
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

/// The largest value, at least 0.
fn max(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, f64::max)
}

mod history;
mod trace;

pub use history::{history_chart_svg, HistoryChartOptions};
pub use trace::{trace_chart, TraceChartOptions};

#[cfg(test)]
mod tests;
