//! Launch at login (tauri-plugin-autostart): the setting and the tray's menu item.
//!
//! On macOS the plugin writes a LaunchAgent naming the running executable. Run from the
//! disk image (a read-only volume) or an App Translocation copy, that path is gone after the
//! next eject or restart, so turning it on there is refused with a reason, as "Install
//! command-line tool…" refuses ([`is_transient`]). An app on an external drive
//! (`/Volumes/…`, writable) is a real install and is not refused.

use std::path::Path;

use tauri::{AppHandle, Runtime};

/// True when `exe` is not a lasting install: an App Translocation copy (a quarantined app
/// opened where it was downloaded) or on a read-only volume (the disk image), as
/// `read_only` says of its volume.
pub fn transient(exe: &Path, read_only: bool) -> bool {
    read_only
        || exe
            .components()
            .any(|c| c.as_os_str() == "AppTranslocation")
}

/// [`transient`] for `exe` on this machine (its volume asked; one that cannot be asked is
/// taken as a lasting one).
pub fn is_transient(exe: &Path) -> bool {
    let read_only = headroom_os::unix::volume::is_read_only(exe).unwrap_or(false);
    transient(exe, read_only)
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
