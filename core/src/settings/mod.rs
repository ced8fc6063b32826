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
//!
//! Files: this one holds [`Settings`] (defaults, load, save, checks); `file.rs` the TOML
//! format; `form.rs` the form's side; `values.rs` the values' text forms and ranges;
//! `errors.rs` what can be wrong.

mod errors;
mod file;
mod form;
mod values;

use std::fs;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

pub use self::errors::{FieldError, SettingsError, SettingsField, SettingsProblem};
pub use self::form::SettingsUpdate;
use self::values::{check_interval, check_percent, check_size};
pub use self::values::{format_interval, format_size, parse_address};
use crate::paths::{move_aside, unix_seconds_now, write_atomic};
use crate::policy::Limits;

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

#[cfg(test)]
mod tests;
