//! Commands through Tauri's mock runtime: status, chart windows, processes, watch/guard with
//! validation errors, release, settings. Real counters, real processes.

use headroom_os::paths::Dirs;
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::WebviewWindow;

use super::*;
use crate::state::lock;
use headroom_os::process::ProcessLookup;
use tauri::Manager;

struct App {
    _app: tauri::App<tauri::test::MockRuntime>,
    window: WebviewWindow<tauri::test::MockRuntime>,
    _home: Option<tempfile::TempDir>,
}

impl Drop for App {
    /// The app quits: its job loop stops, as on the tray's Quit (a test may start the app
    /// again on the same folder, as a restart does).
    fn drop(&mut self) {
        if let Some(state) = self.window.try_state::<AppState>() {
            state
                .quitting
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// The app on the mock runtime, its files under `home`.
fn app_in(home: &std::path::Path) -> App {
    let state = AppState::new(Dirs::under(home)).unwrap();
    let app = app_builder(mock_builder(), state)
        .build(mock_context(noop_assets()))
        .unwrap();
    let window = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    App {
        _app: app,
        window,
        _home: None,
    }
}

/// The app on the mock runtime, its files in a fresh temporary folder.
fn app() -> App {
    let home = tempfile::tempdir().unwrap();
    let mut app = app_in(home.path());
    app._home = Some(home);
    app
}

fn call(app: &App, cmd: &str, args: Value) -> Result<Value, Value> {
    get_ipc_response(
        &app.window,
        InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            // The local origin on Linux and macOS (`http://tauri.localhost` is Windows only).
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|b| b.deserialize::<Value>().unwrap())
}

#[test]
fn status_and_chart_for_each_window() {
    let app = app();
    let s = call(&app, "get_status", json!({"windowSeconds": 600})).unwrap();
    assert!(s["total_bytes"].as_u64().unwrap() > 0);
    assert!((0.0..=100.0).contains(&s["free_percent"].as_f64().unwrap()));
    for w in [600, 3600, 86_400] {
        let svg = call(
            &app,
            "get_chart",
            json!({"windowSeconds": w, "dark": w == 3600}),
        )
        .unwrap();
        assert!(svg.as_str().unwrap().starts_with("<svg"));
    }
    let err = call(
        &app,
        "get_chart",
        json!({"windowSeconds": 5, "dark": false}),
    )
    .unwrap_err();
    assert!(
        err["text"].as_str().unwrap().starts_with("window:"),
        "{err}"
    );
}

#[test]
fn processes_are_sorted_and_searchable() {
    let app = app();
    let mut child = std::process::Command::new("sleep")
        .arg("4242")
        .spawn()
        .unwrap();
    let all = call(&app, "get_processes", json!({"query": ""})).unwrap();
    let rows = all["rows"].as_array().unwrap();
    assert!(rows.len() > 1);
    assert!(all["total"].as_u64().unwrap() >= rows.len() as u64);
    let fps: Vec<u64> = rows
        .iter()
        .map(|r| r["footprint_bytes"].as_u64().unwrap())
        .collect();
    assert!(fps.windows(2).all(|w| w[0] >= w[1]));
    let found = call(&app, "get_processes", json!({"query": "SLEEP 4242"})).unwrap();
    let found = found["rows"].as_array().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["pid"], child.id());
}

#[test]
fn guard_validates_then_watch_guard_release() {
    let app = app();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    let guard_error = |pid: u32, budget: &str, kill_free: &str| -> String {
        let args = json!({"pid": pid, "swapBudget": budget, "killFree": kill_free});
        let e = call(&app, "guard", args).unwrap_err();
        e["text"].as_str().unwrap().to_string()
    };
    let e = guard_error(pid, "lots", "10");
    assert!(e.starts_with("swap budget:"), "{e}");
    // Typed: the page places it by field, never by parsing the text.
    let typed = call(
        &app,
        "guard",
        json!({"pid": pid, "swapBudget": "lots", "killFree": "10"}),
    )
    .unwrap_err();
    assert_eq!(typed["field"], "swap_budget");
    assert_eq!(
        typed["message"],
        "invalid size 'lots': expected e.g. 8G or 512M"
    );
    let e = guard_error(pid, "8G", "120");
    assert!(e.starts_with("kill free:"), "{e}");
    let e = guard_error(1, "8G", "10");
    assert!(e.contains("cannot guard pid 1"), "{e}");
    let e = call(&app, "watch", json!({"pid": 4_000_000})).unwrap_err();
    assert!(
        e["text"].as_str().unwrap().starts_with("pid 4000000"),
        "{e}"
    );

    let job = call(&app, "watch", json!({"pid": pid})).unwrap();
    assert_eq!(job["mode"], "watch");
    let job = call(
        &app,
        "guard",
        json!({"pid": pid, "swapBudget": "100M", "killFree": "5"}),
    )
    .unwrap();
    assert_eq!(job["mode"], "guard");
    assert_eq!(job["swap_budget_bytes"], 100u64 << 20);
    assert_eq!(job["state"], "running");
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    assert_eq!(jobs.as_array().unwrap().len(), 1);
    call(&app, "release", json!({"id": job["id"]})).unwrap();
    assert!(call(&app, "get_jobs", json!({}))
        .unwrap()
        .as_array()
        .unwrap()
        .is_empty());
    assert!(call(&app, "release", json!({"id": job["id"]})).is_err());
    // Unguard never stopped it.
    assert!(child.try_wait().unwrap().is_none());
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_new_sample_interval_takes_effect_at_once() {
    let app = app();
    let mut new = call(&app, "get_settings", json!({})).unwrap();
    new["sample_interval"] = json!("2s");
    call(&app, "set_settings", json!({"settings": new})).unwrap();
    // No job runs, so the sampler ticks at the setting, from now, not after the next tick.
    let state = app.window.state::<AppState>();
    assert_eq!(state.sampler.interval(), std::time::Duration::from_secs(2));
}

#[test]
fn settings_round_trip_and_field_errors() {
    let app = app();
    let s = call(&app, "get_settings", json!({})).unwrap();
    assert_eq!(s["default_swap_budget"], "8G");
    let mut new = s.clone();
    new["sample_interval"] = json!("1s");
    new["default_swap_budget"] = json!("4G");
    let saved = call(&app, "set_settings", json!({"settings": new})).unwrap();
    assert_eq!(saved["default_swap_budget"], "4G");
    assert_eq!(
        call(&app, "get_settings", json!({})).unwrap()["sample_interval"],
        "1s"
    );
    let mut bad = s;
    bad["notify_step"] = json!("huge");
    let e = call(&app, "set_settings", json!({"settings": bad})).unwrap_err();
    assert!(
        e["text"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .starts_with("notification step")
            || e["text"].as_str().unwrap().contains("notify"),
        "{e}"
    );
}

#[test]
fn guards_and_history_survive_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    {
        let app = app_in(home.path());
        call(
            &app,
            "guard",
            json!({"pid": child.id(), "swapBudget": "3G", "killFree": "7"}),
        )
        .unwrap();
        let state = app.window.state::<AppState>();
        crate::persist::save_history(&state, &mut i64::MIN.clone());
    }
    let state = AppState::new(Dirs::under(home.path())).unwrap();
    let jobs = lock(&state.monitor).jobs.views();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].pid, child.id());
    assert_eq!(jobs[0].swap_budget_bytes, Some(3 << 30));
    let restored = lock(&state.monitor)
        .history
        .points(headroom_core::history::MINUTE_TIER);
    assert!(!restored.is_empty(), "history survived the restart");
    let _ = child.kill();
    let _ = child.wait();
    // A guard whose process is gone is not taken up again.
    let state = AppState::new(Dirs::under(home.path())).unwrap();
    assert!(lock(&state.monitor).jobs.views().is_empty());
}

#[test]
fn corrupt_settings_and_database_are_reported_and_replaced() {
    let home = tempfile::tempdir().unwrap();
    let dirs = Dirs::under(home.path());
    std::fs::create_dir_all(&dirs.config_dir).unwrap();
    std::fs::create_dir_all(&dirs.data_dir).unwrap();
    std::fs::write(dirs.settings_path(), "sample_interval = [nonsense\n").unwrap();
    std::fs::write(
        dirs.history_db_path(),
        b"this is not a database at all, just bytes",
    )
    .unwrap();
    let state = AppState::new(dirs.clone()).unwrap();
    let problems = lock(&state.startup_problems).clone();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().any(|p| p.contains("settings.toml")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("history.db")),
        "{problems:?}"
    );
    assert!(
        lock(&state.store).is_some(),
        "a fresh database replaced the corrupt one"
    );
    let moved = headroom_os::testdata::moved_aside(&dirs.config_dir);
    assert_eq!(moved.len(), 1, "the corrupt settings file was kept aside");
}

#[test]
fn terminal_guards_are_listed_read_only() {
    let app = app();
    let state = app.window.state::<AppState>();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let id = headroom_model::process::ProcessIdentity::of(&state.counters, child.id()).unwrap();
    let file = headroom_core::jobfile::JobFile {
        pid: id.pid,
        start_time: id.start_time,
        command: "sleep 30".into(),
        started_at_ms: 1,
        updated_at_ms: 1,
        swap_budget_bytes: 1 << 30,
        swap_start_bytes: 0,
        swap_growth_bytes: 5,
        peak_footprint_bytes: None,
        footprint_bytes: None,
        state: headroom_rules::engine::JobStatus::Running,
        verdict: None,
        on_budget: headroom_rules::policy::OnBudget::Stop,
        pauses: 0,
        // A guard that is gone: the job is shown as unguarded.
        guard: Some(headroom_model::process::ProcessIdentity {
            pid: 999_999_999,
            start_time: 1,
        }),
        members: vec![id],
        unguarded: false,
        mode: headroom_rules::engine::JobMode::Guard,
        paused_since_ms: None,
        resumed_at_ms: None,
        resumes_by_itself: false,
        yields: false,
        cgroup: None,
    };
    file.write_atomic(&state.jobs_dir()).unwrap();
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0]["mode"], "external");
    assert_eq!(jobs[0]["read_only"], true);
    assert_eq!(jobs[0]["state"], "unguarded", "its guard is gone");
    assert!(call(&app, "release", json!({"id": jobs[0]["id"]})).is_err());
}

#[test]
fn watch_on_a_guarded_job_keeps_its_budget() {
    let app = app();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    let guarded = call(
        &app,
        "guard",
        json!({"pid": pid, "swapBudget": "100M", "killFree": "5"}),
    )
    .unwrap();
    let watched = call(&app, "watch", json!({"pid": pid})).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(watched["id"], guarded["id"]);
    assert_eq!(watched["mode"], "guard", "{watched}");
    assert_eq!(watched["swap_budget_bytes"], 100u64 << 20, "{watched}");
}

#[test]
fn a_panic_in_the_job_loop_is_caught_and_the_guard_still_stops() {
    let app = app();
    let state = app.window.state::<AppState>();
    crate::ticker::start(app.window.app_handle().clone());
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    // The next sample panics the loop; the guard added now must still be enforced after it:
    // a 100 % floor stops the job on the second low reading.
    state
        .inject_panic
        .store(true, std::sync::atomic::Ordering::SeqCst);
    call(
        &app,
        "guard",
        json!({"pid": child.id(), "swapBudget": "8G", "killFree": "100"}),
    )
    .unwrap();
    let stopped = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        child.try_wait().unwrap().is_some()
    });
    let panics = state.panics.load(std::sync::atomic::Ordering::SeqCst);
    if !stopped {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(panics, 1, "the injected panic was not caught once");
    assert!(stopped, "the guard was not enforced after the panic");
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    assert!(
        (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            call(&app, "get_jobs", json!({})).unwrap()[0]["state"] == "stopped"
        }),
        "{jobs}"
    );
}

#[test]
fn a_guard_saved_in_another_boot_is_not_taken_up() {
    let home = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    {
        let app = app_in(home.path());
        call(
            &app,
            "guard",
            json!({"pid": child.id(), "swapBudget": "1G", "killFree": "5"}),
        )
        .unwrap();
    }
    // The same process, as if saved before a reboot: the boot id differs.
    let db = Dirs::under(home.path()).history_db_path();
    let conn = db_execute(&db, "UPDATE active_jobs SET boot_id = 'another-boot'");
    assert_eq!(conn, 1);
    let app = app_in(home.path());
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(jobs.as_array().unwrap().is_empty(), "{jobs}");
}

/// Runs one statement on the app's database; returns the rows changed.
fn db_execute(db: &std::path::Path, sql: &str) -> usize {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute(sql, [])
        .unwrap()
}

/// The state letter of `pid` (`T` when stopped), from `/proc`.
#[cfg(target_os = "linux")]
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

#[cfg(target_os = "linux")]
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        f()
    })
}

#[cfg(target_os = "linux")]
#[test]
fn a_job_paused_at_its_floor_stays_paused_across_a_restart_and_is_stopped_from_the_app() {
    let home = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = child.id();
    {
        let app = app_in(home.path());
        crate::ticker::start(app.window.app_handle().clone());
        // A 100 % floor is crossed at once: with pause, the job is paused, not stopped.
        let job = call(
            &app,
            "guard",
            json!({"pid": pid, "swapBudget": "8G", "killFree": "100", "onBudget": "pause"}),
        )
        .unwrap();
        assert_eq!(job["on_budget"], "pause");
        assert!(eventually(|| proc_state(pid) == Some('T')), "not paused");
        let jobs = call(&app, "get_jobs", json!({})).unwrap();
        assert_eq!(jobs[0]["state"], "paused", "{jobs}");
        let id = jobs[0]["id"].clone();
        // A paused job is never let go.
        let refused = call(&app, "release", json!({ "id": id })).unwrap_err();
        assert!(
            refused["text"].as_str().unwrap().contains("paused"),
            "{refused}"
        );
        assert_eq!(proc_state(pid), Some('T'));
        let bad = call(
            &app,
            "guard",
            json!({"pid": pid, "swapBudget": "8G", "killFree": "10", "onBudget": "later"}),
        )
        .unwrap_err();
        assert!(
            bad["text"].as_str().unwrap().starts_with("on budget:"),
            "{bad}"
        );
    }
    // Restarted: still stopped, shown paused; resumed, then stopped from the popover (the
    // stop verified by the job loop's samples).
    let app = app_in(home.path());
    crate::ticker::start(app.window.app_handle().clone());
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs}");
    assert_eq!(jobs[0]["state"], "paused", "{jobs}");
    assert_eq!(jobs[0]["pauses"], 1);
    assert_eq!(proc_state(pid), Some('T'));
    let id = jobs[0]["id"].clone();
    call(&app, "resume_job", json!({ "id": id })).unwrap();
    assert!(eventually(|| proc_state(pid) != Some('T')), "not resumed");
    let again = call(&app, "resume_job", json!({ "id": id })).unwrap_err();
    assert!(
        again["text"].as_str().unwrap().contains("not paused"),
        "{again}"
    );
    call(&app, "pause_job", json!({ "id": id })).unwrap();
    assert!(
        eventually(|| proc_state(pid) == Some('T')),
        "not paused again"
    );
    call(&app, "stop_job", json!({ "id": id })).unwrap();
    assert!(
        eventually(|| child.try_wait().unwrap().is_some()),
        "a paused job was not stopped (state {:?})",
        proc_state(pid)
    );
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    assert!(
        eventually(|| call(&app, "get_jobs", json!({})).unwrap()[0]["state"] == "stopped"),
        "{jobs}"
    );
}

/// A `sleep 60` the app guards (a budget it passes, no free floor): for the notification
/// tests, whose job's buttons act on it.
#[cfg(target_os = "linux")]
fn guarded_sleep(app: &App) -> std::process::Child {
    let child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    call(
        app,
        "guard",
        json!({"pid": child.id(), "swapBudget": "8G", "killFree": "0"}),
    )
    .unwrap();
    child
}

/// A click on button `key` of notification `id`, as tauri-plugin-notification reports it to
/// its `on_action` handler (the same on Linux and macOS).
#[cfg(target_os = "linux")]
fn click(handle: &tauri::AppHandle<tauri::test::MockRuntime>, id: i32, key: &str) {
    let done: tauri_plugin_notification::ActionPerformed =
        serde_json::from_value(json!({"actionId": key, "notification": {"id": id}})).unwrap();
    crate::notify::answered(handle, &done);
}

#[cfg(target_os = "linux")]
#[test]
fn notification_buttons_spare_pause_resume_and_stop() {
    use headroom_rules::policy::{JobEvent, OnBudget, StopReason};
    let warning = JobEvent::Warning {
        growth_bytes: 1,
        budget_bytes: 2,
        then: OnBudget::Stop,
    };
    let paused = JobEvent::Paused {
        reason: Some(StopReason::Requested),
        growth_bytes: 1,
        pause: 1,
        max_pauses: 3,
    };
    let keys = |e: &JobEvent| {
        crate::notify::actions(e)
            .iter()
            .map(|a| a.0)
            .collect::<Vec<_>>()
    };
    // The first button is harmless: on macOS a click on "Options" itself answers it.
    assert_eq!(keys(&warning), ["show", "spare", "pause"]);
    assert_eq!(keys(&paused), ["show", "resume", "stop"]);

    let app = app();
    let handle = app.window.app_handle().clone();
    let mut child = guarded_sleep(&app);
    let pid = child.id();
    let job_id = || {
        let jobs = call(&app, "get_jobs", json!({})).unwrap();
        jobs[0]["id"].as_str().unwrap()[4..].parse::<u64>().unwrap()
    };
    // The notification of `event` for the job, through the path the engine's events take;
    // its id (the plugin's notification id) for the click.
    let notify = |event: &JobEvent| {
        let id = job_id();
        let on_button = crate::jobs::on_button(&handle, id);
        crate::notify::job_event(&handle, "sleep 60", event, on_button).unwrap()
    };
    let note = notify(&warning);
    // A click that names no action ("Options" on macOS: the first one) changes nothing, and
    // the notification's buttons still answer.
    click(&handle, note, "show");
    assert_eq!(proc_state(pid).map(|s| s != 'T'), Some(true));
    assert_eq!(
        call(&app, "get_jobs", json!({}))
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    click(&handle, note, "pause");
    assert!(eventually(|| proc_state(pid) == Some('T')));
    click(&handle, note, "pause");
    assert_eq!(proc_state(pid), Some('T'), "a button answers once");
    click(&handle, notify(&paused), "resume");
    assert!(eventually(|| proc_state(pid) != Some('T')));
    // "Spare it" on a paused job resumes it, then lets it go.
    click(&handle, notify(&warning), "pause");
    assert!(eventually(|| proc_state(pid) == Some('T')));
    click(&handle, notify(&warning), "spare");
    assert!(eventually(|| proc_state(pid) != Some('T')));
    assert!(call(&app, "get_jobs", json!({}))
        .unwrap()
        .as_array()
        .unwrap()
        .is_empty());
    assert!(child.try_wait().unwrap().is_none(), "spared, not stopped");
    call(
        &app,
        "guard",
        json!({"pid": pid, "swapBudget": "8G", "killFree": "0"}),
    )
    .unwrap();
    // An event without buttons has no id; an old notification's click does nothing.
    assert_eq!(
        crate::notify::job_event(
            &handle,
            "x",
            &JobEvent::SwapGrew {
                growth_bytes: 1,
                step: 1
            },
            |_| {}
        ),
        None
    );
    click(&handle, note, "stop");
    assert!(
        child.try_wait().unwrap().is_none(),
        "not by a used notification"
    );
    click(&handle, notify(&paused), "stop");
    assert!(
        eventually(|| child.try_wait().unwrap().is_some()),
        "not stopped"
    );
}

/// At most `WAITING_MAX` notifications with buttons wait for a click (on macOS each keeps a
/// thread of the plugin blocked): one more gives up the oldest, whose buttons then answer
/// nothing and whose job keeps what it would have without a click.
#[cfg(target_os = "linux")]
#[test]
fn the_oldest_of_too_many_waiting_notifications_is_given_up_and_answers_nothing() {
    use crate::notify::waiting::WAITING_MAX;
    use headroom_rules::policy::{JobEvent, OnBudget};
    let warning = JobEvent::Warning {
        growth_bytes: 1,
        budget_bytes: 2,
        then: OnBudget::Stop,
    };
    let app = app();
    let handle = app.window.app_handle().clone();
    let mut child = guarded_sleep(&app);
    let pid = child.id();
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    let job_id = jobs[0]["id"].as_str().unwrap()[4..].parse::<u64>().unwrap();
    let notify = || {
        let on_button = crate::jobs::on_button(&handle, job_id);
        crate::notify::job_event(&handle, "sleep 60", &warning, on_button).unwrap()
    };
    let buttons = handle.state::<crate::notify::Buttons>();
    let ids: Vec<i32> = (0..=WAITING_MAX).map(|_| notify()).collect();
    assert_eq!(buttons.waiting(), WAITING_MAX, "at most {WAITING_MAX} wait");
    click(&handle, ids[0], "pause");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_ne!(
        proc_state(pid),
        Some('T'),
        "the oldest was given up: its click does nothing"
    );
    click(&handle, ids[WAITING_MAX], "pause");
    assert!(
        eventually(|| proc_state(pid) == Some('T')),
        "the newest answers"
    );
    // The pause's own notification (Resume, Stop) waits now: still at most WAITING_MAX.
    assert!(buttons.waiting() <= WAITING_MAX);
    call(&app, "stop_job", json!({ "id": jobs[0]["id"] })).unwrap();
    assert!(eventually(|| child.try_wait().unwrap().is_some()));
}

/// GET /metrics from `addr` (HTTP/1.1, `Connection: close`): the body.
fn scrape(addr: std::net::SocketAddr) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    Ok(raw
        .split_once("\r\n\r\n")
        .map_or(raw.clone(), |(_, b)| b.to_string()))
}

#[test]
fn the_metrics_setting_serves_the_apps_jobs_and_stops() {
    let app = app();
    let state = app.window.state::<AppState>();
    let s = call(&app, "get_settings", json!({})).unwrap();
    assert_eq!(s["serve_metrics"], false);
    assert_eq!(s["metrics_address"], "127.0.0.1:9101");
    assert!(lock(&state.metrics).address().is_none(), "off by default");
    let mut on = s.clone();
    on["serve_metrics"] = json!(true);
    on["metrics_address"] = json!("127.0.0.1:0");
    call(&app, "set_settings", json!({ "settings": on })).unwrap();
    let addr = lock(&state.metrics).address().unwrap();
    let body = scrape(addr).unwrap();
    assert!(body.contains("\nheadroom_memory_total_bytes "), "{body}");

    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    call(&app, "watch", json!({ "pid": child.id() })).unwrap();
    crate::ticker::start(app.window.app_handle().clone());
    // (The command label may be the name alone: the child may not have exec'd yet.)
    let needle = format!("headroom_job_state{{job=\"{}\",command=\"sleep", child.id());
    let seen = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        scrape(addr).is_ok_and(|b| {
            b.lines()
                .any(|l| l.starts_with(&needle) && l.ends_with(",state=\"running\"} 1"))
        })
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen,
        "the watched job is not in the metrics: {}",
        scrape(addr).unwrap_or_default()
    );

    // An address that is taken: refused by field, nothing saved, the endpoint goes on.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut busy = on.clone();
    busy["metrics_address"] = json!(taken.local_addr().unwrap().to_string());
    let e = call(&app, "set_settings", json!({ "settings": busy })).unwrap_err();
    assert!(
        e["text"]
            .as_str()
            .unwrap()
            .starts_with("metrics address: cannot listen on"),
        "{e}"
    );
    assert_eq!(
        call(&app, "get_settings", json!({})).unwrap()["metrics_address"],
        "127.0.0.1:0"
    );
    assert!(scrape(addr).is_ok(), "the running endpoint was lost");
    // Off: the port is closed.
    let mut off = on;
    off["serve_metrics"] = json!(false);
    call(&app, "set_settings", json!({ "settings": off })).unwrap();
    assert!(lock(&state.metrics).address().is_none());
    assert!(
        scrape(addr).is_err(),
        "still listening after it was turned off"
    );
}

#[test]
fn every_command_error_reaches_the_page_typed() {
    let app = app();
    let settings = call(&app, "get_settings", json!({})).unwrap();
    let mut bad_settings = settings.clone();
    bad_settings["sample_interval"] = json!("soon");
    let cases = [
        ("get_status", json!({"windowSeconds": 7}), None),
        (
            "get_chart",
            json!({"windowSeconds": 7, "dark": false}),
            None,
        ),
        ("watch", json!({"pid": 4_000_000}), None),
        (
            "guard",
            json!({"pid": 4_000_000, "swapBudget": "8G", "killFree": "x"}),
            Some("kill_free"),
        ),
        (
            "guard",
            json!({"pid": 4_000_000, "swapBudget": "8G", "killFree": "10", "onBudget": "no"}),
            Some("on_budget"),
        ),
        ("release", json!({"id": "job-999"}), None),
        (
            "set_settings",
            json!({"settings": bad_settings}),
            Some("sample_interval"),
        ),
        ("pause_job", json!({"id": "ext-1-2"}), None),
        ("resume_job", json!({"id": "job-999"}), None),
        ("stop_job", json!({"id": "job-999"}), None),
    ];
    for (command, args, field) in cases {
        let e = call(&app, command, args).unwrap_err();
        let object = e
            .as_object()
            .unwrap_or_else(|| panic!("{command}: not an object: {e}"));
        assert_eq!(
            object.get("field").and_then(|f| f.as_str()),
            field,
            "{command}: {e}"
        );
        let message = object["message"].as_str().unwrap();
        let text = object["text"].as_str().unwrap();
        assert!(
            !message.is_empty() && text.ends_with(message),
            "{command}: {e}"
        );
    }
}

#[test]
fn the_page_config_is_what_the_commands_enforce() {
    let app = app();
    let config = call(&app, "get_config", json!({})).unwrap();
    let windows: Vec<u64> = config["windows_seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_u64().unwrap())
        .collect();
    assert!(!windows.is_empty());
    for w in &windows {
        call(
            &app,
            "get_chart",
            json!({"windowSeconds": w, "dark": false}),
        )
        .unwrap();
        call(&app, "get_status", json!({"windowSeconds": w})).unwrap();
    }
    assert!(call(
        &app,
        "get_chart",
        json!({"windowSeconds": 61, "dark": false})
    )
    .is_err());
    assert!(windows.contains(&config["tick_window_seconds"].as_u64().unwrap()));
    // The cap: the list sends at most `max_processes` rows and says how many matched.
    let max = config["max_processes"].as_u64().unwrap();
    let list = call(&app, "get_processes", json!({"query": ""})).unwrap();
    let rows = list["rows"].as_array().unwrap().len() as u64;
    let total = list["total"].as_u64().unwrap();
    assert_eq!(rows, total.min(max), "{total} matched, {rows} sent");
}

#[test]
fn the_popover_stays_on_the_screen_that_holds_the_pointer() {
    use crate::screens::{placement, Rect};
    // (work area, scale, pointer) on screens of 1280×900, 1280×800, 1024×600, a HiDPI one,
    // and a second screen to the right of the first.
    let cases = [
        (Rect(0.0, 0.0, 1280.0, 900.0), 1.0, (1260.0, 10.0)),
        (Rect(0.0, 27.0, 1280.0, 773.0), 1.0, (640.0, 450.0)),
        (Rect(0.0, 0.0, 1024.0, 600.0), 1.0, (5.0, 590.0)),
        (Rect(0.0, 32.0, 1024.0, 568.0), 1.0, (512.0, 300.0)),
        (Rect(0.0, 0.0, 2880.0, 1800.0), 2.0, (2870.0, 1790.0)),
        (Rect(1920.0, 0.0, 1280.0, 800.0), 1.0, (3190.0, 20.0)),
    ];
    for (area, scale, pointer) in cases {
        let Rect(x, y, w, h) = placement(area, scale, pointer);
        let Rect(ax, ay, aw, ah) = area;
        assert!(
            x >= ax && y >= ay && x + w <= ax + aw && y + h <= ay + ah,
            "{area:?} at {pointer:?}: {x},{y} {w}x{h} is not inside"
        );
        assert!(
            w > 300.0 * scale && h > 500.0 * scale,
            "{w}x{h} shrank too much"
        );
    }
    // On a tall screen it keeps its full size, just below the pointer.
    assert_eq!(
        placement(Rect(0.0, 0.0, 1920.0, 1080.0), 1.0, (960.0, 20.0)),
        Rect(770.0, 28.0, 380.0, 560.0)
    );
}

#[test]
fn the_popover_opens_under_the_tray_icon_and_never_under_the_menu_bar() {
    use crate::screens::{anchor, placement, Rect};
    // Recorded-shape cases, physical pixels, y down from the top of the main screen:
    // (work area, scale, tray icon rect, expected top-left of the popover).
    let notch_area = Rect(0.0, 74.0, 3024.0, 1890.0); // 14" MacBook Pro: a 37 pt menu bar
    let cases = [
        // An icon left of the notch: under it, centred.
        (
            notch_area,
            2.0,
            Some(Rect(1180.0, 0.0, 60.0, 74.0)),
            (830.0, 90.0),
        ),
        // The rightmost icon: pushed left to stay on the screen.
        (
            notch_area,
            2.0,
            Some(Rect(2940.0, 0.0, 60.0, 74.0)),
            (2248.0, 90.0),
        ),
        // A second screen to the left of the main one (negative x), 1x, a 24 px menu bar.
        (
            Rect(-1920.0, 24.0, 1920.0, 1056.0),
            1.0,
            Some(Rect(-300.0, 0.0, 30.0, 24.0)),
            (-475.0, 32.0),
        ),
        // Menu bar auto-hidden: the work area starts at 0 and the hidden item reports a rect
        // above the screen; the popover stays inside.
        (
            Rect(0.0, 0.0, 2880.0, 1800.0),
            2.0,
            Some(Rect(2500.0, -48.0, 48.0, 48.0)),
            (2104.0, 16.0),
        ),
        // No rect yet (shown before any tray event): under the menu bar at the right.
        (notch_area, 2.0, None, (2248.0, 90.0)),
    ];
    for (area, scale, tray, expected) in cases {
        let Rect(x, y, w, h) = placement(area, scale, anchor(tray, area));
        assert_eq!((x, y), expected, "{area:?} {tray:?}");
        let Rect(ax, ay, aw, ah) = area;
        assert!(
            x >= ax && y >= ay && x + w <= ax + aw && y + h <= ay + ah,
            "inside {area:?}"
        );
        if let Some(Rect(_, ty, _, th)) = tray {
            assert!(y >= ty + th, "below the icon, not over the menu bar");
        }
    }
}

#[test]
fn launch_at_login_is_refused_for_an_app_on_the_disk_image() {
    use crate::autostart::transient;
    use std::path::Path;
    // (executable, its volume read-only, refused): the disk image is a read-only volume; an
    // external drive under /Volumes is a real install.
    let image = "/Volumes/Headroom/Headroom.app/Contents/MacOS/headroom-app";
    let translocated =
        "/private/var/folders/x/AppTranslocation/ABC/d/Headroom.app/Contents/MacOS/headroom-app";
    let cases = [
        (image, true, true),
        (
            "/Volumes/Projects/Headroom.app/Contents/MacOS/headroom-app",
            false,
            false,
        ),
        (translocated, false, true),
        (
            "/Applications/Headroom.app/Contents/MacOS/headroom-app",
            false,
            false,
        ),
    ];
    for (exe, read_only, refused) in cases {
        assert_eq!(transient(Path::new(exe), read_only), refused, "{exe}");
    }
    // On this machine: an app in a writable folder is installed; in a missing one (its
    // volume cannot be asked) it is taken as installed too, translocated it is refused with
    // the reason.
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path().join("Headroom.app/Contents/MacOS/headroom-app");
    assert_eq!(crate::autostart::refusal(&here), None);
    assert_eq!(crate::autostart::refusal(dir.path()), None);
    let why = crate::autostart::refusal(Path::new(translocated)).unwrap();
    assert!(
        why.contains("AppTranslocation") && why.contains("Applications"),
        "{why}"
    );
}

#[test]
fn opening_the_app_again_shows_the_popover() {
    let app = app();
    let handle = app.window.app_handle().clone();
    let state = handle.state::<AppState>();
    assert!(!state.is_visible());
    crate::window::on_reopen(&handle);
    assert!(state.is_visible(), "reopen shows the popover");
    crate::window::on_reopen(&handle);
    assert!(
        state.is_visible(),
        "a second reopen does not toggle it away"
    );
    assert!(handle.get_webview_window(crate::window::MAIN).is_some());
}

#[test]
fn a_finished_job_is_in_the_recent_verdicts_also_after_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("0.5")
        .spawn()
        .unwrap();
    {
        let app = app_in(home.path());
        crate::ticker::start(app.window.app_handle().clone());
        assert!(call(&app, "get_recent_jobs", json!({}))
            .unwrap()
            .as_array()
            .unwrap()
            .is_empty());
        call(&app, "watch", json!({ "pid": child.id() })).unwrap();
        let _ = child.wait();
        let recorded = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            !call(&app, "get_recent_jobs", json!({}))
                .unwrap()
                .as_array()
                .unwrap()
                .is_empty()
        });
        assert!(recorded, "the finished job was not recorded");
    }
    let app = app_in(home.path());
    let recent = call(&app, "get_recent_jobs", json!({})).unwrap();
    let job = &recent[0];
    assert_eq!(job["mode"], "watch");
    assert!(
        job["command"].as_str().unwrap().starts_with("sleep"),
        "{job}"
    );
    assert_eq!(job["verdict"]["fits"], true, "{job}");
    assert!(
        job["verdict"]["text"]
            .as_str()
            .unwrap()
            .starts_with("fits: swap"),
        "{job}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn the_apps_jobs_are_published_and_a_terminal_guard_may_ask_one_to_make_room() {
    use headroom_core::jobfile::JobFile;
    use headroom_core::socket::{send_control, socket_path, Sent};
    use headroom_model::effects::Control;
    let app = app();
    crate::ticker::start(app.window.app_handle().clone());
    crate::socket::serve(app.window.app_handle().clone());
    let state = app.window.state::<AppState>();
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = child.id();
    let job = call(
        &app,
        "guard",
        json!({"pid": pid, "swapBudget": "8G", "killFree": "1", "onBudget": "pause"}),
    )
    .unwrap();
    // Its job file names the app as its guard: a terminal guard sees a pausable peer.
    let file = || {
        JobFile::list(&state.jobs_dir(), &state.counters)
            .into_iter()
            .find(|f| f.pid == pid)
    };
    assert!(
        eventually(|| file().is_some_and(|f| f.as_peer().is_some_and(|p| p.pausable))),
        "no pausable job file: {:?}",
        file()
    );
    assert!(file().unwrap().guarded_by(std::process::id()));
    // The app lists it once: its own file is not a terminal guard's job.
    let jobs = call(&app, "get_jobs", json!({})).unwrap();
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs}");
    // A terminal guard's `yield` through the app's socket pauses it, and the file says so.
    let socket = socket_path(&state.dirs.run_dir(), std::process::id());
    let asked = send_control(&socket, Control::Yield, pid).unwrap();
    assert_eq!(asked, Sent::Done);
    assert!(eventually(|| proc_state(pid) == Some('T')), "not paused");
    assert!(
        eventually(|| file().is_some_and(|f| f.state_word() == "paused" && f.pauses == 1)),
        "{:?}",
        file()
    );
    // Asked again while paused: done, nothing more.
    assert_eq!(
        send_control(&socket, Control::Yield, pid).unwrap(),
        Sent::Done
    );
    call(&app, "resume_job", json!({ "id": job["id"] })).unwrap();
    assert!(eventually(|| proc_state(pid) != Some('T')), "not resumed");
    // Let go: its file goes (its process runs on, unguarded by anyone).
    call(&app, "release", json!({ "id": job["id"] })).unwrap();
    assert!(eventually(|| file().is_none()), "{:?}", file());
    let _ = child.kill();
    let _ = child.wait();
}
