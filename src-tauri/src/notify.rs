//! Notifications (tauri-plugin-notification), the tray's title and icon, launch at login,
//! and the words of each job event, shared with the CLI's lines.
//!
//! Notifications that can be answered: the warning before a guard acts offers "Spare it"
//! (unguard) and "Pause now"; a pause offers "Resume" and "Stop". On Linux they are the
//! freedesktop server's actions (notify-rust, D-Bus `ActionInvoked`), each answered on a
//! thread of its own. The Tauri plugin has no desktop actions, so on macOS (unverified: no
//! Mac here) the same notification comes without buttons, and its text says what to click
//! in the popover.

use headroom_core::policy::JobEvent;
use tauri::{AppHandle, Manager, Runtime};

use crate::state::{lock, AppState};

/// Title and body of a notification for a job event (the engine's words).
pub fn texts(command: &str, event: &JobEvent) -> (String, String) {
    headroom_core::engine::words::notification(event, command)
}

/// The buttons of a job event's notification: (action key, label).
pub fn actions(event: &JobEvent) -> &'static [(&'static str, &'static str)] {
    match event {
        JobEvent::Warning { .. } => &[(SPARE, "Spare it"), ("pause", "Pause now")],
        JobEvent::Paused { .. } => &[("resume", "Resume"), ("stop", "Stop")],
        _ => &[],
    }
}

/// The action key that unguards a job.
const SPARE: &str = "spare";

/// Shows a notification for an event of job `job_id`, unless notifications are paused; its
/// buttons, where the platform has them, act on the job.
pub fn job_event<R: Runtime>(app: &AppHandle<R>, job_id: u64, command: &str, event: &JobEvent) {
    let (title, body) = texts(command, event);
    tracing::info!(%title, %body, "job event");
    let buttons = actions(event);
    #[cfg(all(target_os = "linux", not(test)))]
    if !buttons.is_empty() && !paused(app) {
        match show_with_actions(app, job_id, &title, &body, buttons) {
            Ok(()) => return,
            Err(e) => tracing::warn!(error = %e, "notification with buttons failed"),
        }
    }
    let _ = (job_id, buttons);
    show(app, &title, &body);
}

/// Carries out a notification's button `key` on job `job_id` (Linux: where buttons exist).
#[cfg(target_os = "linux")]
pub fn answer<R: Runtime>(app: &AppHandle<R>, job_id: u64, key: &str) -> Result<(), String> {
    use headroom_core::marks::Control;
    tracing::info!(job_id, key, "notification answered");
    match key {
        SPARE => crate::jobs::spare(app, job_id),
        "pause" => crate::jobs::act(app, job_id, Control::Pause),
        "resume" => crate::jobs::act(app, job_id, Control::Resume),
        "stop" => crate::jobs::act(app, job_id, Control::Stop),
        _ => Ok(()), // closed, or the notification's body clicked
    }
}

/// Shows a notification with buttons through the freedesktop server and answers the button
/// clicked (or nothing, once it is closed) on a thread of its own.
#[cfg(all(target_os = "linux", not(test)))]
fn show_with_actions<R: Runtime>(
    app: &AppHandle<R>,
    job_id: u64,
    title: &str,
    body: &str,
    buttons: &[(&str, &str)],
) -> Result<(), notify_rust::error::Error> {
    let mut notification = notify_rust::Notification::new();
    notification.appname("Headroom").summary(title).body(body);
    for (key, label) in buttons {
        notification.action(key, label);
    }
    let handle = notification.show()?;
    let app = app.clone();
    let spawned = std::thread::Builder::new()
        .name("headroom-notification".into())
        .spawn(move || {
            handle.wait_for_action(|key| {
                if let Err(e) = answer(&app, job_id, key) {
                    tracing::warn!(job_id, key, error = %e, "notification action");
                }
            });
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot wait for the notification's buttons");
    }
    Ok(())
}

fn paused<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.try_state::<AppState>()
        .is_some_and(|s| s.notifications_paused())
}

/// Shows a notification unless paused.
pub fn show<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    if paused(app) {
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
