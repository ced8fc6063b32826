//! stageload's own run history (`$STAGELOAD_HOME/history.jsonl`, one JSON line per finished
//! `stageload run`) as past runs, for `headroom history import`: its past runs then predict
//! the next (`headroom fit`, `guard --wait-fit`).
//!
//! A line is `{"end": UTC, "who", "cmd", "exit", "run_s", "peak_footprint", "swap_start",
//! "swap_peak", "swap_end", "min_level", ...}` (stageload 0.1's `queue._run`). A run's swap
//! growth is its peak minus its start; it did not fit when that passed the tolerance, or when
//! stageload stopped it (exit 3, `EXIT_KILLED`), which makes its need a lower bound. Its key
//! is `--key` when given, else its `who` label, else the key `guard` gives its command line.
//! A line that is not such a record is an error naming the file and the line.

use std::path::Path;
use std::time::{Duration, SystemTime};

use headroom_core::defaults as d;
use headroom_core::engine::{FinishedJob, JobMode};
use headroom_core::fit::{job_key, typed_key, Taken};
use headroom_core::policy::{EndReason, StopReason, Verdict};
use headroom_core::process::ProcessIdentity;
use headroom_core::store::RunContext;
use headroom_core::units::unix_ms;
use serde::Deserialize;

/// stageload's exit code for a command its guard stopped.
const STAGELOAD_KILLED: i32 = 3;

/// One line of stageload's history.
#[derive(Debug, Deserialize)]
struct Record {
    end: String,
    #[serde(default)]
    who: String,
    #[serde(default)]
    cmd: String,
    exit: i32,
    #[serde(default)]
    run_s: f64,
    peak_footprint: Option<u64>,
    swap_start: Option<u64>,
    swap_peak: Option<u64>,
    min_level: Option<f64>,
}

/// True when the file's first non-blank line is a stageload history record (a trace's
/// lines have a `type`).
pub fn is_stageload_history(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .is_some_and(|v| {
            v.get("type").is_none() && v.get("end").is_some() && v.get("cmd").is_some()
        })
}

/// The runs of a stageload history file, keyed by `key` when given.
pub fn runs(
    path: &Path,
    text: &str,
    key: Option<&str>,
) -> Result<Vec<(FinishedJob, RunContext)>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = serde_json::from_str(line).map_err(|e| {
            format!(
                "{}:{}: not a stageload history line: {e}",
                path.display(),
                n + 1
            )
        })?;
        let ended = headroom_core::trace::parse_utc(&record.end).ok_or_else(|| {
            format!(
                "{}:{}: 'end' is not a UTC time: {}",
                path.display(),
                n + 1,
                record.end
            )
        })?;
        out.push(run(&record, ended, key));
    }
    Ok(out)
}

fn run(record: &Record, ended: SystemTime, key: Option<&str>) -> (FinishedJob, RunContext) {
    let growth = record
        .swap_peak
        .zip(record.swap_start)
        .map_or(0, |(peak, start)| peak.saturating_sub(start));
    let duration = Duration::try_from_secs_f64(record.run_s.max(0.0)).unwrap_or_default();
    let tolerance = d::FITS_TOLERANCE_BYTES;
    let ended_as = match record.exit {
        STAGELOAD_KILLED => EndReason::Stopped {
            reason: StopReason::SwapBudget {
                growth_bytes: growth,
                budget_bytes: growth,
            },
        },
        code if code < 0 => EndReason::Signaled { signal: -code },
        code => EndReason::Exited { code },
    };
    let verdict = Verdict {
        fits: growth <= tolerance && record.exit != STAGELOAD_KILLED,
        swap_growth_bytes: growth,
        swap_start_bytes: record.swap_start.unwrap_or(0),
        peak_footprint_bytes: record.peak_footprint,
        lowest_free_percent: record.min_level,
        in_use_rise_bytes: None,
        duration,
        ended: ended_as,
        processes: 0,
        fits_tolerance_bytes: tolerance,
        stages: Vec::new(),
        tight: None,
        pauses: 0,
        paused: Duration::ZERO,
        oom_killed: None,
    };
    let argv: Vec<String> = record.cmd.split_whitespace().map(str::to_string).collect();
    // One normalisation for every key (`typed_key`): the label is a key typed in a file.
    let key = key
        .and_then(typed_key)
        .or_else(|| typed_key(&record.who))
        .unwrap_or_else(|| job_key(&argv, None));
    let job = FinishedJob {
        identity: ProcessIdentity {
            pid: 0,
            start_time: 0,
        },
        command: record.cmd.clone(),
        mode: JobMode::Watch,
        started_at_ms: unix_ms(ended.checked_sub(duration).unwrap_or(ended)),
        ended_at_ms: unix_ms(ended),
        verdict,
    };
    let context = RunContext {
        key,
        total_bytes: None,
        free_start_percent: None,
        cwd: None,
        hostname: None,
        taken: Taken::Footprint,
    };
    (job, context)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Two lines as stageload 0.1.1's queue._run writes them.
    const HISTORY: &str = r#"{"end": "2026-10-05T10:00:00+00:00", "lane": "ram", "who": "pixal", "cmd": "python gen.py --cascade", "exit": 0, "waited_s": 1.0, "run_s": 600.5, "peak_footprint": 32000000000, "swap_start": 1000000000, "swap_peak": 1050000000, "swap_end": 1000000000, "min_level": 21, "trace": null}

{"end": "2026-10-05T11:00:00+00:00", "lane": "ram", "who": "", "cmd": "python3 /x/qwen.py --size 1024", "exit": 3, "waited_s": 0.0, "run_s": 120.0, "peak_footprint": 40000000000, "swap_start": 0, "swap_peak": 9000000000, "swap_end": 9000000000, "min_level": 5, "trace": "/t.jsonl"}
"#;

    #[test]
    fn stageload_runs_become_past_runs() {
        assert!(is_stageload_history(HISTORY));
        assert!(!is_stageload_history(r#"{"type":"start","utc":"x"}"#));
        let runs = runs(Path::new("h.jsonl"), HISTORY, None).unwrap();
        assert_eq!(runs.len(), 2);
        let (job, ctx) = &runs[0];
        assert_eq!(ctx.key, "pixal");
        assert!(job.verdict.fits);
        assert_eq!(job.verdict.swap_growth_bytes, 50_000_000);
        assert_eq!(job.ended_at_ms - job.started_at_ms, 600_500);
        let (job, ctx) = &runs[1];
        assert_eq!(ctx.key, "python3 qwen.py --size 1024");
        assert!(!job.verdict.fits);
        assert!(matches!(job.verdict.ended, EndReason::Stopped { .. }));
        let (need, lower) = headroom_core::fit::need_of(&job.verdict, ctx.taken);
        assert!(lower && need > 49_000_000_000, "{need}");
        let keyed = super::runs(Path::new("h.jsonl"), HISTORY, Some("k")).unwrap();
        assert!(keyed.iter().all(|(_, c)| c.key == "k"));
    }

    #[test]
    fn a_bad_line_names_the_file_and_line() {
        let text = format!("{}\n{{\"end\": 5}}\n", HISTORY.lines().next().unwrap());
        let err = runs(Path::new("h.jsonl"), &text, None).unwrap_err();
        assert!(
            err.starts_with("h.jsonl:2: not a stageload history line"),
            "{err}"
        );
        let err = runs(
            Path::new("h.jsonl"),
            r#"{"end":"yesterday","cmd":"x","exit":0}"#,
            None,
        )
        .unwrap_err();
        assert!(err.contains("h.jsonl:1: 'end' is not a UTC time"), "{err}");
    }
}
