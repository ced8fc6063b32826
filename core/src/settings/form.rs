//! Settings as a form edits them: text as typed, validated into [`Settings`] with an error
//! that names the field.

use serde::{Deserialize, Serialize};

use super::errors::{FieldError, SettingsField};
use super::model::{Settings, DEFAULT_METRICS_ADDRESS};
use super::values::{
    check_percent, format_interval, format_size, parse_address, parse_interval, parse_size,
};
use headroom_model::units::parse_percent;

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

fn default_tight_compressed() -> String {
    format_size(Settings::default().tight_compressed_bytes)
}

fn default_tight_free() -> String {
    format!("{}", Settings::default().tight_free_percent)
}
