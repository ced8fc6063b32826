//! `headroom history`: the runs of a key or every key, `forget` and `import` (a run's past
//! and its record as `guard` keeps them are `runs.rs`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};
use headroom_core::store::{RunContext, Store};
use headroom_core::trace::read_trace;
use headroom_model::process::ProcessIdentity;
use headroom_model::units::{format_bytes, format_duration, printable, unix_ms};
use headroom_rules::defaults as d;
use headroom_rules::engine::{FinishedJob, JobMode};
use headroom_rules::fit::Taken;
use headroom_rules::policy::{EndReason, RecordedRun, Verdict};

use crate::cli::exit;
use crate::cli::output::{print_json, say};

use crate::cli::past::runs::{open_store, open_store_to_read};

/// `headroom history`: the runs of a key, or the keys.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    command: Option<HistoryCommand>,
    /// The key whose runs to show (without it: every key, its run count and last verdict).
    #[arg(value_name = "KEY", value_parser = crate::cli::values::parse_key)]
    key: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Show at most this many runs.
    #[arg(long, default_value_t = 20, value_name = "N")]
    limit: usize,
}

/// What else `headroom history` does.
#[derive(Debug, Subcommand)]
enum HistoryCommand {
    /// Delete the runs of KEY, or (--all) every run.
    Forget {
        /// The key to forget.
        #[arg(
            value_name = "KEY",
            value_parser = crate::cli::values::parse_key,
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        key: Option<String>,
        /// Forget every run.
        #[arg(long)]
        all: bool,
    },
    /// Make past runs from recorded traces (Headroom's or stageload's) or from stageload's
    /// run history (~/.stageload/history.jsonl).
    Import {
        /// The traces, or stageload's history.jsonl.
        #[arg(required = true, value_name = "TRACE")]
        traces: Vec<PathBuf>,
        /// The key they are runs of (needed for a trace; stageload's history keys each run
        /// by its `who` label, else by its command line, unless given).
        #[arg(long, value_name = "KEY", value_parser = crate::cli::values::parse_key)]
        key: Option<String>,
        /// The machine's memory (stageload's traces do not say it), e.g. 48G.
        #[arg(long, value_parser = crate::cli::values::parse_memory_size, value_name = "SIZE")]
        total_memory: Option<u64>,
    },
}

/// Runs `headroom history`.
pub fn run_history(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    // Reading needs no write: a read-only history is read.
    let mut store = match &args.command {
        Some(_) => open_store(),
        None => open_store_to_read(),
    }
    .map_err(exit::Invalid)?;
    match &args.command {
        Some(HistoryCommand::Forget { key, all }) => {
            let n = store.forget(if *all { None } else { key.as_deref() })?;
            say(&format!("forgot {n} run{}", if n == 1 { "" } else { "s" }));
        }
        Some(HistoryCommand::Import {
            traces,
            key,
            total_memory,
        }) => {
            for path in traces {
                let (runs, notes) = import_file(path, key.as_deref(), *total_memory)?;
                for note in notes {
                    say(&format!("warning: {note}"));
                }
                for (job, context) in runs {
                    // The same run again (the same file twice, a link to it, a copy): once.
                    if store.has_run(&context.key, &job)? {
                        say(&format!(
                            "{}: a run of {} is in the history already: not imported again",
                            path.display(),
                            printable(&context.key)
                        ));
                        continue;
                    }
                    let id = store.record_run(&job, &context)?;
                    say(&format!(
                        "{}: run {id} of {}: {}",
                        path.display(),
                        printable(&context.key),
                        job.verdict.word()
                    ));
                }
            }
        }
        None => match &args.key {
            Some(key) => show_runs(&store, key, args)?,
            None => {
                let keys = store.keys()?;
                if args.json {
                    print_json(&keys)?;
                } else {
                    for k in keys {
                        let key = printable(&k.key);
                        println!("{:>5}  {:<11}  {key}", k.runs, k.last_verdict);
                    }
                }
            }
        },
    }
    Ok(exit::status(exit::OK))
}

fn show_runs(store: &Store, key: &str, args: &HistoryArgs) -> anyhow::Result<()> {
    let rows = store.runs_of(key, args.limit)?;
    if args.json {
        print_json(&rows)?;
        return Ok(());
    }
    let now = unix_ms(SystemTime::now());
    for r in rows {
        let age = Duration::from_millis(u64::try_from(now - r.ended_at_ms).unwrap_or(0));
        println!(
            "{:>6}  {:<11}  needed {}{}  {} ago",
            r.id,
            r.verdict,
            format_bytes(r.need_bytes),
            if r.need_lower_bound { " or more" } else { "" },
            format_duration(age)
        );
    }
    Ok(())
}

/// The largest file `history import` reads: far more than years of a stageload history or
/// a day-long trace.
const IMPORT_AT_MOST_BYTES: u64 = 256 << 20;

/// The past runs in `path`: every run of a stageload history, or the one run of a trace
/// (which needs `key`). Only a regular file of at most [`IMPORT_AT_MOST_BYTES`] is read (a
/// FIFO would hang the import, a device never end).
fn import_file(
    path: &std::path::Path,
    key: Option<&str>,
    total_memory: Option<u64>,
) -> anyhow::Result<crate::cli::past::stageload_history::Imported> {
    let bad = |why: String| exit::Invalid(format!("{}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("not a regular file".into()).into());
    }
    if meta.len() > IMPORT_AT_MOST_BYTES {
        return Err(bad(format!(
            "{} bytes: more than a history or trace holds (at most {IMPORT_AT_MOST_BYTES})",
            meta.len()
        ))
        .into());
    }
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(
            std::fs::File::open(path).map_err(|e| bad(e.to_string()))?,
            IMPORT_AT_MOST_BYTES,
        ),
        &mut text,
    )
    .map_err(|e| bad(e.to_string()))?;
    if crate::cli::past::stageload_history::is_stageload_history(&text) {
        return Ok(
            crate::cli::past::stageload_history::runs(path, &text, key).map_err(exit::Invalid)?
        );
    }
    let key = key.ok_or_else(|| {
        exit::Invalid(format!(
            "{}: a trace is one run: say whose with --key KEY",
            path.display()
        ))
    })?;
    Ok((vec![import(path, key, total_memory)?], Vec::new()))
}

/// A trace as a past run: its verdict from its `end` record where it has one, else judged
/// by its samples (swap grew past the tolerance: it did not fit).
fn import(
    path: &std::path::Path,
    key: &str,
    total_memory: Option<u64>,
) -> anyhow::Result<(FinishedJob, RunContext)> {
    let trace = read_trace(path).map_err(|e| exit::Invalid(e.to_string()))?;
    let summary = headroom_core::summary::summarize(&trace)
        .ok_or_else(|| exit::Invalid(format!("{}: no samples", path.display())))?;
    let meta = trace.start.clone().unwrap_or_default();
    let total = total_memory.or_else(|| (meta.run.total_bytes > 0).then_some(meta.run.total_bytes));
    let tolerance = d::FITS_TOLERANCE_BYTES;
    let recorded = RecordedRun {
        swap_growth_bytes: summary.swap_rise_bytes,
        swap_start_bytes: summary.swap_start_bytes,
        peak_footprint_bytes: Some(summary.peak_footprint_bytes),
        lowest_free_percent: Some(summary.lowest_level_percent),
        in_use_taken_bytes: summary.in_use_taken_bytes,
        duration: Duration::from_secs_f64(summary.duration_seconds.max(0.0)),
        ended: EndReason::Exited { code: 0 },
        stages: summary.stage_swap.clone(),
    };
    let verdict = Verdict::recorded(recorded, tolerance);
    let started = meta
        .utc
        .as_deref()
        .and_then(headroom_core::trace::parse_utc)
        .unwrap_or_else(SystemTime::now);
    let ended = started + verdict.duration;
    let job = FinishedJob {
        identity: ProcessIdentity {
            pid: 0,
            start_time: 0,
        },
        command: meta.command.clone().unwrap_or_else(|| key.to_string()),
        mode: JobMode::Watch,
        started_at_ms: unix_ms(started),
        ended_at_ms: unix_ms(ended),
        verdict,
    };
    let free_start_percent = trace.samples.first().map(|s| s.level);
    // A trace's footprint is a Mac's (stageload) or may be: what the run took is what the
    // machine lost (`fit::recorded` without page counts), where the trace says of how much.
    let base = meta.run.usable_bytes.or(total);
    let taken = match (base, free_start_percent) {
        (Some(base_bytes), Some(free_start_percent)) => Taken::Machine {
            base_bytes,
            free_start_percent,
        },
        _ => Taken::Footprint,
    };
    let context = RunContext {
        key: key.to_string(),
        total_bytes: total,
        usable_bytes: meta.run.usable_bytes,
        free_start_percent,
        cwd: None,
        hostname: None,
        taken,
    };
    Ok((job, context))
}
