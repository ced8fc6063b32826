//! The popover window: show, hide, toggle; hidden on blur. The page gets `tick` events only
//! while it is shown.
//!
//! The webview exists only while the popover is open: it is built from the `main` window
//! config (`create: false`, so not at start-up) when shown and destroyed when hidden, so a
//! closed popover costs no WebKit processes, memory or timers.

use std::sync::atomic::Ordering;

use tauri::{AppHandle, Manager, Runtime, Window, WindowEvent};

use crate::state::AppState;

/// The popover's window label.
pub const MAIN: &str = "main";

/// True when the popover should open at start: `--show` or `HEADROOM_SHOW_WINDOW=1` (for
/// end-to-end tests and screenshots; WebDriver cannot drive a hidden window).
pub fn show_requested() -> bool {
    std::env::args().any(|a| a == "--show")
        || std::env::var("HEADROOM_SHOW_WINDOW").is_ok_and(|v| v == "1")
}

/// True when the popover must stay open on blur (tests, screenshots).
fn pinned() -> bool {
    show_requested()
}

/// The popover's webview, built from its config if it does not exist.
fn window<R: Runtime>(app: &AppHandle<R>) -> Option<tauri::WebviewWindow<R>> {
    if let Some(w) = app.get_webview_window(MAIN) {
        return Some(w);
    }
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == MAIN)?
        .clone();
    match tauri::WebviewWindowBuilder::from_config(app, &config).and_then(|b| b.build()) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::error!(error = %e, "cannot open the popover");
            None
        }
    }
}

/// Shows the popover (under the tray icon on macOS) and focuses it.
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    let Some(w) = window(app) else {
        return;
    };
    #[cfg(target_os = "macos")]
    {
        use tauri_plugin_positioner::{Position, WindowExt};
        let _ = w.as_ref().window().move_window(Position::TrayBottomCenter);
    }
    #[cfg(not(target_os = "macos"))]
    {
        let _ = w.center();
    }
    if let Some(state) = app.try_state::<AppState>() {
        state.visible.store(true, Ordering::SeqCst);
    }
    let _ = w.show();
    let _ = w.set_focus();
}

/// Hides the popover: its webview is destroyed.
pub fn hide<R: Runtime>(app: &AppHandle<R>) {
    if let Some(w) = app.get_webview_window(MAIN) {
        let _ = w.hide();
        let _ = w.destroy();
    }
    if let Some(state) = app.try_state::<AppState>() {
        state.visible.store(false, Ordering::SeqCst);
    }
}

/// Shows the popover if hidden, hides it if shown (the macOS tray click).
#[cfg_attr(test, allow(dead_code))]
pub fn toggle<R: Runtime>(app: &AppHandle<R>) {
    let shown = app.try_state::<AppState>().is_some_and(|s| s.is_visible());
    if shown {
        hide(app);
    } else {
        show(app);
    }
}

/// Hides the popover when it loses focus (a menu-bar popover closes on click-away).
pub fn on_event<R: Runtime>(window: &Window<R>, event: &WindowEvent) {
    match event {
        WindowEvent::Focused(false) if window.label() == MAIN && !pinned() => {
            hide(window.app_handle());
        }
        WindowEvent::Destroyed if window.label() == MAIN => {
            if let Some(state) = window.app_handle().try_state::<AppState>() {
                state.visible.store(false, Ordering::SeqCst);
            }
        }
        _ => {}
    }
}
