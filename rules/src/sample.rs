//! One tick's readings, as the engine judges them: the machine's counters and each tracked
//! job's members and memory ([`Sample`]), and what the stop rules read of it for one job
//! ([`Sample::observation`]). Plain data: the sampler of headroom-core reads it, a trace
//! records it (`headroom_core::sampler::recorded`), the engine takes it.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::policy::Observation;
use headroom_model::counters::SystemCounters;
use headroom_model::members::Member;
use headroom_model::process::{ProcessIdentity, TreeMemory};

/// One tick's readings.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Tick number, from 0.
    pub seq: u64,
    /// Wall-clock time of the reading.
    #[serde(with = "unix_seconds")]
    pub at: SystemTime,
    /// Time since the sampler started.
    pub since_start: Duration,
    /// System counters; `None` when the read failed.
    pub system: Option<SystemCounters>,
    /// Each tracked process tree, in tracking order.
    pub tracked: Vec<TrackedSample>,
    /// Set on the first failing tick of a run of failures: what went wrong.
    pub error: Option<String>,
    /// A look the guard aimed at the crossing between two regular checks
    /// (`crate::policy::aim`): the stop rules treat it as such, and a replay of its trace
    /// does too.
    #[serde(skip)]
    pub aimed: bool,
}

/// A tracked job at one tick.
#[derive(Debug, Clone, Serialize)]
pub struct TrackedSample {
    /// The process the job is named by (its root, [`headroom_model::members::JobIds::root`]).
    pub identity: ProcessIdentity,
    /// Memory of its live members; `None` once no member lives.
    pub memory: Option<TreeMemory>,
    /// Its live members and their states, from a complete, fresh look at this tick: what
    /// the job engine verifies a stop or a pause against.
    #[serde(skip)]
    pub members: Vec<Member>,
    /// The kernel's high-water mark of its memory, where it has a cgroup of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_peak_bytes: Option<u64>,
    /// It runs in a memory cgroup of its own: its memory and swap are the cgroup's, and its OOM
    /// kills are [`TrackedSample::cgroup_oom_kills`], not the host's count.
    #[serde(skip)]
    pub in_own_cgroup: bool,
    /// OOM kills in its own cgroup at this tick (`None` when unread).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_oom_kills: Option<u64>,
}

impl Sample {
    /// What the guard's rules read of this sample for the job named by `root`, `t` into its
    /// run; `None` when the system read failed. The machine's reading with the job's own: its
    /// footprint, its kernel peak, and for a job in a memory cgroup of its own that cgroup's
    /// OOM count (exact), never the host's (everyone's): the two are never mixed across
    /// readings.
    pub fn observation(&self, root: ProcessIdentity, t: Duration) -> Option<Observation> {
        let system = self.system.as_ref()?;
        let tracked = self.tracked.iter().find(|tr| tr.identity == root);
        Some(Observation {
            footprint_bytes: tracked.and_then(|tr| tr.memory.map(|m| m.footprint_bytes)),
            oom_kills: match tracked {
                Some(tr) if tr.in_own_cgroup => tr.cgroup_oom_kills,
                _ => system.oom_kills,
            },
            kernel_peak_bytes: tracked.and_then(|tr| tr.kernel_peak_bytes),
            ..Observation::of_system(t, system)
        })
    }
}

/// Serde helper: `SystemTime` as fractional Unix seconds.
mod unix_seconds {
    use std::time::{SystemTime, UNIX_EPOCH};

    use serde::Serializer;

    /// Serializes `t` as seconds since the Unix epoch.
    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        let secs = t
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        s.serialize_f64(secs)
    }
}
