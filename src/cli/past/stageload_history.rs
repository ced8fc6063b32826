//! stageload's own run history (`$STAGELOAD_HOME/history.jsonl`, one JSON line per finished
//! `stageload run`) as past runs, for `headroom history import`: its past runs then predict
//! the next (`headroom fit`, `guard --wait-fit`).
//!
//! A line is `{"end": UTC, "who", "cmd", "exit", "run_s", "peak_footprint", "swap_start",
//! "swap_peak", "swap_end", "min_level", ...}` (stageload 0.1's `queue._run`). A run's swap
//! growth is its peak minus its start; it did not fit when that passed the tolerance, or when
//! stageload stopped it (exit 3, `EXIT_KILLED`), which makes its need a lower bound. Its key
//! is `--key` when given, else its `who` label, else the key `guard` gives its command line.
//! A line that is not such a record, or whose figures are past the bounds of every file
//! Headroom reads (sizes, a percentage, a time; an end in the future), is an error naming
//! the file and the line; a run with no measurement is left out, and said so.

use std::path::Path;
use std::time::{Duration, SystemTime};

use headroom_core::store::RunContext;
use headroom_model::process::ProcessIdentity;
use headroom_model::units::{bounded_bytes, bounded_percent, bounded_seconds, unix_ms};
use headroom_rules::defaults as d;
use headroom_rules::engine::{FinishedJob, JobMode};
use headroom_rules::fit::{job_key, typed_key, Taken};
use headroom_rules::policy::{EndReason, RecordedRun, StopReason, Verdict};
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

/// Past runs read from a file, and a note for each line left out.
pub type Imported = (Vec<(FinishedJob, RunContext)>, Vec<String>);

/// The runs of a stageload history file, keyed by `key` when given, and a note for each
/// line left out: a run with no measurement at all (stageload `--no-trace`, or killed before
/// its first reading) tells nothing of what the job needs, and is not imported.
pub fn runs(path: &Path, text: &str, key: Option<&str>) -> Result<Imported, String> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let latest = SystemTime::now() + LATEST_END_AHEAD;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |why: String| format!("{}:{}: {why}", path.display(), n + 1);
        let record: Record = serde_json::from_str(line)
            .map_err(|e| at(format!("not a stageload history line: {e}")))?;
        record.check().map_err(at)?;
        let ended = headroom_core::trace::parse_utc(&record.end)
            .ok_or_else(|| at(format!("'end' is not a UTC time: {}", record.end)))?;
        if ended > latest {
            return Err(at(format!("'end' is in the future: {}", record.end)));
        }
        if record.peak_footprint.is_none() && record.swap_peak.is_none() {
            notes.push(at(
                "the run was not measured (no footprint, no swap): not imported".into(),
            ));
            continue;
        }
        out.push(run(&record, ended, key));
    }
    Ok((out, notes))
}

/// How far past now a run may say it ended (clocks of two machines differ a little; a year
/// 9999 is no run's end).
const LATEST_END_AHEAD: Duration = Duration::from_secs(86_400);

impl Record {
    /// Its figures within the bounds every file Headroom reads is held to (`units`): sizes a
    /// machine can have, a percentage, a time.
    fn check(&self) -> Result<(), String> {
        let sizes = [
            ("peak_footprint", self.peak_footprint),
            ("swap_start", self.swap_start),
            ("swap_peak", self.swap_peak),
        ];
        for (name, bytes) in sizes {
            if let Some(bytes) = bytes {
                bounded_bytes(bytes).map_err(|why| format!("'{name}': {why}"))?;
            }
        }
        if let Some(level) = self.min_level {
            bounded_percent(level).map_err(|why| format!("'min_level': {why}"))?;
        }
        bounded_seconds(self.run_s).map_err(|why| format!("'run_s': {why}"))?;
        Ok(())
    }
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
        // stageload writes a signal as its negative number; i32::MIN is no signal's.
        code if code < 0 && code != i32::MIN => EndReason::Signaled {
            signal: code.saturating_neg(),
        },
        code => EndReason::Exited { code },
    };
    // A run stageload killed ended at a limit: it did not fit, whatever its swap did.
    let recorded = RecordedRun {
        swap_growth_bytes: growth,
        swap_start_bytes: record.swap_start.unwrap_or(0),
        peak_footprint_bytes: record.peak_footprint,
        lowest_free_percent: record.min_level,
        in_use_taken_bytes: None,
        duration,
        ended: ended_as,
        stages: Vec::new(),
    };
    let verdict = Verdict::recorded(recorded, tolerance);
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
        usable_bytes: None,
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
        let (runs, notes) = runs(Path::new("h.jsonl"), HISTORY, None).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(runs.len(), 2);
        let (job, ctx) = &runs[0];
        assert_eq!(ctx.key, "pixal");
        assert!(job.verdict.fits);
        assert_eq!(job.verdict.swap_growth_bytes, 50_000_000);
        assert_eq!(job.ended_at_ms - job.started_at_ms, 600_500);
        let (job, ctx) = &runs[1];
        assert_eq!(ctx.key, "qwen.py --size 1024");
        assert!(!job.verdict.fits);
        assert!(matches!(job.verdict.ended, EndReason::Stopped { .. }));
        let (need, lower) = headroom_rules::fit::need_of(&job.verdict, ctx.taken);
        assert!(lower && need > 49_000_000_000, "{need}");
        let (keyed, _) = super::runs(Path::new("h.jsonl"), HISTORY, Some("k")).unwrap();
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

    #[test]
    fn figures_past_every_bound_name_the_line_and_unmeasured_runs_are_left_out() {
        let good = HISTORY.lines().next().unwrap();
        for (bad, why) in [
            (
                good.replace(
                    "\"peak_footprint\": 32000000000",
                    "\"peak_footprint\": 18446744073709551615",
                ),
                "h.jsonl:2: 'peak_footprint': 18446744073709551615 bytes is more than",
            ),
            (
                good.replace("2026-10-05T10:00:00", "9999-10-05T10:00:00"),
                "h.jsonl:2: 'end' is in the future",
            ),
            (
                good.replace("\"min_level\": 21", "\"min_level\": 250"),
                "h.jsonl:2: 'min_level': 250 is not a percentage",
            ),
            (
                good.replace("\"run_s\": 600.5", "\"run_s\": -1"),
                "h.jsonl:2: 'run_s': -1 is not a number of seconds",
            ),
        ] {
            let text = format!("{good}\n{bad}\n");
            let err = runs(Path::new("h.jsonl"), &text, None).unwrap_err();
            assert!(err.starts_with(why), "{err}");
        }
        // An exit of i32::MIN is no signal (its negation would overflow).
        let min = good.replace("\"exit\": 0", &format!("\"exit\": {}", i32::MIN));
        let (runs_min, _) = runs(Path::new("h.jsonl"), &min, None).unwrap();
        assert_eq!(
            runs_min[0].0.verdict.ended,
            EndReason::Exited { code: i32::MIN }
        );
        // A run with no measurement says nothing of a need: left out, and said.
        let unmeasured = r#"{"end": "2026-10-05T10:00:00+00:00", "who": "w", "cmd": "x", "exit": -9, "run_s": 0.2, "peak_footprint": null, "swap_start": null, "swap_peak": null}"#;
        let (kept, notes) = runs(Path::new("h.jsonl"), unmeasured, None).unwrap();
        assert!(kept.is_empty());
        assert_eq!(
            notes,
            ["h.jsonl:1: the run was not measured (no footprint, no swap): not imported"]
        );
    }
}
