//! User settings: what the menu-bar app's settings form edits, stored as `settings.toml`.
//!
//! The file uses human strings, parsed with [`headroom_model::units`]:
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
//! Files: this one loads, saves and checks [`Settings`]; `model.rs` holds it (its values,
//! ranges and defaults); `file.rs` the TOML
//! format; `form.rs` the form's side; `limits_form.rs` the guard form's (a job's limits); `values.rs` the values' text forms and ranges;
//! `errors.rs` what can be wrong.

mod errors;
mod file;
mod form;
mod limits_form;
mod model;
mod values;

use std::io;
use std::path::Path;

pub use self::errors::{FieldError, SettingsError, SettingsField, SettingsProblem};
pub use self::form::SettingsUpdate;
pub use self::limits_form::{LimitsField, LimitsFieldError, LimitsForm};
pub use self::model::{
    Settings, DEFAULT_METRICS_ADDRESS, MAX_SAMPLE_INTERVAL, MIN_SAMPLE_INTERVAL,
};
use self::values::{check_interval, check_percent, check_size};
pub use self::values::{format_interval, format_size, parse_address};
use headroom_os::paths::{move_aside, unix_seconds_now, write_atomic};

impl Settings {
    /// Reads `path`. A missing file gives the defaults and no problem. A file that cannot be
    /// used gives the defaults and a problem; if it was unusable rather than unreadable, it
    /// is moved aside and the defaults are written in its place. Never panics.
    pub fn load(path: &Path) -> (Settings, Option<SettingsProblem>) {
        let bytes = match headroom_os::unix::fifo::read_regular(path) {
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
}

#[cfg(test)]
mod tests;
