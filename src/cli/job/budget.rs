//! Flags shared by `guard`, `watch` and `trace replay`: the swap budget and its limits,
//! parsed into a validated [`Limits`]; [`JobArgs`] is every flag a running job has.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use headroom_rules::defaults as d;
use headroom_rules::defaults::text;
use headroom_rules::policy::{Limits, OnBudget};

use crate::cli::job::sinks::TraceSink;

/// Budget flags (the stop rules and the verdict's tolerance).
#[derive(Debug, Clone, Args)]
pub struct BudgetArgs {
    /// Stop the job when swap grows more than this over its level at the start (e.g. 8G,
    /// 512M; binary units). When swap, growing at its rate, would pass it before the next
    /// check, the guard looks again just after that moment (a replayed trace without such
    /// looks: stopped when it would pass it before the next check).
    #[arg(long, default_value = text::size(d::SWAP_BUDGET_BYTES), allow_hyphen_values = true, value_parser = crate::cli::values::parse_size, value_name = "SIZE")]
    pub swap_budget: u64,
    /// Also stop when swap in use passes this absolute amount (and, for guard, do not start
    /// while swap in use plus the budget is above it).
    #[arg(long, allow_hyphen_values = true, value_parser = crate::cli::values::parse_size, value_name = "SIZE")]
    pub swap_limit: Option<u64>,
    /// Stop when free memory stays below this percent for two samples in a row (one, under
    /// a memory limit: the OOM killer acts at the limit).
    #[arg(long, default_value = text::percent(d::KILL_FREE_PERCENT), allow_hyphen_values = true, value_parser = crate::cli::values::parse_percent, value_name = "PERCENT")]
    pub kill_free: f64,
    /// Swap growth up to this still counts as "fits".
    #[arg(long, default_value = text::size(d::FITS_TOLERANCE_BYTES), allow_hyphen_values = true, value_parser = crate::cli::values::parse_size, value_name = "SIZE")]
    pub fits_tolerance: u64,
    /// A run that fits is "tight" when compressed memory (macOS compressor, Linux zswap)
    /// grew more than this.
    #[arg(long, default_value = text::size(d::TIGHT_COMPRESSED_BYTES), allow_hyphen_values = true, value_parser = crate::cli::values::parse_size, value_name = "SIZE")]
    pub tight_compressed: u64,
    /// A run that fits is "tight" when free memory fell under this percent.
    #[arg(long, default_value = text::percent(d::TIGHT_FREE_PERCENT), allow_hyphen_values = true, value_parser = crate::cli::values::parse_percent, value_name = "PERCENT")]
    pub tight_free: f64,
    /// Report swap growth each time it passes another multiple of this (at most once a
    /// minute).
    #[arg(long, default_value = text::size(d::NOTIFY_STEP_BYTES), allow_hyphen_values = true, value_parser = crate::cli::values::parse_size, value_name = "SIZE")]
    pub notify_step: u64,
}

/// The ids of [`BudgetArgs`]' flags, as clap names them (`--swap-budget` is `swap_budget`).
pub const BUDGET_FLAGS: [&str; 7] = [
    "swap_budget",
    "swap_limit",
    "kill_free",
    "fits_tolerance",
    "tight_compressed",
    "tight_free",
    "notify_step",
];

impl BudgetArgs {
    /// `limits` with the flags named in `given` (ids of [`BUDGET_FLAGS`]) set from these.
    pub fn override_given(&self, limits: Limits, given: &[&str]) -> Limits {
        let mine = self.limits(limits.lookahead);
        let pick = |id: &str| given.contains(&id);
        Limits {
            swap_budget_bytes: if pick("swap_budget") {
                mine.swap_budget_bytes
            } else {
                limits.swap_budget_bytes
            },
            swap_limit_bytes: if pick("swap_limit") {
                mine.swap_limit_bytes
            } else {
                limits.swap_limit_bytes
            },
            kill_free_percent: if pick("kill_free") {
                mine.kill_free_percent
            } else {
                limits.kill_free_percent
            },
            fits_tolerance_bytes: if pick("fits_tolerance") {
                mine.fits_tolerance_bytes
            } else {
                limits.fits_tolerance_bytes
            },
            tight_compressed_bytes: if pick("tight_compressed") {
                mine.tight_compressed_bytes
            } else {
                limits.tight_compressed_bytes
            },
            tight_free_percent: if pick("tight_free") {
                mine.tight_free_percent
            } else {
                limits.tight_free_percent
            },
            notify_step_bytes: if pick("notify_step") {
                mine.notify_step_bytes
            } else {
                limits.notify_step_bytes
            },
            ..limits
        }
    }

    /// The limits these flags describe (start-gate fields at their defaults).
    pub fn limits(&self, poll: Duration) -> Limits {
        Limits {
            swap_budget_bytes: self.swap_budget,
            swap_limit_bytes: self.swap_limit,
            kill_free_percent: self.kill_free,
            fits_tolerance_bytes: self.fits_tolerance,
            notify_step_bytes: self.notify_step.max(1),
            tight_compressed_bytes: self.tight_compressed,
            tight_free_percent: self.tight_free,
            lookahead: poll,
            ..Limits::default()
        }
    }
}

/// What a guard does at its budget: `--on-budget`, `--max-pauses`, `--resume-free`.
#[derive(Debug, Clone, Args)]
pub struct PauseArgs {
    /// At the budget (or the free floor): `stop` the job, or `pause` it (SIGSTOP) until
    /// `headroom resume PID` continues it with a new budget from swap in use then (Ctrl-C in
    /// the guard's terminal stops a paused job), or `interrupt` it at its budget: SIGINT to
    /// its leader (KeyboardInterrupt in Python: a notebook's kernel lives on), stopped if swap
    /// still grows half a budget more, its whole budget back once swap stops growing for
    /// --resume-calm.
    #[arg(long, default_value = "stop", value_parser = parse_on_budget, value_name = "stop|pause|interrupt")]
    pub on_budget: OnBudget,
    /// With --on-budget pause: pauses at most; the crossing after the last one stops the job.
    #[arg(long, default_value_t = d::MAX_PAUSES, value_name = "N")]
    pub max_pauses: u32,
    /// With --on-budget pause: resume by itself once free memory is back at or above this
    /// percent and swap has stopped growing for --resume-calm.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::cli::values::parse_percent, value_name = "PERCENT")]
    pub resume_free: Option<f64>,
    /// With --resume-free: how long swap must have stopped growing (by 16 MiB or more)
    /// before the job is resumed (with --on-budget interrupt: before its budget is back).
    #[arg(long, default_value = text::duration(d::RESUME_CALM), allow_hyphen_values = true, value_parser = crate::cli::values::parse_duration, value_name = "DURATION")]
    pub resume_calm: Duration,
}

fn parse_on_budget(text: &str) -> Result<OnBudget, String> {
    OnBudget::parse(text)
        .ok_or_else(|| format!("invalid value '{text}': expected stop, pause or interrupt"))
}

impl PauseArgs {
    /// `limits` with these choices.
    pub fn apply(&self, limits: Limits) -> Limits {
        Limits {
            on_budget: self.on_budget,
            max_pauses: self.max_pauses,
            resume_free_percent: self.resume_free,
            resume_calm: self.resume_calm,
            ..limits
        }
    }
}

/// Flags of a running job: polling, grace, outputs.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Time between checks and trace samples. A guard checks more often as swap nears the
    /// budget or grows fast (down to every 100 ms); the trace keeps this interval.
    #[arg(long, default_value = text::duration(d::POLL), allow_hyphen_values = true, value_parser = crate::cli::values::parse_interval, value_name = "DURATION")]
    pub poll: Duration,
    /// Time between SIGTERM and SIGKILL when stopping.
    #[arg(long, default_value = text::duration(d::GRACE), allow_hyphen_values = true, value_parser = crate::cli::values::parse_duration, value_name = "DURATION")]
    pub grace: Duration,
    /// Also write a JSONL memory trace of the job here.
    #[arg(long, value_name = "PATH")]
    pub trace: Option<PathBuf>,
    /// Print a JSON summary on stdout at the end.
    #[arg(long)]
    pub json: bool,
}

/// Every flag a running job has (`guard`, `watch`): its budget, what happens at it, and how
/// it runs.
#[derive(Debug, Clone, Args)]
pub struct JobArgs {
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub pause: PauseArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

impl JobArgs {
    /// The limits these flags set (the start gate at its defaults).
    pub fn limits(&self) -> Limits {
        self.pause.apply(self.budget.limits(self.run.poll))
    }

    /// The trace `--trace` asks for, created now: before the job starts, so a path that
    /// cannot be written starts nothing.
    pub fn trace_sink(&self, command: &str) -> anyhow::Result<Option<TraceSink>> {
        self.run
            .trace
            .as_deref()
            .map(|path| TraceSink::create(path, command, self.run.poll, &self.limits()))
            .transpose()
    }
}
