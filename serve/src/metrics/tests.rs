//! The metrics from recorded counters and jobs: names, values, labels, totals counted once.

use std::time::{Duration, Instant};

use headroom_rules::policy::{EndReason, StopReason, Verdict};

use super::*;

fn verdict(fits: bool, ended: EndReason) -> Verdict {
    Verdict {
        fits,
        lowest_free_percent: Some(12.5),
        ..headroom_rules::testdata::verdict(2 << 30, 1 << 30, ended)
    }
}

fn job(key: &str, command: &str, verdict: Option<Verdict>) -> JobMetric {
    JobMetric {
        key: key.into(),
        job: "4242".into(),
        command: command.into(),
        state: if verdict.is_some() {
            "stopped"
        } else {
            "running"
        },
        swap_growth_bytes: 300 << 20,
        peak_footprint_bytes: Some(1 << 30),
        lowest_free_percent: verdict.as_ref().and_then(|v| v.lowest_free_percent),
        verdict,
    }
}

fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(prefix))
}

#[test]
fn system_gauges_and_the_swap_rate() {
    let mut m = Metrics::new(MetricsHandle::default());
    let t0 = Instant::now();
    m.update(
        Some(&headroom_model::testdata::system_counters(1 << 30, 38.0)),
        t0,
        Vec::new(),
    );
    m.update(
        Some(&headroom_model::testdata::system_counters(2 << 30, 30.0)),
        t0 + Duration::from_secs(10),
        Vec::new(),
    );
    let text = String::from_utf8(m.handle().get(Format::Prometheus).to_vec()).unwrap();
    assert_eq!(
        line(&text, "headroom_swap_used_bytes "),
        Some("headroom_swap_used_bytes 2147483648")
    );
    assert_eq!(
        line(&text, "headroom_memory_free_ratio "),
        Some("headroom_memory_free_ratio 0.3")
    );
    let rate = line(&text, "headroom_swap_growth_bytes_per_second ").unwrap();
    assert_eq!(
        rate,
        format!(
            "headroom_swap_growth_bytes_per_second {}",
            (1u64 << 30) as f64 / 10.0
        )
    );
    // Totals exist from the start, at 0.
    assert!(
        text.contains("headroom_guard_stops_total{reason=\"swap_budget\"} 0\n"),
        "{text}"
    );
    assert!(text.contains("headroom_jobs_finished_total{verdict=\"fits\"} 0\n"));
}

#[test]
fn jobs_are_labelled_and_each_end_is_counted_once() {
    let mut m = Metrics::new(MetricsHandle::default());
    let long = format!("python \"train\".py\n{}", "x".repeat(200));
    let stopped = verdict(
        false,
        EndReason::Stopped {
            reason: StopReason::SwapBudget {
                growth_bytes: 1,
                budget_bytes: 1,
            },
        },
    );
    let jobs = vec![
        job("a", &long, None),
        job("b", "sleep 1", Some(stopped)),
        job(
            "c",
            "true",
            Some(verdict(true, EndReason::Exited { code: 0 })),
        ),
    ];
    for _ in 0..3 {
        m.update(None, Instant::now(), jobs.clone());
    }
    let text = String::from_utf8(m.handle().get(Format::Prometheus).to_vec()).unwrap();
    assert!(
        text.contains("headroom_guard_stops_total{reason=\"swap_budget\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("headroom_jobs_finished_total{verdict=\"doesnt_fit\"} 1\n"));
    assert!(text.contains("headroom_jobs_finished_total{verdict=\"fits\"} 1\n"));
    // The command label: escaped, on one line, at most 80 characters.
    let state = line(
        &text,
        "headroom_job_state{job=\"4242\",command=\"python \\\"train\\\".py\\n",
    )
    .unwrap();
    assert!(state.ends_with(",state=\"running\"} 1"), "{state}");
    let value = state
        .split("command=\"")
        .nth(1)
        .unwrap()
        .split("\",state")
        .next()
        .unwrap();
    assert_eq!(
        value
            .replace("\\\"", "\"")
            .replace("\\n", "\n")
            .chars()
            .count(),
        COMMAND_LABEL_CHARS
    );
    // No system reading yet: no system families, the jobs' are there.
    assert!(!text.contains("headroom_swap_used_bytes"));
    let om = String::from_utf8(m.handle().get(Format::OpenMetrics).to_vec()).unwrap();
    assert!(om.ends_with("# EOF\n"));
}

#[test]
fn the_scope_says_host_or_the_cgroup_whose_limit_binds() {
    let host = headroom_model::testdata::system_counters(0, 90.0);
    let names = |s: &SystemCounters| -> Vec<(String, Vec<(&'static str, String)>)> {
        scope_families(s)
            .into_iter()
            .map(|f| (f.name.to_string(), f.samples[0].labels.clone()))
            .collect()
    };
    assert_eq!(
        names(&host),
        vec![(
            "headroom_memory_scope_info".to_string(),
            vec![("scope", "host".to_string())]
        )]
    );
    let pod = SystemCounters {
        total_bytes: 256 << 20,
        free_percent: 31.0,
        cgroup: Some(Box::new(headroom_model::counters::CgroupMemory {
            version: 2,
            path: "/kubepods.slice/pod1234/ctr".into(),
            limit_path: "/kubepods.slice/pod1234".into(),
            limit_file: "memory.max".into(),
            limit_bytes: 256 << 20,
            used_bytes: 176 << 20,
            reclaimable_bytes: 0,
            swap_used_bytes: None,
            swap_limit_bytes: None,
            oom_kills: Some(0),
            peak_bytes: None,
            host_total_bytes: 24 << 30,
            host_free_percent: 97.0,
            host_swap_used_bytes: 0,
            pressure: None,
            host_pressure: None,
        })),
        ..host
    };
    let families = scope_families(&pod);
    let info = &families[0].samples[0].labels;
    assert_eq!(info[0], ("scope", "cgroup".to_string()));
    assert_eq!(info[1], ("cgroup", "/kubepods.slice/pod1234".to_string()));
    let host_total = families
        .iter()
        .find(|f| f.name == "headroom_host_memory_total_bytes")
        .unwrap();
    assert_eq!(host_total.samples[0].value, (24u64 << 30) as f64);
    let host_free = families
        .iter()
        .find(|f| f.name == "headroom_host_memory_free_ratio")
        .unwrap();
    assert!((host_free.samples[0].value - 0.97).abs() < 1e-9);
}
