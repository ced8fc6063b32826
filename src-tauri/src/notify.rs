//! Notifications (tauri-plugin-notification) of each job event, in the words the CLI's lines
//! use too (`core::engine::words`).
//!
//! Notifications that can be answered: the warning before a guard acts offers "Spare it"
//! (Headroom lets go of the job) and "Pause now"; a pause offers "Resume" and "Stop". On Linux they are the
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

/// The action key that lets go of a job (unguards it).
pub const SPARE: &str = "spare";

/// Shows a notification for a job event, unless notifications are paused; where the
/// platform has buttons, `on_button` gets the key of the one clicked ([`actions`]).
pub fn job_event<R: Runtime>(
    app: &AppHandle<R>,
    command: &str,
    event: &JobEvent,
    on_button: impl FnOnce(&str) + Send + 'static,
) {
    let (title, body) = texts(command, event);
    tracing::info!(%title, %body, "job event");
    let buttons = actions(event);
    #[cfg(all(target_os = "linux", not(test)))]
    if !buttons.is_empty() && !paused(app) {
        match show_with_actions(&title, &body, buttons, on_button) {
            Ok(()) => return,
            Err(e) => tracing::warn!(error = %e, "notification with buttons failed"),
        }
        return show(app, &title, &body);
    }
    let _ = (buttons, on_button);
    show(app, &title, &body);
}

/// Shows a notification with buttons through the freedesktop server and answers the button
/// clicked (or nothing, once it is closed) on a thread of its own.
#[cfg(all(target_os = "linux", not(test)))]
fn show_with_actions(
    title: &str,
    body: &str,
    buttons: &[(&str, &str)],
    on_button: impl FnOnce(&str) + Send + 'static,
) -> Result<(), notify_rust::error::Error> {
    let mut notification = notify_rust::Notification::new();
    notification.appname("Headroom").summary(title).body(body);
    for (key, label) in buttons {
        notification.action(key, label);
    }
    let handle = notification.show()?;
    let spawned = std::thread::Builder::new()
        .name("headroom-notification".into())
        .spawn(move || handle.wait_for_action(on_button));
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
