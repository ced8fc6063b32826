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

/// The tray icon's id (`tray.rs` builds it; the popover opens under it).
pub const TRAY_ID: &str = "main";

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

/// Shows the popover (under the tray icon on macOS, by the pointer elsewhere) and focuses it.
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    let Some(w) = window(app) else {
        return;
    };
    place(app, &w);
    if let Some(state) = app.try_state::<AppState>() {
        state.visible.store(true, Ordering::SeqCst);
    }
    let _ = w.show();
    let _ = w.set_focus();
}

/// The popover's size in logical pixels (`tauri.conf.json`), and its distance from the edges
/// of the screen and from what it opens under.
const SIZE: (f64, f64) = (380.0, 560.0);
const MARGIN: f64 = 8.0;

/// A rectangle in physical pixels: x, y, width, height (y down from the top of the main
/// screen, as tao and tray-icon give them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect(pub f64, pub f64, pub f64, pub f64);

/// What the popover opens under: the bottom centre of the tray icon's rectangle (macOS:
/// tray-icon reports the status item's top left and its size, so the bottom is y + height,
/// not y), or, with no rectangle (shown before any tray event, `--show`, a second launch,
/// Linux without a pointer), the top right of the work area: under the menu bar at the right.
pub fn anchor(under: Option<Rect>, area: Rect) -> (f64, f64) {
    match under {
        Some(Rect(x, y, w, h)) => (x + w / 2.0, y + h),
        None => (area.0 + area.2, area.1),
    }
}

/// Where the popover goes on a screen whose work area (without the menu bar, the Dock or
/// panels) is `area`, at `scale` physical pixels per logical one, opening under `at` (see
/// [`anchor`]): just below it and centred on it, moved (and, on a small screen, shrunk) so
/// that all of it stays inside the work area. Returns the window's rectangle in physical
/// pixels.
pub fn placement(area: Rect, scale: f64, at: (f64, f64)) -> Rect {
    let Rect(ax, ay, aw, ah) = area;
    let margin = MARGIN * scale;
    let w = (SIZE.0 * scale).min(aw - 2.0 * margin).max(1.0);
    let h = (SIZE.1 * scale).min(ah - 2.0 * margin).max(1.0);
    let clamp = |v: f64, lo: f64, hi: f64| v.max(lo).min(hi.max(lo));
    let x = clamp(at.0 - w / 2.0, ax + margin, ax + aw - margin - w);
    let y = clamp(at.1 + margin, ay + margin, ay + ah - margin - h);
    Rect(x.round(), y.round(), w.round(), h.round())
}

/// What the popover opens under: the tray icon's rectangle on macOS (`TrayIcon::rect`,
/// `None` on Linux and before the icon is placed), else the pointer as a point.
fn opens_under<R: Runtime>(app: &AppHandle<R>, w: &tauri::WebviewWindow<R>) -> Option<Rect> {
    let tray = app
        .tray_by_id(TRAY_ID)
        .and_then(|tray| tray.rect().ok().flatten());
    if let Some(rect) = tray {
        // tray-icon gives physical pixels; the scale only converts a logical answer.
        let scale = w.scale_factor().unwrap_or(1.0);
        let position = rect.position.to_physical::<f64>(scale);
        let size = rect.size.to_physical::<f64>(scale);
        return Some(Rect(position.x, position.y, size.width, size.height));
    }
    let pointer = w.cursor_position().ok()?;
    Some(Rect(pointer.x, pointer.y, 0.0, 0.0))
}

/// Puts the popover under what it opens under (see [`opens_under`]), on that screen (or the
/// main one), wholly inside its work area.
fn place<R: Runtime>(app: &AppHandle<R>, w: &tauri::WebviewWindow<R>) {
    let under = opens_under(app, w);
    let monitor = under
        .and_then(|Rect(x, y, width, _)| w.monitor_from_point(x + width / 2.0, y).ok().flatten())
        .or_else(|| w.primary_monitor().ok().flatten());
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
    let at = anchor(under, area);
    let Rect(x, y, width, height) = placement(area, monitor.scale_factor(), at);
    let _ = w.set_size(tauri::PhysicalSize::new(width as u32, height as u32));
    let _ = w.set_position(tauri::PhysicalPosition::new(x as i32, y as i32));
}

/// The app was opened again while running (macOS `RunEvent::Reopen`, a second launch):
/// the popover is shown, never toggled away.
pub fn on_reopen<R: Runtime>(app: &AppHandle<R>) {
    tracing::info!("opened again: showing the popover");
    show(app);
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
