//! In-memory history: multi-resolution ring buffers with min/max/mean per bucket.
//!
//! Every sample goes into each tier: 0.5 s buckets for 10 minutes, 5 s for 24 hours and 1 min
//! for 30 days ([`History::default_tiers`]). A query for a time window picks the finest tier
//! that still covers the window and merges buckets down to at most N points for a chart.
//! `point.rs` holds what a bucket is and how buckets merge, `tier.rs` one ring of buckets.
//! Values are stored as `f32` (a chart needs no more) and a missing value (no compressor, no
//! watched job) as NaN, so a full 30 days costs about 3.5 MB (see `core/tests/history_memory.rs`).

mod point;
mod tier;

use std::time::{Duration, SystemTime};

pub use self::point::{downsample, Agg, Metric, Point, METRICS};
pub use self::tier::Tier;
use headroom_model::units::unix_ms;

/// How long the minute history is kept: in memory (the last tier of
/// [`History::default_tiers`]) and in the store.
pub const HISTORY_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);
/// The index of the minute tier in [`History::default_tiers`]: the one the store saves.
pub const MINUTE_TIER: usize = 2;
const MINUTE: Duration = Duration::from_secs(60);

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

#[cfg(test)]
mod restore_tests;
#[cfg(test)]
mod tests;
