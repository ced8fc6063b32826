//! What the endpoint says: the system gauges and counters from the sampler's latest reading,
//! the jobs' gauges, and totals of finished jobs by verdict and of guard stops by reason.
//!
//! [`Metrics::update`] is called once per sample (the CLI's loop, the app's ticker) and
//! renders both formats into the [`MetricsHandle`]; scrapes only read that.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use headroom_model::counters::{PressureLevel, SystemCounters};
use headroom_rules::engine::JobView;
use headroom_rules::policy::{EndReason, StopReason, Verdict};

use crate::exposition::{render, Family, Format, Kind, Sample};

/// Longest `command` label value, characters (longer ones end in `…`).
pub const COMMAND_LABEL_CHARS: usize = 80;
/// Swap growth rate is measured over this window.
pub const RATE_WINDOW: Duration = Duration::from_secs(60);
/// The verdicts counted by `headroom_jobs_finished_total`.
pub const VERDICTS: [&str; 4] = ["fits", "tight", "doesnt_fit", "stopped"];
/// The reasons counted by `headroom_guard_stops_total`.
pub const STOP_REASONS: [&str; 5] = [
    "swap_budget",
    "swap_budget_projected",
    "swap_limit",
    "low_free",
    "requested",
];

/// One job as the metrics show it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobMetric {
    /// Stable key of the job (pid and start time), to count its end once.
    pub key: String,
    /// The `job` label: its pid.
    pub job: String,
    /// The `command` label (truncated when written).
    pub command: String,
    /// `running`, `paused`, `stopping`, `stopped` or `finished`.
    pub state: &'static str,
    /// Swap growth since it started.
    pub swap_growth_bytes: u64,
    /// Peak footprint, once measured.
    pub peak_footprint_bytes: Option<u64>,
    /// Lowest system free memory while it ran, percent.
    pub lowest_free_percent: Option<f64>,
    /// Its verdict, once it ended.
    pub verdict: Option<Verdict>,
}

impl JobMetric {
    /// A job of the app's engine.
    pub fn from_view(v: &JobView) -> JobMetric {
        JobMetric {
            key: format!("app-{}-{}", v.pid, v.started_at_ms),
            job: v.pid.to_string(),
            command: v.command.clone(),
            state: v.state.as_str(),
            swap_growth_bytes: v.swap_growth_bytes,
            peak_footprint_bytes: v.peak_footprint_bytes,
            lowest_free_percent: v.verdict.as_ref().and_then(|v| v.lowest_free_percent),
            verdict: v.verdict.clone(),
        }
    }
}

/// The verdict's word for `headroom_jobs_finished_total`.
pub fn verdict_word(v: &Verdict) -> &'static str {
    v.label()
}

/// The stop reason's word for `headroom_guard_stops_total`.
pub fn stop_word(reason: &StopReason) -> &'static str {
    match reason {
        StopReason::SwapBudget { .. } => "swap_budget",
        StopReason::SwapBudgetProjected { .. } => "swap_budget_projected",
        StopReason::SwapLimit { .. } => "swap_limit",
        StopReason::LowFree { .. } => "low_free",
        StopReason::Requested => "requested",
        StopReason::MakesRoom { .. } => "makes_room",
    }
}

/// The rendered output of the latest update, shared with the server.
#[derive(Debug, Clone, Default)]
pub struct MetricsHandle(Arc<RwLock<Rendered>>);

#[derive(Debug, Default)]
struct Rendered {
    prometheus: Bytes,
    openmetrics: Bytes,
}

impl MetricsHandle {
    /// The latest output in `format` (a reference-counted copy: no formatting, no reads).
    pub fn get(&self, format: Format) -> Bytes {
        let r = self.0.read().unwrap_or_else(|e| e.into_inner());
        match format {
            Format::Prometheus => r.prometheus.clone(),
            Format::OpenMetrics => r.openmetrics.clone(),
        }
    }

    fn set(&self, families: &[Family]) {
        let prometheus = Bytes::from(render(families, Format::Prometheus));
        let openmetrics = Bytes::from(render(families, Format::OpenMetrics));
        let mut r = self.0.write().unwrap_or_else(|e| e.into_inner());
        *r = Rendered {
            prometheus,
            openmetrics,
        };
    }
}

/// The metrics' state between samples.
#[derive(Debug)]
pub struct Metrics {
    handle: MetricsHandle,
    latest: Option<SystemCounters>,
    swap: VecDeque<(Instant, u64)>,
    jobs: Vec<JobMetric>,
    finished: BTreeMap<&'static str, u64>,
    stops: BTreeMap<&'static str, u64>,
    counted: HashSet<String>,
}

impl Metrics {
    /// Empty metrics rendering into `handle` (the families are there from the start, so
    /// the totals begin at 0).
    pub fn new(handle: MetricsHandle) -> Metrics {
        let m = Metrics {
            handle,
            latest: None,
            swap: VecDeque::new(),
            jobs: Vec::new(),
            finished: VERDICTS.iter().map(|v| (*v, 0)).collect(),
            stops: STOP_REASONS.iter().map(|r| (*r, 0)).collect(),
            counted: HashSet::new(),
        };
        m.handle.set(&m.families());
        m
    }

    /// The handle the server reads.
    pub fn handle(&self) -> MetricsHandle {
        self.handle.clone()
    }

    /// One sample: the system reading (`None` when it failed: the last good one stays) at
    /// `at`, and every job now. A job seen ended for the first time is counted.
    pub fn update(&mut self, system: Option<&SystemCounters>, at: Instant, jobs: Vec<JobMetric>) {
        if let Some(s) = system {
            self.swap.push_back((at, s.swap_used_bytes));
            while self
                .swap
                .front()
                .is_some_and(|(t, _)| at.duration_since(*t) > RATE_WINDOW)
            {
                self.swap.pop_front();
            }
            self.latest = Some(s.clone());
        }
        for job in &jobs {
            let Some(verdict) = &job.verdict else {
                continue;
            };
            if !self.counted.insert(job.key.clone()) {
                continue;
            }
            *self.finished.entry(verdict_word(verdict)).or_default() += 1;
            if let EndReason::Stopped { reason } | EndReason::NotStopped { reason, .. } =
                &verdict.ended
            {
                *self.stops.entry(stop_word(reason)).or_default() += 1;
            }
        }
        // Forget the keys of jobs no longer listed (their files were pruned): bounded memory.
        let listed: HashSet<&str> = jobs.iter().map(|j| j.key.as_str()).collect();
        self.counted.retain(|k| listed.contains(k.as_str()));
        self.jobs = jobs;
        self.handle.set(&self.families());
    }

    /// Swap growth over the last minute (or since the first reading), bytes per second.
    fn swap_rate(&self) -> Option<f64> {
        let (first, last) = (self.swap.front()?, self.swap.back()?);
        let seconds = last.0.duration_since(first.0).as_secs_f64();
        (seconds > 0.0).then(|| (last.1 as f64 - first.1 as f64) / seconds)
    }

    /// Every family, in a fixed order.
    pub fn families(&self) -> Vec<Family> {
        let mut out = Vec::new();
        if let Some(s) = &self.latest {
            let gauge = |name, help, v: f64| Family::single(name, help, Kind::Gauge, v);
            let counter = |name, help, v: u64| Family::single(name, help, Kind::Counter, v as f64);
            out.push(gauge(
                "headroom_memory_total_bytes",
                "Physical memory, or the cgroup's limit where one binds (see headroom_memory_scope_info).",
                s.total_bytes as f64,
            ));
            out.push(gauge(
                "headroom_memory_free_ratio",
                "Memory available to new work, 0 to 1 (macOS kern.memorystatus_level, Linux MemAvailable/MemTotal, or the room under the cgroup's limit).",
                s.free_percent / 100.0,
            ));
            out.extend(scope_families(s));
            if let Some(level) = s.pressure {
                out.push(gauge(
                    "headroom_memory_pressure_level",
                    "Memory pressure: 0 normal, 1 warn, 2 critical.",
                    match level {
                        PressureLevel::Normal => 0.0,
                        PressureLevel::Warn => 1.0,
                        PressureLevel::Critical => 2.0,
                    },
                ));
            }
            out.push(gauge(
                "headroom_swap_used_bytes",
                "Swap in use.",
                s.swap_used_bytes as f64,
            ));
            out.push(gauge(
                "headroom_swap_total_bytes",
                "Swap configured (macOS: allocated so far).",
                s.swap_total_bytes as f64,
            ));
            out.extend(optional_families(s));
            out.push(counter(
                "headroom_swapped_in_bytes_total",
                "Bytes swapped in since boot.",
                s.swapped_in_bytes,
            ));
            out.push(counter(
                "headroom_swapped_out_bytes_total",
                "Bytes swapped out since boot.",
                s.swapped_out_bytes,
            ));
            if let Some(rate) = self.swap_rate() {
                out.push(gauge(
                    "headroom_swap_growth_bytes_per_second",
                    "Change of swap in use over the last minute, per second.",
                    rate,
                ));
            }
        }
        out.extend(self.oom_family());
        out.extend(self.job_families());
        out
    }

    /// The OOM killer's count, where the OS has it.
    fn oom_family(&self) -> Option<Family> {
        let kills = self.latest.as_ref()?.oom_kills?;
        Some(Family::single(
            "headroom_oom_kills_total",
            "Processes the kernel's OOM killer killed since boot, host-wide (Linux /proc/vmstat oom_kill).",
            Kind::Counter,
            kills as f64,
        ))
    }

    fn job_families(&self) -> Vec<Family> {
        let labels = |j: &JobMetric| vec![("job", j.job.clone()), ("command", short(&j.command))];
        let each = |f: &dyn Fn(&JobMetric) -> Option<f64>| -> Vec<Sample> {
            self.jobs
                .iter()
                .filter_map(|j| {
                    f(j).map(|value| Sample {
                        labels: labels(j),
                        value,
                    })
                })
                .collect()
        };
        let family = |name, help, samples| Family {
            name,
            help,
            kind: Kind::Gauge,
            samples,
        };
        let totals = |name, help, label, map: &BTreeMap<&'static str, u64>| Family {
            name,
            help,
            kind: Kind::Counter,
            samples: map
                .iter()
                .map(|(k, v)| Sample {
                    labels: vec![(label, (*k).to_string())],
                    value: *v as f64,
                })
                .collect(),
        };
        vec![
            family(
                "headroom_job_swap_growth_bytes",
                "Swap growth since the job started.",
                each(&|j| Some(j.swap_growth_bytes as f64)),
            ),
            family(
                "headroom_job_peak_footprint_bytes",
                "Peak footprint of the job's processes.",
                each(&|j| j.peak_footprint_bytes.map(|b| b as f64)),
            ),
            family(
                "headroom_job_lowest_free_ratio",
                "Lowest free memory while the job ran, 0 to 1 (once it ended).",
                each(&|j| j.lowest_free_percent.map(|p| p / 100.0)),
            ),
            Family {
                name: "headroom_job_state",
                help: "The job's state (1 for the state it is in).",
                kind: Kind::Gauge,
                samples: self
                    .jobs
                    .iter()
                    .map(|j| {
                        let mut labels = labels(j);
                        labels.push(("state", j.state.to_string()));
                        Sample { labels, value: 1.0 }
                    })
                    .collect(),
            },
            totals(
                "headroom_jobs_finished_total",
                "Jobs that ended, by verdict.",
                "verdict",
                &self.finished,
            ),
            totals(
                "headroom_guard_stops_total",
                "Jobs a guard stopped, by reason.",
                "reason",
                &self.stops,
            ),
        ]
    }
}

/// `command`, at most [`COMMAND_LABEL_CHARS`] characters.
fn short(command: &str) -> String {
    if command.chars().count() <= COMMAND_LABEL_CHARS {
        return command.to_string();
    }
    let mut s: String = command.chars().take(COMMAND_LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests;

/// Where the memory numbers come from: `headroom_memory_scope_info{scope="host"}`, or
/// `{scope="cgroup", cgroup=…, limit_file=…}` with the host's own numbers beside.
fn scope_families(s: &SystemCounters) -> Vec<Family> {
    let info = |labels| {
        Family {
        name: "headroom_memory_scope_info",
        help: "Where the memory numbers come from: the host, or the memory cgroup whose limit binds (a container, a pod, a CI or Slurm job).",
        kind: Kind::Gauge,
        samples: vec![Sample { labels, value: 1.0 }],
    }
    };
    let Some(c) = &s.cgroup else {
        return vec![info(vec![("scope", "host".to_string())])];
    };
    let gauge = |name, help, v: f64| Family::single(name, help, Kind::Gauge, v);
    vec![
        info(vec![
            ("scope", "cgroup".to_string()),
            ("cgroup", c.limit_path.clone()),
            ("limit_file", c.limit_file.clone()),
        ]),
        gauge(
            "headroom_host_memory_total_bytes",
            "The host's physical memory (under a cgroup limit).",
            c.host_total_bytes as f64,
        ),
        gauge(
            "headroom_host_memory_free_ratio",
            "The host's memory available to new work, 0 to 1 (under a cgroup limit).",
            c.host_free_percent / 100.0,
        ),
    ]
}

/// The memory numbers only some OSes have.
fn optional_families(s: &SystemCounters) -> Vec<Family> {
    let optional = [
        (
            "headroom_memory_compressed_bytes",
            "Memory held compressed (macOS compressor, Linux zswap).",
            s.compressed_bytes,
        ),
        (
            "headroom_memory_wired_bytes",
            "Wired memory (Linux: Unevictable).",
            s.wired_bytes,
        ),
        (
            "headroom_memory_app_bytes",
            "App memory (macOS internal minus purgeable, Linux AnonPages).",
            s.app_bytes,
        ),
    ];
    let mut out = Vec::new();
    for (name, help, value) in optional {
        if let Some(v) = value {
            out.push(Family::single(name, help, Kind::Gauge, v as f64));
        }
    }
    out
}
