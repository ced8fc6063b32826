//! Tests of history: buckets, rings, queries and the retention the store keeps.

use std::time::UNIX_EPOCH;

use super::*;

#[test]
fn the_minute_tier_holds_the_retention_the_store_keeps() {
    let tiers = History::default_tiers();
    let minute = &tiers[MINUTE_TIER];
    assert_eq!(minute.bucket(), Duration::from_secs(60));
    assert_eq!(minute.span(), HISTORY_RETENTION);
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
