//! macOS notifications the plugin would keep a thread waiting for (unverified: no Mac here;
//! type-checked by `scripts/check-macos`).
//!
//! tauri-plugin-notification 2.8 shows every notification through notify-rust and, while a
//! click handler is registered, waits on a thread of its own for what the user does with it
//! (mac-notification-sys 0.6 also polls the delivered notifications every 0.5 s on the main
//! run loop until then). Two ways out:
//! - a notification without buttons is sent here, straight through notify-rust, and nothing
//!   waits for it ([`show_untracked`]);
//! - a notification given up ([`super::waiting`]) is removed from the notification center
//!   ([`remove_delivered`]): mac-notification-sys sees it gone, takes it as dismissed, and the
//!   plugin's thread ends.

use tauri::{AppHandle, Runtime};

/// Shows a notification without buttons; nothing waits for what the user does with it.
#[cfg_attr(test, allow(dead_code))] // tests show nothing (`send`)
pub fn show_untracked<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    // The bundle the notification is shown as, as the plugin names it.
    let bundle = if tauri::is_dev() {
        "com.apple.Terminal".to_owned()
    } else {
        app.config().identifier.clone()
    };
    let mut notification = notify_rust::Notification::new();
    notification.summary(title).body(body).auto_icon();
    std::thread::spawn(move || {
        let _ = notify_rust::set_application(&bundle);
        // The handle, dropped at once, sends the notification without waiting for it.
        if let Err(e) = notification.show() {
            tracing::warn!(error = %e, "notification failed");
        }
    });
}

/// Removes from the notification center the delivered notification of each (title, body),
/// the oldest of the same texts first. Runs on the main thread, where the center's delegate
/// answers.
pub fn remove_delivered<R: Runtime>(app: &AppHandle<R>, texts: Vec<(String, String)>) {
    let removed = app.run_on_main_thread(move || {
        // mac-notification-sys shows the plugin's notifications through this API: removing
        // one there is what it watches for.
        #[allow(deprecated)]
        {
            use objc2_foundation::NSUserNotificationCenter;
            let center = NSUserNotificationCenter::defaultUserNotificationCenter();
            for (title, body) in &texts {
                let delivered = center.deliveredNotifications();
                let same = delivered.iter().find(|n| {
                    n.title().is_some_and(|t| t.to_string() == *title)
                        && n.informativeText().is_some_and(|b| b.to_string() == *body)
                });
                if let Some(notification) = same {
                    center.removeDeliveredNotification(&notification);
                }
            }
        }
    });
    if let Err(e) = removed {
        tracing::warn!(error = %e, "a notification given up could not be removed");
    }
}
