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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use headroom_rules::policy::JobEvent;
use tauri::{AppHandle, Manager, Runtime};

use crate::state::{lock, AppState};

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

/// What the buttons of the notifications shown do, by notification id: the newest
/// [`BUTTONS_KEPT`] (an older notification's click does nothing, as a closed one's).
#[derive(Default)]
pub struct Buttons {
    next_id: AtomicI32,
    waiting: Mutex<BTreeMap<i32, OnButton>>,
}

impl std::fmt::Debug for Buttons {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = lock(&self.waiting).len();
        f.debug_struct("Buttons")
            .field("waiting", &waiting)
            .finish()
    }
}

/// How many notifications keep answering their buttons.
pub const BUTTONS_KEPT: usize = 64;

impl Buttons {
    /// Keeps `on_button` for a new notification; its id.
    fn hold(&self, on_button: OnButton) -> i32 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let mut waiting = lock(&self.waiting);
        waiting.insert(id, on_button);
        while waiting.len() > BUTTONS_KEPT {
            waiting.pop_first();
        }
        id
    }

    /// The answer for notification `id`, once.
    #[cfg_attr(test, allow(dead_code))] // called by `answered`
    fn take(&self, id: i32) -> Option<OnButton> {
        lock(&self.waiting).remove(&id)
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
    let with_buttons =
        buttons.map(|(type_id, buttons)| (type_id, buttons.hold(Box::new(on_button))));
    send(app, &title, &body, with_buttons);
    with_buttons.map(|(_, id)| id)
}

/// Sends a notification through the plugin, with the buttons of action type `type_id` under
/// notification id `id` when given.
fn send<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str, buttons: Option<(&str, i32)>) {
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
