//! Launch at login (tauri-plugin-autostart): the setting and the tray's menu item.
//!
//! On macOS the plugin writes a LaunchAgent naming the running executable. Run from the
//! disk image (`/Volumes/…`) or an App Translocation copy, that path is gone after the next
//! eject or restart, so turning it on there is refused with a reason, as "Install
//! command-line tool…" refuses ([`is_transient`]).

use std::path::Path;

use tauri::{AppHandle, Runtime};

/// True when `exe` is not a lasting install: on a mounted volume (the disk image) or an
/// App Translocation copy (a quarantined app opened where it was downloaded).
pub fn is_transient(exe: &Path) -> bool {
    exe.starts_with("/Volumes")
        || exe
            .components()
            .any(|c| c.as_os_str() == "AppTranslocation")
}

/// Why launch at login may not be turned on for the app at `exe`, if it may not.
pub fn refusal(exe: &Path) -> Option<String> {
    is_transient(exe).then(|| {
        format!(
            "Headroom runs from {}, which will not be there at the next login: move \
             Headroom to Applications first",
            exe.display()
        )
    })
}

/// Turns launch at login on or off (tauri-plugin-autostart); refuses to turn it on for an
/// app that runs from the disk image (see [`refusal`]).
pub fn apply<R: Runtime>(app: &AppHandle<R>, on: bool) -> Result<(), String> {
    if on {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find the app: {e}"))?;
        if let Some(why) = refusal(&exe) {
            return Err(why);
        }
    }
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
    let _ = app;
    Ok(())
}
