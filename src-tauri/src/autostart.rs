//! Launch at login (tauri-plugin-autostart): the setting and the tray's menu item.

use tauri::{AppHandle, Runtime};

/// Turns launch at login on or off (tauri-plugin-autostart).
pub fn apply<R: Runtime>(app: &AppHandle<R>, on: bool) {
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
