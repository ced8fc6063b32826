//! `headroom trace summary|plot|replay FILE`: read our traces and stageload's.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use headroom_core::drive::replay;
use headroom_core::summary::{named_stage_windows, summarize, Summary};
use headroom_core::trace::{read_trace, Trace};
use headroom_model::units::{format_bytes, format_delta_bytes, format_duration};
use headroom_rules::engine::{JobMode, JobSpec};
use headroom_rules::policy::Limits;

use crate::cli::exit;
use crate::cli::job::budget::{BudgetArgs, BUDGET_FLAGS};
use crate::cli::output::print_json;

/// `headroom trace` subcommands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Peak footprint, swap at start/peak/end and its rise, lowest free %, duration, and the
    /// peak footprint of each stage when the trace has stage events.
    Summary {
        /// The trace (JSONL).
        file: PathBuf,
        /// Print JSON (bytes) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Plot footprint and swap on one time axis and free % on a second one, with stage
    /// boundaries, to SVG or PNG (by the output's extension).
    Plot {
        /// The trace (JSONL).
        file: PathBuf,
        /// Output file: .svg or .png.
        #[arg(short, long, value_name = "PATH", value_parser = parse_chart_path)]
        output: PathBuf,
    },
    /// Run the guard's stop rules over a recorded trace: when and why it would have stopped
    /// the job. Exits 3 if it would have, 0 if not.
    Replay(ReplayArgs),
}

/// Flags of `trace replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace (JSONL).
    file: PathBuf,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn parse_chart_path(text: &str) -> Result<PathBuf, String> {
    let lower = text.to_ascii_lowercase();
    if lower.ends_with(".svg") || lower.ends_with(".png") {
        Ok(PathBuf::from(text))
    } else {
        Err(format!("'{text}' must end in .svg or .png"))
    }
}

/// The limits a replay judges `trace` by: those its run was judged under, as its `start`
/// record keeps them (a guard's trace), each flag given on the command line in place of
/// its own (said on standard error); else the flags, defaults included.
fn replay_limits(trace: &Trace, flags: &BudgetArgs, poll: std::time::Duration) -> Limits {
    let Some(recorded) = trace.start.as_ref().and_then(|s| s.limits.as_ref()) else {
        return flags.limits(poll);
    };
    let given = crate::cli::given::given(&["trace", "replay"], &BUDGET_FLAGS);
    let own = recorded.apply(Limits {
        lookahead: poll,
        ..Limits::default()
    });
    eprintln!(
        "headroom: judged by the run's own limits: swap budget {}, free floor {}%{}",
        format_bytes(own.swap_budget_bytes),
        own.kill_free_percent,
        own.swap_limit_bytes
            .map(|b| format!(", swap limit {}", format_bytes(b)))
            .unwrap_or_default()
    );
    if !given.is_empty() {
        let flags: Vec<String> = given
            .iter()
            .map(|id| format!("--{}", id.replace('_', "-")))
            .collect();
        eprintln!(
            "headroom: {} given: in place of the run's own",
            flags.join(", ")
        );
    }
    flags.override_given(own, &given)
}

/// Reads a trace for a subcommand: one without a sample is bad input (exit 2), as a trace
/// that is not one is.
fn load(file: &std::path::Path) -> anyhow::Result<Trace> {
    let trace = read_trace(file)?;
    if trace.samples.is_empty() {
        return Err(
            exit::Invalid(format!("{}: no samples: nothing to read", file.display())).into(),
        );
    }
    if trace.truncated {
        eprintln!(
            "headroom: note: {}: the last line was cut off mid-write and was skipped",
            file.display()
        );
    }
    Ok(trace)
}

/// Runs a `trace` subcommand.
pub fn run(cmd: &TraceCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TraceCommand::Summary { file, json } => {
            let trace = load(file)?;
            let summary =
                summarize(&trace).with_context(|| format!("{}: no samples", file.display()))?;
            if *json {
                print_json(&summary)?;
            } else {
                print!("{}", summary_text(&summary));
            }
            Ok(ExitCode::SUCCESS)
        }
        TraceCommand::Plot { file, output } => {
            let trace = load(file)?;
            let title = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            crate::cli::traces::plot::write_trace_chart(
                &trace,
                &stage_labels(&trace),
                &title,
                output,
            )?;
            eprintln!("headroom: wrote {}", output.display());
            Ok(ExitCode::SUCCESS)
        }
        TraceCommand::Replay(args) => {
            let trace = load(&args.file)?;
            let poll = trace.interval(headroom_rules::defaults::POLL);
            // The live guard's own checks, down to its fastest near the budget: the trace
            // holds every reading it judged.
            let spec = JobSpec::new(
                String::new(),
                JobMode::Guard,
                replay_limits(&trace, &args.budget, poll),
                poll,
            );
            let r = replay(&trace, spec)
                .with_context(|| format!("{}: no samples", args.file.display()))?;
            if args.json {
                print_json(&r)?;
            } else {
                match (&r.stopped_at_seconds, &r.reason) {
                    (Some(t), Some(reason)) => {
                        let stage = r
                            .stage
                            .as_ref()
                            .map(|s| format!(" in stage {s}"))
                            .unwrap_or_default();
                        println!("would stop at t={t:.1} s{stage}: {reason}");
                    }
                    _ => println!("would not stop it"),
                }
                println!("verdict: {}", r.verdict);
            }
            Ok(exit::status(if r.stopped_at_seconds.is_some() {
                exit::STOPPED
            } else {
                exit::OK
            }))
        }
    }
}

/// Stage starts for the chart, each named with the swap it added when that passed the
/// default fits tolerance: `decode +6.3 GB`.
fn stage_labels(trace: &Trace) -> Vec<(String, f64)> {
    let tolerance = headroom_rules::policy::Limits::default().fits_tolerance_bytes;
    let figures = summarize(trace).map(|s| s.stage_swap).unwrap_or_default();
    named_stage_windows(trace)
        .into_iter()
        .map(|(name, t)| {
            // A name marked twice labels each line with its largest growth.
            let most = figures
                .iter()
                .filter(|f| f.stage == name)
                .max_by_key(|f| f.swap_growth_bytes);
            (most.map_or(name, |f| f.label(tolerance)), t)
        })
        .collect()
}

fn summary_text(s: &Summary) -> String {
    let mut out = String::new();
    let duration = std::time::Duration::from_secs_f64(s.duration_seconds.max(0.0));
    out.push_str(&format!(
        "samples        {} over {}{}\n",
        s.samples,
        format_duration(duration),
        if s.ended {
            ""
        } else {
            " (no end record: the run was killed)"
        }
    ));
    out.push_str(&format!(
        "peak footprint {}\n",
        format_bytes(s.peak_footprint_bytes)
    ));
    out.push_str(&format!(
        "swap           start {}, peak {}, end {}, rise {}\n",
        format_bytes(s.swap_start_bytes),
        format_bytes(s.swap_peak_bytes),
        format_bytes(s.swap_end_bytes),
        format_bytes(s.swap_rise_bytes)
    ));
    out.push_str(&format!("lowest free    {:.0}%\n", s.lowest_level_percent));
    if s.errors > 0 {
        out.push_str(&format!("read errors    {}\n", s.errors));
    }
    if !s.stages.is_empty() {
        out.push_str(
            "\nstage            peak footprint   swap growth   cumulative   lowest free\n",
        );
        for stage in &s.stages {
            let peak = stage.peak_footprint_bytes.map_or_else(
                || "–".to_string(),
                |b| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
            );
            let swap = s.stage_swap.iter().find(|f| f.stage == stage.stage);
            let (growth, cumulative, lowest) = swap.map_or_else(
                || ("–".to_string(), "–".to_string(), "–".to_string()),
                |f| {
                    (
                        format_delta_bytes(f.swap_growth_bytes as i64),
                        format_delta_bytes(f.cumulative_growth_bytes as i64),
                        f.lowest_free_percent
                            .map_or_else(|| "–".to_string(), |l| format!("{l:.0}%")),
                    )
                },
            );
            out.push_str(&format!(
                "{:<16} {peak:<16} {growth:<13} {cumulative:<12} {lowest}\n",
                stage.stage
            ));
        }
    }
    out
}
