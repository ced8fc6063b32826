//! User settings: what the menu-bar app's settings form edits, stored as `settings.toml`.
//!
//! The file uses human strings, parsed with [`crate::units`]:
//!
//! ```toml
//! sample_interval = "0.5s"
//! notify_step = "512M"
//! default_swap_budget = "8G"
//! default_kill_free = 10
//! tight_compressed = "2G"
//! tight_free = 20
//! launch_at_login = false
//! ```
//!
//! A missing key takes its default; an unknown key is ignored with a warning (a newer Headroom
//! may have written it). A file that cannot be used (bad TOML, a bad value, a value of the
//! wrong type, not UTF-8) is never fatal: [`Settings::load`] reports it with its path and line
//! in a [`SettingsProblem`], moves it aside to `settings.toml.corrupt-<unix seconds>` and
//! writes the defaults in its place. [`SettingsUpdate`] validates what a form sends, with
//! errors that name the field.

use std::fmt;
use std::fs;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::paths::{move_aside, unix_seconds_now, write_atomic};
use crate::policy::Limits;
use crate::units::{parse_bytes, parse_duration, parse_percent};

/// Shortest allowed sampling interval.
pub const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);
/// Longest allowed sampling interval.
pub const MAX_SAMPLE_INTERVAL: Duration = Duration::from_secs(10);

/// Headroom's settings, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// How often the sampler reads the counters (0.1 s to 10 s; default 0.5 s).
    pub sample_interval: Duration,
    /// A notification each time a job's swap growth passes another multiple of this (512 MiB).
    pub notify_step_bytes: u64,
    /// Swap budget of a new guard (8 GiB).
    pub default_swap_budget_bytes: u64,
    /// Free-memory floor of a new guard, percent (10).
    pub default_kill_free_percent: f64,
    /// A job that fits is "tight" when compressed memory grew more than this (2 GiB).
    pub tight_compressed_bytes: u64,
    /// A job that fits is "tight" when free memory fell under this, percent (20).
    pub tight_free_percent: f64,
    /// Start the menu-bar app at login (false).
    pub launch_at_login: bool,
    /// Serve metrics for Prometheus while the app runs (false).
    pub serve_metrics: bool,
    /// Where the metrics are served (127.0.0.1:9101; other addresses reach other machines).
    pub metrics_address: SocketAddr,
}

/// The metrics endpoint's default address: loopback only.
pub const DEFAULT_METRICS_ADDRESS: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9101);

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sample_interval: Duration::from_millis(500),
            notify_step_bytes: 512 << 20,
            default_swap_budget_bytes: 8 << 30,
            default_kill_free_percent: 10.0,
            tight_compressed_bytes: Limits::default().tight_compressed_bytes,
            tight_free_percent: Limits::default().tight_free_percent,
            launch_at_login: false,
            serve_metrics: false,
            metrics_address: DEFAULT_METRICS_ADDRESS,
        }
    }
}

/// One settings field, as a form and the file name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingsField {
    /// `sample_interval`.
    SampleInterval,
    /// `notify_step`.
    NotifyStep,
    /// `default_swap_budget`.
    DefaultSwapBudget,
    /// `default_kill_free`.
    DefaultKillFree,
    /// `tight_compressed`.
    TightCompressed,
    /// `tight_free`.
    TightFree,
    /// `launch_at_login`.
    LaunchAtLogin,
    /// `serve_metrics`.
    ServeMetrics,
    /// `metrics_address`.
    MetricsAddress,
}

impl SettingsField {
    /// The key in `settings.toml` (and in a [`SettingsUpdate`]).
    pub fn key(self) -> &'static str {
        match self {
            SettingsField::SampleInterval => "sample_interval",
            SettingsField::NotifyStep => "notify_step",
            SettingsField::DefaultSwapBudget => "default_swap_budget",
            SettingsField::DefaultKillFree => "default_kill_free",
            SettingsField::TightCompressed => "tight_compressed",
            SettingsField::TightFree => "tight_free",
            SettingsField::LaunchAtLogin => "launch_at_login",
            SettingsField::ServeMetrics => "serve_metrics",
            SettingsField::MetricsAddress => "metrics_address",
        }
    }

    /// The name people read: `sample interval`.
    pub fn label(self) -> &'static str {
        match self {
            SettingsField::SampleInterval => "sample interval",
            SettingsField::NotifyStep => "notification step",
            SettingsField::DefaultSwapBudget => "default swap budget",
            SettingsField::DefaultKillFree => "default free-memory floor",
            SettingsField::TightCompressed => "tight compressed growth",
            SettingsField::TightFree => "tight free floor",
            SettingsField::LaunchAtLogin => "launch at login",
            SettingsField::ServeMetrics => "serve metrics",
            SettingsField::MetricsAddress => "metrics address",
        }
    }
}

/// A field that failed validation: `sample interval: invalid duration 'x': expected e.g. 0.5s…`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}: {message}", field.label())]
pub struct FieldError {
    /// Which field.
    pub field: SettingsField,
    /// What is wrong with it (without the field's name).
    pub message: String,
}

/// Why settings could not be saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A value is out of range.
    #[error("invalid settings: {0}")]
    Invalid(#[from] FieldError),
    /// The file could not be written.
    #[error("writing {}: {source}", path.display())]
    Io {
        /// The settings file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The settings could not be turned into TOML.
    #[error("encoding settings as TOML: {0}")]
    Encode(#[from] toml::ser::Error),
}

/// A settings file that could not be used, and what was done about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingsProblem {
    /// The settings file.
    pub path: PathBuf,
    /// The line (1-based) where the problem is, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// Where the bad file was moved, if it was.
    pub moved_to: Option<PathBuf>,
    /// What went wrong while moving it aside or writing the defaults, if anything.
    pub recovery_error: Option<String>,
}

impl fmt::Display for SettingsProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "settings file {}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        write!(f, ": {}; using the defaults", self.message)?;
        if let Some(moved) = &self.moved_to {
            write!(f, " (the bad file was moved to {})", moved.display())?;
        }
        if let Some(e) = &self.recovery_error {
            write!(f, " ({e})")?;
        }
        Ok(())
    }
}

impl Settings {
    /// Reads `path`. A missing file gives the defaults and no problem. A file that cannot be
    /// used gives the defaults and a problem; if it was unusable rather than unreadable, it
    /// is moved aside and the defaults are written in its place. Never panics.
    pub fn load(path: &Path) -> (Settings, Option<SettingsProblem>) {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return (Settings::default(), None),
            Err(e) => {
                let problem = SettingsProblem {
                    path: path.to_path_buf(),
                    line: None,
                    message: format!("cannot read it: {e}"),
                    moved_to: None,
                    recovery_error: None,
                };
                tracing::warn!("{problem}");
                return (Settings::default(), Some(problem));
            }
        };
        let (line, message) = match file::parse(&bytes) {
            Ok(settings) => return (settings, None),
            Err(e) => e,
        };
        let mut problem = SettingsProblem {
            path: path.to_path_buf(),
            line,
            message,
            moved_to: None,
            recovery_error: None,
        };
        match move_aside(path, unix_seconds_now()) {
            Ok(moved) => {
                problem.moved_to = Some(moved);
                if let Err(e) = Settings::default().save(path) {
                    problem.recovery_error = Some(format!("could not write the defaults: {e}"));
                }
            }
            Err(e) => problem.recovery_error = Some(format!("could not move it aside: {e}")),
        }
        tracing::warn!("{problem}");
        (Settings::default(), Some(problem))
    }

    /// Writes the settings to `path` atomically (temporary file, then rename), creating its
    /// folder. Refuses settings that do not validate, so the file always loads back.
    pub fn save(&self, path: &Path) -> Result<(), SettingsError> {
        self.validate()?;
        let text = self.to_toml()?;
        write_atomic(path, text.as_bytes()).map_err(|source| SettingsError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The settings as the text of `settings.toml`.
    pub fn to_toml(&self) -> Result<String, SettingsError> {
        Ok(file::to_toml(self)?)
    }

    /// Checks every value is in range.
    pub fn validate(&self) -> Result<(), FieldError> {
        let field = |field: SettingsField| move |message| FieldError { field, message };
        check_interval(self.sample_interval).map_err(field(SettingsField::SampleInterval))?;
        check_size(self.notify_step_bytes).map_err(field(SettingsField::NotifyStep))?;
        check_size(self.default_swap_budget_bytes)
            .map_err(field(SettingsField::DefaultSwapBudget))?;
        check_percent(self.default_kill_free_percent)
            .map_err(field(SettingsField::DefaultKillFree))?;
        check_size(self.tight_compressed_bytes).map_err(field(SettingsField::TightCompressed))?;
        check_percent(self.tight_free_percent).map_err(field(SettingsField::TightFree))?;
        Ok(())
    }

    /// The limits a new job starts from: defaults with this budget, floor and
    /// notification step.
    pub fn limits(&self) -> Limits {
        Limits {
            swap_budget_bytes: self.default_swap_budget_bytes,
            kill_free_percent: self.default_kill_free_percent,
            notify_step_bytes: self.notify_step_bytes,
            tight_compressed_bytes: self.tight_compressed_bytes,
            tight_free_percent: self.tight_free_percent,
            ..Limits::default()
        }
    }
}

/// Settings as a form edits them: text as typed (`"0.5s"`, `"512M"`, `"8G"`, `"10"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsUpdate {
    /// Sampling interval, e.g. `0.5s` or `500ms`.
    pub sample_interval: String,
    /// Notification step, e.g. `512M`.
    pub notify_step: String,
    /// Default swap budget, e.g. `8G`.
    pub default_swap_budget: String,
    /// Default free-memory floor, percent, e.g. `10` or `10%`.
    pub default_kill_free: String,
    /// "Tight" past this compressed growth, e.g. `2G` (a form without it keeps the default).
    #[serde(default = "default_tight_compressed")]
    pub tight_compressed: String,
    /// "Tight" under this free %, e.g. `20` (a form without it keeps the default).
    #[serde(default = "default_tight_free")]
    pub tight_free: String,
    /// Start at login.
    pub launch_at_login: bool,
    /// Serve metrics for Prometheus (a form without it keeps them off).
    #[serde(default)]
    pub serve_metrics: bool,
    /// Where, e.g. `127.0.0.1:9101` (a form without it keeps the default).
    #[serde(default = "default_metrics_address")]
    pub metrics_address: String,
}

impl From<&Settings> for SettingsUpdate {
    fn from(s: &Settings) -> Self {
        SettingsUpdate {
            sample_interval: format_interval(s.sample_interval),
            notify_step: format_size(s.notify_step_bytes),
            default_swap_budget: format_size(s.default_swap_budget_bytes),
            default_kill_free: format!("{}", s.default_kill_free_percent),
            tight_compressed: format_size(s.tight_compressed_bytes),
            tight_free: format!("{}", s.tight_free_percent),
            launch_at_login: s.launch_at_login,
            serve_metrics: s.serve_metrics,
            metrics_address: s.metrics_address.to_string(),
        }
    }
}

impl SettingsUpdate {
    /// Parses and range-checks every field; the first bad one is the error.
    pub fn validate(&self) -> Result<Settings, FieldError> {
        let field = |field: SettingsField| move |message| FieldError { field, message };
        Ok(Settings {
            sample_interval: parse_interval(&self.sample_interval)
                .map_err(field(SettingsField::SampleInterval))?,
            notify_step_bytes: parse_size(&self.notify_step)
                .map_err(field(SettingsField::NotifyStep))?,
            default_swap_budget_bytes: parse_size(&self.default_swap_budget)
                .map_err(field(SettingsField::DefaultSwapBudget))?,
            default_kill_free_percent: parse_percent(&self.default_kill_free)
                .map_err(|e| e.to_string())
                .and_then(check_percent)
                .map_err(field(SettingsField::DefaultKillFree))?,
            tight_compressed_bytes: parse_size(&self.tight_compressed)
                .map_err(field(SettingsField::TightCompressed))?,
            tight_free_percent: parse_percent(&self.tight_free)
                .map_err(|e| e.to_string())
                .and_then(check_percent)
                .map_err(field(SettingsField::TightFree))?,
            launch_at_login: self.launch_at_login,
            serve_metrics: self.serve_metrics,
            metrics_address: parse_address(&self.metrics_address)
                .map_err(field(SettingsField::MetricsAddress))?,
        })
    }
}

fn default_metrics_address() -> String {
    DEFAULT_METRICS_ADDRESS.to_string()
}

/// An `IP:PORT` address.
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| {
        format!("invalid address '{text}': expected IP:PORT, e.g. {DEFAULT_METRICS_ADDRESS}")
    })
}

fn default_tight_compressed() -> String {
    format_size(Settings::default().tight_compressed_bytes)
}

fn default_tight_free() -> String {
    format!("{}", Settings::default().tight_free_percent)
}

/// A duration as the file writes it: `0.5s`, `2s`, `0.125s`.
pub fn format_interval(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// A size as the file writes it, exactly: `512M`, `8G`, `1536M`, `1000` (bytes).
pub fn format_size(bytes: u64) -> String {
    [
        ("T", 1u64 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ]
    .into_iter()
    .find(|(_, scale)| bytes > 0 && bytes.is_multiple_of(*scale))
    .map_or_else(
        || bytes.to_string(),
        |(u, scale)| format!("{}{u}", bytes / scale),
    )
}

fn parse_interval(text: &str) -> Result<Duration, String> {
    parse_duration(text)
        .map_err(|e| e.to_string())
        .and_then(check_interval)
}

fn parse_size(text: &str) -> Result<u64, String> {
    parse_bytes(text)
        .map_err(|e| e.to_string())
        .and_then(check_size)
}

fn check_interval(d: Duration) -> Result<Duration, String> {
    if (MIN_SAMPLE_INTERVAL..=MAX_SAMPLE_INTERVAL).contains(&d) {
        Ok(d)
    } else {
        Err(format!(
            "must be from {} to {}, not {}",
            format_interval(MIN_SAMPLE_INTERVAL),
            format_interval(MAX_SAMPLE_INTERVAL),
            format_interval(d)
        ))
    }
}

fn check_size(bytes: u64) -> Result<u64, String> {
    if bytes > 0 {
        Ok(bytes)
    } else {
        Err("must be more than 0".into())
    }
}

fn check_percent(p: f64) -> Result<f64, String> {
    if (0.0..=100.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("must be a percent from 0 to 100, not {p}"))
    }
}

mod file;

#[cfg(test)]
mod tests;
