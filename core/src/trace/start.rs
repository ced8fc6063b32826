//! A trace's `start` record, typed: one [`StartRecord`] that every writer fills (`headroom
//! record`, a guard's `--trace`) and [`super::TraceWriter::start`] writes, and that
//! [`super::read_trace`] reads back once, checking every number it holds. It says when and
//! how the trace was taken, where the run ran and the memory its job started from
//! ([`RunRecord`]), and for a guard's trace the limits it was judged under
//! ([`RecordedLimits`]), so `trace replay` reproduces the run without its flags. What other
//! tools write (stageload's `mode`, `pipeline`, ...) is kept as it was ([`StartRecord::other`]).

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use headroom_model::units::{bounded_bytes, bounded_percent};
use headroom_rules::policy::{Limits, OnBudget};

use headroom_model::counters::SystemCounters;

/// The `start` record of a trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StartRecord {
    /// UTC start time, RFC 3339 (`utc`).
    pub utc: Option<String>,
    /// Sampling interval in seconds (`interval`).
    pub interval: Option<f64>,
    /// The tool that wrote it (`tool`: `headroom`).
    pub tool: Option<String>,
    /// Headroom's version (`headroom`).
    pub version: Option<String>,
    /// The OS it ran on (`os`).
    pub os: Option<String>,
    /// The guarded command (`command`).
    pub command: Option<String>,
    /// The processes `headroom record` followed (`pids`).
    pub pids: Vec<u32>,
    /// Where the run ran and the memory its job started from.
    pub run: RunRecord,
    /// The limits a guard judged the run under (`limits`).
    pub limits: Option<RecordedLimits>,
    /// Every other field, as it was (another tool's).
    pub other: Map<String, Value>,
}

/// The limits a guard's run was judged under, as its trace keeps them: what `trace replay`
/// judges by (the flags of `--swap-budget` and its kin, and what the guard did at its
/// budget).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedLimits {
    /// `--swap-budget`, bytes.
    pub swap_budget: u64,
    /// `--swap-limit`, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_limit: Option<u64>,
    /// `--kill-free`, percent.
    pub kill_free: f64,
    /// `--fits-tolerance`, bytes.
    pub fits_tolerance: u64,
    /// `--tight-compressed`, bytes.
    pub tight_compressed: u64,
    /// `--tight-free`, percent.
    pub tight_free: f64,
    /// `--notify-step`, bytes.
    pub notify_step: u64,
    /// `--on-budget`.
    pub on_budget: OnBudget,
}

impl RecordedLimits {
    /// What a trace keeps of `limits`.
    pub fn of(limits: &Limits) -> Self {
        RecordedLimits {
            swap_budget: limits.swap_budget_bytes,
            swap_limit: limits.swap_limit_bytes,
            kill_free: limits.kill_free_percent,
            fits_tolerance: limits.fits_tolerance_bytes,
            tight_compressed: limits.tight_compressed_bytes,
            tight_free: limits.tight_free_percent,
            notify_step: limits.notify_step_bytes,
            on_budget: limits.on_budget,
        }
    }

    /// `limits` with these in place.
    pub fn apply(&self, limits: Limits) -> Limits {
        Limits {
            swap_budget_bytes: self.swap_budget,
            swap_limit_bytes: self.swap_limit,
            kill_free_percent: self.kill_free,
            fits_tolerance_bytes: self.fits_tolerance,
            tight_compressed_bytes: self.tight_compressed,
            tight_free_percent: self.tight_free,
            notify_step_bytes: self.notify_step.max(1),
            on_budget: self.on_budget,
            ..limits
        }
    }

    /// Every figure within what a machine can have (the error names the field).
    fn check(&self) -> Result<(), String> {
        let bytes = |field: &str, b: u64| {
            bounded_bytes(b)
                .map(drop)
                .map_err(|e| format!("limits.{field}: {e}"))
        };
        let percent = |field: &str, p: f64| {
            bounded_percent(p)
                .map(drop)
                .map_err(|e| format!("limits.{field}: {e}"))
        };
        bytes("swap_budget", self.swap_budget)?;
        self.swap_limit.map_or(Ok(()), |b| bytes("swap_limit", b))?;
        bytes("fits_tolerance", self.fits_tolerance)?;
        bytes("tight_compressed", self.tight_compressed)?;
        bytes("notify_step", self.notify_step)?;
        percent("kill_free", self.kill_free)?;
        percent("tight_free", self.tight_free)
    }
}

/// The fields [`StartRecord`] types (the rest goes to [`StartRecord::other`]).
const TYPED: [&str; 8] = [
    "utc", "interval", "tool", "headroom", "os", "command", "pids", "limits",
];

impl StartRecord {
    /// A record of a trace taken from `at` every `interval`, written by Headroom.
    pub fn headroom(at: SystemTime, interval: Duration) -> Self {
        StartRecord {
            utc: Some(super::utc_string(at)),
            interval: Some(interval.as_secs_f64()),
            tool: Some("headroom".into()),
            version: Some(env!("CARGO_PKG_VERSION").into()),
            os: Some(std::env::consts::OS.into()),
            ..StartRecord::default()
        }
    }

    /// The record as the line's fields.
    pub fn to_map(&self) -> Map<String, Value> {
        let mut map = Map::new();
        let mut put = |name: &str, value: Option<Value>| {
            if let Some(value) = value {
                map.insert(name.to_string(), value);
            }
        };
        put("utc", self.utc.clone().map(Value::from));
        put(
            "interval",
            self.interval
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
        );
        put("tool", self.tool.clone().map(Value::from));
        put("headroom", self.version.clone().map(Value::from));
        put("os", self.os.clone().map(Value::from));
        put("command", self.command.clone().map(Value::from));
        put(
            "pids",
            (!self.pids.is_empty()).then(|| self.pids.iter().map(|&p| Value::from(p)).collect()),
        );
        put(
            "limits",
            self.limits
                .as_ref()
                .and_then(|l| serde_json::to_value(l).ok()),
        );
        for (name, value) in self.run.meta().into_iter().chain(self.other.clone()) {
            map.entry(name).or_insert(value);
        }
        map
    }

    /// The record of a line's fields, every number checked; the error names the field.
    /// Another tool's fields of the same names but other types are kept as they were.
    pub fn from_map(mut map: Map<String, Value>) -> Result<StartRecord, String> {
        let run = RunRecord::from_meta(&map)?;
        let text = |map: &Map<String, Value>, name: &str| {
            map.get(name).and_then(Value::as_str).map(str::to_string)
        };
        let limits = match map.get("limits") {
            Some(value) if text(&map, "tool").as_deref() == Some("headroom") => {
                let limits: RecordedLimits =
                    serde_json::from_value(value.clone()).map_err(|e| format!("limits: {e}"))?;
                limits.check()?;
                Some(limits)
            }
            _ => None,
        };
        let pids: Option<Vec<u32>> = map.get("pids").and_then(|v| {
            v.as_array()?
                .iter()
                .map(|p| p.as_u64().and_then(|p| u32::try_from(p).ok()))
                .collect()
        });
        let start = StartRecord {
            utc: text(&map, "utc"),
            interval: map.get("interval").and_then(Value::as_f64),
            tool: text(&map, "tool"),
            version: text(&map, "headroom"),
            os: text(&map, "os"),
            command: text(&map, "command"),
            pids: pids.clone().unwrap_or_default(),
            run,
            limits,
            other: Map::new(),
        };
        // What was typed leaves the rest; a field typed otherwise stays there as it was.
        let typed = start.to_map();
        map.retain(|name, value| {
            !(TYPED.contains(&name.as_str()) || RunRecord::FIELDS.contains(&name.as_str()))
                || typed.get(name) != Some(value)
        });
        Ok(StartRecord {
            other: map,
            ..start
        })
    }
}

/// What a trace's `start` record says of the run: where it ran, and the memory its job
/// started with (a guard's trace: what its rules count from). Written by [`RunRecord::meta`],
/// read back by [`RunRecord::from_meta`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRecord {
    /// What free memory is a share of (`total_memory`: the host's, or the limit's), bytes.
    pub total_bytes: u64,
    /// The memory the kernel hands out, where less (`usable_memory`, macOS), bytes.
    pub usable_bytes: Option<u64>,
    /// The cgroup whose limit binds (`cgroup`, with `memory_scope` `cgroup`), as
    /// `/proc/self/cgroup` names it.
    pub cgroup: Option<String>,
    /// The host's memory beside the limit (`host_total_memory`), bytes.
    pub host_total_bytes: Option<u64>,
    /// Why the cgroup could not be read (`cgroup_note`; the numbers are then the host's).
    pub cgroup_note: Option<String>,
    /// Swap in use when the job started (`swap_start`), bytes.
    pub swap_start_bytes: Option<u64>,
    /// Free memory when the job started (`free_start`), percent.
    pub free_start_percent: Option<f64>,
    /// Memory in use (page counts) when the job started (`in_use_start`), bytes.
    pub in_use_start_bytes: Option<u64>,
}

impl RunRecord {
    /// Where a run on `system` ran (its start memory is the caller's to add): what free
    /// memory is a share of (the host's, or the memory cgroup's limit where one binds), the
    /// usable memory where less, under a limit the cgroup and the host's memory, and why the
    /// cgroup could not be read when it could not.
    pub fn of_system(system: &SystemCounters) -> Self {
        RunRecord {
            total_bytes: system.total_bytes,
            usable_bytes: system.usable_bytes,
            cgroup: system.cgroup.as_ref().map(|c| c.limit_path.clone()),
            host_total_bytes: system.cgroup.as_ref().map(|c| c.host_total_bytes),
            cgroup_note: system.cgroup_note.clone(),
            ..RunRecord::default()
        }
    }

    /// The `start` record's fields: `total_memory`, `usable_memory`, `memory_scope` (`host`
    /// or `cgroup`), `cgroup`, `host_total_memory`, `cgroup_note`, `swap_start`, `free_start`,
    /// `in_use_start`, each where known (no `total_memory` nor `memory_scope` when the
    /// memory could not be read).
    pub fn meta(&self) -> Map<String, Value> {
        let known = self.total_bytes > 0;
        let scope = if self.cgroup.is_some() {
            "cgroup"
        } else {
            "host"
        };
        [
            ("total_memory", known.then(|| self.total_bytes.into())),
            ("usable_memory", self.usable_bytes.map(Value::from)),
            ("memory_scope", known.then(|| scope.into())),
            ("cgroup", self.cgroup.clone().map(Value::from)),
            ("host_total_memory", self.host_total_bytes.map(Value::from)),
            ("cgroup_note", self.cgroup_note.clone().map(Value::from)),
            ("swap_start", self.swap_start_bytes.map(Value::from)),
            ("free_start", self.free_start_percent.map(Value::from)),
            ("in_use_start", self.in_use_start_bytes.map(Value::from)),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_string(), value?)))
        .collect()
    }

    /// The `start` record's fields a run record holds.
    pub const FIELDS: [&'static str; 9] = [
        "total_memory",
        "usable_memory",
        "memory_scope",
        "cgroup",
        "host_total_memory",
        "cgroup_note",
        "swap_start",
        "free_start",
        "in_use_start",
    ];

    /// The run record in a `start` record's fields, every figure checked (bytes at most what
    /// a machine can have, `free_start` a percentage); the error names the field.
    pub fn from_meta(meta: &Map<String, Value>) -> Result<Self, String> {
        let bytes = |name: &str| -> Result<Option<u64>, String> {
            let Some(value) = meta.get(name) else {
                return Ok(None);
            };
            let b = value
                .as_u64()
                .ok_or_else(|| format!("{name}: {value} is not a number of bytes"))?;
            bounded_bytes(b).map_err(|why| format!("{name}: {why}"))?;
            Ok(Some(b))
        };
        let text = |name: &str| meta.get(name).and_then(Value::as_str).map(str::to_string);
        let free_start_percent = match meta.get("free_start") {
            None => None,
            Some(value) => {
                let p = value
                    .as_f64()
                    .ok_or_else(|| format!("free_start: {value} is not a percentage"))?;
                bounded_percent(p).map_err(|why| format!("free_start: {why}"))?;
                Some(p)
            }
        };
        Ok(RunRecord {
            total_bytes: bytes("total_memory")?.unwrap_or(0),
            usable_bytes: bytes("usable_memory")?,
            cgroup: text("cgroup"),
            host_total_bytes: bytes("host_total_memory")?,
            cgroup_note: text("cgroup_note"),
            swap_start_bytes: bytes("swap_start")?,
            free_start_percent,
            in_use_start_bytes: bytes("in_use_start")?,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is a failed test

    use super::*;

    fn map(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_guards_start_record_round_trips_with_its_limits() {
        let limits = Limits {
            swap_budget_bytes: 150 << 20,
            kill_free_percent: 3.0,
            on_budget: OnBudget::Pause,
            ..Limits::default()
        };
        let start = StartRecord {
            command: Some("python gen.py".into()),
            limits: Some(RecordedLimits::of(&limits)),
            run: RunRecord {
                total_bytes: 48 << 30,
                swap_start_bytes: Some(1 << 30),
                free_start_percent: Some(61.5),
                ..RunRecord::default()
            },
            ..StartRecord::headroom(std::time::UNIX_EPOCH, Duration::from_millis(250))
        };
        let back = StartRecord::from_map(start.to_map()).unwrap();
        assert_eq!(back, start);
        let judged = back.limits.unwrap().apply(Limits::default());
        assert_eq!(judged.swap_budget_bytes, 150 << 20);
        assert_eq!(judged.on_budget, OnBudget::Pause);
    }

    #[test]
    fn another_tools_fields_are_kept_as_they_were() {
        // stageload's own fields, and a `command` written as a list: nothing typed of it.
        let fields = map(
            r#"{"utc":"2026-10-06T10:36:12+00:00","interval":0.5,"mode":"eager",
                "stageload":"0.1.0","command":["python","gen.py"],"limits":{"x":1}}"#,
        );
        let start = StartRecord::from_map(fields).unwrap();
        assert_eq!(start.interval, Some(0.5));
        assert_eq!(start.command, None);
        assert_eq!(start.limits, None, "only Headroom's own limits are read");
        assert_eq!(start.other["mode"], "eager");
        assert_eq!(start.other["command"][1], "gen.py");
        assert_eq!(start.to_map()["command"][0], "python");
    }

    #[test]
    fn a_bad_figure_is_named() {
        for (json, field) in [
            (r#"{"tool":"headroom","free_start":"x"}"#, "free_start"),
            (r#"{"tool":"headroom","total_memory":-1}"#, "total_memory"),
            (
                r#"{"tool":"headroom","limits":{"swap_budget":"8G"}}"#,
                "limits",
            ),
            (
                r#"{"tool":"headroom","limits":{"swap_budget":1,"kill_free":500.0,
                   "fits_tolerance":0,"tight_compressed":0,"tight_free":0.0,
                   "notify_step":1,"on_budget":"stop"}}"#,
                "limits.kill_free",
            ),
        ] {
            let why = StartRecord::from_map(map(json)).unwrap_err();
            assert!(why.starts_with(field), "{json}: {why}");
        }
    }
}
