//! What can be wrong with settings: the field a form value is bad in ([`FieldError`]), and
//! a settings file that could not be used ([`SettingsProblem`], with its path and line).

use std::fmt;
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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
    /// The key in `settings.toml` (and in a [`SettingsUpdate`](super::SettingsUpdate)).
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
