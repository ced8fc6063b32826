//! The run history: every job that ended, whoever ran it (`headroom guard`, `watch`, the
//! app), with what a prediction of its next run needs ([`headroom_rules::fit`]): its key, its need,
//! the memory it ran in. Rows of the `jobs` table; many writers at once are safe (WAL, a
//! busy timeout, one short statement per record).

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{Store, StoreError};
use headroom_model::counters::SystemCounters;
use headroom_rules::engine::{FinishedJob, FinishedRun};
use headroom_rules::fit::{need_of, predict, PastRun, Prediction, Taken};

/// Runs a prediction reads at most (the newest).
pub const RUNS_PREDICTED: usize = 1000;

/// What is known of a run beyond its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct RunContext {
    /// The job's key ([`headroom_rules::fit::job_key`]).
    pub key: String,
    /// The memory it ran in: the host's, or its cgroup's limit.
    pub total_bytes: Option<u64>,
    /// The memory its levels and floors were of, where it differs from `total_bytes`
    /// (macOS `hw.memsize_usable`).
    pub usable_bytes: Option<u64>,
    /// Free memory at its start, percent.
    pub free_start_percent: Option<f64>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// The machine.
    pub hostname: Option<String>,
    /// How what the run took is measured.
    pub taken: Taken,
}

impl Default for RunContext {
    fn default() -> Self {
        RunContext {
            key: String::new(),
            total_bytes: None,
            usable_bytes: None,
            free_start_percent: None,
            cwd: None,
            hostname: None,
            taken: Taken::Footprint,
        }
    }
}

impl RunContext {
    /// A run of `key` on this machine (its host name; its memory as `machine` reads it) with
    /// `free_start_percent` free at its start: what it took measured as this OS measures it
    /// ([`Taken::here`]), by its footprint when either is unknown.
    pub fn here(
        key: String,
        machine: Option<&SystemCounters>,
        free_start_percent: Option<f64>,
    ) -> Self {
        let taken = match (machine, free_start_percent) {
            (Some(m), Some(free)) => Taken::here(m, free),
            _ => Taken::Footprint,
        };
        RunContext {
            key,
            total_bytes: machine.map(|m| m.total_bytes),
            usable_bytes: machine.and_then(|m| m.usable_bytes),
            free_start_percent,
            cwd: None,
            hostname: headroom_os::unix::host::hostname(),
            taken,
        }
    }
}

/// One past run of a key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    /// Row id.
    pub id: i64,
    /// Its command line.
    pub command: String,
    /// When it started, ms since the Unix epoch.
    pub started_at_ms: i64,
    /// When it ended, ms since the Unix epoch.
    pub ended_at_ms: i64,
    /// The verdict's label (`fits`, `tight`, `doesnt_fit`, `stopped`).
    pub verdict: String,
    /// Its need, bytes (raised when a lower bound).
    pub need_bytes: u64,
    /// True when the need is a lower bound (the run did not end on its own).
    pub need_lower_bound: bool,
    /// The memory it ran in, where known.
    pub total_bytes: Option<u64>,
    /// The memory its levels and floors were of, where it differs from `total_bytes`
    /// (macOS `hw.memsize_usable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable_bytes: Option<u64>,
    /// Free memory at its start, percent, where known.
    pub free_start_percent: Option<f64>,
}

impl RunRow {
    /// This run as the prediction reads it, `now_ms` being now.
    pub fn past_run(&self, now_ms: i64) -> PastRun {
        let age_ms = u64::try_from(now_ms.saturating_sub(self.ended_at_ms)).unwrap_or(0);
        PastRun {
            need_bytes: self.need_bytes,
            age: std::time::Duration::from_millis(age_ms),
            did_not_fit: self.verdict == "doesnt_fit",
            run_time: u64::try_from(self.ended_at_ms - self.started_at_ms)
                .ok()
                .map(std::time::Duration::from_millis),
        }
    }
}

/// A key and its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeySummary {
    /// The key.
    pub key: String,
    /// How many runs it has.
    pub runs: u64,
    /// The last run's verdict label.
    pub last_verdict: String,
    /// When the last run ended, ms since the Unix epoch.
    pub last_ended_at_ms: i64,
}

/// The label of a stored verdict (`fits`, `doesnt_fit` …), `unknown` when it cannot be read.
fn label_of(verdict_json: &str) -> String {
    serde_json::from_str::<headroom_rules::policy::Verdict>(verdict_json)
        .map_or_else(|_| "unknown".to_string(), |v| v.label().to_string())
}

impl Store {
    /// Records a finished run of any driver's (the terminal's guard and watch, the app):
    /// its key and start from the engine, on this machine (`machine`: its memory as read by
    /// the caller), run in `cwd` when known. Returns its id.
    pub fn record_finished(
        &mut self,
        run: &FinishedRun,
        machine: Option<&SystemCounters>,
        cwd: Option<String>,
    ) -> Result<i64, StoreError> {
        let context = RunContext {
            cwd,
            ..RunContext::here(run.start.key.clone(), machine, run.start.free_start_percent)
        };
        self.record_run(&run.job, &context)
    }

    /// Records a finished job with what is known of its run (an imported trace's, a
    /// driver's through [`Store::record_finished`]); returns its id.
    pub fn record_run(&mut self, job: &FinishedJob, run: &RunContext) -> Result<i64, StoreError> {
        let verdict_json = serde_json::to_string(&job.verdict)?;
        // A run stopped or killed before anything of it was measured is listed with no
        // need: it never showed what it needs, and a prediction ("will it fit?") rests only
        // on runs with a need (`runs_of`). One that ended on its own before its first check
        // took too little to be seen: its need stands.
        let (need, lower_bound) = need_of(&job.verdict, run.taken);
        let need = (job.verdict.measured() || !lower_bound).then_some(need);
        self.conn.execute(
            "INSERT INTO jobs (pid, start_time, command, mode, started_at_ms, ended_at_ms, fits, \
             swap_growth_bytes, peak_footprint_bytes, verdict_json, key, need_bytes, \
             need_lower_bound, total_bytes, free_start_percent, cwd, hostname, usable_bytes) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
             ?18)",
            params![
                job.identity.pid,
                job.identity.start_time,
                job.command,
                job.mode.as_str(),
                job.started_at_ms,
                job.ended_at_ms,
                job.verdict.fits,
                job.verdict.swap_growth_bytes,
                job.verdict.peak_footprint_bytes,
                verdict_json,
                run.key,
                need,
                lower_bound,
                run.total_bytes,
                run.free_start_percent,
                run.cwd,
                run.hostname,
                run.usable_bytes,
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// True when the history holds a run of `key` with the command, start and end of `job`:
    /// the same run, recorded before (an import of the same file again, of a link to it or
    /// of a copy).
    pub fn has_run(&self, key: &str, job: &FinishedJob) -> Result<bool, StoreError> {
        let found: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM jobs WHERE key = ?1 AND command = ?2 AND started_at_ms = ?3 \
                 AND ended_at_ms = ?4 LIMIT 1",
                params![key, job.command, job.started_at_ms, job.ended_at_ms],
                |row| row.get(0),
            )
            .optional()?;
        Ok(found.is_some())
    }

    /// The prediction for `key` from its last `RUNS_PREDICTED` runs (none without a past
    /// run), with those runs, newest first; `now_ms` dates them.
    pub fn predict_key(
        &self,
        key: &str,
        now_ms: i64,
    ) -> Result<(Option<Prediction>, Vec<RunRow>), StoreError> {
        let rows = self.runs_of(key, RUNS_PREDICTED)?;
        let runs: Vec<PastRun> = rows.iter().map(|r| r.past_run(now_ms)).collect();
        Ok((predict(&runs), rows))
    }

    /// The runs of `key`, newest first, at most `limit`.
    pub fn runs_of(&self, key: &str, limit: usize) -> Result<Vec<RunRow>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, command, ended_at_ms, verdict_json, need_bytes, need_lower_bound, \
             total_bytes, free_start_percent, started_at_ms, usable_bytes FROM jobs \
             WHERE key = ?1 AND need_bytes IS NOT NULL \
             ORDER BY ended_at_ms DESC, id DESC LIMIT ?2",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map(params![key, limit], |row| {
            let verdict = label_of(&row.get::<_, String>(3)?);
            Ok(RunRow {
                id: row.get(0)?,
                command: row.get(1)?,
                started_at_ms: row.get(8)?,
                ended_at_ms: row.get(2)?,
                verdict,
                need_bytes: row.get(4)?,
                need_lower_bound: row.get::<_, Option<bool>>(5)?.unwrap_or(false),
                total_bytes: row.get(6)?,
                usable_bytes: row.get(9)?,
                free_start_percent: row.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every key with its run count and last verdict, the most recently run first.
    pub fn keys(&self) -> Result<Vec<KeySummary>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT key, COUNT(*), MAX(ended_at_ms), \
             (SELECT verdict_json FROM jobs AS last WHERE last.key = jobs.key \
              ORDER BY ended_at_ms DESC, id DESC LIMIT 1) \
             FROM jobs WHERE key IS NOT NULL GROUP BY key ORDER BY MAX(ended_at_ms) DESC",
        )?;
        let rows = stmt.query_map([], |row| {
            Ok(KeySummary {
                key: row.get(0)?,
                runs: row.get(1)?,
                last_ended_at_ms: row.get(2)?,
                last_verdict: label_of(&row.get::<_, String>(3)?),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Deletes the runs of `key`, or every run (`None`); returns how many.
    pub fn forget(&mut self, key: Option<&str>) -> Result<usize, StoreError> {
        Ok(match key {
            Some(key) => self
                .conn
                .execute("DELETE FROM jobs WHERE key = ?1", [key])?,
            None => self.conn.execute("DELETE FROM jobs", [])?,
        })
    }
}
