//! Tests for settings: defaults, file round trip, corrupt files, form validation.

use std::path::PathBuf;
use std::time::Duration;

use headroom_rules::policy::Limits;

use super::values::parse_interval;
use super::*;
use std::fs;

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn corrupt_files(dir: &Path) -> Vec<PathBuf> {
    headroom_os::testdata::moved_aside(dir)
}

#[test]
fn missing_file_gives_defaults_and_no_problem() {
    let tmp = dir();
    let path = tmp.path().join("settings.toml");
    let (settings, problem) = Settings::load(&path);
    assert_eq!(settings, Settings::default());
    assert_eq!(problem, None);
    assert!(!path.exists(), "loading does not create the file");
}

#[test]
fn defaults_are_written_as_human_strings() {
    let text = Settings::default().to_toml().unwrap();
    for line in [
        "sample_interval = \"0.5s\"",
        "notify_step = \"512M\"",
        "default_swap_budget = \"8G\"",
        "default_kill_free = 10\n",
        "launch_at_login = false",
    ] {
        assert!(text.contains(line), "{line} missing in:\n{text}");
    }
}

#[test]
fn save_and_load_round_trip() {
    let tmp = dir();
    let path = tmp.path().join("config/settings.toml");
    let settings = Settings {
        sample_interval: Duration::from_millis(250),
        notify_step_bytes: 3 << 29,
        default_swap_budget_bytes: 12 << 30,
        default_kill_free_percent: 12.5,
        tight_compressed_bytes: 3 << 30,
        tight_free_percent: 15.0,
        launch_at_login: true,
        serve_metrics: true,
        metrics_address: "0.0.0.0:9200".parse().unwrap(),
    };
    settings.save(&path).unwrap();
    let (loaded, problem) = Settings::load(&path);
    assert_eq!(problem, None);
    assert_eq!(loaded, settings);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("notify_step = \"1536M\""), "{text}");
    assert!(text.contains("default_kill_free = 12.5"), "{text}");
    assert!(text.contains("tight_compressed = \"3G\""), "{text}");
    assert!(text.contains("tight_free = 15\n"), "{text}");
    assert!(
        text.contains("metrics_address = \"0.0.0.0:9200\""),
        "{text}"
    );
    assert_eq!(loaded.limits().tight_compressed_bytes, 3 << 30);
    assert_eq!(loaded.limits().tight_free_percent, 15.0);
    assert!(corrupt_files(path.parent().unwrap()).is_empty());
}

#[test]
fn partial_file_and_other_spellings() {
    let tmp = dir();
    let path = tmp.path().join("settings.toml");
    fs::write(
        &path,
        "sample_interval = 2\ndefault_kill_free = \"15%\"\nnotify_step = 1048576\n\
         future_key = [1, 2]\n",
    )
    .unwrap();
    let (s, problem) = Settings::load(&path);
    assert_eq!(problem, None, "unknown keys are ignored");
    assert_eq!(s.sample_interval, Duration::from_secs(2));
    assert_eq!(s.default_kill_free_percent, 15.0);
    assert_eq!(s.notify_step_bytes, 1 << 20);
    assert_eq!(
        s.default_swap_budget_bytes,
        Settings::default().default_swap_budget_bytes
    );
}

/// Writes `text`, loads it, and checks the problem's line and message, the file moved aside
/// and the defaults written in its place.
fn assert_corrupt(text: &[u8], line: usize, message_part: &str) {
    let tmp = dir();
    let path = tmp.path().join("settings.toml");
    fs::write(&path, text).unwrap();
    let (settings, problem) = Settings::load(&path);
    assert_eq!(settings, Settings::default());
    let problem = problem.expect("a problem");
    assert_eq!(problem.path, path);
    assert_eq!(problem.line, Some(line), "{problem}");
    assert!(
        problem.message.contains(message_part),
        "{message_part:?} not in {problem}"
    );
    assert_eq!(problem.recovery_error, None);
    let moved = corrupt_files(tmp.path());
    assert_eq!(moved.len(), 1);
    assert_eq!(problem.moved_to.as_ref(), Some(&moved[0]));
    assert_eq!(fs::read(&moved[0]).unwrap(), text, "the bad file is kept");
    let (again, none) = Settings::load(&path);
    assert_eq!(
        (again, none),
        (Settings::default(), None),
        "defaults written"
    );
    let shown = problem.to_string();
    assert!(shown.contains("settings.toml") && shown.contains(&format!("line {line}")));
}

#[test]
fn bad_toml_is_moved_aside_with_its_line() {
    assert_corrupt(
        b"launch_at_login = false\n\nsample_interval = \"0.5s\n",
        3,
        "",
    );
    assert_corrupt(b"# comment\n[[[\n", 2, "");
}

#[test]
fn bad_values_are_reported_with_field_and_line() {
    assert_corrupt(
        b"launch_at_login = true\nsample_interval = \"x\"\n",
        2,
        "sample_interval: invalid duration 'x'",
    );
    assert_corrupt(b"sample_interval = \"20s\"\n", 1, "from 0.1s to 10s");
    assert_corrupt(
        b"\n\nnotify_step = \"0\"\n",
        3,
        "notify_step: must be more than 0",
    );
    assert_corrupt(b"default_swap_budget = \"8X\"\n", 1, "invalid size '8X'");
    assert_corrupt(b"default_kill_free = 101\n", 1, "from 0 to 100");
    assert_corrupt(b"default_swap_budget = -5\n", 1, "invalid size -5");
    assert_corrupt(
        b"serve_metrics = true\nmetrics_address = \"everywhere\"\n",
        2,
        "metrics_address: invalid address 'everywhere'",
    );
}

#[test]
fn wrong_types_are_reported() {
    assert_corrupt(b"launch_at_login = \"yes\"\n", 1, "launch_at_login");
    assert_corrupt(b"\nnotify_step = true\n", 2, "expected a size");
    assert_corrupt(b"sample_interval = [1]\n", 1, "expected a duration");
    assert_corrupt(b"default_kill_free = { a = 1 }\n", 1, "expected a percent");
}

#[test]
fn not_utf8_is_reported() {
    assert_corrupt(b"launch_at_login = true\n\xff\xfe\n", 2, "UTF-8");
}

#[cfg(unix)]
#[test]
fn unreadable_file_is_reported_but_left_alone() {
    let tmp = dir();
    // A folder where the file should be: reading fails with something other than NotFound.
    let path = tmp.path().join("settings.toml");
    fs::create_dir(&path).unwrap();
    let (settings, problem) = Settings::load(&path);
    assert_eq!(settings, Settings::default());
    let problem = problem.expect("a problem");
    assert_eq!(problem.moved_to, None);
    assert!(path.is_dir());
}

#[test]
fn form_update_validates_with_field_names() {
    let good = SettingsUpdate::from(&Settings::default());
    assert_eq!(good.sample_interval, "0.5s");
    assert_eq!(good.notify_step, "512M");
    assert_eq!(good.default_swap_budget, "8G");
    assert_eq!(good.default_kill_free, "10");
    assert_eq!(good.validate(), Ok(Settings::default()));

    let with = |f: &dyn Fn(&mut SettingsUpdate)| {
        let mut u = good.clone();
        f(&mut u);
        u.validate().unwrap_err()
    };
    let e = with(&|u| u.sample_interval = "x".into());
    assert_eq!(e.field, SettingsField::SampleInterval);
    assert!(
        e.to_string()
            .starts_with("sample interval: invalid duration 'x': expected e.g. 0.5s"),
        "{e}"
    );
    let e = with(&|u| u.sample_interval = "50ms".into());
    assert_eq!(
        e.to_string(),
        "sample interval: must be from 0.1s to 10s, not 0.05s"
    );
    let e = with(&|u| u.notify_step = "0".into());
    assert_eq!(e.to_string(), "notification step: must be more than 0");
    let e = with(&|u| u.default_swap_budget = "lots".into());
    assert_eq!(e.field, SettingsField::DefaultSwapBudget);
    assert!(e
        .to_string()
        .starts_with("default swap budget: invalid size 'lots'"));
    let e = with(&|u| u.default_kill_free = "150".into());
    assert_eq!(e.field, SettingsField::DefaultKillFree);

    let mut u = good.clone();
    u.sample_interval = "1s".into();
    u.default_kill_free = "25%".into();
    u.launch_at_login = true;
    let s = u.validate().unwrap();
    assert_eq!(s.sample_interval, Duration::from_secs(1));
    assert_eq!(s.default_kill_free_percent, 25.0);
    assert!(s.launch_at_login);
}

#[test]
fn save_refuses_invalid_settings() {
    let tmp = dir();
    let path = tmp.path().join("settings.toml");
    let bad = Settings {
        sample_interval: Duration::from_secs(60),
        ..Settings::default()
    };
    assert!(matches!(bad.save(&path), Err(SettingsError::Invalid(_))));
    assert!(!path.exists());
}

#[test]
fn limits_take_the_defaults() {
    let s = Settings {
        default_swap_budget_bytes: 1 << 30,
        default_kill_free_percent: 5.0,
        notify_step_bytes: 1 << 20,
        ..Settings::default()
    };
    let limits = s.limits();
    assert_eq!(limits.swap_budget_bytes, 1 << 30);
    assert_eq!(limits.kill_free_percent, 5.0);
    assert_eq!(limits.notify_step_bytes, 1 << 20);
    assert_eq!(
        limits.wait_free_percent,
        Limits::default().wait_free_percent
    );
}

#[test]
fn sizes_and_intervals_format_exactly() {
    assert_eq!(format_size(8 << 30), "8G");
    assert_eq!(format_size(1 << 40), "1T");
    assert_eq!(format_size(1000), "1000");
    assert_eq!(format_size(0), "0");
    assert_eq!(format_interval(Duration::from_millis(100)), "0.1s");
    assert_eq!(format_interval(Duration::from_secs(10)), "10s");
    for ms in [100, 125, 333, 500, 1000, 2500, 10_000] {
        let d = Duration::from_millis(ms);
        assert_eq!(parse_interval(&format_interval(d)), Ok(d), "{ms} ms");
    }
}

#[test]
fn tight_thresholds_are_validated_by_field_and_optional_in_a_form() {
    let mut form = SettingsUpdate::from(&Settings::default());
    assert_eq!(form.tight_compressed, "2G");
    assert_eq!(form.tight_free, "20");
    form.tight_compressed = "lots".into();
    let e = form.validate().unwrap_err();
    assert_eq!(e.field, SettingsField::TightCompressed);
    assert!(e.to_string().starts_with("tight compressed growth:"), "{e}");
    form.tight_compressed = "1G".into();
    form.tight_free = "120".into();
    assert_eq!(form.validate().unwrap_err().field, SettingsField::TightFree);
    // A page that does not send them keeps the defaults.
    let json = serde_json::json!({
        "sample_interval": "0.5s", "notify_step": "512M", "default_swap_budget": "8G",
        "default_kill_free": "10", "launch_at_login": false
    });
    let older: SettingsUpdate = serde_json::from_value(json).unwrap();
    let s = older.validate().unwrap();
    assert_eq!(
        s.tight_compressed_bytes,
        Settings::default().tight_compressed_bytes
    );
    assert_eq!(s.tight_free_percent, 20.0);
    // Metrics: off, on loopback, unless set; a bad address names its field.
    assert!(!s.serve_metrics);
    assert_eq!(s.metrics_address.to_string(), "127.0.0.1:9101");
    let mut form = SettingsUpdate::from(&s);
    form.metrics_address = "localhost".into();
    let e = form.validate().unwrap_err();
    assert_eq!(e.field, SettingsField::MetricsAddress);
    assert!(
        e.to_string()
            .starts_with("metrics address: invalid address"),
        "{e}"
    );
}

/// Property test: no settings file, however mangled, makes the parser panic; what it accepts
/// is a valid `Settings` (it validates, and writes back to the same settings).
mod fuzz {
    use proptest::prelude::*;

    use super::super::file::parse;
    use super::*;

    use crate::fuzz_tests::config;

    fn settings_text() -> impl Strategy<Value = Vec<u8>> {
        let key = "(sample_interval|notify_step|default_swap_budget|default_kill_free|\
                   tight_compressed|tight_free|launch_at_login|serve_metrics|metrics_address|[a-z_]{0,8})";
        let value = "(\"[0-9.]{0,6}(ms|s|M|G|K|%)?\"|-?[0-9]{0,21}(\\.[0-9]{0,4})?|true|false|\
                     \\[[0-9, ]{0,6}\\]|\\{ ?a ?= ?1 ?\\}|\"[0-9.:]{0,22}\"|\"\\PC{0,8}\"|inf|nan)";
        let line = format!("(#\\PC{{0,10}}|\\[[a-z]{{0,5}}\\]|{key} ?= ?{value})");
        prop_oneof![
            prop::collection::vec(proptest::string::string_regex(&line).expect("regex"), 0..12)
                .prop_map(|l| l.join("\n").into_bytes()),
            prop::collection::vec(any::<u8>(), 0..300),
        ]
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn fuzz_settings_files_never_panic(text in settings_text()) {
            if let Ok(settings) = parse(&text) {
                let form = SettingsUpdate::from(&settings);
                prop_assert_eq!(form.validate().ok(), Some(settings.clone()));
            }
        }
    }
}
