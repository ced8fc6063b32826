//! Writing trace charts to files (SVG or PNG), through core's plotters rendering.

use std::path::Path;

use headroom_core::trace::Trace;

/// Renders `trace` with its stage windows to `output` (.svg or .png).
pub fn write_trace_chart(
    trace: &Trace,
    stages: &[(String, f64)],
    title: &str,
    output: &Path,
) -> anyhow::Result<()> {
    let _ = (trace, stages, title, output);
    anyhow::bail!("plotting is being wired to core::chart")
}
