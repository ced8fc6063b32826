//! The value parsers of the command line's flags (clap `value_parser`s): the bottom layer
//! of the CLI, used by every subcommand's flags. Each refusal is a message naming the value;
//! clap adds the flag and exits 2.

use std::time::Duration;

use headroom_model::units;

/// clap value parser for sizes (`8G`, `512M`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    units::parse_bytes(text).map_err(|e| e.to_string())
}

/// clap value parser for a machine's memory (`--total-memory`): a size at most
/// [`units::MAX_BYTES`], the bound of every byte figure read from a file.
pub fn parse_memory_size(text: &str) -> Result<u64, String> {
    parse_size(text).and_then(units::bounded_bytes)
}

/// clap value parser for a typed key (`--key`, `history KEY`): core's one rule
/// (`fit::typed_key`: trimmed), not blank.
pub fn parse_key(text: &str) -> Result<String, String> {
    headroom_rules::fit::typed_key(text).ok_or_else(|| "a key cannot be blank".to_string())
}

/// clap value parser for percentages 0–100.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    units::parse_percent(text).map_err(|e| e.to_string())
}

/// clap value parser for durations (`0.5s`, `1m`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    units::parse_duration(text).map_err(|e| e.to_string())
}

/// clap value parser for positive durations (a sampling interval).
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    match units::parse_duration(text) {
        Ok(d) if d >= Duration::from_millis(10) => Ok(d),
        Ok(_) => Err(format!("interval '{text}' is too short: at least 10ms")),
        Err(e) => Err(e.to_string()),
    }
}
