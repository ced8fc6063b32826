//! A run's past and its record, shared by `guard`, `watch`, `fit` and `queue`: the key and
//! prediction a run starts with, the history opened to read or write, and the record kept
//! when it ends (made by the engine: `Outcome::run`). `headroom_rules::fit` has the rules,
//! the store keeps the runs; the `headroom history` subcommand is `history.rs`.

use std::time::{Duration, SystemTime};

use clap::Args;
use headroom_core::drive::Outcome;
use headroom_core::store::{RunRow, Store};
use headroom_model::counters::SystemCounters;
use headroom_model::units::{format_bytes, format_duration, printable, unix_ms};
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::paths::Dirs;
use headroom_rules::fit::{job_key, Prediction, Taken};

use crate::cli::output::say;

/// The environment variable `guard` sets for its command: the job's history key (what
/// `headroom fit --key` asks about).
pub const KEY_ENV: &str = "HEADROOM_KEY";

/// History flags of `guard` and `watch`.
#[derive(Debug, Args)]
pub struct HistoryFlags {
    /// Name the job: runs with the same key share a history, whatever their arguments
    /// (default: the command line, its program and script by file name).
    #[arg(long, value_name = "NAME", value_parser = crate::cli::values::parse_key)]
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

/// "needs about 29.1 GiB (4 runs, last 2 days; 1 did not fit)".
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

/// A run's prediction, for its verdict line: "needed 12.1 GiB, predicted 13.0 GiB".
#[derive(Debug, Clone, Copy)]
pub struct Compared {
    /// The predicted need, bytes.
    pub predicted_bytes: u64,
    /// How the run's own need is measured.
    pub taken: Taken,
}

impl Compared {
    /// `needed X, predicted Y` for the run judged by `verdict`.
    pub fn words(&self, verdict: &headroom_rules::policy::Verdict) -> String {
        let (need, _) = headroom_rules::fit::need_of(verdict, self.taken);
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
