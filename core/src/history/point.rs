//! What history holds per bucket: the metrics, their min/max/mean ([`Agg`]) in a [`Point`],
//! the bucket being filled ([`Accum`], exact f64 sums), and merging points for a chart
//! ([`downsample`]).

use serde::{Deserialize, Serialize};

/// The series kept in history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// System free memory, percent.
    FreePercent = 0,
    /// Swap in use, bytes.
    SwapUsedBytes = 1,
    /// Compressed memory (macOS compressor, Linux zswap), bytes.
    CompressedBytes = 2,
    /// Sum of the footprints of watched process trees, bytes.
    WatchedFootprintBytes = 3,
}

/// Number of metrics.
pub const METRICS: usize = 4;

impl Metric {
    /// All metrics, in storage order.
    pub const ALL: [Metric; METRICS] = [
        Metric::FreePercent,
        Metric::SwapUsedBytes,
        Metric::CompressedBytes,
        Metric::WatchedFootprintBytes,
    ];
}

/// Min, max and mean of one metric over a bucket; NaN when there was no value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Agg {
    /// Smallest value.
    pub min: f32,
    /// Largest value.
    pub max: f32,
    /// Mean value.
    pub mean: f32,
}

impl Agg {
    /// No value (NaN everywhere).
    pub(super) const EMPTY: Agg = Agg {
        min: f32::NAN,
        max: f32::NAN,
        mean: f32::NAN,
    };

    /// True when the bucket had no value for this metric.
    pub fn is_empty(&self) -> bool {
        self.mean.is_nan()
    }
}

/// One finished bucket (or a merged point of a query).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Bucket start, milliseconds since the Unix epoch.
    pub start_ms: i64,
    /// Per metric, indexed by `Metric as usize`.
    pub values: [Agg; METRICS],
}

impl Point {
    /// The aggregate for `metric`.
    pub fn get(&self, metric: Metric) -> Agg {
        self.values[metric as usize]
    }
}

/// A bucket being filled: sums in f64 for an exact mean.
#[derive(Debug, Clone, Copy)]
pub(super) struct Accum {
    pub(super) start_ms: i64,
    min: [f64; METRICS],
    max: [f64; METRICS],
    sum: [f64; METRICS],
    count: [u32; METRICS],
}

impl Accum {
    pub(super) fn new(start_ms: i64) -> Self {
        Accum {
            start_ms,
            min: [f64::INFINITY; METRICS],
            max: [f64::NEG_INFINITY; METRICS],
            sum: [0.0; METRICS],
            count: [0; METRICS],
        }
    }

    pub(super) fn add(&mut self, values: &[Option<f64>; METRICS]) {
        for (i, v) in values.iter().enumerate() {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                self.min[i] = self.min[i].min(v);
                self.max[i] = self.max[i].max(v);
                self.sum[i] += v;
                self.count[i] += 1;
            }
        }
    }

    pub(super) fn finish(&self) -> Point {
        let mut values = [Agg::EMPTY; METRICS];
        for (i, agg) in values.iter_mut().enumerate() {
            if self.count[i] > 0 {
                *agg = Agg {
                    min: self.min[i] as f32,
                    max: self.max[i] as f32,
                    mean: (self.sum[i] / f64::from(self.count[i])) as f32,
                };
            }
        }
        Point {
            start_ms: self.start_ms,
            values,
        }
    }
}

/// Merges consecutive points into groups so at most `max_points` remain.
pub fn downsample(points: &[Point], max_points: usize) -> Vec<Point> {
    if points.len() <= max_points {
        return points.to_vec();
    }
    let group = points.len().div_ceil(max_points);
    points.chunks(group).map(merge).collect()
}

fn merge(group: &[Point]) -> Point {
    let mut values = [Agg::EMPTY; METRICS];
    for (i, out) in values.iter_mut().enumerate() {
        let present: Vec<Agg> = group
            .iter()
            .map(|p| p.values[i])
            .filter(|a| !a.is_empty())
            .collect();
        if present.is_empty() {
            continue;
        }
        let n = present.len() as f32;
        *out = Agg {
            min: present.iter().map(|a| a.min).fold(f32::INFINITY, f32::min),
            max: present
                .iter()
                .map(|a| a.max)
                .fold(f32::NEG_INFINITY, f32::max),
            mean: present.iter().map(|a| a.mean).sum::<f32>() / n,
        };
    }
    Point {
        start_ms: group.first().map_or(0, |p| p.start_ms),
        values,
    }
}
