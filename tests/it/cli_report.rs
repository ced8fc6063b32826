//! `headroom guard --report FILE.md`: the report file with the verdict, the per-stage table
//! and the chart beside it; the same report appended to `$GITHUB_STEP_SUMMARY`; a report
//! that cannot be written starts nothing.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use support::{headroom, run_to_files, test_home};

#[test]
fn the_report_has_the_verdict_the_stages_and_the_chart() {
    let dir = test_home().join("report");
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("job report.md");
    let summary = dir.join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/stages.py");
    let mut cmd = headroom();
    cmd.env("GITHUB_STEP_SUMMARY", &summary).args([
        "guard",
        "--wait-free",
        "0",
        "--poll",
        "0.2s",
        "--report",
        report.to_str().unwrap(),
        "--",
        "python3",
        script,
        "5",
        "10",
        "20",
        "--hold",
        "1",
    ]);
    let (code, _, err) = run_to_files(cmd);
    assert_eq!(code, Some(0), "{err}");
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.starts_with("## Headroom: <code>python3 "), "{md}");
    assert!(md.contains("**fits**: fits: swap"), "{md}");
    assert!(md.contains("| ended | exited with code 0 |"), "{md}");
    for stage in ["load", "work", "decode"] {
        assert!(
            md.contains(&format!("\n| {stage} | ")),
            "no {stage} row: {md}"
        );
    }
    assert!(md.contains("](job%20report.svg)"), "{md}");
    let svg = std::fs::read_to_string(dir.join("job report.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains(">\ndecode\n</text>"),
        "the chart marks the stages"
    );
    // The step summary keeps what was there and gets the report, without the image.
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(
        summary.starts_with("earlier step\n## Headroom: "),
        "{summary}"
    );
    assert!(
        summary.contains("| decode | ") && !summary.contains(".svg"),
        "{summary}"
    );

    // --no-step-summary: the file only.
    let other = test_home().join("report/other-summary.md");
    let mut cmd = headroom();
    cmd.env("GITHUB_STEP_SUMMARY", &other).args([
        "guard",
        "--wait-free",
        "0",
        "--no-step-summary",
        "--",
        "true",
    ]);
    assert_eq!(run_to_files(cmd).0, Some(0));
    assert!(!other.exists());
}

#[test]
fn an_unwritable_report_starts_nothing() {
    let marker = test_home().join("report-started");
    let mut cmd = headroom();
    cmd.args([
        "guard",
        "--wait-free",
        "0",
        "--report",
        "/nonexistent/dir/r.md",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ]);
    let (code, _, err) = run_to_files(cmd);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/dir/r.md"), "{err}");
    assert!(!marker.exists(), "the command ran");
}

#[test]
fn the_chart_beside_the_report_never_follows_a_link_planted_there() {
    // Someone who may write in the report's folder (a shared CI workspace) plants
    // `memory.svg` as a link to a file of the user's: writing the chart must replace the
    // link, never write through it.
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("precious.txt");
    std::fs::write(&victim, "keep me\n").unwrap();
    let chart = dir.path().join("memory.svg");
    std::os::unix::fs::symlink(&victim, &chart).unwrap();
    let report = dir.path().join("memory.md");
    let mut cmd = headroom();
    cmd.args(["guard", "--wait-free", "0", "--report"])
        .arg(&report)
        .args(["--", "sleep", "0.5"]);
    let (code, _, err) = run_to_files(cmd);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        std::fs::read_to_string(&victim).unwrap() == "keep me\n",
        "the chart was written through the link"
    );
    let meta = std::fs::symlink_metadata(&chart).unwrap();
    assert!(meta.is_file(), "the chart is a file of its own now");
    assert!(std::fs::read_to_string(&chart).unwrap().contains("<svg"));
    assert!(std::fs::read_to_string(&report)
        .unwrap()
        .contains("memory.svg"));
}
