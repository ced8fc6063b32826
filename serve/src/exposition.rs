//! The Prometheus text exposition format (version 0.0.4) and OpenMetrics 1.0 text, from
//! metric families. Pure: tested against `promtool check metrics` in CI.

use std::fmt::Write;

/// Which text format a scraper gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`, Prometheus's own.
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`, when the `Accept` header asks for it.
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (with a non-zero quality), else Prometheus text.
    pub fn from_accept(accept: Option<&str>) -> Format {
        let wants = accept.is_some_and(|a| {
            a.split(',').any(|part| {
                let mut params = part.split(';').map(str::trim);
                let media = params.next().unwrap_or_default();
                let q_zero = params.any(|p| {
                    p.strip_prefix("q=")
                        .and_then(|q| q.parse::<f64>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                media.eq_ignore_ascii_case("application/openmetrics-text") && !q_zero
            })
        });
        if wants {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Gauge or counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value that goes up and down.
    Gauge,
    /// A total that only grows (its name ends in `_total`).
    Counter,
}

/// One sample of a family: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label names and values (values are escaped when written).
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: f64,
}

/// A metric family: name (a counter's ends in `_total`), help, kind, samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The metric name (`headroom_swap_used_bytes`, `headroom_guard_stops_total`).
    pub name: &'static str,
    /// One line saying what it is.
    pub help: &'static str,
    /// Gauge or counter.
    pub kind: Kind,
    /// Its samples (a family without samples is still described).
    pub samples: Vec<Sample>,
}

impl Family {
    /// A family of one sample without labels.
    pub fn single(name: &'static str, help: &'static str, kind: Kind, value: f64) -> Family {
        Family {
            name,
            help,
            kind,
            samples: vec![Sample {
                labels: Vec::new(),
                value,
            }],
        }
    }
}

/// Writes `families` in `format`.
pub fn render(families: &[Family], format: Format) -> String {
    let mut out = String::with_capacity(4096);
    for family in families {
        // OpenMetrics names a counter family without its `_total` suffix.
        let described = match (format, family.kind) {
            (Format::OpenMetrics, Kind::Counter) => {
                family.name.strip_suffix("_total").unwrap_or(family.name)
            }
            _ => family.name,
        };
        let kind = match family.kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(out, "# HELP {described} {}", escape_help(family.help));
        let _ = writeln!(out, "# TYPE {described} {kind}");
        for sample in &family.samples {
            out.push_str(family.name);
            if !sample.labels.is_empty() {
                out.push('{');
                for (i, (name, value)) in sample.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{name}=\"{}\"", escape_label(value));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", number(sample.value));
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// A label value with `\`, `"` and newlines escaped.
pub fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A value as the formats spell it: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> Vec<Family> {
        vec![
            Family::single(
                "headroom_swap_used_bytes",
                "Swap in use.",
                Kind::Gauge,
                3.0e9,
            ),
            Family {
                name: "headroom_guard_stops_total",
                help: "Jobs stopped by a guard, by reason.",
                kind: Kind::Counter,
                samples: vec![Sample {
                    labels: vec![("reason", "swap_budget".into())],
                    value: 2.0,
                }],
            },
        ]
    }

    #[test]
    fn prometheus_text_and_openmetrics() {
        let text = render(&families(), Format::Prometheus);
        assert_eq!(
            text,
            "# HELP headroom_swap_used_bytes Swap in use.\n# TYPE headroom_swap_used_bytes gauge\n\
             headroom_swap_used_bytes 3000000000\n\
             # HELP headroom_guard_stops_total Jobs stopped by a guard, by reason.\n\
             # TYPE headroom_guard_stops_total counter\n\
             headroom_guard_stops_total{reason=\"swap_budget\"} 2\n"
        );
        let om = render(&families(), Format::OpenMetrics);
        assert!(om.contains("# TYPE headroom_guard_stops counter\n"), "{om}");
        assert!(om.contains("headroom_guard_stops_total{reason=\"swap_budget\"} 2\n"));
        assert!(om.ends_with("# EOF\n"));
    }

    #[test]
    fn label_values_are_escaped_and_values_spelled() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(-3.0), "-3");
    }

    #[test]
    fn accept_header_picks_the_format() {
        let cases = [
            (None, Format::Prometheus),
            (Some("text/plain"), Format::Prometheus),
            (
                Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
                Format::OpenMetrics,
            ),
            (
                Some("application/openmetrics-text; q=0"),
                Format::Prometheus,
            ),
            (Some("*/*"), Format::Prometheus),
        ];
        for (accept, want) in cases {
            assert_eq!(Format::from_accept(accept), want, "{accept:?}");
        }
    }
}
