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
    place_near_pointer(app, &w);
    if let Some(state) = app.try_state::<AppState>() {
        state.visible.store(true, Ordering::SeqCst);
    }
    let _ = w.show();
    let _ = w.set_focus();
}

/// The popover's size in logical pixels (`tauri.conf.json`), and its distance from the edges
/// of the screen and from the pointer.
#[cfg_attr(target_os = "macos", allow(dead_code))]
const SIZE: (f64, f64) = (380.0, 560.0);
#[cfg_attr(target_os = "macos", allow(dead_code))]
const MARGIN: f64 = 8.0;

/// A rectangle in physical pixels: x, y, width, height.
#[cfg_attr(target_os = "macos", allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect(pub f64, pub f64, pub f64, pub f64);

/// Where the popover goes on a screen whose work area (without panels) is `area`, at
/// `scale` physical pixels per logical one, for a pointer at `pointer`: just below the
/// pointer and centred on it, moved (and, on a small screen, shrunk) so that all of it
/// stays inside the work area. Returns the window's rectangle in physical pixels.
#[cfg_attr(target_os = "macos", allow(dead_code))]
pub fn placement(area: Rect, scale: f64, pointer: (f64, f64)) -> Rect {
    let Rect(ax, ay, aw, ah) = area;
    let margin = MARGIN * scale;
    let w = (SIZE.0 * scale).min(aw - 2.0 * margin).max(1.0);
    let h = (SIZE.1 * scale).min(ah - 2.0 * margin).max(1.0);
    let clamp = |v: f64, lo: f64, hi: f64| v.max(lo).min(hi.max(lo));
    let x = clamp(pointer.0 - w / 2.0, ax + margin, ax + aw - margin - w);
    let y = clamp(pointer.1 + margin, ay + margin, ay + ah - margin - h);
    Rect(x.round(), y.round(), w.round(), h.round())
}

/// Puts the popover on the screen that holds the pointer, wholly inside its work area
/// (Linux; macOS places it under the tray icon).
#[cfg(not(target_os = "macos"))]
fn place_near_pointer<R: Runtime>(app: &AppHandle<R>, w: &tauri::WebviewWindow<R>) {
    let pointer = app.cursor_position().ok();
    let monitor = pointer
        .and_then(|p| app.monitor_from_point(p.x, p.y).ok().flatten())
        .or_else(|| app.primary_monitor().ok().flatten());
    let Some(monitor) = monitor else {
        let _ = w.center();
        return;
    };
    let area = monitor.work_area();
    let area = Rect(
        f64::from(area.position.x),
        f64::from(area.position.y),
        f64::from(area.size.width),
        f64::from(area.size.height),
    );
    // Without a pointer (no input device), the top right of the work area, where a tray is.
    let at = pointer.map_or((area.0 + area.2, area.1), |p| (p.x, p.y));
    let Rect(x, y, width, height) = placement(area, monitor.scale_factor(), at);
    let _ = w.set_size(tauri::PhysicalSize::new(width as u32, height as u32));
    let _ = w.set_position(tauri::PhysicalPosition::new(x as i32, y as i32));
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
