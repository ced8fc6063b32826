//! `headroom guard --report FILE.md`: the job's report for CI. The verdict and its figures,
//! the per-stage table when the job marked stages, and the memory chart as an SVG beside the
//! report (`FILE.svg`), linked. With `$GITHUB_STEP_SUMMARY` set the same report (without
//! the image, which stays in the workspace) is appended to the step summary, unless
//! `--no-step-summary`.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use headroom_core::chart::{trace_chart_svg, TraceChartOptions};
use headroom_core::drive::{Outcome, Sink};
use headroom_core::sampler::recorded::ToTrace;
use headroom_core::trace::{due, SampleRecord, Trace};
use headroom_model::units::{format_bytes, format_delta_bytes, format_duration};
use headroom_os::paths::replace_file;
use headroom_rules::engine::JobView;
use headroom_rules::policy::JobEvent;
use headroom_rules::sample::Sample;

/// The environment variable GitHub Actions points at the step's summary file.
pub const STEP_SUMMARY_ENV: &str = "GITHUB_STEP_SUMMARY";

/// What the report collects while the job runs.
#[derive(Debug, Default)]
struct Collected {
    samples: Vec<SampleRecord>,
    stages: Vec<(String, f64)>,
}

/// Collects samples (at the poll interval) and stage starts for the report's chart.
#[derive(Debug, Clone)]
pub struct ReportSink {
    collected: Arc<Mutex<Collected>>,
    poll: Duration,
}

impl ReportSink {
    /// A sink keeping one sample per `poll`.
    pub fn new(poll: Duration) -> Self {
        ReportSink {
            collected: Arc::default(),
            poll,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.collected.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Sink for ReportSink {
    fn name(&self) -> String {
        "the report".into()
    }

    fn sample(&mut self, sample: &Sample, _view: &JobView) -> std::io::Result<()> {
        let Some(record) = sample.to_trace_record() else {
            return Ok(());
        };
        let mut c = self.lock();
        // One sample per poll, as the trace keeps (checks may come faster).
        let last = c.samples.last().map(|s| seconds(s.t));
        if !due(last, sample.since_start, self.poll) {
            return Ok(());
        }
        c.samples.push(record);
        Ok(())
    }

    fn event(&mut self, t: Duration, event: &JobEvent, _view: &JobView) -> std::io::Result<()> {
        if let JobEvent::Stage { stage } = event {
            self.lock().stages.push((stage.clone(), t.as_secs_f64()));
        }
        Ok(())
    }
}

fn seconds(t: f64) -> Duration {
    Duration::try_from_secs_f64(t).unwrap_or_default()
}

/// Where the report goes: checked (created empty) before the job starts, so a report that
/// cannot be written starts nothing.
#[derive(Debug)]
pub struct Report {
    path: Option<PathBuf>,
    step_summary: Option<PathBuf>,
    sink: ReportSink,
}

impl Report {
    /// The report to `path` and, unless `no_step_summary`, to `$GITHUB_STEP_SUMMARY`; `None`
    /// when neither is asked for.
    pub fn create(
        path: Option<&Path>,
        no_step_summary: bool,
        poll: Duration,
    ) -> anyhow::Result<Option<Report>> {
        let step_summary = std::env::var_os(STEP_SUMMARY_ENV)
            .filter(|p| !p.is_empty() && !no_step_summary)
            .map(PathBuf::from);
        if path.is_none() && step_summary.is_none() {
            return Ok(None);
        }
        if let Some(path) = path {
            fs::write(path, "").with_context(|| format!("creating {}", path.display()))?;
        }
        Ok(Some(Report {
            path: path.map(Path::to_path_buf),
            step_summary,
            sink: ReportSink::new(poll),
        }))
    }

    /// The sink to hand to the driver.
    pub fn sink(&self) -> ReportSink {
        self.sink.clone()
    }

    /// Writes the report (and the chart beside it), and appends to the step summary.
    pub fn finish(&self, outcome: &Outcome) -> anyhow::Result<()> {
        let collected = self.sink.lock();
        let chart = self.path.as_ref().map(|p| p.with_extension("svg"));
        let mut chart_written = false;
        if let Some(chart) = &chart {
            let trace = Trace {
                samples: collected.samples.clone(),
                ..Trace::default()
            };
            let opts = TraceChartOptions {
                title: outcome.command.clone(),
                ..TraceChartOptions::default()
            };
            // Beside the named file: replaced, never written through a link planted there.
            let written = trace_chart_svg(&trace, &collected.stages, &opts)
                .map_err(anyhow::Error::from)
                .and_then(|svg| Ok(replace_file(chart, svg.as_bytes(), 0o644)?));
            match written {
                Ok(()) => chart_written = true,
                Err(e) => tracing::warn!(error = %e, "the report's chart"),
            }
        }
        let image = chart
            .as_deref()
            .filter(|_| chart_written)
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned());
        if let Some(path) = &self.path {
            fs::write(path, markdown(outcome, image.as_deref()))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if let Some(summary) = &self.step_summary {
            let mut f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(summary)
                .with_context(|| format!("opening {}", summary.display()))?;
            f.write_all(markdown(outcome, None).as_bytes())
                .with_context(|| format!("appending to {}", summary.display()))?;
        }
        Ok(())
    }
}

/// The report in Markdown; `image` is the chart's file name beside it, when there is one.
pub fn markdown(outcome: &Outcome, image: Option<&str>) -> String {
    let v = &outcome.verdict;
    let word = v.word();
    let mut md = format!(
        "## Headroom: <code>{}</code>\n\n**{word}**: {}\n\n| | |\n|---|---|\n",
        html(&outcome.command),
        html(&v.to_string())
    );
    let mut row = |k: &str, v: String| md.push_str(&format!("| {k} | {} |\n", html(&v)));
    row(
        "swap growth",
        format_delta_bytes(v.swap_growth_bytes as i64),
    );
    if let Some(p) = v.peak_footprint_bytes {
        row("peak footprint", format_bytes(p));
    }
    if let Some(l) = v.lowest_free_percent {
        row("lowest free memory", format!("{l:.0}%"));
    }
    row("duration", format_duration(v.duration));
    row("ended", v.ended.to_string());
    if v.processes > 0 {
        row("processes", v.processes.to_string());
    }
    if v.pauses > 0 {
        row(
            "pauses",
            format!("{} ({} in all)", v.pauses, format_duration(v.paused)),
        );
    }
    if !v.stages.is_empty() {
        md.push_str(
            "\n### Stages\n\n| stage | swap growth | cumulative | peak footprint | lowest free |\n\
             |---|---:|---:|---:|---:|\n",
        );
        for s in &v.stages {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                html(&s.stage),
                format_delta_bytes(s.swap_growth_bytes as i64),
                format_delta_bytes(s.cumulative_growth_bytes as i64),
                s.peak_footprint_bytes.map_or("–".into(), format_bytes),
                s.lowest_free_percent
                    .map_or("–".into(), |l| format!("{l:.0}%")),
            ));
        }
    }
    if let Some(image) = image {
        md.push_str(&format!(
            "\n![Memory: footprint, swap and free memory]({})\n",
            image.replace(' ', "%20")
        ));
    }
    md.push('\n');
    md
}

/// Text safe inside Markdown table cells and HTML: `<`, `>`, `&` and `|` escaped, newlines
/// turned into spaces.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "&#124;")
        .replace('\n', " ")
}
