//! Finished jobs read back (recorded by `runs`) and the watches and guards to take up again
//! after a restart: the `jobs` and `active_jobs` tables of the [`Store`].

use rusqlite::{params, Row};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, ACTIVE_JOB_COLUMNS, JOB_COLUMNS};
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::{CounterSource, Counters};
use headroom_rules::policy::OnBudget;

use headroom_os::process::ProcessLookup;
use headroom_rules::engine::{FinishedJob, JobMode, SavedJob};

/// A finished job as stored, with its row id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Row id, increasing.
    pub id: i64,
    /// The job.
    pub job: FinishedJob,
}

impl Store {
    /// The `limit` jobs that ended last, newest first. Rows that cannot be read back (an
    /// unknown mode or verdict) are skipped with a warning.
    pub fn recent_jobs(&self, limit: usize) -> Result<Vec<JobRecord>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs ORDER BY ended_at_ms DESC, id DESC LIMIT ?1"
        ))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map([limit], |row| {
            let (identity, command) = identity_command_at(row, 1)?;
            let started_ended: (i64, i64) = (row.get(5)?, row.get(6)?);
            let mode_json: (String, String) = (row.get(4)?, row.get(10)?);
            Ok((
                row.get::<_, i64>(0)?,
                identity,
                command,
                started_ended,
                mode_json,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, identity, command, (started_at_ms, ended_at_ms), (mode, json)) = row?;
            let Some(mode) = JobMode::parse(&mode) else {
                tracing::warn!("history database: job {id}: unknown mode '{mode}', skipped");
                continue;
            };
            let verdict = match serde_json::from_str(&json) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!("history database: job {id}: unreadable verdict ({e}), skipped");
                    continue;
                }
            };
            let job = FinishedJob {
                identity,
                command,
                mode,
                started_at_ms,
                ended_at_ms,
                verdict,
            };
            out.push(JobRecord { id, job });
        }
        Ok(out)
    }

    /// Saves (or replaces) a running watch or guard.
    pub fn save_active_job(&mut self, job: &SavedJob) -> Result<(), StoreError> {
        self.conn.execute(
            &format!(
                "INSERT OR REPLACE INTO active_jobs ({ACTIVE_JOB_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
            ),
            params![
                job.identity.pid,
                job.identity.start_time,
                job.command,
                job.mode.as_str(),
                job.started_at_ms,
                job.swap_budget_bytes,
                job.kill_free_percent,
                job.swap_start_bytes,
                job.boot_id,
                job.on_budget.as_str(),
                job.pauses,
                job.paused_since_ms,
                job.key,
                job.free_start_percent,
                job.in_use_start_bytes,
            ],
        )?;
        Ok(())
    }

    /// Forgets a watch or guard (its job ended or was released). True if it was saved.
    pub fn remove_active_job(&mut self, identity: ProcessIdentity) -> Result<bool, StoreError> {
        let n = self.conn.execute(
            "DELETE FROM active_jobs WHERE pid = ?1 AND start_time = ?2",
            params![identity.pid, identity.start_time],
        )?;
        Ok(n > 0)
    }

    /// Every saved watch and guard, oldest first, alive or not.
    pub fn active_jobs(&self) -> Result<Vec<SavedJob>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {ACTIVE_JOB_COLUMNS} FROM active_jobs ORDER BY started_at_ms, pid"
        ))?;
        let rows = stmt.query_map([], |row| {
            let (identity, command) = identity_command_at(row, 0)?;
            let mode: String = row.get(3)?;
            let Some(mode) = JobMode::parse(&mode) else {
                tracing::warn!(
                    "history database: guard of pid {}: unknown mode",
                    identity.pid
                );
                return Ok(None);
            };
            Ok(Some(SavedJob {
                identity,
                command,
                mode,
                started_at_ms: row.get(4)?,
                swap_budget_bytes: row.get(5)?,
                kill_free_percent: row.get(6)?,
                swap_start_bytes: row.get(7)?,
                boot_id: row.get(8)?,
                on_budget: OnBudget::parse(&row.get::<_, String>(9)?).unwrap_or_default(),
                pauses: row.get(10)?,
                paused_since_ms: row.get(11)?,
                key: row.get(12)?,
                free_start_percent: row.get(13)?,
                in_use_start_bytes: row.get(14)?,
            }))
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.extend(row?);
        }
        Ok(out)
    }

    /// The saved watches and guards of this boot whose process is still the same one (pid and
    /// start time), deleting the others (another boot's, gone, recycled). Taking them up again is the caller's job.
    pub fn restorable_jobs(&mut self, counters: &Counters) -> Result<Vec<SavedJob>, StoreError> {
        // Without a boot id to compare, nothing saved can be trusted to name the same process.
        let boot_id = counters.boot_id().ok();
        let (alive, gone): (Vec<_>, Vec<_>) = self.active_jobs()?.into_iter().partition(|g| {
            boot_id.as_deref() == Some(g.boot_id.as_str())
                && g.identity.alive(counters).unwrap_or(false)
        });
        for job in &gone {
            self.remove_active_job(job.identity)?;
        }
        Ok(alive)
    }
}

/// `pid, start_time, command` from columns `at`, `at + 1`, `at + 2`.
fn identity_command_at(row: &Row<'_>, at: usize) -> rusqlite::Result<(ProcessIdentity, String)> {
    Ok((
        ProcessIdentity {
            pid: row.get(at)?,
            start_time: row.get(at + 1)?,
        },
        row.get(at + 2)?,
    ))
}
