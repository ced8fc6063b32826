//! One resolution of history: a ring of fixed-length buckets, the oldest dropped at capacity,
//! plus the bucket being filled; restoring saved buckets in front of it after a restart.

use std::collections::VecDeque;
use std::time::Duration;

use super::point::{Accum, Point, METRICS};

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

    pub(super) fn add(&mut self, at_ms: i64, values: &[Option<f64>; METRICS]) {
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
    pub(super) fn points_since(&self, from_ms: i64, to_ms: i64) -> Vec<Point> {
        self.ring
            .iter()
            .copied()
            .chain(self.current.as_ref().map(Accum::finish))
            .filter(|p| p.start_ms + self.bucket_ms > from_ms && p.start_ms <= to_ms)
            .collect()
    }

    pub(super) fn oldest_ms(&self) -> Option<i64> {
        self.ring
            .front()
            .map(|p| p.start_ms)
            .or(self.current.as_ref().map(|a| a.start_ms))
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
    pub(super) fn restore(&mut self, points: &[Point]) -> usize {
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
