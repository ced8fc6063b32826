//! The page's commands. Each delegates to headroom-core and returns data or a typed
//! [`CommandError`] (the form field at fault, if any, and the message).
//!
//! This file: the config the page reads, the header, the chart and the settings;
//! `processes.rs` the process list; `watch.rs` watching, guarding and the job lists;
//! `job_rows.rs` what the page gets for a job; `fits.rs` "will it fit?" for recent keys. Pause, resume and stop are in `crate::jobs`.

pub mod fits;
pub mod job_rows;
pub mod processes;
pub mod watch;

use std::time::Duration;

use headroom_core::monitor::{StatusView, CHART_WINDOWS_SECONDS, TICK_WINDOW_SECONDS};
use headroom_core::settings::{Settings, SettingsField, SettingsUpdate};
use serde::Serialize;
use tauri::State;

use self::processes::MAX_PROCESSES;
use crate::error::{CommandError, CommandResult};
use crate::state::{lock, AppState};

/// What the page takes from Rust instead of keeping its own copy.
#[derive(Debug, Clone, Serialize)]
pub struct UiConfig {
    /// The chart windows offered, seconds.
    windows_seconds: Vec<u64>,
    /// The window of the status pushed with each `tick` event, seconds.
    tick_window_seconds: u64,
    /// Most rows `get_processes` sends.
    max_processes: usize,
    /// Every default the page's forms show, by field name, as text (the forms' placeholders:
    /// the page holds no default of its own).
    defaults: std::collections::BTreeMap<&'static str, String>,
}

/// The windows, caps and defaults the page uses (its single source).
#[tauri::command]
pub fn get_config() -> UiConfig {
    UiConfig {
        windows_seconds: CHART_WINDOWS_SECONDS.to_vec(),
        tick_window_seconds: TICK_WINDOW_SECONDS,
        max_processes: MAX_PROCESSES,
        defaults: headroom_rules::defaults::page().into_iter().collect(),
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
    if new.launch_at_login && !lock(&state.settings).launch_at_login {
        crate::autostart::apply(&app, true).map_err(|e| {
            let field = SettingsField::LaunchAtLogin;
            CommandError::field(field.key(), field.label(), e)
        })?;
    }
    new.save(&state.dirs.settings_path())
        .map_err(|e| format!("saving settings: {e}"))?;
    let (interval, launch_at_login) = (new.sample_interval, new.launch_at_login);
    let out = SettingsUpdate::from(&new);
    *lock(&state.settings) = new;
    // Only the spacing of the checks changes: the sampler's clock and the jobs go on. The
    // settings are in place first: `retune` reads the interval from them.
    lock(&state.monitor).jobs.set_poll(interval);
    crate::jobs::retune(&state);
    if !launch_at_login {
        crate::autostart::apply(&app, false)?;
    }
    Ok(out)
}
