//! The `settings.toml` format: human strings in, validated [`Settings`] out, with the line of
//! the first bad value; and the defaults-style text written back.

use std::time::Duration;

use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};

use super::form::SettingsUpdate;
use super::model::Settings;
use super::values::{
    check_interval, check_percent, check_seconds, check_size, parse_address, parse_interval,
    parse_size,
};
use headroom_model::units::parse_percent;

/// The text of `settings.toml` for `settings`, with a comment on the units.
pub(super) fn to_toml(settings: &Settings) -> Result<String, toml::ser::Error> {
    let form = SettingsUpdate::from(settings);
    let kill_free = number(settings.default_kill_free_percent);
    let file = FileOut {
        sample_interval: form.sample_interval,
        notify_step: form.notify_step,
        default_swap_budget: form.default_swap_budget,
        default_kill_free: kill_free,
        tight_compressed: form.tight_compressed,
        tight_free: number(settings.tight_free_percent),
        launch_at_login: settings.launch_at_login,
        serve_metrics: settings.serve_metrics,
        metrics_address: form.metrics_address,
    };
    Ok(format!(
        "# Headroom settings. Sizes: K, M, G, T (binary, e.g. 512M, 8G); durations: 500ms, \
         0.5s, 2s; percents: 0 to 100.\n{}",
        toml::to_string(&file)?
    ))
}

/// A percent as TOML: an integer when it is whole (`10`), else a float (`12.5`).
fn number(percent: f64) -> toml::Value {
    if percent.fract() == 0.0 && percent.abs() < 1e15 {
        toml::Value::Integer(percent as i64)
    } else {
        toml::Value::Float(percent)
    }
}

/// The file as written: human strings.
#[derive(Serialize)]
struct FileOut {
    sample_interval: String,
    notify_step: String,
    default_swap_budget: String,
    default_kill_free: toml::Value,
    tight_compressed: String,
    tight_free: toml::Value,
    launch_at_login: bool,
    serve_metrics: bool,
    metrics_address: String,
}

/// The file as read: every key optional, values checked while deserializing so that an error
/// carries the value's position.
#[derive(Deserialize)]
struct FileIn {
    #[serde(default, deserialize_with = "de_interval")]
    sample_interval: Option<Duration>,
    #[serde(default, deserialize_with = "de_size")]
    notify_step: Option<u64>,
    #[serde(default, deserialize_with = "de_size")]
    default_swap_budget: Option<u64>,
    #[serde(default, deserialize_with = "de_percent")]
    default_kill_free: Option<f64>,
    #[serde(default, deserialize_with = "de_size")]
    tight_compressed: Option<u64>,
    #[serde(default, deserialize_with = "de_percent")]
    tight_free: Option<f64>,
    #[serde(default)]
    launch_at_login: Option<bool>,
    #[serde(default)]
    serve_metrics: Option<bool>,
    #[serde(default, deserialize_with = "de_address")]
    metrics_address: Option<std::net::SocketAddr>,
}

const KNOWN_KEYS: [&str; 9] = [
    "sample_interval",
    "notify_step",
    "default_swap_budget",
    "default_kill_free",
    "tight_compressed",
    "tight_free",
    "launch_at_login",
    "serve_metrics",
    "metrics_address",
];

/// Parses the file's bytes; on failure, the 1-based line (if known) and the message.
pub(super) fn parse(bytes: &[u8]) -> Result<Settings, (Option<usize>, String)> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = line_of(bytes, e.valid_up_to());
        (Some(line), "not UTF-8 text".to_string())
    })?;
    let located = |e: toml::de::Error| {
        let line = e.span().map(|span| line_of(text.as_bytes(), span.start));
        let message = e.message().trim();
        // Name the key when the error is on one of ours: `notify_step: invalid size 'x'…`.
        let key = line
            .and_then(|l| text.lines().nth(l - 1))
            .and_then(|l| l.split_once('='))
            .map(|(k, _)| k.trim())
            .filter(|k| KNOWN_KEYS.contains(k) && !message.contains(k));
        let message = match key {
            Some(k) => format!("{k}: {message}"),
            None => message.to_string(),
        };
        (line, message)
    };
    let table: toml::Table = toml::from_str(text).map_err(located)?;
    for key in table.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())) {
        tracing::warn!("settings: ignoring unknown key '{key}'");
    }
    let file: FileIn = toml::from_str(text).map_err(located)?;
    let d = Settings::default();
    Ok(Settings {
        sample_interval: file.sample_interval.unwrap_or(d.sample_interval),
        notify_step_bytes: file.notify_step.unwrap_or(d.notify_step_bytes),
        default_swap_budget_bytes: file
            .default_swap_budget
            .unwrap_or(d.default_swap_budget_bytes),
        default_kill_free_percent: file
            .default_kill_free
            .unwrap_or(d.default_kill_free_percent),
        tight_compressed_bytes: file.tight_compressed.unwrap_or(d.tight_compressed_bytes),
        tight_free_percent: file.tight_free.unwrap_or(d.tight_free_percent),
        launch_at_login: file.launch_at_login.unwrap_or(d.launch_at_login),
        serve_metrics: file.serve_metrics.unwrap_or(d.serve_metrics),
        metrics_address: file.metrics_address.unwrap_or(d.metrics_address),
    })
}

/// 1-based line of byte `offset` in `bytes`.
fn line_of(bytes: &[u8], offset: usize) -> usize {
    let end = offset.min(bytes.len());
    bytes[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

fn de_interval<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(s) => parse_interval(&s),
        toml::Value::Integer(n) => check_seconds(n as f64).and_then(check_interval),
        toml::Value::Float(f) => check_seconds(f).and_then(check_interval),
        other => Err(wrong_type("a duration such as \"0.5s\"", &other)),
    }
    .map(Some)
    .map_err(D::Error::custom)
}

fn de_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(s) => parse_size(&s),
        toml::Value::Integer(n) => u64::try_from(n)
            .map_err(|_| format!("invalid size {n}"))
            .and_then(check_size),
        other => Err(wrong_type("a size such as \"8G\"", &other)),
    }
    .map(Some)
    .map_err(D::Error::custom)
}

fn de_percent<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(s) => parse_percent(&s).map_err(|e| e.to_string()),
        toml::Value::Integer(n) => check_percent(n as f64),
        toml::Value::Float(f) => check_percent(f),
        other => Err(wrong_type("a percent such as 10", &other)),
    }
    .map(Some)
    .map_err(D::Error::custom)
}

fn de_address<'de, D: Deserializer<'de>>(d: D) -> Result<Option<std::net::SocketAddr>, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(s) => parse_address(&s),
        other => Err(wrong_type("an address such as \"127.0.0.1:9101\"", &other)),
    }
    .map(Some)
    .map_err(D::Error::custom)
}

fn wrong_type(expected: &str, found: &toml::Value) -> String {
    format!("expected {expected}, found {}", found.type_str())
}
