//! Tests for taking points out of a history tier and restoring them after a restart.

use std::time::UNIX_EPOCH;

use super::*;

const MINUTE_MS: i64 = 60_000;
const BASE_MS: i64 = 1_700_000_040_000; // a whole minute

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap())
}

fn minutes_history(capacity: usize) -> History {
    History::new(vec![
        Tier::new(Duration::from_secs(1), 10),
        Tier::new(Duration::from_secs(60), capacity),
    ])
}

fn point(start_ms: i64, free: f32) -> Point {
    let mut values = [Agg::EMPTY; METRICS];
    values[Metric::FreePercent as usize] = Agg {
        min: free,
        max: free,
        mean: free,
    };
    Point { start_ms, values }
}

fn starts(points: &[Point]) -> Vec<i64> {
    points
        .iter()
        .map(|p| (p.start_ms - BASE_MS) / MINUTE_MS)
        .collect()
}

#[test]
fn points_include_the_partial_bucket() {
    let mut h = minutes_history(100);
    for minute in 0..3 {
        h.add(
            at(BASE_MS + minute * MINUTE_MS),
            [Some(50.0), None, None, None],
        );
    }
    h.add(
        at(BASE_MS + 2 * MINUTE_MS + 30_000),
        [Some(60.0), None, None, None],
    );
    let pts = h.points(1);
    assert_eq!(starts(&pts), vec![0, 1, 2]);
    assert_eq!(pts[2].get(Metric::FreePercent).mean, 55.0, "partial bucket");
    assert!(pts[0].get(Metric::SwapUsedBytes).is_empty());
    assert!(h.points(7).is_empty(), "unknown tier");
}

#[test]
fn restore_prepends_older_points() {
    let mut h = minutes_history(100);
    h.add(at(BASE_MS + 10 * MINUTE_MS), [Some(50.0), None, None, None]);
    h.add(at(BASE_MS + 11 * MINUTE_MS), [Some(51.0), None, None, None]);
    // Saved before the restart: minutes 5..=10, out of order and with a duplicate; minute 10
    // is already held (the current run's), so it is not restored.
    let saved: Vec<Point> = [7, 5, 6, 6, 8, 9, 10]
        .into_iter()
        .map(|m| point(BASE_MS + m * MINUTE_MS, m as f32))
        .collect();
    assert_eq!(h.restore(1, &saved), 5);
    let pts = h.points(1);
    assert_eq!(starts(&pts), vec![5, 6, 7, 8, 9, 10, 11]);
    assert_eq!(pts[0].get(Metric::FreePercent).mean, 5.0);
    assert_eq!(
        pts[5].get(Metric::FreePercent).mean,
        50.0,
        "own bucket kept"
    );
    // Restoring again adds nothing: everything is now newer than the oldest.
    assert_eq!(h.restore(1, &saved), 0);
    assert_eq!(h.restore(9, &saved), 0, "unknown tier");
}

#[test]
fn restore_respects_capacity_and_keeps_the_newest() {
    let mut h = minutes_history(4);
    h.add(at(BASE_MS + 20 * MINUTE_MS), [Some(1.0), None, None, None]);
    h.add(at(BASE_MS + 21 * MINUTE_MS), [Some(1.0), None, None, None]);
    // Ring holds minute 20, current is 21: room for 3 more.
    let saved: Vec<Point> = (0..20)
        .map(|m| point(BASE_MS + m * MINUTE_MS, m as f32))
        .collect();
    assert_eq!(h.restore(1, &saved), 3);
    assert_eq!(starts(&h.points(1)), vec![17, 18, 19, 20, 21]);
    // New samples push the restored ones out first.
    h.add(at(BASE_MS + 22 * MINUTE_MS), [Some(1.0), None, None, None]);
    assert_eq!(starts(&h.points(1)), vec![18, 19, 20, 21, 22]);
}

#[test]
fn restore_into_empty_tier_then_query() {
    let mut h = minutes_history(1000);
    let saved: Vec<Point> = (0..120)
        .map(|m| point(BASE_MS + m * MINUTE_MS, 40.0))
        .collect();
    assert_eq!(h.restore(1, &saved), 120);
    // The app goes on sampling after the restart.
    h.add(
        at(BASE_MS + 120 * MINUTE_MS),
        [Some(60.0), None, None, None],
    );
    let q = h.query(
        Duration::from_secs(2 * 3600),
        at(BASE_MS + 120 * MINUTE_MS),
        1000,
    );
    assert_eq!(q.len(), 121);
    assert_eq!(q[0].get(Metric::FreePercent).mean, 40.0);
    assert_eq!(q[120].get(Metric::FreePercent).mean, 60.0);
}
