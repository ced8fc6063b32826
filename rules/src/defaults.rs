//! Every default value in one table: what a guard, a watch, the app's settings and the
//! page start from. [`crate::policy::Limits::default`], `headroom_core::settings::Settings`'s
//! default, the CLI's flags (their `default_value`, through [`text`]) and the page (its
//! placeholders, through the app's `get_config`) all read it; nothing else spells a default.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Wait until free memory is at least this before starting, percent (`--wait-free`).
pub const WAIT_FREE_PERCENT: f64 = 40.0;
/// Stop when swap grows more than this over its level at the start (`--swap-budget`).
pub const SWAP_BUDGET_BYTES: u64 = 8 << 30;
/// Stop when free memory stays below this, percent (`--kill-free`).
pub const KILL_FREE_PERCENT: f64 = 10.0;
/// With `--busy`: how long no match may have run before starting (`--quiet-for`).
pub const QUIET_FOR: Duration = Duration::from_secs(60);
/// Give up waiting for room after this long (`--start-timeout`).
pub const START_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Swap growth up to this still "fits" (`--fits-tolerance`).
pub const FITS_TOLERANCE_BYTES: u64 = 64 << 20;
/// A "swap grew" event each time growth passes another multiple of this (`--notify-step`).
pub const NOTIFY_STEP_BYTES: u64 = 512 << 20;
/// At most one swap-growth event per job in this time.
pub const NOTIFY_MIN_INTERVAL: Duration = Duration::from_secs(60);
/// A run that fits is "tight" when compressed memory grew more than this
/// (`--tight-compressed`).
pub const TIGHT_COMPRESSED_BYTES: u64 = 2 << 30;
/// A run that fits is "tight" when free memory fell under this, percent (`--tight-free`: the
/// staged runs of the real traces stayed at or above 33 %, the runs that did not fit fell to
/// 6-25 %).
pub const TIGHT_FREE_PERCENT: f64 = 20.0;
/// Pauses at most with `--on-budget pause` (`--max-pauses`).
pub const MAX_PAUSES: u32 = 3;
/// How long swap must have stopped growing before a paused job resumes by itself
/// (`--resume-calm`).
pub const RESUME_CALM: Duration = Duration::from_secs(15);
/// Time between checks and trace samples (`--poll`, `record --interval`).
pub const POLL: Duration = Duration::from_millis(500);
/// Time between SIGTERM and SIGKILL (`--grace`).
pub const GRACE: Duration = Duration::from_secs(5);
/// How often the app reads the counters (its settings' sample interval).
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(500);
/// Time between readings of `headroom serve` (`--interval`).
pub const SERVE_INTERVAL: Duration = Duration::from_secs(1);
/// Where metrics are served: loopback only (`--listen`, the app's metrics address).
pub const METRICS_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9101);

/// The defaults' text forms, as the flags and the forms take them.
pub mod text {
    use std::time::Duration;

    use headroom_model::units::{duration_text, size_text};

    /// A size: `8G`, `512M`.
    pub fn size(bytes: u64) -> String {
        size_text(bytes)
    }

    /// A duration: `0.5s`, `5s`, `1m`, `30m`.
    pub fn duration(d: Duration) -> String {
        duration_text(d)
    }

    /// A percentage: `40`, `10`, `12.5`.
    pub fn percent(p: f64) -> String {
        format!("{p}")
    }
}

/// Every default a form of the page shows, by the form field's name, as text.
pub fn page() -> Vec<(&'static str, String)> {
    vec![
        ("sample_interval", text::duration(SAMPLE_INTERVAL)),
        ("notify_step", text::size(NOTIFY_STEP_BYTES)),
        ("default_swap_budget", text::size(SWAP_BUDGET_BYTES)),
        ("default_kill_free", text::percent(KILL_FREE_PERCENT)),
        ("tight_compressed", text::size(TIGHT_COMPRESSED_BYTES)),
        ("tight_free", text::percent(TIGHT_FREE_PERCENT)),
        ("metrics_address", METRICS_ADDRESS.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_model::units::{parse_bytes, parse_duration};

    #[test]
    fn the_text_forms_read_back_as_the_values() {
        for bytes in [
            SWAP_BUDGET_BYTES,
            FITS_TOLERANCE_BYTES,
            NOTIFY_STEP_BYTES,
            TIGHT_COMPRESSED_BYTES,
        ] {
            assert_eq!(parse_bytes(&text::size(bytes)).ok(), Some(bytes));
        }
        for d in [
            QUIET_FOR,
            START_TIMEOUT,
            RESUME_CALM,
            POLL,
            GRACE,
            SERVE_INTERVAL,
        ] {
            assert_eq!(parse_duration(&text::duration(d)).ok(), Some(d), "{d:?}");
        }
        assert_eq!(text::duration(START_TIMEOUT), "30m");
        assert_eq!(text::duration(POLL), "0.5s");
        assert_eq!(text::size(SWAP_BUDGET_BYTES), "8G");
        assert_eq!(text::percent(KILL_FREE_PERCENT), "10");
    }
}
