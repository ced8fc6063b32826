//! Tests for the SQLite store on real files: history round trip, prune, 30 days of minutes,
//! damaged databases, jobs and guards.

use std::fs;
use std::time::{Instant, UNIX_EPOCH};

use super::*;
use crate::history::{History, MINUTE_TIER};
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::process::ProcessLookup;
use headroom_rules::engine::{FinishedJob, JobMode, SavedJob};
use headroom_rules::policy::{EndReason, OnBudget, StopReason, Verdict};

const MINUTE_MS: i64 = 60_000;
const BASE_MS: i64 = 1_700_000_040_000;

fn db() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data/history.db");
    (tmp, path)
}

fn open(path: &Path) -> Store {
    let (store, problem) = Store::open(path).unwrap();
    assert_eq!(problem, None);
    store
}

fn point(start_ms: i64, free: f32, swap: Option<f32>) -> Point {
    let agg = |v: f32| Agg {
        min: v - 1.0,
        max: v + 1.0,
        mean: v,
    };
    let empty = Agg {
        min: f32::NAN,
        max: f32::NAN,
        mean: f32::NAN,
    };
    Point {
        start_ms,
        values: [agg(free), swap.map_or(empty, agg), empty, empty],
    }
}

/// Equal, with NaN (a missing value) equal to NaN.
fn same(a: &[Point], b: &[Point]) -> bool {
    let key = |p: &Point| {
        let values: Vec<Option<u32>> = p
            .values
            .iter()
            .flat_map(|a| [a.min, a.max, a.mean])
            .map(|v| (!v.is_nan()).then(|| v.to_bits()))
            .collect();
        (p.start_ms, values)
    };
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key(x) == key(y))
}

fn corrupt_files(dir: &Path) -> Vec<PathBuf> {
    headroom_os::testdata::moved_aside(dir)
}

#[test]
fn points_round_trip_with_missing_values() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let pts = vec![
        point(BASE_MS, 50.0, Some(3e9)),
        point(BASE_MS + MINUTE_MS, 40.0, None),
        point(BASE_MS + 2 * MINUTE_MS, 30.0, Some(4e9)),
    ];
    assert_eq!(store.save_points(&pts).unwrap(), 3);
    let back = store.load_points(i64::MIN).unwrap();
    assert_eq!(back.len(), 3);
    assert!(same(&back, &pts), "{back:?}");
    assert_eq!(
        back[1].get(Metric::FreePercent),
        pts[1].get(Metric::FreePercent)
    );
    assert!(
        back[1].get(Metric::SwapUsedBytes).is_empty(),
        "NULL reads back as NaN"
    );
    assert!(back[1].get(Metric::SwapUsedBytes).min.is_nan());
    let nulls: i64 = store
        .conn
        .query_row(
            "SELECT COUNT(*) FROM history_minutes WHERE compressed_bytes_mean IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(nulls, 3, "NaN is stored as NULL");

    // Upsert: the same minute again replaces it (a partial bucket saved, then finished).
    store
        .save_points(&[point(BASE_MS + 2 * MINUTE_MS, 35.0, Some(5e9))])
        .unwrap();
    let back = store.load_points(BASE_MS + MINUTE_MS).unwrap();
    assert_eq!(back.len(), 2, "since_ms filters");
    assert_eq!(back[1].get(Metric::FreePercent).mean, 35.0);

    // Survives closing and reopening.
    drop(store);
    let store = open(&path);
    assert_eq!(store.load_points(i64::MIN).unwrap().len(), 3);
    let version: i64 = store
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

#[test]
fn prune_keeps_30_days() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let day_ms = 24 * 3600 * 1000;
    let pts: Vec<Point> = (0..40)
        .map(|d| point(BASE_MS + d * day_ms, 1.0, None))
        .collect();
    store.save_points(&pts).unwrap();
    let now = UNIX_EPOCH + Duration::from_millis((BASE_MS + 39 * day_ms) as u64);
    // Days 0..=8 are older than 30 days before day 39.
    assert_eq!(store.prune(now).unwrap(), 9);
    let left = store.load_points(i64::MIN).unwrap();
    assert_eq!(left.len(), 31);
    assert_eq!(left[0].start_ms, BASE_MS + 9 * day_ms);
    assert_eq!(store.prune(now).unwrap(), 0);
}

#[test]
fn thirty_days_of_minutes_in_one_transaction() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let pts: Vec<Point> = (0..43_200)
        .map(|m| {
            point(
                BASE_MS + m * MINUTE_MS,
                (m % 100) as f32,
                Some(m as f32 * 1e6),
            )
        })
        .collect();
    let started = Instant::now();
    assert_eq!(store.save_points(&pts).unwrap(), 43_200);
    let insert = started.elapsed();
    let started = Instant::now();
    let back = store.load_points(i64::MIN).unwrap();
    let load = started.elapsed();
    let size_bytes: u64 = ["", "-wal"]
        .iter()
        .map(|s| fs::metadata(format!("{}{s}", path.display())).map_or(0, |m| m.len()))
        .sum();
    eprintln!(
        "store: 43200 minute rows inserted in {insert:?}, loaded in {load:?}, file {size_bytes} bytes"
    );
    assert_eq!(back.len(), 43_200);
    assert!(same(&back, &pts));
    // Restoring them into the minute tier of a new history fills it exactly.
    let mut history = History::default();
    assert_eq!(history.restore(MINUTE_TIER, &back), 43_200);
    assert_eq!(history.points(MINUTE_TIER).len(), 43_200);
}

#[test]
fn history_survives_a_restart() {
    let (_tmp, path) = db();
    let mut before = History::default();
    let start = UNIX_EPOCH + Duration::from_millis(BASE_MS as u64);
    for s in 0..(10 * 60) {
        let free = 50.0 + (s % 7) as f64;
        before.add(
            start + Duration::from_secs(s),
            [Some(free), Some(1e9), None, None],
        );
    }
    let mut store = open(&path);
    store.save_points(&before.points(MINUTE_TIER)).unwrap();
    drop(store);

    let store = open(&path);
    let mut after = History::default();
    after.add(
        start + Duration::from_secs(600),
        [Some(70.0), None, None, None],
    );
    after.restore(MINUTE_TIER, &store.load_points(BASE_MS).unwrap());
    let pts = after.points(MINUTE_TIER);
    assert_eq!(pts.len(), 11);
    assert!(same(&pts[..10], &before.points(MINUTE_TIER)));
    assert_eq!(pts[10].get(Metric::FreePercent).mean, 70.0);
}

#[test]
fn garbage_file_is_moved_aside_and_replaced() {
    let (tmp, path) = db();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7919 % 251) as u8).collect();
    fs::write(&path, &garbage).unwrap();
    let (mut store, problem) = Store::open(&path).unwrap();
    let problem = problem.expect("a problem");
    assert_eq!(problem.path, path);
    assert!(problem.reason.contains("not a database"), "{problem}");
    let moved = corrupt_files(&tmp.path().join("data"));
    assert_eq!(moved, vec![problem.moved_to.clone()]);
    assert!(moved[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("history.db.corrupt-"));
    assert_eq!(
        fs::read(&moved[0]).unwrap(),
        garbage,
        "the damaged file is kept"
    );
    assert!(problem.to_string().contains("moved to"));
    // The fresh database works and opens cleanly next time.
    store.save_points(&[point(BASE_MS, 1.0, None)]).unwrap();
    drop(store);
    let store = open(&path);
    assert_eq!(store.load_points(i64::MIN).unwrap().len(), 1);
}

#[test]
fn newer_or_foreign_schema_is_moved_aside() {
    for setup in [
        "PRAGMA user_version = 99",
        "CREATE TABLE jobs (x); PRAGMA user_version = 0",
        "CREATE TABLE history_minutes (start_ms INTEGER); PRAGMA user_version = 1",
    ] {
        let (_tmp, path) = db();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute_batch(setup)
            .unwrap();
        let (store, problem) = Store::open(&path).unwrap();
        let problem = problem.unwrap_or_else(|| panic!("{setup}: no problem"));
        assert!(
            problem.reason.contains("schema"),
            "{setup}: {}",
            problem.reason
        );
        assert!(problem.moved_to.exists());
        assert!(store.recent_jobs(10).unwrap().is_empty());
    }
}

#[test]
fn unopenable_path_is_an_error_and_left_alone() {
    let (_tmp, path) = db();
    fs::create_dir_all(&path).unwrap(); // a folder where the file should be
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(path.is_dir());
}

fn verdict(fits: bool, growth_bytes: u64) -> Verdict {
    Verdict {
        processes: 1,
        fits_tolerance_bytes: 64 << 20,
        stages: Vec::new(),
        tight: None,
        fits,
        swap_growth_bytes: growth_bytes,
        swap_start_bytes: 1 << 30,
        peak_footprint_bytes: Some(18 << 30),
        lowest_free_percent: Some(12.5),
        in_use_taken_bytes: None,
        duration: Duration::from_secs(95),
        pauses: 0,
        paused: Duration::ZERO,
        oom_killed: None,
        ended: if fits {
            EndReason::Exited { code: 0 }
        } else {
            EndReason::Stopped {
                reason: StopReason::SwapBudget {
                    growth_bytes,
                    budget_bytes: 8 << 30,
                },
            }
        },
    }
}

fn job(pid: u32, ended_at_ms: i64, fits: bool) -> FinishedJob {
    FinishedJob {
        identity: ProcessIdentity {
            pid,
            start_time: 1000 + u64::from(pid),
        },
        command: format!("python generate.py --n {pid}"),
        mode: if fits { JobMode::Watch } else { JobMode::Guard },
        started_at_ms: ended_at_ms - 95_000,
        ended_at_ms,
        verdict: verdict(fits, if fits { 0 } else { 9 << 30 }),
    }
}

#[test]
fn finished_jobs_newest_first() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let jobs = [
        job(10, BASE_MS, true),
        job(11, BASE_MS + 2, false),
        job(12, BASE_MS + 1, true),
    ];
    let ids: Vec<i64> = jobs
        .iter()
        .map(|j| {
            let context = RunContext {
                key: headroom_rules::fit::key_of_command_line(&j.command),
                ..RunContext::default()
            };
            store.record_run(j, &context).unwrap()
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let recent = store.recent_jobs(2).unwrap();
    assert_eq!(recent.len(), 2);
    assert_eq!(recent[0].job, jobs[1]);
    assert_eq!(recent[0].id, ids[1]);
    assert_eq!(recent[1].job, jobs[2]);
    let (fits, growth): (bool, u64) = store
        .conn
        .query_row(
            "SELECT fits, swap_growth_bytes FROM jobs WHERE id = ?1",
            [ids[1]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((fits, growth), (false, 9 << 30), "queryable columns");
    // A row whose verdict cannot be read is skipped, not an error.
    store
        .conn
        .execute("UPDATE jobs SET verdict_json = '{' WHERE id = ?1", [ids[1]])
        .unwrap();
    let recent = store.recent_jobs(10).unwrap();
    assert_eq!(recent.len(), 2);
    assert!(recent.iter().all(|r| r.id != ids[1]));
}

fn guard(identity: ProcessIdentity, budget_bytes: u64) -> SavedJob {
    SavedJob {
        identity,
        command: "python train.py".into(),
        mode: JobMode::Guard,
        started_at_ms: BASE_MS,
        swap_budget_bytes: budget_bytes,
        kill_free_percent: 10.0,
        swap_start_bytes: 2 << 30,
        boot_id: Counters::new().boot_id().unwrap_or_default(),
        on_budget: OnBudget::Stop,
        pauses: 0,
        paused_since_ms: None,
        key: None,
        free_start_percent: None,
        in_use_start_bytes: None,
    }
}

#[test]
fn guards_save_replace_remove() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let a = ProcessIdentity {
        pid: 100,
        start_time: 5,
    };
    let b = ProcessIdentity {
        pid: 100,
        start_time: 6,
    };
    store.save_active_job(&guard(a, 8 << 30)).unwrap();
    store.save_active_job(&guard(b, 8 << 30)).unwrap();
    store.save_active_job(&guard(a, 4 << 30)).unwrap(); // replaces
    let all = store.active_jobs().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        all.iter().find(|g| g.identity == a),
        Some(&guard(a, 4 << 30))
    );
    assert!(store.remove_active_job(a).unwrap());
    assert!(!store.remove_active_job(a).unwrap());
    // A paused guard keeps its choice, its pauses and since when it is paused; the key named
    // for it, free memory and (a Mac's) memory in use at its start.
    let paused = SavedJob {
        on_budget: OnBudget::Pause,
        pauses: 2,
        paused_since_ms: Some(BASE_MS + 5000),
        key: Some("qwen image".into()),
        free_start_percent: Some(61.5),
        in_use_start_bytes: Some(21 << 30),
        ..guard(b, 8 << 30)
    };
    store.save_active_job(&paused).unwrap();
    drop(store);
    let store = open(&path);
    assert_eq!(store.active_jobs().unwrap(), vec![paused]);
}

#[test]
fn restorable_guards_keep_only_live_processes() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let counters = Counters::new();
    let Ok(me) = ProcessIdentity::of(&counters, std::process::id()) else {
        eprintln!("process identity unsupported here; skipping");
        return;
    };
    let recycled = ProcessIdentity {
        pid: me.pid,
        start_time: me.start_time.wrapping_add(1),
    };
    store.save_active_job(&guard(me, 8 << 30)).unwrap();
    store.save_active_job(&guard(recycled, 8 << 30)).unwrap();
    let live = store.restorable_jobs(&counters).unwrap();
    assert_eq!(live, vec![guard(me, 8 << 30)]);
    assert_eq!(
        store.active_jobs().unwrap(),
        live,
        "the dead one is deleted"
    );
}

#[test]
fn a_version_3_database_keeps_its_running_jobs() {
    let (_tmp, path) = db();
    let mut watched = guard(
        ProcessIdentity {
            pid: 4242,
            start_time: 7,
        },
        8 << 30,
    );
    watched.mode = JobMode::Watch;
    open(&path).save_active_job(&watched).unwrap();
    // What a Headroom before migration 4 left: the same rows in `active_guards`, the jobs
    // table without the run history's columns (migration 5), version 3.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE active_jobs DROP COLUMN key; \
         ALTER TABLE active_jobs DROP COLUMN free_start_percent; \
         ALTER TABLE active_jobs DROP COLUMN in_use_start_bytes; \
         ALTER TABLE active_jobs RENAME TO active_guards; \
         DROP INDEX jobs_by_key; \
         ALTER TABLE jobs DROP COLUMN key; ALTER TABLE jobs DROP COLUMN need_bytes; \
         ALTER TABLE jobs DROP COLUMN need_lower_bound; ALTER TABLE jobs DROP COLUMN total_bytes; \
         ALTER TABLE jobs DROP COLUMN free_start_percent; ALTER TABLE jobs DROP COLUMN cwd; \
         ALTER TABLE jobs DROP COLUMN hostname; ALTER TABLE jobs DROP COLUMN usable_bytes; \
         PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let store = open(&path);
    assert_eq!(store.active_jobs().unwrap(), vec![watched]);
}

#[test]
fn many_processes_opening_a_new_database_at_once_migrate_it_once_and_damage_nothing() {
    // Guards that start together each open the history: the first to open a new database
    // migrates it; the others must wait for it, not run a step twice and take the
    // "duplicate column" for damage (which moved the database aside, losing its runs).
    for _ in 0..20 {
        let (tmp, path) = db();
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    barrier.wait();
                    let (_, problem) = Store::open(&path).unwrap();
                    assert_eq!(problem, None);
                });
            }
        });
        assert!(corrupt_files(&tmp.path().join("data")).is_empty());
    }
}

#[test]
fn a_run_never_measured_predicts_nothing() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let context = RunContext {
        key: "train.py".into(),
        ..RunContext::default()
    };
    // Killed before its first check: no footprint, no level, no swap growth.
    let mut unmeasured = job(20, BASE_MS, true);
    unmeasured.verdict.ended = EndReason::Signaled { signal: 9 };
    unmeasured.verdict.peak_footprint_bytes = None;
    unmeasured.verdict.lowest_free_percent = None;
    unmeasured.verdict.swap_growth_bytes = 0;
    assert!(!unmeasured.verdict.measured());
    store.record_run(&unmeasured, &context).unwrap();
    let (prediction, rows) = store.predict_key("train.py", BASE_MS + 1).unwrap();
    assert!(prediction.is_none() && rows.is_empty(), "{prediction:?}");
    // Still listed among the recent jobs: it ran.
    assert_eq!(store.recent_jobs(5).unwrap().len(), 1);
    // A measured run of the same key is what the prediction then rests on.
    store
        .record_run(&job(21, BASE_MS + 2, true), &context)
        .unwrap();
    let (prediction, rows) = store.predict_key("train.py", BASE_MS + 3).unwrap();
    assert_eq!((prediction.map(|p| p.runs), rows.len()), (Some(1), 1));
}

#[test]
fn a_run_keeps_the_usable_memory_its_levels_were_of() {
    let (_tmp, path) = db();
    let mut store = open(&path);
    let gib = 1u64 << 30;
    let mac = RunContext {
        key: "gen.py".into(),
        total_bytes: Some(48 * gib),
        usable_bytes: Some(47 * gib),
        ..RunContext::default()
    };
    store.record_run(&job(30, BASE_MS, true), &mac).unwrap();
    let linux = RunContext {
        key: "gen.py".into(),
        total_bytes: Some(24 * gib),
        ..RunContext::default()
    };
    store
        .record_run(&job(31, BASE_MS + 1, true), &linux)
        .unwrap();
    let rows = store.runs_of("gen.py", 10).unwrap();
    let kept: Vec<_> = rows
        .iter()
        .map(|r| (r.total_bytes, r.usable_bytes))
        .collect();
    assert_eq!(
        kept,
        [(Some(24 * gib), None), (Some(48 * gib), Some(47 * gib))]
    );
}
