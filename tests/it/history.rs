//! The run history and `headroom fit` with real processes: a job that allocates a known
//! amount, run three times under `guard`, is predicted for its fourth run at least at its
//! need and at most 25 % above; unknown keys, bad `--free` and a trace that is not one.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use crate::support;

use support::{headroom, hog_path};

const MIB: u64 = 1 << 20;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = headroom().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn three_runs_predict_the_fourth_within_a_quarter() {
    let hog = hog_path().display().to_string();
    let tag = std::process::id().to_string();
    for mib in [256u64, 512, 1024] {
        let key = format!("hog-{mib}-{tag}");
        let size = format!("{mib}M");
        for n in 0..3 {
            let (code, _, err) = run(&[
                "guard",
                "--wait-free",
                "0",
                "--poll",
                "0.2s",
                "--key",
                &key,
                "--",
                &hog,
                &size,
                "--hold",
                "1",
            ]);
            assert_eq!(code, Some(0), "{err}");
            if n > 0 {
                assert!(
                    err.contains(&format!("{key}: needs about")),
                    "the prediction line\n{err}"
                );
                // Inside the verdict line: "...: fits: swap +0 B, ...; needed X, predicted Y".
                let verdict = err
                    .lines()
                    .find(|l| l.contains("fits: swap"))
                    .unwrap_or_else(|| panic!("no verdict line\n{err}"));
                assert!(
                    verdict.contains("; needed ") && verdict.contains(", predicted "),
                    "{err}"
                );
            }
        }
        let (code, out, err) = run(&["fit", "--key", &key, "--json", "--free", "100%", "--", &hog]);
        assert_eq!(code, Some(0), "{out}{err}");
        let json: serde_json::Value = serde_json::from_str(&out).unwrap();
        let predicted = json["prediction"]["need_bytes"].as_u64().unwrap();
        let need = mib * MIB;
        assert_eq!(json["prediction"]["runs"].as_u64(), Some(3));
        assert!(
            predicted >= need && predicted <= need + need / 4,
            "{mib} MiB: predicted {} MiB",
            predicted / MIB
        );
        // Too little free memory: won't fit, exit 1, the shortfall said.
        let (code, out, _) = run(&[
            "fit",
            "--key",
            &key,
            "--free",
            &format!("{}M", mib / 2),
            "--",
            &hog,
        ]);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("won't fit") && out.contains("short"), "{out}");
        let (code, out, _) = run(&["history", &key, "--json"]);
        assert_eq!(code, Some(0));
        let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), 3);
        let (code, out, _) = run(&["history", "forget", &key]);
        assert_eq!(code, Some(0));
        assert!(out.is_empty());
        let (code, _, err) = run(&["fit", "--key", &key, "--", &hog]);
        assert_eq!(code, Some(5), "no past run: {err}");
        assert!(
            err.contains("no past run of") && err.contains("headroom guard"),
            "{err}"
        );
    }
}

#[test]
fn no_history_keeps_no_record_and_bad_input_is_named() {
    let key = format!("nohist-{}", std::process::id());
    let (code, _, err) = run(&[
        "guard",
        "--wait-free",
        "0",
        "--no-history",
        "--key",
        &key,
        "--",
        "true",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, _) = run(&["fit", "--key", &key, "--", "true"]);
    assert_eq!(code, Some(5), "--no-history kept a record");
    let (code, _, err) = run(&["fit", "--free", "lots", "--", "true"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--free"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"start\"}\nnot json\n").unwrap();
    let (code, _, err) = run(&["history", "import", bad.to_str().unwrap(), "--key", &key]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("bad.jsonl") && err.contains('2'),
        "file and line: {err}"
    );
}

#[test]
fn imported_mac_traces_are_past_runs() {
    let key = format!("qwen-{}", std::process::id());
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/core/tests/fixtures/macos-traces/qwen-image-2026-10-06/eager-1.trace.jsonl"
    );
    let (code, out, err) = run(&[
        "history",
        "import",
        trace,
        "--key",
        &key,
        "--total-memory",
        "48G",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("doesn't fit"), "it swapped: {err}");
    let (code, out, err) = run(&["fit", "--key", &key, "--free", "40G", "--json", "--", "x"]);
    let json: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|_| panic!("{code:?} {out}{err}"));
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(json["fits"], false);
    // The key's runs were on a 48 GB Mac: `--free` is asked of that machine (its floor),
    // and the answer says so; more free memory than it has is refused.
    assert_eq!(json["total_bytes"].as_u64(), Some(48 << 30), "{out}");
    assert_eq!(
        json["floor_bytes"].as_u64(),
        Some((48u64 << 30) / 10),
        "{out}"
    );
    let (_, out, _) = run(&["fit", "--key", &key, "--free", "40G", "--", "x"]);
    assert!(
        out.contains("free on a 48") && out.contains("machine"),
        "{out}"
    );
    let (code, _, err) = run(&["fit", "--key", &key, "--free", "60G", "--", "x"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--free") && err.contains("more than"), "{err}");
    // `--total-memory` names another machine: a 96 GB one has room for it.
    let (code, out, err) = run(&[
        "fit",
        "--key",
        &key,
        "--free",
        "80G",
        "--total-memory",
        "96G",
        "--",
        "x",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("free on a 96") && out.contains("fits"),
        "{out}"
    );
    let (code, _, err) = run(&["fit", "--key", &key, "--total-memory", "96G", "--", "x"]);
    assert_eq!(code, Some(2), "--total-memory needs --free: {err}");
    let (_, out, _) = run(&["history", "--json"]);
    assert!(out.contains(&key), "{out}");
    run(&["history", "forget", &key]);
}

#[test]
fn a_watched_run_is_recorded_too() {
    let key = format!("watched-{}", std::process::id());
    let hog = hog_path();
    let mut child = std::process::Command::new(&hog)
        .args(["128M", "--hold", "2"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let (code, _, err) = run(&["watch", &pid, "--poll", "0.2s", "--key", &key]);
    child.wait().unwrap();
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = run(&["history", &key, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), 1, "{out}");
    let need = rows[0]["need_bytes"].as_u64().unwrap();
    assert!(need >= 100 * MIB, "its need is what it took: {need}");
    let (code, _, _) = run(&["fit", "--key", &key, "--free", "100%", "--", "x"]);
    assert_eq!(code, Some(0), "a prediction from the watched run");
    run(&["history", "forget", &key]);
}

#[test]
fn a_read_only_history_is_read() {
    // A history on a read-only file system (a read-only bind mount: as root, a file's mode
    // would not stop a write): `fit` and `history` read it, and their exit codes mean what
    // they say (not 2, "bad flags").
    let Some(_lock) = support::real_swap_lock() else {
        return; // (mounting needs root; the lock says why it skips)
    };
    let home = tempfile::tempdir().unwrap();
    let as_home = |args: &[&str]| {
        let out = headroom()
            .env("HEADROOM_HOME", home.path())
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let key = "read-only-history";
    let (code, _, err) = as_home(&["guard", "--wait-free", "0", "--key", key, "--", "true"]);
    assert_eq!(code, Some(0), "{err}");
    let data = home.path().join("data");
    let bind = |args: &[&str]| {
        let ok = std::process::Command::new("mount")
            .args(args)
            .arg(&data)
            .arg(&data)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount {args:?}");
    };
    bind(&["--bind"]);
    bind(&["-o", "remount,ro,bind"]);
    let shown = as_home(&["history", key]);
    let listed = as_home(&["history"]);
    let fit = as_home(&["fit", "--key", key, "--free", "100%", "--", "true"]);
    let _ = std::process::Command::new("umount").arg(&data).status();
    assert_eq!(shown.0, Some(0), "history KEY: {}", shown.2);
    assert!(shown.1.contains("fits"), "its run: {}", shown.1);
    assert_eq!(listed.0, Some(0), "history: {}", listed.2);
    assert!(listed.1.contains(key), "{}", listed.1);
    assert_eq!(fit.0, Some(0), "fit: {}", fit.2);
}

#[test]
fn a_typed_key_is_one_key_wherever_it_is_typed_and_is_printed_escaped() {
    let key = format!("spaced-{}", std::process::id());
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/core/tests/fixtures/macos-traces/qwen-image-2026-10-06/eager-1.trace.jsonl"
    );
    let spaced = format!("  {key}  ");
    let (code, _, err) = run(&[
        "history",
        "import",
        trace,
        "--key",
        &spaced,
        "--total-memory",
        "48G",
    ]);
    assert_eq!(code, Some(0), "{err}");
    // The same key, however it is typed, everywhere.
    let (code, out, err) = run(&[
        "fit",
        "--key",
        &key,
        "--free",
        "1T",
        "--total-memory",
        "2T",
        "--",
        "x",
    ]);
    assert_eq!(code, Some(0), "fit finds the imported run: {out}{err}");
    let (_, out, _) = run(&["history", "--json"]);
    let keys: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        keys.as_array()
            .unwrap()
            .iter()
            .any(|k| k["key"] == key.as_str()),
        "stored trimmed: {out}"
    );
    let (code, out, _) = run(&["history", &spaced]);
    assert_eq!(code, Some(0));
    assert!(out.contains("needed"), "history KEY trims it too: {out}");
    // A key with control characters is kept, and printed escaped.
    let evil = format!("evil\n\u{1b}[2J{}", std::process::id());
    let (code, _, err) = run(&["guard", "--wait-free", "0", "--key", &evil, "--", "true"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = run(&["fit", "--key", &evil, "--free", "100%", "--", "true"]);
    assert_eq!(code, Some(0), "{err}");
    let fit = out + &err;
    let (_, listed, _) = run(&["history"]);
    for said in [&fit, &listed] {
        assert!(!said.contains('\u{1b}'), "printed raw: {said:?}");
        assert!(said.contains("evil\\x{a}"), "printed escaped: {said:?}");
    }
    run(&["history", "forget", &key]);
    run(&["history", "forget", &evil]);
}

#[test]
fn fit_compares_with_the_floor_the_jobs_guard_keeps() {
    // 10 GB free on a 20 GB machine; a 6 GB need fits above a 10 % floor (8 GB room), not
    // above the 50 % floor a guard run with `--kill-free 50` keeps (0 GB room).
    let ask = |floor: &str| {
        run(&[
            "fit",
            "--need",
            "6G",
            "--free",
            "10G",
            "--total-memory",
            "20G",
            "--kill-free",
            floor,
            "--json",
        ])
    };
    let (code, out, err) = ask("10");
    assert_eq!(code, Some(0), "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["floor_bytes"], 2u64 << 30);
    let (code, out, err) = ask("50");
    assert_eq!(code, Some(1), "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["floor_bytes"], 10u64 << 30);
    assert_eq!(json["short_bytes"], 6u64 << 30);
    let (code, _, err) = ask("120");
    assert_eq!(code, Some(2));
    assert!(err.contains("--kill-free"), "{err}");
}

#[test]
fn an_import_is_honest_about_what_it_reads_and_adds() {
    // The same run imported again (the same file, a link to it) is added once; a FIFO and a
    // device are refused at once (one would hang the import, the other never end), each
    // naming the file; figures past the bounds name the file and line.
    let key = format!("twice-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/core/tests/fixtures/macos-traces/qwen-image-2026-10-06/eager-1.trace.jsonl"
    );
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(trace, &link).unwrap();
    for (n, path) in [trace, trace, link.to_str().unwrap()]
        .into_iter()
        .enumerate()
    {
        let (code, _, err) = run(&["history", "import", path, "--key", &key]);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(
            err.contains("in the history already: not imported again"),
            n > 0,
            "import {n}: {err}"
        );
    }
    let (_, out, _) = run(&["history", &key, "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{out}");

    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for path in [fifo.to_str().unwrap(), "/dev/zero"] {
        let mut child = headroom()
            .args(["history", "import", path, "--key", &key])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let ended = support::wait_until(std::time::Duration::from_secs(10), || {
            child.try_wait().unwrap().is_some()
        });
        if !ended {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(ended, "{path}: the import hangs");
        assert_eq!(out.status.code(), Some(2), "{path}: {err}");
        assert!(
            err.contains(&format!("{path}: not a regular file")),
            "{err}"
        );
    }

    let history = dir.path().join("history.jsonl");
    std::fs::write(
        &history,
        r#"{"end": "2026-10-05T10:00:00+00:00", "who": "w", "cmd": "x", "exit": 0, "run_s": 1.0, "peak_footprint": 18446744073709551615, "swap_start": 0, "swap_peak": 0}"#,
    )
    .unwrap();
    let (code, _, err) = run(&["history", "import", history.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:1: 'peak_footprint'", history.display())),
        "{err}"
    );
}
