//! Human units: byte sizes and durations, parsed from flags and formatted for people.
//!
//! Sizes are binary, as Activity Monitor and stageload's tables use them: `1G` = `1GB` =
//! `1GiB` = 2^30 bytes, and [`format_bytes`] writes `3.1 GiB`: 3.1 × 2^30 bytes, labelled as
//! what it is (29,042,568,854 bytes is `27 GiB`, never "27 GB").

use std::time::Duration;

/// Why a size, duration or percent could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(String);

const UNITS: [(&str, u64); 5] = [
    ("", 1),
    ("K", 1 << 10),
    ("M", 1 << 20),
    ("G", 1 << 30),
    ("T", 1 << 40),
];

/// The longest time a file may hold, seconds (about 31 years): a trace's `t`, its interval
/// and a load's seconds, a setting's interval. Every such float read from a file passes
/// [`bounded_seconds`], so a `Duration` made of it never overflows.
pub const MAX_SECONDS: f64 = 1e9;
/// The most bytes a figure read from a file (or `--total-memory`) may be: 1 EiB, more memory
/// and swap than any machine has, and far from `u64`'s and `i64`'s ends, so sums and signed
/// changes of such figures never wrap.
pub const MAX_BYTES: u64 = 1 << 60;

/// `seconds` when it is a time a file may hold: finite, from 0 to [`MAX_SECONDS`].
pub fn bounded_seconds(seconds: f64) -> Result<f64, String> {
    if (0.0..=MAX_SECONDS).contains(&seconds) {
        Ok(seconds)
    } else {
        // A huge number in full is hundreds of digits: written as a power of ten instead.
        let shown = if seconds.abs() < 1e15 {
            seconds.to_string()
        } else {
            format!("{seconds:e}")
        };
        Err(format!(
            "{shown} is not a number of seconds from 0 to {MAX_SECONDS:e}"
        ))
    }
}

/// `percent` when it is a percentage: finite, from 0 to 100.
pub fn bounded_percent(percent: f64) -> Result<f64, String> {
    if (0.0..=100.0).contains(&percent) {
        Ok(percent)
    } else {
        Err(format!("{percent} is not a percentage from 0 to 100"))
    }
}

/// `bytes` when a machine can have that much: at most [`MAX_BYTES`].
pub fn bounded_bytes(bytes: u64) -> Result<u64, String> {
    if bytes <= MAX_BYTES {
        Ok(bytes)
    } else {
        Err(format!(
            "{bytes} bytes is more than any machine has (at most 1 EiB, {MAX_BYTES})"
        ))
    }
}

/// `percent` % of `total_bytes` (a negative percentage is none of it).
pub fn percent_of_bytes(percent: f64, total_bytes: u64) -> u64 {
    (percent.max(0.0) / 100.0 * total_bytes as f64) as u64
}

/// Parses `8G`, `100M`, `512MiB`, `1.5GB`, `4096` (bytes) into bytes.
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || {
        UnitError(format!(
            "invalid size '{text}': expected a number with an optional unit K, M, G or T (binary, e.g. 8G, 512M)"
        ))
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let unit = unit.trim();
    let stem = unit
        .strip_suffix("iB")
        .or_else(|| unit.strip_suffix('B'))
        .unwrap_or(unit)
        .to_ascii_uppercase();
    let stem = if unit.eq_ignore_ascii_case("b") {
        ""
    } else {
        &stem
    };
    let (_, scale) = UNITS.iter().find(|(u, _)| *u == stem).ok_or_else(bad)?;
    // Whole numbers exactly (a float has 53 bits: 9010000000000001 would come back changed).
    if !number.contains('.') {
        let whole: u64 = number.parse().map_err(|_| bad())?;
        return whole.checked_mul(*scale).ok_or_else(bad);
    }
    let bytes = value * *scale as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes.round() as u64)
}

/// Formats bytes for people, in binary units labelled as such: `812 MiB`, `3.1 GiB`,
/// `17 GiB`, `0 B`.
pub fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1 << 10 {
        format!("{bytes} B")
    } else if bytes < 1 << 20 {
        format!("{:.0} KiB", b / (1u64 << 10) as f64)
    } else if bytes < 1 << 30 {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    } else if bytes < 10 << 30 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.0} GiB", b / (1u64 << 30) as f64)
    }
}

/// Formats a signed change of bytes: `+3.5 GiB`, `-120 MiB`, `+0 B`.
pub fn format_delta_bytes(delta: i64) -> String {
    let sign = if delta < 0 { '-' } else { '+' };
    format!("{sign}{}", format_bytes(delta.unsigned_abs()))
}

/// Short form for a menu-bar title: `3.1G`, `812M`, `0` (binary, as `format_bytes`).
pub fn format_bytes_short(bytes: u64) -> String {
    let long = format_bytes(bytes);
    match long.split_once(' ') {
        Some(("0", "B")) => "0".into(),
        Some((n, unit)) => format!("{n}{}", &unit[..1]),
        None => long,
    }
}

/// Parses `0.5s`, `500ms`, `1m`, `30m`, `2h`, `1h30m` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let bad = || {
        UnitError(format!(
            "invalid duration '{text}': expected e.g. 0.5s, 500ms, 1m, 30m, 2h"
        ))
    };
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(seconds) = t.parse::<f64>() {
        return seconds_to_duration(seconds).ok_or_else(bad);
    }
    let mut total = 0.0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (number, after) = rest.split_at(split);
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let scale = match unit {
            "ms" => 0.001,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = next;
    }
    seconds_to_duration(total).ok_or_else(bad)
}

fn seconds_to_duration(seconds: f64) -> Option<Duration> {
    (0.0..1e12)
        .contains(&seconds)
        .then(|| Duration::from_secs_f64(seconds))
}

/// `text` safe to print on a terminal: control characters (ESC, BEL, newlines, …) are
/// shown as `\x1b`-style escapes, so a process's command line chosen by someone else cannot
/// move the cursor, set the window title or clear the screen.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&c.escape_unicode().to_string().replace("\\u{", "\\x{"));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A size exactly, as flags and files take it: `512M`, `8G`, `1536M`, `1000` (bytes).
pub fn size_text(bytes: u64) -> String {
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

/// A duration exactly, as flags take it: `0.5s`, `5s`, `1m`, `30m`, `2h`.
pub fn duration_text(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_nanos() == 0 && secs > 0 {
        if secs.is_multiple_of(3600) {
            return format!("{}h", secs / 3600);
        }
        if secs.is_multiple_of(60) {
            return format!("{}m", secs / 60);
        }
    }
    format!("{}s", d.as_secs_f64())
}

/// Formats a duration for people: `850 ms`, `12.3 s`, `4m 05s`, `2h 03m`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        let whole = d.as_secs();
        format!("{}m {:02}s", whole / 60, whole % 60)
    } else {
        let whole = d.as_secs();
        format!("{}h {:02}m", whole / 3600, (whole % 3600) / 60)
    }
}

/// Parses a percentage from 0 to 100 inclusive (`40`, `40%`, `12.5`).
pub fn parse_percent(text: &str) -> Result<f64, UnitError> {
    let t = text.trim();
    let number = t.strip_suffix('%').unwrap_or(t);
    match number.trim().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(UnitError(format!(
            "invalid percent '{text}': expected a number from 0 to 100"
        ))),
    }
}

/// Milliseconds since the Unix epoch of `t` (negative before 1970).
pub fn unix_ms(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_sizes_are_exact_and_overflow_is_an_error() {
        // Found by the property tests: a float would change it.
        assert_eq!(parse_bytes("9010000000000001"), Ok(9_010_000_000_000_001));
        assert_eq!(parse_bytes("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_bytes("18446744073709551616").is_err());
        assert!(parse_bytes("17179869184G").is_err());
        assert_eq!(parse_bytes("3G"), Ok(3 << 30));
    }

    #[test]
    fn sizes_parse() {
        let table: &[(&str, u64)] = &[
            ("8G", 8 << 30),
            ("8g", 8 << 30),
            ("8GB", 8 << 30),
            ("8GiB", 8 << 30),
            ("100M", 100 << 20),
            ("1.5G", 3 << 29),
            ("4096", 4096),
            ("64K", 64 << 10),
            ("1T", 1 << 40),
            ("12B", 12),
            (" 2M ", 2 << 20),
        ];
        for (text, want) in table {
            assert_eq!(parse_bytes(text), Ok(*want), "{text}");
        }
        for bad in ["", "G", "8X", "-1G", "1.2.3G", "8 Gigs", "nan", "1e999"] {
            assert!(parse_bytes(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn sizes_format() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(812 << 20), "812 MiB");
        assert_eq!(format_bytes((31 << 30) / 10), "3.1 GiB");
        assert_eq!(format_bytes(17 << 30), "17 GiB");
        assert_eq!(format_delta_bytes(-(120 << 20)), "-120 MiB");
        assert_eq!(format_delta_bytes(7 << 29), "+3.5 GiB");
        assert_eq!(format_bytes_short((31 << 30) / 10), "3.1G");
        assert_eq!(format_bytes_short(0), "0");
        assert_eq!(format_bytes_short(500 << 20), "500M");
    }

    #[test]
    fn durations_parse() {
        let table: &[(&str, f64)] = &[
            ("0.5s", 0.5),
            ("500ms", 0.5),
            ("1m", 60.0),
            ("30m", 1800.0),
            ("2h", 7200.0),
            ("1h30m", 5400.0),
            ("10", 10.0),
            ("2.5", 2.5),
            ("1d", 86400.0),
        ];
        for (text, want) in table {
            let got = parse_duration(text).unwrap().as_secs_f64();
            assert!((got - want).abs() < 1e-9, "{text}: {got}");
        }
        for bad in ["", "s", "5x", "-1s", "1m-", "abc", "1..2s"] {
            assert!(parse_duration(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn durations_format() {
        assert_eq!(format_duration(Duration::from_millis(850)), "850 ms");
        assert_eq!(format_duration(Duration::from_secs_f64(12.34)), "12.3 s");
        assert_eq!(format_duration(Duration::from_secs(245)), "4m 05s");
        assert_eq!(format_duration(Duration::from_secs(7380)), "2h 03m");
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("40"), Ok(40.0));
        assert_eq!(parse_percent("12.5%"), Ok(12.5));
        assert_eq!(parse_percent("0"), Ok(0.0));
        assert_eq!(parse_percent("100"), Ok(100.0));
        assert!(parse_percent("101").is_err());
        assert!(parse_percent("-1").is_err());
        assert!(parse_percent("x").is_err());
    }
}
