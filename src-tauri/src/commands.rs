//! The page's commands. Each delegates to headroom-core and returns data or a typed
//! [`CommandError`] (the form field at fault, if any, and the message).

use headroom_core::counters::CounterSource;
use std::collections::HashMap;
use std::time::Duration;

use headroom_core::engine::{JobMode, JobSpec, JobView};
use headroom_core::jobfile::JobFile;
use headroom_core::members::{MemberSet, Members};
use headroom_core::monitor::{StatusView, CHART_WINDOWS_SECONDS, TICK_WINDOW_SECONDS};
use headroom_core::policy::{Limits, OnBudget};
use headroom_core::process::ProcessIdentity;
use headroom_core::settings::{Settings, SettingsField, SettingsUpdate};
use headroom_core::units;
use serde::Serialize;
use tauri::State;

use crate::error::{CommandError, CommandResult};
use crate::state::{lock, AppState};

/// Most rows the process list sends.
const MAX_PROCESSES: usize = 150;

/// What the page takes from Rust instead of keeping its own copy.
#[derive(Debug, Clone, Serialize)]
pub struct UiConfig {
    /// The chart windows offered, seconds.
    windows_seconds: Vec<u64>,
    /// The window of the status pushed with each `tick` event, seconds.
    tick_window_seconds: u64,
    /// Most rows `get_processes` sends.
    max_processes: usize,
}

/// The windows, caps and defaults the page uses (its single source).
#[tauri::command]
pub fn get_config() -> UiConfig {
    UiConfig {
        windows_seconds: CHART_WINDOWS_SECONDS.to_vec(),
        tick_window_seconds: TICK_WINDOW_SECONDS,
        max_processes: MAX_PROCESSES,
    }
}

fn window(window_seconds: u64) -> CommandResult<Duration> {
    CHART_WINDOWS_SECONDS
        .contains(&window_seconds)
        .then(|| Duration::from_secs(window_seconds))
        .ok_or_else(|| {
            let allowed: Vec<String> = CHART_WINDOWS_SECONDS.iter().map(u64::to_string).collect();
            format!(
                "window: {window_seconds} s is not one of {}",
                allowed.join(", ")
            )
            .into()
        })
}

/// Header numbers for a chart window.
#[tauri::command]
pub fn get_status(state: State<'_, AppState>, window_seconds: u64) -> CommandResult<StatusView> {
    let w = window(window_seconds)?;
    lock(&state.monitor)
        .status(w)
        .ok_or_else(|| "no memory reading yet".into())
}

/// The history chart as SVG.
#[tauri::command]
pub fn get_chart(
    state: State<'_, AppState>,
    window_seconds: u64,
    dark: bool,
) -> CommandResult<String> {
    let w = window(window_seconds)?;
    lock(&state.monitor)
        .chart_svg(w, dark)
        .map_err(|e| format!("chart: {e}").into())
}

/// One row of the process list.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessRow {
    pid: u32,
    ppid: u32,
    uid: u32,
    name: String,
    command: String,
    footprint_bytes: u64,
    resident_bytes: u64,
    swap_bytes: Option<u64>,
}

/// The process list: the first rows by footprint, and how many matched in all.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessList {
    rows: Vec<ProcessRow>,
    total: usize,
}

/// Processes sorted by footprint, filtered by `query` (name, command or pid); at most
/// `MAX_PROCESSES` rows, with the number that matched.
#[tauri::command]
pub fn get_processes(state: State<'_, AppState>, query: String) -> CommandResult<ProcessList> {
    let rows = state
        .counters
        .scan_footprints()
        .map_err(|e| e.to_string())?;
    let commands: HashMap<u32, String> = state
        .counters
        .list_processes()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|p| (p.pid, p.command))
        .collect();
    let needle = query.trim().to_lowercase();
    let mut out: Vec<ProcessRow> = rows
        .into_iter()
        .map(|r| ProcessRow {
            command: commands.get(&r.pid).cloned().unwrap_or_default(),
            pid: r.pid,
            ppid: r.ppid,
            uid: r.uid,
            name: r.name,
            footprint_bytes: r.memory.footprint_bytes,
            resident_bytes: r.memory.resident_bytes,
            swap_bytes: r.memory.swap_bytes,
        })
        .filter(|r| {
            needle.is_empty()
                || r.name.to_lowercase().contains(&needle)
                || r.command.to_lowercase().contains(&needle)
                || r.pid.to_string() == needle
        })
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.footprint_bytes));
    let total = out.len();
    out.truncate(MAX_PROCESSES);
    Ok(ProcessList { rows: out, total })
}

/// A job as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UiJob {
    id: String,
    pid: u32,
    command: String,
    mode: &'static str,
    state: &'static str,
    swap_growth_bytes: u64,
    swap_budget_bytes: Option<u64>,
    peak_footprint_bytes: Option<u64>,
    verdict: Option<UiVerdict>,
    read_only: bool,
    stages: Vec<UiStage>,
    /// `stop` or `pause`: what passing the budget does (guards).
    on_budget: &'static str,
    /// Pauses so far.
    pauses: u32,
    /// Since when it is paused, ms since the epoch.
    paused_since_ms: Option<i64>,
}

/// A stage of a job as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UiStage {
    name: String,
    swap_growth_bytes: u64,
}

/// A verdict as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UiVerdict {
    fits: bool,
    text: String,
}

impl UiJob {
    /// A job of `headroom guard` in a terminal, from its job file: read-only here.
    pub fn external(f: JobFile) -> UiJob {
        UiJob {
            id: format!("ext-{}-{}", f.pid, f.start_time),
            pid: f.pid,
            command: f.command,
            mode: "external",
            state: f.state.as_str(),
            swap_growth_bytes: f.swap_growth_bytes,
            swap_budget_bytes: Some(f.swap_budget_bytes),
            peak_footprint_bytes: f.peak_footprint_bytes,
            verdict: f.verdict.map(|verdict| UiVerdict {
                fits: verdict.fits,
                text: verdict.to_string(),
            }),
            read_only: true,
            stages: Vec::new(),
            on_budget: f.on_budget.as_str(),
            pauses: f.pauses,
            paused_since_ms: None,
        }
    }
}

fn ui_job(v: JobView) -> UiJob {
    UiJob {
        id: format!("job-{}", v.id),
        pid: v.pid,
        command: v.command,
        mode: match v.mode {
            JobMode::Watch => "watch",
            JobMode::Guard => "guard",
        },
        state: v.state.as_str(),
        swap_growth_bytes: v.swap_growth_bytes,
        swap_budget_bytes: v.swap_budget_bytes,
        peak_footprint_bytes: v.peak_footprint_bytes,
        verdict: v.verdict.map(|verdict| UiVerdict {
            fits: verdict.fits,
            text: verdict.to_string(),
        }),
        read_only: false,
        stages: v
            .stages
            .iter()
            .map(|s| UiStage {
                name: s.stage.clone(),
                swap_growth_bytes: s.swap_growth_bytes,
            })
            .collect(),
        on_budget: v.on_budget.as_str(),
        pauses: v.pauses,
        paused_since_ms: v.paused_since_ms,
    }
}

fn add_job(state: &AppState, pid: u32, mode: JobMode, cfg: Limits) -> CommandResult<UiJob> {
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
    let swap_now = state
        .counters
        .read_system()
        .map(|s| s.swap_used_bytes)
        .map_err(|e| e.to_string())?;
    let spec = JobSpec {
        command,
        mode,
        cfg,
        poll: lock(&state.settings).sample_interval,
    };
    let members = MemberSet::new(Members::of_process(id));
    let mut monitor = lock(&state.monitor);
    let job_id = monitor.jobs.add(members.clone(), spec, swap_now);
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
    Ok(view?)
}

/// Watch a process: notifications and a verdict.
#[tauri::command]
pub fn watch(state: State<'_, AppState>, pid: u32) -> CommandResult<UiJob> {
    let cfg = lock(&state.settings).limits();
    add_job(&state, pid, JobMode::Watch, cfg)
}

/// Guard a process: as watch, and stop (or pause) it past its budget. Budget and floor come
/// as typed; `on_budget` is `stop` (the default) or `pause`.
#[tauri::command]
pub fn guard(
    state: State<'_, AppState>,
    pid: u32,
    swap_budget: String,
    kill_free: String,
    on_budget: Option<String>,
) -> CommandResult<UiJob> {
    let budget = units::parse_bytes(&swap_budget)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            let message = format!("invalid size '{swap_budget}': expected e.g. 8G or 512M");
            CommandError::field("swap_budget", "swap budget", message)
        })?;
    let floor = units::parse_percent(&kill_free)
        .map_err(|e| CommandError::field("kill_free", "kill free", e.to_string()))?;
    let on_budget = match on_budget.as_deref() {
        None => OnBudget::Stop,
        Some(text) => OnBudget::parse(text).ok_or_else(|| {
            let message = format!("'{text}' is not one of stop, pause");
            CommandError::field("on_budget", "on budget", message)
        })?,
    };
    let cfg = Limits {
        swap_budget_bytes: budget,
        kill_free_percent: floor,
        on_budget,
        ..lock(&state.settings).limits()
    };
    add_job(&state, pid, JobMode::Guard, cfg)
}

/// Stop watching or guarding a job (never stops its process).
#[tauri::command]
pub fn unguard(state: State<'_, AppState>, id: String) -> CommandResult<()> {
    let n: u64 = id
        .strip_prefix("job-")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("job '{id}' cannot be unguarded here"))?;
    Ok(crate::jobs::release(&state, n)?)
}

/// How many finished jobs "Recent verdicts" shows.
const RECENT_JOBS: usize = 10;

/// A job that ended, from the history database.
#[derive(Debug, Clone, Serialize)]
pub struct UiRecentJob {
    command: String,
    mode: &'static str,
    started_at_ms: i64,
    ended_at_ms: i64,
    verdict: UiVerdict,
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
    Ok(records
        .into_iter()
        .map(|r| UiRecentJob {
            command: r.job.command,
            mode: r.job.mode.as_str(),
            started_at_ms: r.job.started_at_ms,
            ended_at_ms: r.job.ended_at_ms,
            verdict: UiVerdict {
                fits: r.job.verdict.fits,
                text: r.job.verdict.to_string(),
            },
        })
        .collect())
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

/// Settings as the form edits them.
#[tauri::command]
pub fn get_settings(state: State<'_, AppState>) -> SettingsUpdate {
    SettingsUpdate::from(&*lock(&state.settings))
}

/// Validates, applies and saves settings; the error names the field.
#[tauri::command]
pub fn set_settings(
    app: tauri::AppHandle<impl tauri::Runtime>,
    state: State<'_, AppState>,
    settings: SettingsUpdate,
) -> CommandResult<SettingsUpdate> {
    let new: Settings = settings.validate()?;
    // The endpoint first: an address that cannot be listened on is refused, nothing saved.
    crate::metrics::apply(&state, new.serve_metrics, new.metrics_address).map_err(|e| {
        let field = SettingsField::MetricsAddress;
        CommandError::field(field.key(), field.label(), e)
    })?;
    new.save(&state.dirs.settings_path())
        .map_err(|e| format!("saving settings: {e}"))?;
    // Only the spacing of the checks changes: the sampler's clock and the jobs go on.
    lock(&state.monitor).jobs.set_poll(new.sample_interval);
    crate::ticker::retune(&state);
    crate::autostart::apply(&app, new.launch_at_login);
    let out = SettingsUpdate::from(&new);
    *lock(&state.settings) = new;
    Ok(out)
}

/// Jobs of `headroom guard` runs in terminals, read-only.
fn external_jobs(state: &AppState) -> Vec<UiJob> {
    headroom_core::jobfile::JobFile::list(&state.jobs_dir(), &state.counters)
        .into_iter()
        .map(UiJob::external)
        .collect()
}
