//! [`Settings`] itself: the values, their ranges, their defaults (from
//! [`headroom_rules::defaults`]) and the limits a new job starts from. The bottom of `settings/`:
//! loading, saving and the form build on it.

use std::net::SocketAddr;
use std::time::Duration;

use headroom_rules::policy::Limits;

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
pub const DEFAULT_METRICS_ADDRESS: SocketAddr = headroom_rules::defaults::METRICS_ADDRESS;

impl Default for Settings {
    fn default() -> Self {
        use headroom_rules::defaults as d;
        Settings {
            sample_interval: d::SAMPLE_INTERVAL,
            notify_step_bytes: d::NOTIFY_STEP_BYTES,
            default_swap_budget_bytes: d::SWAP_BUDGET_BYTES,
            default_kill_free_percent: d::KILL_FREE_PERCENT,
            tight_compressed_bytes: d::TIGHT_COMPRESSED_BYTES,
            tight_free_percent: d::TIGHT_FREE_PERCENT,
            launch_at_login: false,
            serve_metrics: false,
            metrics_address: DEFAULT_METRICS_ADDRESS,
        }
    }
}

impl Settings {
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
