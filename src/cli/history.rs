//! The run history: what `guard` keeps of each run and says before it starts, and
//! `headroom history` (`headroom_core::fit` has the rules, the store keeps the runs;
//! `headroom fit` is in `fit.rs`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};
use headroom_core::counters::{CounterSource, Counters, SystemCounters};
use headroom_core::defaults as d;
use headroom_core::drive::Outcome;
use headroom_core::engine::{FinishedJob, JobMode};
use headroom_core::fit::{job_key, Prediction, Taken};
use headroom_core::paths::Dirs;
use headroom_core::policy::{EndReason, Verdict};
use headroom_core::process::ProcessIdentity;
use headroom_core::store::{RunContext, RunRow, Store};
use headroom_core::trace::read_trace;
use headroom_core::units::{format_bytes, format_duration, printable, unix_ms};

use super::exit;
use super::output::{print_json, say};

/// The environment variable `guard` sets for its command: the job's history key (what
/// `headroom fit --key` asks about).
pub const KEY_ENV: &str = "HEADROOM_KEY";

/// History flags of `guard` and `watch`.
#[derive(Debug, Args)]
pub struct HistoryFlags {
    /// Name the job: runs with the same key share a history, whatever their arguments
    /// (default: the command line, its program and script by file name).
    #[arg(long, value_name = "NAME", value_parser = super::values::parse_key)]
    pub key: Option<String>,
    /// Keep no record of this run (its key's past runs are still read for the prediction
    /// and `--wait-fit`).
    #[arg(long)]
    pub no_history: bool,
}

/// What was known before a guarded run started.
#[derive(Debug)]
pub struct Before {
    key: String,
    prediction: Option<Prediction>,
    started: SystemTime,
    system: Option<SystemCounters>,
}

impl Before {
    /// What the verdict line compares the run with: its prediction, and how its need is
    /// measured. `None` without a prediction.
    pub fn compared(&self) -> Option<Compared> {
        let p = self.prediction.as_ref()?;
        Some(Compared {
            predicted_bytes: p.need_bytes,
            taken: self.taken(),
        })
    }

    /// How this run's need is measured (from the memory at its start).
    fn taken(&self) -> Taken {
        self.system
            .as_ref()
            .map_or(Taken::Footprint, |s| Taken::here(s, s.free_percent))
    }

    /// The job's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The prediction from its past runs, if it has any.
    pub fn prediction(&self) -> Option<&Prediction> {
        self.prediction.as_ref()
    }

    /// The job starts now, after any wait for room: its start and the memory it starts
    /// with are read again (a run's need and time do not count the wait).
    pub fn starting(&mut self, counters: &Counters) {
        self.started = SystemTime::now();
        self.system = counters.read_system().ok().or(self.system.take());
    }
}

/// The run history, to write to it.
pub(super) fn open_store() -> Result<Store, String> {
    opened(Store::open(&Dirs::current().history_db_path()))
}

/// The run history, to read it: read-only when it cannot be written.
pub(super) fn open_store_to_read() -> Result<Store, String> {
    opened(Store::open_to_read(&Dirs::current().history_db_path()))
}

fn opened(
    result: Result<
        (Store, Option<headroom_core::store::StoreProblem>),
        headroom_core::store::StoreError,
    >,
) -> Result<Store, String> {
    match result {
        Ok((store, problem)) => {
            if let Some(problem) = problem {
                say(&format!("warning: {problem}"));
            }
            Ok(store)
        }
        Err(e) => Err(e.to_string()),
    }
}

pub(super) fn prediction_of(
    store: &Store,
    key: &str,
) -> Result<(Option<Prediction>, Vec<RunRow>), String> {
    store
        .predict_key(key, unix_ms(SystemTime::now()))
        .map_err(|e| e.to_string())
}

/// "needs about 29.1 GB (4 runs, last 2 days; 1 did not fit)".
pub(super) fn basis(p: &Prediction) -> String {
    let runs = if p.runs == 1 {
        "1 run".to_string()
    } else {
        format!("{} runs", p.runs)
    };
    let mut text = format!(
        "needs about {} ({runs}, last {}",
        format_bytes(p.need_bytes),
        format_duration(p.oldest.max(Duration::from_secs(1)))
    );
    if p.did_not_fit > 0 {
        text.push_str(&format!("; {} did not fit", p.did_not_fit));
    }
    text.push(')');
    text
}

/// A run's prediction, for its verdict line: "needed 12.1 GB, predicted 13.0 GB".
#[derive(Debug, Clone, Copy)]
pub struct Compared {
    /// The predicted need, bytes.
    pub predicted_bytes: u64,
    /// How the run's own need is measured.
    pub taken: Taken,
}

impl Compared {
    /// `needed X, predicted Y` for the run judged by `verdict`.
    pub fn words(&self, verdict: &headroom_core::policy::Verdict) -> String {
        let (need, _) = headroom_core::fit::need_of(verdict, self.taken);
        format!(
            "needed {}, predicted {}",
            format_bytes(need),
            format_bytes(self.predicted_bytes)
        )
    }
}

/// Before a guarded run: its key and the prediction from its past runs, said in one line.
pub fn before_start(counters: &Counters, argv: &[String], flags: &HistoryFlags) -> Before {
    let key = job_key(argv, flags.key.as_deref());
    let prediction = match open_store_to_read().and_then(|store| prediction_of(&store, &key)) {
        Ok((Some(p), _)) => {
            say(&format!("{}: {}", printable(&key), basis(&p)));
            Some(p)
        }
        Ok((None, _)) => None,
        Err(e) => {
            say(&format!("warning: the run history cannot be read: {e}"));
            None
        }
    };
    let system = counters.read_system().ok();
    // A memory cgroup that cannot be read: said once, before the run (its limit may bind).
    if let Some(note) = system.as_ref().and_then(|s| s.cgroup_note.as_deref()) {
        say(&format!(
            "note: {note}; the run is judged by the host's numbers"
        ));
    }
    Before {
        key,
        prediction,
        started: SystemTime::now(),
        system,
    }
}

/// After a guarded or watched run: its record kept (or why not), as the engine made it
/// (`Outcome::run`: the key and start memory were set on it, as the app sets them). (How
/// the run compared with its prediction is in the verdict line: [`Compared`].)
pub fn after_end(before: &Before, outcome: &Outcome, flags: &HistoryFlags) {
    let Some(run) = outcome.run.as_ref().filter(|_| !flags.no_history) else {
        return;
    };
    let cwd = std::env::current_dir()
        .ok()
        .map(|d| d.display().to_string());
    let kept = open_store().and_then(|mut store| {
        store
            .record_finished(run, before.system.as_ref(), cwd)
            .map_err(|e| e.to_string())
    });
    if let Err(e) = kept {
        say(&format!("the run was not recorded: {e}"));
    }
}

/// `headroom history`: the runs of a key, or the keys.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    command: Option<HistoryCommand>,
    /// The key whose runs to show (without it: every key, its run count and last verdict).
    #[arg(value_name = "KEY", value_parser = super::values::parse_key)]
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
            value_parser = super::values::parse_key,
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
        #[arg(long, value_name = "KEY", value_parser = super::values::parse_key)]
        key: Option<String>,
        /// The machine's memory (stageload's traces do not say it), e.g. 48G.
        #[arg(long, value_parser = super::values::parse_memory_size, value_name = "SIZE")]
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
                for (job, context) in import_file(path, key.as_deref(), *total_memory)? {
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

/// The past runs in `path`: every run of a stageload history, or the one run of a trace
/// (which needs `key`).
fn import_file(
    path: &std::path::Path,
    key: Option<&str>,
    total_memory: Option<u64>,
) -> anyhow::Result<Vec<(FinishedJob, RunContext)>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| exit::Invalid(format!("{}: {e}", path.display())))?;
    if super::stageload_history::is_stageload_history(&text) {
        return Ok(super::stageload_history::runs(path, &text, key).map_err(exit::Invalid)?);
    }
    let key = key.ok_or_else(|| {
        exit::Invalid(format!(
            "{}: a trace is one run: say whose with --key KEY",
            path.display()
        ))
    })?;
    Ok(vec![import(path, key, total_memory)?])
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
    let total = total_memory.or_else(|| meta.get("total_memory").and_then(|v| v.as_u64()));
    let tolerance = d::FITS_TOLERANCE_BYTES;
    let verdict = Verdict {
        fits: summary.swap_rise_bytes <= tolerance,
        swap_growth_bytes: summary.swap_rise_bytes,
        swap_start_bytes: summary.swap_start_bytes,
        peak_footprint_bytes: Some(summary.peak_footprint_bytes),
        lowest_free_percent: Some(summary.lowest_level_percent),
        in_use_rise_bytes: summary.in_use_rise_bytes,
        duration: Duration::from_secs_f64(summary.duration_seconds.max(0.0)),
        ended: EndReason::Exited { code: 0 },
        processes: 0,
        fits_tolerance_bytes: tolerance,
        stages: summary.stage_swap.clone(),
        tight: None,
        pauses: 0,
        paused: Duration::ZERO,
        oom_killed: None,
    };
    let started = meta
        .get("utc")
        .and_then(|v| v.as_str())
        .and_then(headroom_core::trace::parse_utc)
        .unwrap_or_else(SystemTime::now);
    let ended = started + verdict.duration;
    let job = FinishedJob {
        identity: ProcessIdentity {
            pid: 0,
            start_time: 0,
        },
        command: meta
            .get("command")
            .and_then(|v| v.as_str())
            .unwrap_or(key)
            .to_string(),
        mode: JobMode::Watch,
        started_at_ms: unix_ms(started),
        ended_at_ms: unix_ms(ended),
        verdict,
    };
    let free_start_percent = trace.samples.first().map(|s| s.level);
    // A trace's footprint is a Mac's (stageload) or may be: what the run took is what the
    // machine lost (`fit::recorded` without page counts), where the trace says of how much.
    let base = meta.get("usable_memory").and_then(|v| v.as_u64()).or(total);
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
        free_start_percent,
        cwd: None,
        hostname: None,
        taken,
    };
    Ok((job, context))
}
