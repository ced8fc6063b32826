//! In-memory history: multi-resolution ring buffers with min/max/mean per bucket.
//!
//! Every sample goes into each tier: 0.5 s buckets for 10 minutes, 5 s for 24 hours and 1 min
//! for 30 days ([`History::default_tiers`]). A query for a time window picks the finest tier
//! that still covers the window and merges buckets down to at most N points for a chart.
//! Values are stored as `f32` (a chart needs no more) and a missing value (no compressor, no
//! watched job) as NaN, so a full 30 days costs about 3.5 MB (see `tests/history_memory.rs`).

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::units::unix_ms;

/// How long the minute history is kept: in memory (the last tier of
/// [`History::default_tiers`]) and in the store.
pub const HISTORY_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);
/// The index of the minute tier in [`History::default_tiers`]: the one the store saves.
pub const MINUTE_TIER: usize = 2;
const MINUTE: Duration = Duration::from_secs(60);

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
    const EMPTY: Agg = Agg {
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
struct Accum {
    start_ms: i64,
    min: [f64; METRICS],
    max: [f64; METRICS],
    sum: [f64; METRICS],
    count: [u32; METRICS],
}

impl Accum {
    fn new(start_ms: i64) -> Self {
        Accum {
            start_ms,
            min: [f64::INFINITY; METRICS],
            max: [f64::NEG_INFINITY; METRICS],
            sum: [0.0; METRICS],
            count: [0; METRICS],
        }
    }

    fn add(&mut self, values: &[Option<f64>; METRICS]) {
        for (i, v) in values.iter().enumerate() {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                self.min[i] = self.min[i].min(v);
                self.max[i] = self.max[i].max(v);
                self.sum[i] += v;
                self.count[i] += 1;
            }
        }
    }

    fn finish(&self) -> Point {
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

/// One resolution: fixed-size buckets in a ring.
#[derive(Debug, Clone)]
pub struct Tier {
    bucket_ms: i64,
    capacity: usize,
    ring: VecDeque<Point>,
    current: Option<Accum>,
}

impl Tier {
    /// A tier of `capacity` buckets of `bucket` each.
    pub fn new(bucket: Duration, capacity: usize) -> Self {
        Tier {
            bucket_ms: i64::try_from(bucket.as_millis()).unwrap_or(i64::MAX).max(1),
            capacity: capacity.max(1),
            ring: VecDeque::with_capacity(capacity.max(1)),
            current: None,
        }
    }

    /// The time this tier covers when full.
    pub fn span(&self) -> Duration {
        Duration::from_millis(self.bucket_ms.unsigned_abs() * self.capacity as u64)
    }

    /// Bucket length.
    pub fn bucket(&self) -> Duration {
        Duration::from_millis(self.bucket_ms.unsigned_abs())
    }

    fn add(&mut self, at_ms: i64, values: &[Option<f64>; METRICS]) {
        let start = at_ms.div_euclid(self.bucket_ms) * self.bucket_ms;
        match &mut self.current {
            Some(acc) if acc.start_ms == start => acc.add(values),
            Some(acc) if start < acc.start_ms => {} // clock went backwards: drop the sample
            current => {
                if let Some(done) = current.take() {
                    if self.ring.len() == self.capacity {
                        self.ring.pop_front();
                    }
                    self.ring.push_back(done.finish());
                }
                let mut acc = Accum::new(start);
                acc.add(values);
                *current = Some(acc);
            }
        }
    }

    /// Finished buckets and the one being filled, oldest first, starting at or after `from_ms`.
    fn points_since(&self, from_ms: i64, to_ms: i64) -> Vec<Point> {
        self.ring
            .iter()
            .copied()
            .chain(self.current.as_ref().map(Accum::finish))
            .filter(|p| p.start_ms + self.bucket_ms > from_ms && p.start_ms <= to_ms)
            .collect()
    }

    fn oldest_ms(&self) -> Option<i64> {
        self.ring
            .front()
            .map(|p| p.start_ms)
            .or(self.current.as_ref().map(|a| a.start_ms))
    }

    /// Heap bytes reserved by this tier.
    pub fn heap_bytes(&self) -> usize {
        self.ring.capacity() * std::mem::size_of::<Point>()
    }

    /// Finished buckets and the one being filled, oldest first.
    pub fn points(&self) -> Vec<Point> {
        self.ring
            .iter()
            .copied()
            .chain(self.current.as_ref().map(Accum::finish))
            .collect()
    }

    /// Puts `points` that are older than every bucket held in front of the ring (history saved
    /// before a restart). Later points are ignored, duplicates kept once, and when they would
    /// pass the capacity the newest of them are kept. Returns how many were restored.
    fn restore(&mut self, points: &[Point]) -> usize {
        let limit = self.oldest_ms().unwrap_or(i64::MAX);
        let mut older: Vec<Point> = points
            .iter()
            .filter(|p| p.start_ms < limit)
            .copied()
            .collect();
        older.sort_by_key(|p| p.start_ms);
        older.dedup_by_key(|p| p.start_ms);
        let skip = older
            .len()
            .saturating_sub(self.capacity.saturating_sub(self.ring.len()));
        for p in older[skip..].iter().rev() {
            self.ring.push_front(*p);
        }
        older.len() - skip
    }
}

/// Multi-resolution history of the sampled metrics.
#[derive(Debug, Clone)]
pub struct History {
    tiers: Vec<Tier>,
}

impl Default for History {
    fn default() -> Self {
        History::new(History::default_tiers())
    }
}

impl History {
    /// 0.5 s × 1200 (10 min), 5 s × 17280 (24 h), 60 s × 43200 (30 days).
    pub fn default_tiers() -> Vec<Tier> {
        let minutes = HISTORY_RETENTION.as_secs() / MINUTE.as_secs();
        vec![
            Tier::new(Duration::from_millis(500), 1200),
            Tier::new(Duration::from_secs(5), 17_280),
            Tier::new(MINUTE, usize::try_from(minutes).unwrap_or(usize::MAX)),
        ]
    }

    /// History with the given tiers, finest first.
    pub fn new(tiers: Vec<Tier>) -> Self {
        History { tiers }
    }

    /// Adds one reading at `at`. `None` values are recorded as missing.
    pub fn add(&mut self, at: SystemTime, values: [Option<f64>; METRICS]) {
        let at_ms = unix_ms(at);
        for tier in &mut self.tiers {
            tier.add(at_ms, &values);
        }
    }

    /// The tiers, finest first.
    pub fn tiers(&self) -> &[Tier] {
        &self.tiers
    }

    /// At most `max_points` points covering `[to - window, to]`, from the finest tier that
    /// reaches back far enough (else the coarsest), merged evenly when there are more.
    pub fn query(&self, window: Duration, to: SystemTime, max_points: usize) -> Vec<Point> {
        let to_ms = unix_ms(to);
        let from_ms = to_ms.saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
        let tier = self
            .tiers
            .iter()
            .find(|t| t.span() >= window || t.oldest_ms().is_some_and(|o| o <= from_ms))
            .or(self.tiers.last());
        let Some(tier) = tier else {
            return Vec::new();
        };
        downsample(&tier.points_since(from_ms, to_ms), max_points.max(1))
    }

    /// Heap bytes reserved by all tiers.
    pub fn heap_bytes(&self) -> usize {
        self.tiers.iter().map(Tier::heap_bytes).sum()
    }

    /// Finished buckets and the one being filled of tier `tier_index` (0 is the finest), oldest
    /// first; empty for a tier that does not exist. What the store saves every minute.
    pub fn points(&self, tier_index: usize) -> Vec<Point> {
        self.tiers
            .get(tier_index)
            .map_or_else(Vec::new, Tier::points)
    }

    /// Restores buckets saved before a restart into tier `tier_index` (usually the coarsest):
    /// those older than what the tier holds go in front of it, up to its capacity, newest
    /// kept. Returns how many were restored (0 for a tier that does not exist).
    pub fn restore(&mut self, tier_index: usize, points: &[Point]) -> usize {
        self.tiers
            .get_mut(tier_index)
            .map_or(0, |tier| tier.restore(points))
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

#[cfg(test)]
mod restore_tests;

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    #[test]
    fn the_minute_tier_holds_the_retention_the_store_keeps() {
        let tiers = History::default_tiers();
        let minute = &tiers[MINUTE_TIER];
        assert_eq!(minute.bucket_ms, 60_000);
        let held_ms = minute.bucket_ms * i64::try_from(minute.capacity).unwrap();
        assert_eq!(
            u128::try_from(held_ms).unwrap(),
            HISTORY_RETENTION.as_millis()
        );
    }

    fn t(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
    }

    fn vals(free: f64, swap: f64) -> [Option<f64>; METRICS] {
        [Some(free), Some(swap), None, None]
    }

    #[test]
    fn bucket_min_max_mean() {
        let mut tier = Tier::new(Duration::from_secs(5), 10);
        let base = unix_ms(t(0));
        for (i, free) in [10.0, 20.0, 60.0].into_iter().enumerate() {
            tier.add(base + i as i64 * 1000, &vals(free, 100.0));
        }
        tier.add(base + 5000, &vals(50.0, 0.0));
        let pts = tier.points_since(i64::MIN, i64::MAX);
        assert_eq!(pts.len(), 2);
        let a = pts[0].get(Metric::FreePercent);
        assert_eq!((a.min, a.max, a.mean), (10.0, 60.0, 30.0));
        assert!(pts[0].get(Metric::CompressedBytes).is_empty());
        assert_eq!(pts[1].get(Metric::FreePercent).mean, 50.0);
    }

    #[test]
    fn ring_drops_oldest_at_capacity() {
        let mut tier = Tier::new(Duration::from_secs(1), 3);
        for s in 0..10 {
            tier.add(s * 1000, &vals(s as f64, 0.0));
        }
        // 3 finished buckets (6, 7, 8) + the current one (9).
        let means: Vec<f32> = tier
            .points_since(i64::MIN, i64::MAX)
            .iter()
            .map(|p| p.get(Metric::FreePercent).mean)
            .collect();
        assert_eq!(means, vec![6.0, 7.0, 8.0, 9.0]);
    }

    #[test]
    fn query_picks_tier_and_limits_points() {
        let mut h = History::default();
        // 2 hours at 0.5 s.
        for i in 0..14_400u64 {
            h.add(t(i * 500), vals(50.0 + (i % 10) as f64, i as f64));
        }
        let now = t(14_399 * 500);
        let ten_min = h.query(Duration::from_secs(600), now, 2000);
        assert!((1199..=1201).contains(&ten_min.len()), "{}", ten_min.len());
        let hour = h.query(Duration::from_secs(3600), now, 300);
        // The 5 s tier covers the hour: 720 buckets merged 3 by 3.
        assert!((240..=241).contains(&hour.len()), "{}", hour.len());
        // Merged buckets keep the extremes.
        let p = hour[hour.len() / 2].get(Metric::FreePercent);
        assert_eq!((p.min, p.max), (50.0, 59.0));
        assert!((p.mean - 54.5).abs() < 0.01);
        // Swap grows monotonically: last point's max is the latest value.
        let last = hour.last().map(|p| p.get(Metric::SwapUsedBytes).max);
        assert_eq!(last, Some(14_399.0));
    }

    #[test]
    fn backwards_clock_is_ignored() {
        let mut tier = Tier::new(Duration::from_secs(1), 3);
        tier.add(10_000, &vals(1.0, 0.0));
        tier.add(5_000, &vals(2.0, 0.0));
        let pts = tier.points_since(i64::MIN, i64::MAX);
        assert_eq!(pts.len(), 1);
        assert_eq!(pts[0].get(Metric::FreePercent).mean, 1.0);
    }

    #[test]
    fn downsample_keeps_small_inputs() {
        let p = Point {
            start_ms: 0,
            values: [Agg::EMPTY; METRICS],
        };
        assert_eq!(downsample(&[p, p], 5).len(), 2);
        assert_eq!(downsample(&[p; 10], 3).len(), 3);
        assert!(downsample(&[p; 10], 3)[0].values[0].is_empty());
    }
}
