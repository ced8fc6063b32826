//! The text forms of settings values, both ways (`0.5s`, `512M`, `10`, `127.0.0.1:9101`), and
//! the range each must be in.

use std::net::SocketAddr;
use std::time::Duration;

use super::model::{DEFAULT_METRICS_ADDRESS, MAX_SAMPLE_INTERVAL, MIN_SAMPLE_INTERVAL};
use headroom_model::units::{
    bounded_bytes, bounded_percent, bounded_seconds, parse_bytes, parse_duration,
};

/// An `IP:PORT` address.
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| {
        format!("invalid address '{text}': expected IP:PORT, e.g. {DEFAULT_METRICS_ADDRESS}")
    })
}

/// A duration as the file writes it: `0.5s`, `2s`, `0.125s`.
pub fn format_interval(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// A size as the file writes it, exactly: `512M`, `8G`, `1536M`, `1000` (bytes).
pub fn format_size(bytes: u64) -> String {
    headroom_model::units::size_text(bytes)
}

pub(super) fn parse_interval(text: &str) -> Result<Duration, String> {
    parse_duration(text)
        .map_err(|e| e.to_string())
        .and_then(check_interval)
}

pub(super) fn parse_size(text: &str) -> Result<u64, String> {
    parse_bytes(text)
        .map_err(|e| e.to_string())
        .and_then(check_size)
}

pub(super) fn check_interval(d: Duration) -> Result<Duration, String> {
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

/// A size: more than 0, at most what a machine can have (the bounds of every number read
/// from a file: [`headroom_model::units::bounded_bytes`]).
pub(super) fn check_size(bytes: u64) -> Result<u64, String> {
    if bytes > 0 {
        bounded_bytes(bytes)
    } else {
        Err("must be more than 0".into())
    }
}

/// A percentage from 0 to 100 ([`headroom_model::units::bounded_percent`]).
pub(super) fn check_percent(p: f64) -> Result<f64, String> {
    bounded_percent(p).map_err(|_| format!("must be a percent from 0 to 100, not {p}"))
}

/// A number of seconds as a file writes it ([`headroom_model::units::bounded_seconds`]).
pub(super) fn check_seconds(seconds: f64) -> Result<Duration, String> {
    bounded_seconds(seconds)
        .map(Duration::from_secs_f64)
        .map_err(|_| format!("invalid duration {seconds}"))
}
