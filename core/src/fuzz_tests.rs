//! Property tests of the parsers of outside data above the OS layer: trace files (ours and
//! stageload's). Whatever the input, they
//! return a value or an error, never panic. Cases per property: `HEADROOM_FUZZ_CASES` (200
//! by default; `scripts/fuzz-parsers` runs a million inputs in all). Sizes, durations and
//! percentages are fuzzed in headroom-os (`fuzz_tests.rs`), the `/proc` readers in its
//! `counters/linux/tests.rs`, settings files in `settings/tests.rs`, command-line flags in
//! the CLI's own tests.

use std::path::Path;

use proptest::prelude::*;

use crate::trace::parse_trace;

/// The property tests' configuration: [`headroom_os::testdata::fuzz_cases`] cases, nothing
/// written to disk.
pub(crate) fn config() -> ProptestConfig {
    ProptestConfig {
        cases: headroom_os::testdata::fuzz_cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn regex(pattern: &str) -> impl Strategy<Value = String> {
    proptest::string::string_regex(pattern).expect("a valid regex")
}

/// A trace line: one of stageload's and Headroom's record shapes with odd values, or junk.
fn trace_line() -> impl Strategy<Value = String> {
    let number = "(-?[0-9]{0,20}(\\.[0-9]{0,6})?(e[-+]?[0-9]{1,3})?|null|true|\"x\"|1e400|-1|NaN)";
    prop_oneof![
        regex(&format!("\\{{\"type\":\"sample\",\"t\":{number},\"footprint\":{number},\"swap_used\":{number},\"level\":{number}\\}}")),
        regex(&format!("\\{{\"type\":\"event\",\"kind\":\"(stage|start|end|[a-z]{{0,5}})\",\"stage\":\"\\PC{{0,10}}\",\"t\":{number}\\}}")),
        regex(&format!("\\{{\"type\":\"(start|end|error|[a-z]{{0,6}})\",\"interval\":{number},\"utc\":\"\\PC{{0,12}}\"\\}}")),
        regex("\\{\"type\":\"sample\"[^}]{0,40}"),
        regex("\\PC{0,80}"),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_traces_never_panic(lines in prop::collection::vec(trace_line(), 0..30)) {
        let text = lines.join("\n");
        if let Ok(trace) = parse_trace(text.as_bytes(), Path::new("fuzz.jsonl")) {
            // What a trace holds, the summaries and charts take without panicking.
            let _ = crate::summary::summarize(&trace);
            let stages = crate::summary::named_stage_windows(&trace);
            let mut svg = String::new();
            let opts = crate::chart::TraceChartOptions::default();
            let _ = crate::chart::trace_chart(&trace, &stages, &opts, crate::chart::ChartOutput::Svg(&mut svg));
        }
    }
}
