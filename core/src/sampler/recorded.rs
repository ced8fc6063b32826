//! A reading as a trace keeps it, and back: the one place a [`Sample`] becomes a trace's
//! `sample` line (and the run's facts its `start` record), and a recorded line becomes a
//! [`Sample`] again for `trace replay`.
//!
//! Lossless for everything the guard's rules read of a reading ([`Sample::observation`]):
//! the time to the nanosecond, swap in use, free memory as read (`level`), compressed memory,
//! memory in use, the memory limit that binds, the host's OOM count, and of the job: its
//! footprint (or that none of it lives), its kernel peak, whether it has a cgroup of its own
//! and that cgroup's OOM count; of the run, the memory it started from (the `start`
//! record's `swap_start`, `free_start`, `in_use_start`: [`RunRecord`]).
//! What the rules never read (the host's numbers beside a cgroup's, cumulative page counts)
//! is not recorded and comes back as 0 or unknown. stageload's traces have only `t`,
//! `footprint`, `swap_used` and `level`: the rest is unknown, and the job lives throughout.

use std::time::SystemTime;

use super::{Sample, TrackedSample};
use crate::trace::{duration, seconds, RunRecord, SampleRecord, Trace};
use headroom_model::counters::{CgroupMemory, PressureLevel, RunState, SystemCounters};
use headroom_model::members::Member;
use headroom_model::process::{ProcessIdentity, TreeMemory};

/// A reading as a trace line (the sample is the rules' type, `headroom_rules::sample`; its
/// trace form is the runtime's).
pub trait ToTrace {
    /// This sample as a trace `sample` line, or `None` when the system read failed. The
    /// job's figures are summed over the tracked trees (`headroom record` may trace several;
    /// a job has one): `footprint` 0 and no `processes` when nothing is tracked, `processes`
    /// 0 once no tracked process lives.
    fn to_trace_record(&self) -> Option<SampleRecord>;
}

impl ToTrace for Sample {
    fn to_trace_record(&self) -> Option<SampleRecord> {
        let system = self.system.as_ref()?;
        let trees: Vec<&TreeMemory> = self
            .tracked
            .iter()
            .filter_map(|t| t.memory.as_ref())
            .collect();
        let has_trees = !trees.is_empty();
        let sum = |f: fn(&TrackedSample) -> Option<u64>| {
            self.tracked.iter().filter_map(f).reduce(|a, b| a + b)
        };
        Some(SampleRecord {
            t: seconds(self.since_start),
            footprint: trees.iter().map(|m| m.footprint_bytes).sum(),
            swap_used: system.swap_used_bytes,
            level: system.free_percent,
            swap_total: Some(system.swap_total_bytes),
            compressed: system.compressed_bytes,
            in_use: system.in_use_bytes,
            pressure: system.pressure.map(|p| p.as_str().to_string()),
            resident: has_trees.then(|| trees.iter().map(|m| m.resident_bytes).sum()),
            process_swap: trees
                .iter()
                .filter_map(|m| m.swap_bytes)
                .reduce(|a, b| a + b),
            processes: (!self.tracked.is_empty()).then(|| trees.iter().map(|m| m.processes).sum()),
            memory_limit: system.cgroup.as_ref().map(|c| c.limit_bytes),
            oom_kills: system.oom_kills,
            own_cgroup: !self.tracked.is_empty() && self.tracked.iter().all(|t| t.in_own_cgroup),
            job_oom_kills: sum(|t| t.cgroup_oom_kills),
            kernel_peak: sum(|t| t.kernel_peak_bytes),
            aimed: self.aimed,
        })
    }
}

impl RunRecord {
    /// What `trace`'s `start` record says (all unknown without one).
    pub fn of(trace: &Trace) -> Self {
        trace
            .start
            .as_ref()
            .map(|start| start.run.clone())
            .unwrap_or_default()
    }

    /// The reading the job started from, as its guard read it just before the start (the
    /// swap its growth counts from, free memory and memory in use then), where the trace
    /// keeps it.
    pub fn start_system(&self) -> Option<SystemCounters> {
        Some(SystemCounters {
            total_bytes: self.total_bytes,
            usable_bytes: self.usable_bytes,
            swap_used_bytes: self.swap_start_bytes?,
            free_percent: self.free_start_percent?,
            in_use_bytes: self.in_use_start_bytes,
            ..SystemCounters::default()
        })
    }

    /// `record` made back into the sample its guard judged, for the job named by `job`
    /// (one tree: the trace's sums), read at `at` (the wall clock is not recorded). Its
    /// member lives while `alive` (a replay's stand-in, until a stop) and the record says a
    /// process of it did.
    pub fn sample(
        &self,
        record: &SampleRecord,
        seq: u64,
        at: SystemTime,
        job: ProcessIdentity,
        alive: bool,
    ) -> Sample {
        let lives = alive && record.processes != Some(0);
        let system = SystemCounters {
            total_bytes: self.total_bytes,
            free_percent: record.level,
            usable_bytes: self.usable_bytes,
            in_use_bytes: record.in_use,
            pressure: record.pressure.as_deref().and_then(pressure),
            swap_used_bytes: record.swap_used,
            swap_total_bytes: record.swap_total.unwrap_or(0),
            compressed_bytes: record.compressed,
            oom_kills: record.oom_kills,
            cgroup: record.memory_limit.map(|limit| self.cgroup(limit, record)),
            ..SystemCounters::default()
        };
        Sample {
            aimed: record.aimed,
            seq,
            at,
            since_start: duration(record.t),
            system: Some(system),
            tracked: vec![TrackedSample {
                identity: job,
                memory: lives.then_some(TreeMemory {
                    pid: job.pid,
                    footprint_bytes: record.footprint,
                    resident_bytes: record.resident.unwrap_or(record.footprint),
                    swap_bytes: record.process_swap,
                    processes: record.processes.unwrap_or(1),
                }),
                members: if lives {
                    vec![Member {
                        id: job,
                        state: RunState::Running,
                    }]
                } else {
                    Vec::new()
                },
                kernel_peak_bytes: record.kernel_peak,
                in_own_cgroup: record.own_cgroup,
                cgroup_oom_kills: record.job_oom_kills,
            }],
            error: None,
        }
    }

    /// The limit that bound, as far as the trace keeps it: the rules read its size; its
    /// cgroup is the `start` record's, the room under it `level`; the rest is not recorded.
    fn cgroup(&self, limit_bytes: u64, record: &SampleRecord) -> Box<CgroupMemory> {
        let path = self.cgroup.clone().unwrap_or_default();
        Box::new(CgroupMemory {
            version: 0,
            path: path.clone(),
            limit_path: path,
            limit_file: String::new(),
            limit_bytes,
            used_bytes: limit_bytes.saturating_sub(headroom_model::units::percent_of_bytes(
                record.level,
                limit_bytes,
            )),
            reclaimable_bytes: 0,
            swap_used_bytes: None,
            swap_limit_bytes: None,
            oom_kills: None,
            peak_bytes: None,
            host_total_bytes: self.host_total_bytes.unwrap_or(0),
            host_free_percent: 0.0,
            host_swap_used_bytes: 0,
            pressure: None,
            host_pressure: None,
        })
    }
}

/// The pressure level a trace's word names.
fn pressure(word: &str) -> Option<PressureLevel> {
    [
        PressureLevel::Normal,
        PressureLevel::Warn,
        PressureLevel::Critical,
    ]
    .into_iter()
    .find(|p| p.as_str() == word)
}
