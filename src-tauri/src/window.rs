//! The popover window: show, hide, toggle; hidden on blur. The page gets `tick` events only
//! while it is shown.
//!
//! The webview exists only while the popover is open: it is built from the `main` window
//! config (`create: false`, so not at start-up) when shown and destroyed when hidden, so a
//! closed popover costs no WebKit processes, memory or timers.

use std::sync::atomic::Ordering;

use tauri::{AppHandle, Manager, Runtime, Window, WindowEvent};

use crate::screens::{anchor, placement, Rect};
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

/// The tray icon's rectangle as tray-icon gives it on macOS: physical pixels at the scale of
/// the screen its menu bar is on (a physical value converts at any scale unchanged); `None`
/// on Linux and before the icon is placed.
fn tray_rect<R: Runtime>(app: &AppHandle<R>) -> Option<Rect> {
    let rect = app.tray_by_id(TRAY_ID)?.rect().ok().flatten()?;
    let position = rect.position.to_physical::<f64>(1.0);
    let size = rect.size.to_physical::<f64>(1.0);
    Some(Rect(position.x, position.y, size.width, size.height))
}

/// What the popover opens under: the tray icon's rectangle ([`tray_rect`]), else the
/// pointer as a point.
fn opens_under<R: Runtime>(app: &AppHandle<R>, w: &tauri::WebviewWindow<R>) -> Option<Rect> {
    tray_rect(app).or_else(|| {
        let pointer = w.cursor_position().ok()?;
        Some(Rect(pointer.x, pointer.y, 0.0, 0.0))
    })
}

/// macOS: puts the popover under the tray icon on the screen whose menu bar holds it, in
/// points (see `screens.rs` for why not in pixels). False when there is no screen to place it
/// on.
#[cfg(target_os = "macos")]
fn place_in_points<R: Runtime>(app: &AppHandle<R>, w: &tauri::WebviewWindow<R>) -> bool {
    let screen = |m: &tauri::Monitor| {
        let (pos, size, work) = (m.position(), m.size(), m.work_area());
        crate::screens::Screen {
            bounds: Rect(
                f64::from(pos.x),
                f64::from(pos.y),
                f64::from(size.width),
                f64::from(size.height),
            ),
            work_area: Rect(
                f64::from(work.position.x),
                f64::from(work.position.y),
                f64::from(work.size.width),
                f64::from(work.size.height),
            ),
            scale: m.scale_factor(),
        }
    };
    let screens: Vec<_> = w
        .available_monitors()
        .unwrap_or_default()
        .iter()
        .map(screen)
        .collect();
    let main = w.primary_monitor().ok().flatten().map(|m| screen(&m));
    let Some(Rect(x, y, width, height)) =
        crate::screens::popover_in_points(tray_rect(app), &screens, main.as_ref())
    else {
        return false;
    };
    let _ = w.set_size(tauri::LogicalSize::new(width, height));
    let _ = w.set_position(tauri::LogicalPosition::new(x, y));
    true
}

/// Puts the popover under what it opens under (see [`opens_under`]), on that screen (or the
/// main one), wholly inside its work area: in points on macOS ([`place_in_points`]), in the
/// pixels the desktop shares elsewhere.
fn place<R: Runtime>(app: &AppHandle<R>, w: &tauri::WebviewWindow<R>) {
    #[cfg(target_os = "macos")]
    if place_in_points(app, w) {
        return;
    }
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
