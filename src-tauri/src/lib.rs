//! headroom-app: the menu-bar shell. Thin: it wires headroom-core to a tray, a popover
//! window, notifications and the page's commands. The builder is generic over the runtime,
//! so commands are tested with Tauri's mock runtime; the tray and plugins are added only by
//! [`run`].

#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]
// The OS is called through headroom-os only (ARCHITECTURE.md).
#![forbid(unsafe_code)]

mod autostart;
mod boot;
#[cfg(any(target_os = "macos", test))]
mod cli_install;
mod commands;
mod error;
mod jobfiles;
mod jobs;
mod metrics;
mod notify;
mod persist;
mod screens;
mod socket;
mod state;
mod ticker;
#[cfg(not(test))]
mod tray;
mod window;

use tauri::{Builder, Manager, Runtime};

pub use state::AppState;

/// Registers the app's state and commands: everything tests need, nothing that draws.
pub fn app_builder<R: Runtime>(builder: Builder<R>, state: AppState) -> Builder<R> {
    builder
        .manage(state)
        .manage(notify::Buttons::default())
        .invoke_handler(tauri::generate_handler![
            commands::get_config,
            commands::get_status,
            commands::get_chart,
            commands::processes::get_processes,
            commands::watch::watch,
            commands::watch::guard,
            commands::watch::release,
            jobs::pause_job,
            jobs::resume_job,
            jobs::stop_job,
            commands::watch::get_jobs,
            commands::watch::get_recent_jobs,
            commands::fits::get_fits,
            commands::fits::get_fit_of,
            commands::get_settings,
            commands::set_settings,
        ])
}

/// Starts the menu-bar app and runs until Quit.
pub fn run() {
    init_logging();
    let state = match AppState::new(headroom_os::paths::Dirs::current()) {
        Ok(state) => state,
        Err(e) => {
            eprintln!("headroom-app: cannot start: {e:#}");
            std::process::exit(1);
        }
    };
    // First of all plugins: a second start (autostart plus a manual one) hands over to the
    // running instance, which shows its popover, and exits before it restores or enforces
    // any guard.
    let builder = app_builder(tauri::Builder::default(), state)
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            window::on_reopen(app);
        }))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            None,
        ));
    let app = builder
        .setup(|app| {
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            #[cfg(not(test))]
            tray::build(app.handle())?;
            ticker::start(app.handle().clone());
            socket::serve(app.handle().clone());
            metrics::start_if_set(app.handle());
            #[cfg(unix)]
            quit_on_signals(app.handle().clone());
            #[cfg(not(test))]
            notify::register(app.handle());
            notify::report_startup_problems(app.handle());
            if window::show_requested() {
                window::show(app.handle());
            }
            Ok(())
        })
        .on_window_event(window::on_event)
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            eprintln!("headroom-app: cannot start the app: {e}");
            std::process::exit(1);
        }
    };
    app.run(|handle, event| {
        // Closing the popover never quits a menu-bar app; only the tray's Quit does.
        if let tauri::RunEvent::ExitRequested { api, code, .. } = &event {
            if code.is_none() {
                api.prevent_exit();
            }
        }
        // Opened again (Finder, Spotlight, `open -a`) while running: macOS sends the running
        // app a reopen event instead of starting a second copy. The icon may be hidden (the
        // notch, a crowded menu bar), so this is how such a user opens the popover.
        #[cfg(target_os = "macos")]
        if let tauri::RunEvent::Reopen { .. } = &event {
            window::on_reopen(handle);
        }
        if let tauri::RunEvent::Exit = event {
            if let Some(state) = handle.try_state::<AppState>() {
                state.shutdown();
            }
        }
    });
}

/// SIGTERM, SIGINT and SIGHUP (logout, `kill`, Ctrl-C) quit like the tray's Quit, so the
/// history not yet saved is written. Signals ignored at start (`nohup`) stay ignored.
#[cfg(unix)]
fn quit_on_signals<R: Runtime>(app: tauri::AppHandle<R>) {
    use headroom_os::unix::signals::{is_ignored, SIGHUP, SIGINT, SIGTERM};
    let wanted: Vec<i32> = [SIGTERM, SIGINT, SIGHUP]
        .into_iter()
        .filter(|&s| !is_ignored(s))
        .collect();
    match signal_hook::iterator::Signals::new(&wanted) {
        Ok(mut signals) => {
            let spawned = std::thread::Builder::new()
                .name("headroom-signals".into())
                .spawn(move || {
                    if let Some(signal) = signals.forever().next() {
                        tracing::info!(signal, "quitting on a signal");
                        app.exit(0);
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot watch for signals");
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot watch for signals"),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HEADROOM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests;
