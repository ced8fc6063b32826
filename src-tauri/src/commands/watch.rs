//! Watching and guarding a process from the list (and letting go of it), and the Jobs and
//! "Recent verdicts" lists. The guard form's text is checked in core
//! (`headroom_core::settings::LimitsForm`).

use headroom_core::settings::LimitsForm;
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::CounterSource;
use headroom_os::members::{MemberSet, Members};
use headroom_rules::engine::{JobMode, JobSpec, StartMemory};
use headroom_rules::policy::Limits;
use tauri::{AppHandle, Runtime, State};

use super::job_rows::{external_jobs, ui_job, UiJob, UiRecentJob, RECENT_JOBS};
use crate::error::CommandResult;
use crate::state::{lock, AppState};
use headroom_os::process::ProcessLookup;

/// Adds a job of `mode` over process `pid` with `limits`, its run recorded under `key` (its
/// command line's when `None`); a guard is refused on a process Headroom may not signal.
fn add_job(
    state: &AppState,
    pid: u32,
    mode: JobMode,
    limits: Limits,
    key: Option<String>,
) -> CommandResult<UiJob> {
    let id = ProcessIdentity::of(&state.counters, pid).map_err(|e| format!("pid {pid}: {e}"))?;
    if mode == JobMode::Guard {
        state
            .safety
            .check(&state.counters, &id)
            .map_err(|refusal| format!("cannot guard pid {pid}: {refusal}"))?;
    }
    let info = state
        .counters
        .process_info(pid)
        .map_err(|e| format!("pid {pid}: {e}"))?;
    let command = info.display_command().to_string();
    let system = state.counters.read_system().map_err(|e| e.to_string())?;
    let spec = JobSpec {
        key,
        ..JobSpec::new(command, mode, limits, lock(&state.settings).sample_interval)
    };
    let members = MemberSet::new(Members::of_process(id));
    let now = crate::jobs::now(state);
    let mut monitor = lock(&state.monitor);
    let job_id = monitor
        .jobs
        .add(members.ids(), spec, StartMemory::of(&system), now);
    state.sampler.track(&members);
    let view = monitor
        .jobs
        .views()
        .into_iter()
        .find(|j| j.id == job_id)
        .map(ui_job)
        .ok_or_else(|| "job vanished".to_string());
    drop(monitor);
    crate::persist::job_started(state, job_id);
    crate::jobfiles::publish(state);
    Ok(view?)
}

/// Watch a process: notifications and a verdict.
#[tauri::command]
pub fn watch(state: State<'_, AppState>, pid: u32) -> CommandResult<UiJob> {
    let limits = lock(&state.settings).limits();
    add_job(&state, pid, JobMode::Watch, limits, None)
}

/// Guard a process: as watch, and stop (or pause) it past its budget. Budget and floor come
/// as typed; `on_budget` is `stop` (the default) or `pause`; `key` names its run history
/// (blank: its command line's key, as `headroom guard --key`).
#[tauri::command]
pub fn guard(
    state: State<'_, AppState>,
    pid: u32,
    swap_budget: String,
    kill_free: String,
    on_budget: Option<String>,
    key: Option<String>,
) -> CommandResult<UiJob> {
    let form = LimitsForm {
        swap_budget,
        kill_free,
        on_budget,
    };
    let limits = form.apply(lock(&state.settings).limits())?;
    add_job(&state, pid, JobMode::Guard, limits, named_key(key))
}

/// A key as typed in the Guard form (core's one rule: `typed_key`): `None` when blank.
pub fn named_key(key: Option<String>) -> Option<String> {
    key.as_deref().and_then(headroom_rules::fit::typed_key)
}

/// Stop watching or guarding a job (never stops its process).
#[tauri::command]
pub fn release<R: Runtime>(app: AppHandle<R>, id: String) -> CommandResult<()> {
    Ok(crate::jobs::release(&app, crate::jobs::job_id(&id)?)?)
}

/// The jobs that ended last, newest first, from the history database ("Recent verdicts");
/// none when the database could not be opened.
#[tauri::command]
pub fn get_recent_jobs(state: State<'_, AppState>) -> CommandResult<Vec<UiRecentJob>> {
    let store = lock(&state.store);
    let Some(store) = store.as_ref() else {
        return Ok(Vec::new());
    };
    let records = store.recent_jobs(RECENT_JOBS).map_err(|e| e.to_string())?;
    Ok(records.iter().map(|r| UiRecentJob::of(&r.job)).collect())
}

/// Jobs of the app, and read-only ones of `headroom guard` runs in terminals.
#[tauri::command]
pub fn get_jobs(state: State<'_, AppState>) -> Vec<UiJob> {
    let mut jobs: Vec<UiJob> = lock(&state.monitor)
        .jobs
        .views()
        .into_iter()
        .map(ui_job)
        .collect();
    jobs.extend(external_jobs(&state));
    jobs
}
