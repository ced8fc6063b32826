//! The menu-bar item: icon, title (`38% · 3.1G↑`), and the menu (Open Headroom, Pause
//! notifications for 1 hour, Launch at login, on macOS Install command-line tool…, Quit). The
//! menu is built once; each sample only changes the title (and the icon while swap grows
//! during a watched job).
//!
//! macOS: a template icon; left click toggles the popover under the icon. Linux: the title
//! is the appindicator label and every action is in the menu (no tray click events there).

use std::time::Duration;

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Runtime};

use crate::state::{lock, AppState};
use crate::window::{self, TRAY_ID};

const PAUSE_FOR: Duration = Duration::from_secs(3600);

fn normal_icon() -> Image<'static> {
    #[cfg(target_os = "macos")]
    {
        tauri::include_image!("icons/tray-template.png")
    }
    #[cfg(not(target_os = "macos"))]
    {
        tauri::include_image!("icons/tray-linux.png")
    }
}

fn growing_icon() -> Image<'static> {
    tauri::include_image!("icons/tray-growing.png")
}

/// The menu's items that the handler reads back.
struct Checks<R: Runtime> {
    pause: CheckMenuItem<R>,
    login: CheckMenuItem<R>,
}

/// The tray menu: Open, Pause notifications, Launch at login, (macOS) Install command-line
/// tool, Quit.
fn menu<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<(Menu<R>, Checks<R>)> {
    let open = MenuItem::with_id(app, "open", "Open Headroom", true, None::<&str>)?;
    let pause_label = "Pause notifications for 1 hour";
    let pause = CheckMenuItem::with_id(app, "pause", pause_label, true, false, None::<&str>)?;
    let at_login = app
        .try_state::<AppState>()
        .is_some_and(|s| lock(&s.settings).launch_at_login);
    let login = CheckMenuItem::with_id(
        app,
        "login",
        "Launch at login",
        true,
        at_login,
        None::<&str>,
    )?;
    let quit = MenuItem::with_id(app, "quit", "Quit Headroom", true, None::<&str>)?;
    let (sep1, sep2) = (
        PredefinedMenuItem::separator(app)?,
        PredefinedMenuItem::separator(app)?,
    );
    let mut items: Vec<&dyn IsMenuItem<R>> = vec![&open, &sep1, &pause, &login];
    #[cfg(target_os = "macos")]
    let install_cli = MenuItem::with_id(
        app,
        "install-cli",
        "Install command-line tool…",
        true,
        None::<&str>,
    )?;
    #[cfg(target_os = "macos")]
    items.push(&install_cli);
    items.extend([&sep2 as &dyn IsMenuItem<R>, &quit]);
    let menu = Menu::with_items(app, &items)?;
    Ok((menu, Checks { pause, login }))
}

/// What a menu item does.
fn on_menu<R: Runtime>(app: &AppHandle<R>, id: &str, checks: &Checks<R>) {
    match id {
        "open" => window::show(app),
        "pause" => {
            let paused = checks.pause.is_checked().unwrap_or(false);
            if let Some(state) = app.try_state::<AppState>() {
                state.pause_notifications(paused.then_some(PAUSE_FOR));
            }
        }
        "login" => {
            let on = checks.login.is_checked().unwrap_or(false);
            if let Err(why) = crate::autostart::apply(app, on) {
                tracing::warn!(%why, "launch at login refused");
                let _ = checks.login.set_checked(false);
                crate::notify::show(app, "Launch at login is off", &why);
                return;
            }
            if let Some(state) = app.try_state::<AppState>() {
                let mut settings = lock(&state.settings);
                settings.launch_at_login = on;
                if let Err(e) = settings.save(&state.dirs.settings_path()) {
                    tracing::warn!(error = %e, "saving settings");
                }
            }
        }
        #[cfg(target_os = "macos")]
        "install-cli" => crate::cli_install::install(app),
        "quit" => app.exit(0),
        _ => {}
    }
}

/// Builds the tray icon and its menu.
pub fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let (menu, checks) = menu(app)?;
    let title = app
        .try_state::<AppState>()
        .map(|s| lock(&s.monitor).tray_title())
        .unwrap_or_default();
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(normal_icon())
        .icon_as_template(cfg!(target_os = "macos"))
        .title(&title)
        .tooltip("Headroom")
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(move |app, event| on_menu(app, event.id().as_ref(), &checks))
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                window::toggle(tray.app_handle());
            }
        })
        .build(app)?;
    Ok(())
}

/// Sets the title; swaps the icon only when `growing` is given (it changed): icons are not
/// re-set on every sample.
pub fn update<R: Runtime>(app: &AppHandle<R>, title: &str, growing: Option<bool>) {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return;
    };
    let _ = tray.set_title(Some(title));
    if let Some(growing) = growing {
        // Icon and template flag in one call: two calls draw the icon twice (it flickers).
        let icon = if growing {
            growing_icon()
        } else {
            normal_icon()
        };
        let _ = tray.set_icon_with_as_template(Some(icon), !growing);
    }
}
