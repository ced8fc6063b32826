//! Notifications (tauri-plugin-notification) of each job event, in the words the CLI's lines
//! use too (`headroom_core::words`).
//!
//! Notifications that can be answered, on Linux and macOS by one code path: the warning
//! before a guard acts offers "Spare it" (Headroom lets go of the job) and "Pause now"; a
//! pause offers "Resume" and "Stop". Each offers "Show" (the popover) first: the answer a
//! click that names no action gets ([`SHOW`]). They are the plugin's action types ([`register`], at
//! start); a notification names its type, and the plugin reports a click through `on_action`,
//! which [`answered`] routes to the job by the notification's id. On Linux the buttons are the
//! freedesktop server's actions (D-Bus `ActionInvoked`; tested end to end against a real
//! server). On macOS the plugin shows them under the notification's "Options" and maps the
//! option chosen back by its label (tauri-plugin-notification 2.8, through notify-rust and
//! mac-notification-sys; unverified: no Mac here).

use std::sync::Mutex;

use headroom_rules::policy::JobEvent;
use tauri::{AppHandle, Manager, Runtime};

use crate::state::{lock, AppState};

#[cfg(target_os = "macos")]
mod macos;
pub mod waiting;

use waiting::Waiting;

/// Title and body of a notification for a job event (the engine's words).
pub fn texts(command: &str, event: &JobEvent) -> (String, String) {
    headroom_core::words::notification(event, command)
}

/// The buttons of a job event's notification: (action key, label).
pub fn actions(event: &JobEvent) -> &'static [(&'static str, &'static str)] {
    match event {
        JobEvent::Warning { .. } => WARNING_ACTIONS,
        JobEvent::Paused { .. } => PAUSED_ACTIONS,
        _ => &[],
    }
}

/// The action key that lets go of a job (unguards it).
pub const SPARE: &str = "spare";

/// The action key that shows the popover, and changes nothing: every notification's first
/// button. On macOS the plugin reports the first action when the notification's "Options"
/// button itself is clicked (tauri-plugin-notification 2.8's `desktop.rs`; notify-rust maps
/// a label it does not know to the first action): that click must do nothing harmful.
pub const SHOW: &str = "show";

const WARNING_ACTIONS: &[(&str, &str)] =
    &[(SHOW, "Show"), (SPARE, "Spare it"), ("pause", "Pause now")];
const PAUSED_ACTIONS: &[(&str, &str)] = &[(SHOW, "Show"), ("resume", "Resume"), ("stop", "Stop")];

/// The action types registered with the plugin: (type id, its buttons).
const ACTION_TYPES: &[(&str, &[(&str, &str)])] = &[
    ("headroom-warning", WARNING_ACTIONS),
    ("headroom-paused", PAUSED_ACTIONS),
];

/// The action type of a job event's notification, when it has buttons.
fn action_type(event: &JobEvent) -> Option<&'static str> {
    let buttons = actions(event);
    ACTION_TYPES
        .iter()
        .find(|(_, of_type)| std::ptr::eq(*of_type, buttons))
        .map(|(id, _)| *id)
}

/// A button's answer: called once with the key of the button clicked.
type OnButton = Box<dyn FnOnce(&str) + Send>;

/// What a notification with buttons holds while it waits: its answer, and its texts (what
/// tells it apart on macOS, where the plugin cannot close it by id).
struct Held {
    on_button: OnButton,
    title: String,
    body: String,
}

/// What the buttons of the notifications shown do, by notification id: at most
/// [`waiting::WAITING_MAX`] wait at once, and the oldest is given up (closed; its click does
/// nothing, as a closed one's).
#[derive(Default)]
pub struct Buttons {
    waiting: Mutex<Waiting<Held>>,
}

impl std::fmt::Debug for Buttons {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = lock(&self.waiting).len();
        f.debug_struct("Buttons")
            .field("waiting", &waiting)
            .finish()
    }
}

impl Buttons {
    /// Keeps `held` for a new notification: its id, and the notifications given up to make
    /// room (to be closed).
    fn hold(&self, held: Held) -> (i32, Vec<(i32, Held)>) {
        lock(&self.waiting).hold(held)
    }

    /// The answer for notification `id`, once.
    #[cfg_attr(test, allow(dead_code))] // called by `answered`
    fn take(&self, id: i32) -> Option<OnButton> {
        lock(&self.waiting).take(id).map(|held| held.on_button)
    }

    /// How many notifications wait for a click now.
    #[cfg(all(test, target_os = "linux"))]
    pub fn waiting(&self) -> usize {
        lock(&self.waiting).len()
    }
}

/// Registers the buttons' action types and the one handler of their clicks with the plugin
/// ([`Buttons`], managed by `app_builder`, routes a click to its job). Called at start, before
/// any notification: the plugin attaches buttons only while a handler exists.
#[cfg(not(test))]
pub fn register<R: Runtime>(app: &AppHandle<R>) {
    use tauri_plugin_notification::{Action, ActionType, NotificationExt};
    let types = ACTION_TYPES
        .iter()
        .map(|(id, buttons)| {
            let actions = buttons
                .iter()
                .map(|(key, label)| Action::builder(*key, *label).build())
                .collect();
            ActionType::builder(*id).actions(actions).build()
        })
        .collect();
    let notification = app.notification();
    let handle = app.clone();
    let registered = notification
        .register_action_types(types)
        .and_then(|()| notification.on_action(move |done| answered(&handle, done)));
    if let Err(e) = registered {
        tracing::warn!(error = %e, "notifications will have no buttons");
    }
}

/// A click the plugin reported: the button's answer of its notification, once. A click on the
/// notification itself (`tap`) shows the popover.
#[cfg_attr(test, allow(dead_code))] // `register` hands it to the plugin; Linux tests call it
pub fn answered<R: Runtime>(app: &AppHandle<R>, done: &tauri_plugin_notification::ActionPerformed) {
    let key = done.action_id();
    if key == "tap" || key == SHOW {
        // The notification itself, or its harmless first button: the popover, and the
        // notification's other buttons still answer.
        crate::window::show(app);
        return;
    }
    let on_button = done
        .notification()
        .and_then(|n| app.try_state::<Buttons>()?.take(n.id()));
    match on_button {
        Some(on_button) => on_button(key),
        None => tracing::info!(key, "a button of a notification no longer answered"),
    }
}

/// Shows a notification for a job event, unless notifications are paused. One with buttons
/// ([`actions`]) gets `on_button` called with the key of the one clicked; its id is returned.
pub fn job_event<R: Runtime>(
    app: &AppHandle<R>,
    command: &str,
    event: &JobEvent,
    on_button: impl FnOnce(&str) + Send + 'static,
) -> Option<i32> {
    let (title, body) = texts(command, event);
    tracing::info!(%title, %body, "job event");
    if paused(app) {
        return None;
    }
    let buttons = action_type(event).zip(app.try_state::<Buttons>());
    let Some((type_id, buttons)) = buttons else {
        send(app, &title, &body, None);
        return None;
    };
    let held = Held {
        on_button: Box::new(on_button),
        title: title.clone(),
        body: body.clone(),
    };
    let (id, given_up) = buttons.hold(held);
    send(app, &title, &body, Some((type_id, id)));
    close(app, given_up);
    Some(id)
}

/// Closes the notifications given up (their jobs keep what they would have without a click):
/// on Linux through the plugin (the server's `CloseNotification`), on macOS by removing the
/// delivered notification of the same texts, which ends the plugin's wait for it.
fn close<R: Runtime>(app: &AppHandle<R>, given_up: Vec<(i32, Held)>) {
    for (id, held) in &given_up {
        tracing::info!(
            id,
            title = %held.title,
            body = %held.body,
            "a notification given up: too many wait for a click"
        );
    }
    if given_up.is_empty() {
        return;
    }
    #[cfg(not(test))]
    {
        use tauri_plugin_notification::NotificationExt;
        let ids = given_up.iter().map(|(id, _)| *id).collect();
        if let Err(e) = app.notification().remove_active(ids) {
            tracing::warn!(error = %e, "a notification given up could not be closed");
        }
    }
    #[cfg(target_os = "macos")]
    macos::remove_delivered(
        app,
        given_up
            .into_iter()
            .map(|(_, held)| (held.title, held.body))
            .collect(),
    );
    #[cfg(not(target_os = "macos"))]
    let _ = (app, given_up);
}

/// Sends a notification through the plugin, with the buttons of action type `type_id` under
/// notification id `id` when given.
fn send<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str, buttons: Option<(&str, i32)>) {
    // On macOS the plugin keeps a thread waiting for every notification while a click
    // handler is registered: one without buttons goes around it, and nothing waits for it.
    #[cfg(all(not(test), target_os = "macos"))]
    if buttons.is_none() {
        macos::show_untracked(app, title, body);
        return;
    }
    #[cfg(not(test))]
    {
        use tauri_plugin_notification::NotificationExt;
        let mut builder = app.notification().builder().title(title).body(body);
        if let Some((type_id, id)) = buttons {
            builder = builder.id(id).action_type_id(type_id);
        }
        if let Err(e) = builder.show() {
            tracing::warn!(error = %e, "notification failed");
        }
    }
    #[cfg(test)]
    let _ = (app, title, body, buttons);
}

fn paused<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.try_state::<AppState>()
        .is_some_and(|s| s.notifications_paused())
}

/// Shows a notification unless paused.
pub fn show<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    if !paused(app) {
        send(app, title, body, None);
    }
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
