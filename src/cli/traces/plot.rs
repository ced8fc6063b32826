//! Writing trace charts to files (SVG or PNG), through core's plotters rendering.

use std::path::Path;

use anyhow::Context;
use headroom_core::chart::{save_trace_chart, TraceChartOptions};
use headroom_core::trace::Trace;

/// Renders `trace` with its stage windows to `output` (.svg or .png).
pub fn write_trace_chart(
    trace: &Trace,
    stages: &[(String, f64)],
    title: &str,
    output: &Path,
) -> anyhow::Result<()> {
    let opts = TraceChartOptions {
        title: title.to_string(),
        ..TraceChartOptions::default()
    };
    save_trace_chart(trace, stages, &opts, output)
        .with_context(|| format!("writing {}", output.display()))
}
