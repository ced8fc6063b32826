//! SQLite persistence: minute history for 30 days, finished jobs, and the running jobs
//! (watched or guarded) to take up again after a restart.
//!
//! One file, `history.db` in the data folder ([`headroom_os::paths::Dirs::history_db_path`]), in WAL mode so the CLI can read while
//! the app writes. The schema is versioned with `PRAGMA user_version` and migrated forward on
//! open. A database that cannot be used (not a database, failing `PRAGMA quick_check`, a
//! schema it does not recognise or a newer one) is never fatal: [`Store::open`] moves it aside
//! to `history.db.corrupt-<unix seconds>`, starts a fresh one and reports a [`StoreProblem`].
//! Errors that say nothing about the file (locked, permission denied, disk full) are returned
//! as [`StoreError`] and the file is left alone.
//!
//! History rows are [`crate::history::Point`]s of the 1-minute tier: one row per bucket, keyed
//! by its start, min/max/mean per [`Metric`], NULL where a value is missing.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, ErrorCode, TransactionBehavior};
use serde::Serialize;

use crate::history::{Agg, Metric, Point, HISTORY_RETENTION, METRICS};
use headroom_model::units::unix_ms;
use headroom_os::paths::{move_aside, unix_seconds_now};

mod jobs;
mod read_only;
mod runs;
pub use jobs::JobRecord;
pub use runs::{KeySummary, RunContext, RunRow};

/// The schema version this code writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Schema migrations: entry `i` takes the database from version `i` to `i + 1`.
const MIGRATIONS: [&str; 9] = [
    r"
CREATE TABLE history_minutes (
    start_ms INTEGER PRIMARY KEY,
    free_percent_min REAL, free_percent_max REAL, free_percent_mean REAL,
    swap_used_bytes_min REAL, swap_used_bytes_max REAL, swap_used_bytes_mean REAL,
    compressed_bytes_min REAL, compressed_bytes_max REAL, compressed_bytes_mean REAL,
    watched_footprint_bytes_min REAL, watched_footprint_bytes_max REAL,
    watched_footprint_bytes_mean REAL
);
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pid INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    command TEXT NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('watch', 'guard')),
    started_at_ms INTEGER NOT NULL,
    ended_at_ms INTEGER NOT NULL,
    fits INTEGER NOT NULL,
    swap_growth_bytes INTEGER NOT NULL,
    peak_footprint_bytes INTEGER,
    verdict_json TEXT NOT NULL
);
CREATE INDEX jobs_by_end ON jobs (ended_at_ms);
CREATE TABLE active_guards (
    pid INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    command TEXT NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('watch', 'guard')),
    started_at_ms INTEGER NOT NULL,
    swap_budget_bytes INTEGER NOT NULL,
    kill_free_percent REAL NOT NULL,
    swap_start_bytes INTEGER NOT NULL,
    PRIMARY KEY (pid, start_time)
);
",
    r"
ALTER TABLE active_guards ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
",
    r"
ALTER TABLE active_guards ADD COLUMN on_budget TEXT NOT NULL DEFAULT 'stop'
    CHECK (on_budget IN ('stop', 'pause'));
ALTER TABLE active_guards ADD COLUMN pauses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE active_guards ADD COLUMN paused_since_ms INTEGER;
",
    // Watches are saved there too: the table is every running job to take up again.
    r"
ALTER TABLE active_guards RENAME TO active_jobs;
",
    // One run history for the CLI and the app: what a prediction needs (`headroom_rules::fit`).
    r"
ALTER TABLE jobs ADD COLUMN key TEXT;
ALTER TABLE jobs ADD COLUMN need_bytes INTEGER;
ALTER TABLE jobs ADD COLUMN need_lower_bound INTEGER;
ALTER TABLE jobs ADD COLUMN total_bytes INTEGER;
ALTER TABLE jobs ADD COLUMN free_start_percent REAL;
ALTER TABLE jobs ADD COLUMN cwd TEXT;
ALTER TABLE jobs ADD COLUMN hostname TEXT;
CREATE INDEX jobs_by_key ON jobs (key, ended_at_ms);
",
    // A running job keeps the key named for it and free memory at its start (the app).
    r"
ALTER TABLE active_jobs ADD COLUMN key TEXT;
ALTER TABLE active_jobs ADD COLUMN free_start_percent REAL;
",
    // ... and memory in use at its start, where the kernel counts it (macOS).
    r"
ALTER TABLE active_jobs ADD COLUMN in_use_start_bytes INTEGER;
",
    // A job may be interrupted at its budget (`--on-budget interrupt`): SQLite changes a
    // CHECK only by making the table again.
    r"
CREATE TABLE active_jobs_new (
    pid INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    command TEXT NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('watch', 'guard')),
    started_at_ms INTEGER NOT NULL,
    swap_budget_bytes INTEGER NOT NULL,
    kill_free_percent REAL NOT NULL,
    swap_start_bytes INTEGER NOT NULL,
    boot_id TEXT NOT NULL DEFAULT '',
    on_budget TEXT NOT NULL DEFAULT 'stop' CHECK (on_budget IN ('stop', 'pause', 'interrupt')),
    pauses INTEGER NOT NULL DEFAULT 0,
    paused_since_ms INTEGER,
    key TEXT,
    free_start_percent REAL,
    in_use_start_bytes INTEGER,
    PRIMARY KEY (pid, start_time)
);
INSERT INTO active_jobs_new SELECT pid, start_time, command, mode, started_at_ms,
    swap_budget_bytes, kill_free_percent, swap_start_bytes, boot_id, on_budget, pauses,
    paused_since_ms, key, free_start_percent, in_use_start_bytes FROM active_jobs;
DROP TABLE active_jobs;
ALTER TABLE active_jobs_new RENAME TO active_jobs;
",
    // A run keeps the memory its levels were of, where the OS says (macOS
    // `hw.memsize_usable`): a question about its machine keeps the floor its guard kept.
    r"
ALTER TABLE jobs ADD COLUMN usable_bytes INTEGER;
",
];

const JOB_COLUMNS: &str = "id, pid, start_time, command, mode, started_at_ms, ended_at_ms, \
     fits, swap_growth_bytes, peak_footprint_bytes, verdict_json";
const ACTIVE_JOB_COLUMNS: &str =
    "pid, start_time, command, mode, started_at_ms, swap_budget_bytes, \
     kill_free_percent, swap_start_bytes, boot_id, on_budget, pauses, paused_since_ms, key, \
     free_start_percent, in_use_start_bytes";

/// Why the store failed. The database file is left as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be opened or set up (locked, permission denied, disk full …).
    #[error("opening {}: {source}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
    /// A damaged database could not be moved aside, or its folder not created.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Even a fresh database could not be used.
    #[error("{}: a fresh database is unusable too: {reason}", path.display())]
    Unusable {
        /// The database file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A query failed.
    #[error("history database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A verdict could not be encoded as JSON.
    #[error("encoding a verdict: {0}")]
    Json(#[from] serde_json::Error),
}

/// A damaged database that was replaced by a fresh one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreProblem {
    /// The database file.
    pub path: PathBuf,
    /// What was wrong with it.
    pub reason: String,
    /// Where the damaged file was moved.
    pub moved_to: PathBuf,
}

impl fmt::Display for StoreProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "history database {} could not be used ({}); it was moved to {} and a new one started",
            self.path.display(),
            self.reason,
            self.moved_to.display()
        )
    }
}

/// The open history database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// Why a database could not be opened as it is.
enum Opening {
    /// The file is not a usable Headroom database: move it aside.
    Damaged(String),
    /// Something else failed: report it, leave the file.
    Failed(rusqlite::Error),
}

impl Store {
    /// Opens (creating it and its folder if needed) the database at `path`. A damaged one is
    /// moved aside and replaced by a fresh one, reported in the returned problem.
    pub fn open(path: &Path) -> Result<(Store, Option<StoreProblem>), StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            headroom_os::paths::Dirs::current()
                .make_private(dir)
                .map_err(|source| StoreError::Io {
                    what: "creating",
                    path: dir.to_path_buf(),
                    source,
                })?;
        }
        let opened = match Store::try_open_patiently(path) {
            Ok(store) => return Ok((store, None)),
            Err(Opening::Failed(source)) => {
                return Err(StoreError::Open {
                    path: path.to_path_buf(),
                    source,
                })
            }
            Err(Opening::Damaged(reason)) => reason,
        };
        let now = unix_seconds_now();
        let moved_to = move_aside(path, now).map_err(|source| StoreError::Io {
            what: "moving aside the damaged database",
            path: path.to_path_buf(),
            source,
        })?;
        for suffix in ["-wal", "-shm"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            let side = PathBuf::from(side);
            if side.exists() {
                if let Err(e) = move_aside(&side, now) {
                    tracing::warn!("moving aside {}: {e}", side.display());
                }
            }
        }
        let problem = StoreProblem {
            path: path.to_path_buf(),
            reason: opened,
            moved_to,
        };
        tracing::warn!("{problem}");
        match Store::try_open_patiently(path) {
            Ok(store) => Ok((store, Some(problem))),
            Err(Opening::Failed(source)) => Err(StoreError::Open {
                path: path.to_path_buf(),
                source,
            }),
            Err(Opening::Damaged(reason)) => Err(StoreError::Unusable {
                path: path.to_path_buf(),
                reason,
            }),
        }
    }

    /// [`Store::try_open`], tried again while the database is busy or locked, for up to
    /// [`OPEN_PATIENCE`]. The busy timeout does not cover every case: two connections that
    /// both read and then want the write lock (switching a new file to WAL) deadlock, and
    /// SQLite answers one of them "locked" at once rather than wait.
    fn try_open_patiently(path: &Path) -> Result<Store, Opening> {
        let started = std::time::Instant::now();
        loop {
            match Store::try_open(path) {
                Err(Opening::Failed(e)) if is_busy(&e) && started.elapsed() < OPEN_PATIENCE => {
                    tracing::debug!("{}: {e}, trying again", path.display());
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    fn try_open(path: &Path) -> Result<Store, Opening> {
        let damaged_or_failed = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                Opening::Damaged(e.to_string())
            }
            _ => Opening::Failed(e),
        };
        let mut conn = Connection::open(path).map_err(damaged_or_failed)?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(Opening::Failed)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(damaged_or_failed)?;
        if check != "ok" {
            return Err(Opening::Damaged(format!("integrity check: {check}")));
        }
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(damaged_or_failed)?;
        if !(0..=SCHEMA_VERSION).contains(&version) {
            return Err(Opening::Damaged(format!(
                "schema version {version}, this Headroom knows up to {SCHEMA_VERSION}"
            )));
        }
        let mismatch = |e: rusqlite::Error| {
            if is_transient(&e) {
                Opening::Failed(e)
            } else {
                Opening::Damaged(format!("schema mismatch: {e}"))
            }
        };
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(damaged_or_failed)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(Opening::Failed)?;
        // Each step under the write lock (an immediate transaction), its version read again
        // inside it: of many processes opening a new database at once, one migrates each
        // step and the others find it done (a step run twice would look like damage).
        for (from, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(Opening::Failed)?;
            let now: i64 = tx
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(damaged_or_failed)?;
            if now > from as i64 {
                continue;
            }
            tx.execute_batch(sql).map_err(mismatch)?;
            tx.execute_batch(&format!("PRAGMA user_version = {}", from + 1))
                .map_err(Opening::Failed)?;
            tx.commit().map_err(Opening::Failed)?;
        }
        let history = history_columns().join(", ");
        for sql in [
            format!("SELECT start_ms, {history} FROM history_minutes LIMIT 0"),
            format!("SELECT {JOB_COLUMNS} FROM jobs LIMIT 0"),
            format!("SELECT {ACTIVE_JOB_COLUMNS} FROM active_jobs LIMIT 0"),
        ] {
            conn.prepare(&sql).map_err(mismatch)?;
        }
        // It holds command lines: this user's only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Inserts or replaces history buckets (by start), in one transaction. Returns how many.
    pub fn save_points(&mut self, points: &[Point]) -> Result<usize, StoreError> {
        let columns = history_columns();
        let placeholders = vec!["?"; columns.len() + 1].join(", ");
        let updates: Vec<String> = columns
            .iter()
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        let sql = format!(
            "INSERT INTO history_minutes (start_ms, {}) VALUES ({placeholders}) \
             ON CONFLICT (start_ms) DO UPDATE SET {}",
            columns.join(", "),
            updates.join(", ")
        );
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare(&sql)?;
            for p in points {
                let values = std::iter::once(Value::Integer(p.start_ms)).chain(
                    p.values
                        .iter()
                        .flat_map(|a| [a.min, a.max, a.mean])
                        .map(|v| {
                            if v.is_finite() {
                                Value::Real(f64::from(v))
                            } else {
                                Value::Null
                            }
                        }),
                );
                stmt.execute(params_from_iter(values))?;
            }
        }
        tx.commit()?;
        Ok(points.len())
    }

    /// History buckets starting at or after `since_ms`, oldest first.
    pub fn load_points(&self, since_ms: i64) -> Result<Vec<Point>, StoreError> {
        let sql = format!(
            "SELECT start_ms, {} FROM history_minutes WHERE start_ms >= ?1 ORDER BY start_ms",
            history_columns().join(", ")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([since_ms], |row| {
            let mut values = [Agg {
                min: f32::NAN,
                max: f32::NAN,
                mean: f32::NAN,
            }; METRICS];
            for (i, agg) in values.iter_mut().enumerate() {
                let get = |k: usize| -> rusqlite::Result<f32> {
                    let v: Option<f64> = row.get(1 + i * 3 + k)?;
                    Ok(v.map_or(f32::NAN, |v| v as f32))
                };
                *agg = Agg {
                    min: get(0)?,
                    max: get(1)?,
                    mean: get(2)?,
                };
            }
            Ok(Point {
                start_ms: row.get(0)?,
                values,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Deletes history older than [`HISTORY_RETENTION`] before `now`. Returns rows deleted.
    pub fn prune(&mut self, now: SystemTime) -> Result<usize, StoreError> {
        let retention_ms = i64::try_from(HISTORY_RETENTION.as_millis()).unwrap_or(i64::MAX);
        let cutoff = unix_ms(now).saturating_sub(retention_ms);
        Ok(self
            .conn
            .execute("DELETE FROM history_minutes WHERE start_ms < ?1", [cutoff])?)
    }
}

/// Errors that say nothing about the file's contents.
/// How long opening waits for a busy or locked database before it gives up.
const OPEN_PATIENCE: Duration = Duration::from_secs(5);

/// Busy or locked: another connection holds the lock; worth trying again.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

fn is_transient(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DiskFull
                | ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied
                | ErrorCode::ReadOnly
                | ErrorCode::SystemIoFailure
                | ErrorCode::OutOfMemory
        )
    )
}

fn metric_column(metric: Metric) -> &'static str {
    match metric {
        Metric::FreePercent => "free_percent",
        Metric::SwapUsedBytes => "swap_used_bytes",
        Metric::CompressedBytes => "compressed_bytes",
        Metric::WatchedFootprintBytes => "watched_footprint_bytes",
    }
}

/// History value columns in `Point::values` order, min/max/mean each.
fn history_columns() -> Vec<String> {
    Metric::ALL
        .iter()
        .flat_map(|&m| ["min", "max", "mean"].map(|agg| format!("{}_{agg}", metric_column(m))))
        .collect()
}

#[cfg(test)]
mod tests;
