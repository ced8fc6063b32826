//! `guard --wait-fit` and its queue, with real guards: two jobs that each need 60 % of the
//! room never run at once (20 tries, reservations), nor three while the queue is listed; the
//! queue listed in turn; a waiting guard taken out with `headroom stop` or Ctrl-C, and one
//! killed outright, leave no place behind;
//! a key with no past run falls back to `--wait-free` and says so.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::headroom_bin;

/// A `headroom` command with its own Headroom folder (its own queue and history).
fn hr(home: &Path) -> Command {
    let mut cmd = Command::new(headroom_bin());
    support::default_keys(&mut cmd);
    cmd.env("HEADROOM_HOME", home)
        .env("HEADROOM_JOB_CGROUP", "off");
    cmd
}

fn meminfo_bytes(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Free memory above the guard's default free floor (10 % of total), bytes.
fn room_bytes() -> u64 {
    meminfo_bytes("MemAvailable").saturating_sub(meminfo_bytes("MemTotal") / 10)
}

/// Gives `key` one past run that took `need_bytes` (a trace imported, of this machine).
fn seed(home: &Path, key: &str, need_bytes: u64) {
    let total = meminfo_bytes("MemTotal");
    let drop_percent = need_bytes as f64 / total as f64 * 100.0;
    let trace = home.join(format!("{key}.trace.jsonl"));
    let lines = [
        r#"{"type":"start","interval":0.5}"#.to_string(),
        r#"{"type":"sample","t":0.0,"footprint":1000000,"swap_used":0,"level":99.0}"#.to_string(),
        format!(
            r#"{{"type":"sample","t":1.0,"footprint":{need_bytes},"swap_used":0,"level":{}}}"#,
            99.0 - drop_percent
        ),
        r#"{"type":"end"}"#.to_string(),
    ];
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let out = hr(home)
        .args(["history", "import", trace.to_str().unwrap(), "--key", key])
        .args(["--total-memory", &total.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// The predicted need of `key`, as `headroom fit --json` says it.
fn predicted_bytes(home: &Path, key: &str) -> u64 {
    let out = hr(home)
        .args(["fit", "--key", key, "--json", "--", "x"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["prediction"]["need_bytes"].as_u64().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `guard --wait-fit --key KEY -- CMD...`, spawned with piped output.
fn guard(home: &Path, key: &str, extra: &[&str], cmd: &[&str]) -> Child {
    hr(home)
        .args(["guard", "--wait-fit", "--poll", "0.1s", "--key", key])
        .args(extra)
        .arg("--")
        .args(cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The places in the queue (`headroom queue --json`).
fn queued(home: &Path) -> Vec<serde_json::Value> {
    let out = hr(home).args(["queue", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Gives `key` a past run that needs about 60 % of the room now: each such job fits alone,
/// two do not (the premise of the tests that race them, asserted).
fn seed_sixty_percent(home: &Path, key: &str) {
    seed(home, key, room_bytes() / 2);
    let need = predicted_bytes(home, key);
    let room = room_bytes();
    assert!(
        need < room && 2 * need > room,
        "the test's premise: each fits alone, two do not (need {need}, room {room})"
    );
}

/// A shell job that writes `TAG start NS` and, `seconds` later, `TAG end NS` to `log`.
fn logged_job(log: &Path, tag: &str, seconds: f64) -> String {
    let log = log.display();
    format!(
        "echo {tag} start $(date +%s%N) >> {log}; sleep {seconds}; \
         echo {tag} end $(date +%s%N) >> {log}"
    )
}

/// No place left in the queue's folder (the lock file may stay).
fn assert_no_state(home: &Path) {
    let dir = home.join("state/queue");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".lock")
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", dir.display());
}

#[test]
fn two_guards_that_each_need_60_percent_of_the_room_never_both_start() {
    let home = tempfile::tempdir().unwrap();
    let key = "sixty";
    seed_sixty_percent(home.path(), key);
    let log = home.path().join("log");
    // Each job holds almost nothing: free memory stays as large as it was, and only the
    // reservation of the one admitted first keeps the other out.
    let job = |tag: &str| logged_job(&log, tag, 0.5);
    for attempt in 0..20 {
        std::fs::write(&log, "").unwrap();
        let (job_a, job_b) = (job("a"), job("b"));
        // (--no-history: these runs must not lower the prediction the test is built on.)
        let a = guard(home.path(), key, &["--no-history"], &["sh", "-c", &job_a]);
        let b = guard(home.path(), key, &["--no-history"], &["sh", "-c", &job_b]);
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        assert!(a.status.success(), "try {attempt}: {}", text(&a));
        assert!(b.status.success(), "try {attempt}: {}", text(&b));
        let said = format!("{}{}", text(&a), text(&b));
        assert!(
            said.contains("waiting for room: needs ") && said.contains(" in line"),
            "try {attempt}: one of them waited in line\n{said}"
        );
        let times: Vec<(String, String, u128)> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                (w[0].to_string(), w[1].to_string(), w[2].parse().unwrap())
            })
            .collect();
        let at = |tag: &str, what: &str| {
            times
                .iter()
                .find(|(t, w, _)| t == tag && w == what)
                .map(|x| x.2)
                .unwrap()
        };
        let (a_start, a_end, b_start, b_end) = (
            at("a", "start"),
            at("a", "end"),
            at("b", "start"),
            at("b", "end"),
        );
        assert!(
            a_end < b_start || b_end < a_start,
            "try {attempt}: both ran at once\n{times:?}\n{said}"
        );
        assert_no_state(home.path());
    }
}

#[test]
fn three_guards_race_for_one_reservation_while_the_queue_is_listed() {
    // Not tried before (issue 42): three `--wait-fit` guards that each need 60 % of the room
    // start at once while `headroom queue --json` lists the line in a loop. One job runs at
    // a time, every listing reads (never a half-written place), at most one place is
    // admitted in any listing, and no place is left.
    let home = tempfile::tempdir().unwrap();
    let key = "race";
    seed_sixty_percent(home.path(), key);
    let log = home.path().join("log");
    let job = |tag: &str| logged_job(&log, tag, 0.4);
    for attempt in 0..3 {
        std::fs::write(&log, "").unwrap();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let lister = {
            let (home, done) = (home.path().to_path_buf(), std::sync::Arc::clone(&done));
            std::thread::spawn(move || {
                let mut listings = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let list = queued(&home);
                    let admitted = list.iter().filter(|p| p["state"] != "waiting").count();
                    assert!(admitted <= 1, "two admitted at once: {list:?}");
                    listings += 1;
                }
                listings
            })
        };
        let guards: Vec<Child> = ["a", "b", "c"]
            .iter()
            .map(|tag| {
                guard(
                    home.path(),
                    key,
                    &["--no-history"],
                    &["sh", "-c", &job(tag)],
                )
            })
            .collect();
        for g in guards {
            let out = g.wait_with_output().unwrap();
            assert!(out.status.success(), "try {attempt}: {}", text(&out));
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let listings = lister.join().unwrap();
        assert!(listings > 0, "try {attempt}: the queue was never listed");
        let mut spans: Vec<(u128, u128)> = ["a", "b", "c"]
            .iter()
            .map(|tag| {
                let at = |what: &str| -> u128 {
                    std::fs::read_to_string(&log)
                        .unwrap()
                        .lines()
                        .find(|l| l.starts_with(&format!("{tag} {what} ")))
                        .and_then(|l| l.split(' ').nth(2)?.parse().ok())
                        .unwrap()
                };
                (at("start"), at("end"))
            })
            .collect();
        spans.sort_unstable();
        assert!(
            spans.windows(2).all(|w| w[0].1 < w[1].0),
            "try {attempt}: two ran at once: {spans:?}"
        );
        assert_no_state(home.path());
    }
}

#[test]
fn the_queue_is_listed_in_turn_and_a_waiting_guard_can_be_taken_out() {
    let home = tempfile::tempdir().unwrap();
    // Needs far more than this machine has: waits until taken out.
    seed(home.path(), "huge", 4 * meminfo_bytes("MemTotal") / 5);
    let total = meminfo_bytes("MemTotal");
    let huge_need = predicted_bytes(home.path(), "huge");
    assert!(
        huge_need > room_bytes(),
        "premise: it does not fit ({huge_need} of {total})"
    );
    seed(home.path(), "small", 1 << 20);
    let mut huge = guard(home.path(), "huge", &["--start-timeout", "5m"], &["true"]);
    wait_until("the first guard in line", || queued(home.path()).len() == 1);
    let mut small = guard(home.path(), "small", &["--start-timeout", "5m"], &["true"]);
    wait_until("the second guard in line", || {
        queued(home.path()).len() == 2
    });

    // In turn, both waiting: the small one may not pass (the huge one would never fit
    // beside it, and nothing predicts when it could start).
    let list = queued(home.path());
    assert_eq!(list[0]["key"], "huge");
    assert_eq!(list[0]["state"], "waiting");
    assert_eq!(list[0]["guard"]["pid"].as_u64(), Some(u64::from(huge.id())));
    assert_eq!(list[1]["key"], "small");
    assert_eq!(list[1]["state"], "waiting");
    assert!(list[0]["ticket"].as_u64() < list[1]["ticket"].as_u64());
    let out = hr(home.path()).arg("queue").output().unwrap();
    let listing = text(&out);
    assert!(
        listing.contains("waiting") && listing.contains("huge"),
        "{listing}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        small.try_wait().unwrap().is_none(),
        "the small one waits its turn"
    );

    // No job yet: pause is refused, naming why; stop takes the guard out of the line.
    let pid = huge.id().to_string();
    let out = hr(home.path()).args(["pause", &pid]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("waiting in line"), "{}", text(&out));
    let out = hr(home.path()).args(["stop", &pid]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let status = huge.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(143),
        "a stopped waiting guard exits 143"
    );

    // Now first in line, the small one starts and ends; nothing is left.
    let out = small.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("behind huge"),
        "it said whom it waited behind\n{}",
        text(&out)
    );
    assert_no_state(home.path());

    // Ctrl-C of a waiting guard: exit 130, no place left.
    let huge = guard(home.path(), "huge", &["--start-timeout", "5m"], &["true"]);
    wait_until("the guard in line", || queued(home.path()).len() == 1);
    let pid = i32::try_from(huge.id()).unwrap();
    // SAFETY: kill(2) on the guard this test spawned and has not reaped.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = huge.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_no_state(home.path());
}

#[test]
fn a_guard_killed_outright_frees_its_place() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "huge", 4 * meminfo_bytes("MemTotal") / 5);
    seed(home.path(), "small", 1 << 20);
    let mut huge = guard(home.path(), "huge", &["--start-timeout", "5m"], &["true"]);
    wait_until("the guard in line", || queued(home.path()).len() == 1);
    huge.kill().unwrap();
    huge.wait().unwrap();
    // Its file is still there, but its pid and start time name nobody: the next guard
    // removes it and is first in line.
    let started = Instant::now();
    let out = guard(home.path(), "small", &["--start-timeout", "1m"], &["true"])
        .wait_with_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !text(&out).contains("behind huge"),
        "the gone guard held it up\n{}",
        text(&out)
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(queued(home.path()).is_empty());
    assert_no_state(home.path());
}

#[test]
fn a_key_with_no_past_run_waits_by_wait_free_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let out = guard(home.path(), "never-ran", &["--wait-free", "0"], &["true"])
        .wait_with_output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("no past run of never-ran: waiting by --wait-free (0%)"),
        "{}",
        text(&out)
    );
    assert_no_state(home.path());
}

#[test]
fn an_admitted_guard_killed_outright_keeps_its_reservation_while_its_job_runs() {
    // Guard A is admitted with a job that needs 60 % of the room and is then killed outright
    // (SIGKILL): its job runs on unguarded, and so does the need it was admitted with. A
    // second guard that needs as much waits until that job has ended, and then starts.
    use support::guard::sleep_tag;
    let home = tempfile::tempdir().unwrap();
    let key = "sixty-killed";
    seed(home.path(), key, room_bytes() / 2);
    let need = predicted_bytes(home.path(), key);
    assert!(
        need < room_bytes() && 2 * need > room_bytes(),
        "the test's premise: each fits alone, two do not"
    );
    let tag = sleep_tag(90);
    let mut a = guard(home.path(), key, &["--no-history"], &["sleep", &tag]);
    wait_until("A admitted", || {
        queued(home.path())
            .iter()
            .any(|p| p["admitted_at_ms"].is_i64())
    });
    // (Admitted comes just before the spawn: the job is looked for until it runs.)
    let mut job = None;
    wait_until("A's job started", || {
        job = support::live_with_tag(&tag)
            .into_iter()
            .find(|&p| p != a.id());
        job.is_some()
    });
    let job = job.unwrap();
    a.kill().unwrap();
    a.wait().unwrap();
    let b_started = home.path().join("b-started");
    let b_job = format!("touch {}", b_started.display());
    let b = guard(
        home.path(),
        key,
        &["--no-history", "--start-timeout", "1m"],
        &["sh", "-c", &b_job],
    );
    std::thread::sleep(Duration::from_secs(2));
    let started_early = b_started.exists();
    let listed = queued(home.path()).len();
    // SAFETY: kill has no memory-safety preconditions; the test's own sleep.
    unsafe { libc::kill(job as i32, libc::SIGKILL) };
    let out = b.wait_with_output().unwrap();
    assert!(
        !started_early,
        "B started while A's unguarded job ran with its reservation\n{}",
        text(&out)
    );
    assert_eq!(listed, 2, "A's place (its job runs) and B's");
    assert!(out.status.success(), "{}", text(&out));
    assert!(b_started.exists(), "B started once A's job ended");
    assert_no_state(home.path());
}
