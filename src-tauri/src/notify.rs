//! Notifications (tauri-plugin-notification), the tray's title and icon, launch at login,
//! and the words of each job event, shared with the CLI's lines.

use headroom_core::policy::JobEvent;
use tauri::{AppHandle, Manager, Runtime};

use crate::state::{lock, AppState};

/// Title and body of a notification for a job event (the engine's words).
pub fn texts(command: &str, event: &JobEvent) -> (String, String) {
    headroom_core::engine::words::notification(event, command)
}

/// Shows a notification for a job event, unless notifications are paused.
pub fn job_event<R: Runtime>(app: &AppHandle<R>, command: &str, event: &JobEvent) {
    let (title, body) = texts(command, event);
    tracing::info!(%title, %body, "job event");
    show(app, &title, &body);
}

/// Shows a notification unless paused.
pub fn show<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    if app
        .try_state::<AppState>()
        .is_some_and(|s| s.notifications_paused())
    {
        return;
    }
    #[cfg(not(test))]
    {
        use tauri_plugin_notification::NotificationExt;
        if let Err(e) = app.notification().builder().title(title).body(body).show() {
            tracing::warn!(error = %e, "notification failed");
        }
    }
    #[cfg(test)]
    let _ = (app, title, body);
}

/// Notifies problems found at start (a corrupt settings file or database moved aside).
pub fn report_startup_problems<R: Runtime>(app: &AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let problems: Vec<String> = lock(&state.startup_problems).drain(..).collect();
    for p in problems {
        show(app, "Headroom reset a damaged file", &p);
    }
}

/// Updates the tray title, and its icon when `growing` changed.
pub fn update_tray<R: Runtime>(app: &AppHandle<R>, title: &str, growing: Option<bool>) {
    #[cfg(not(test))]
    crate::tray::update(app, title, growing);
    #[cfg(test)]
    let _ = (app, title, growing);
}

/// Turns launch at login on or off (tauri-plugin-autostart).
pub fn apply_launch_at_login<R: Runtime>(app: &AppHandle<R>, on: bool) {
    #[cfg(not(test))]
    {
        use tauri_plugin_autostart::ManagerExt;
        let launcher = app.autolaunch();
        let result = if on {
            launcher.enable()
        } else {
            launcher.disable()
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "launch at login");
        }
    }
    #[cfg(test)]
    let _ = (app, on);
}
