//! Will it fit, before it starts: a job's key, the need of one past run, the prediction from
//! several, and the answer for the memory free now. Pure: the store supplies the runs, the
//! counters the free memory.
//!
//! - **Key**: the command line with what varies between runs of the same job normalised:
//!   the program by its file name (`/usr/bin/python3.11` → `python3`), and a script run by
//!   an interpreter (python, node, ruby, perl, sh, bash …) by its own file name, without the
//!   interpreter ([`job_key`]); the arguments are kept. `--key NAME` names a job
//!   explicitly instead.
//! - **Need of a run**: what it took of the machine's memory, plus its swap growth (the
//!   part that did not fit). What it took is measured where the OS counts it exactly:
//!   - **Linux** ([`Taken::Footprint`]): its peak footprint (`RssAnon + RssShmem`, or its
//!     own cgroup's kernel peak): what the job's processes hold, pages touched included.
//!   - **macOS, live** ([`Taken::Machine`] with page counts): the rise of the memory in use as
//!     Activity Monitor counts it (app + wired + compressed, from the kernel's page counts)
//!     from the run's start to its peak. Not the footprint: it counts compressed pages at
//!     their uncompressed size (`internal_compressed` in xnu's `phys_footprint`), so a run
//!     that compresses looks bigger than the RAM it took (a recorded Pixal3D run peaked at a
//!     69.6 GB footprint on a 48 GB Mac without swapping). Not the drop of the free level
//!     (`kern.memorystatus_level`): it counts active pages as free, so it does not move
//!     while a job fills RAM with pages it touches (the recorded `pixal3d eager-1`: 0.3 →
//!     17.7 GB of footprint in its first 59 s at a level of 90).
//!   - **A recorded run** with only footprint, swap and the level (stageload's traces, a Mac
//!     without page counts; [`Taken::Machine`] without them), by the rule of [`recorded`]:
//!     a run that swapped filled the RAM it found: what it took is what was free at its
//!     start (the drop of the level leaves out active pages, which a Mac counts as free;
//!     what it pushed out is its swap growth), so a run that did not fit from F free is
//!     never predicted to fit in F or less. A run that did
//!     not swap fit in RAM: the drop of the level is the compressor and wired memory it
//!     forced, and its resident pages were at most its footprint and at most what stayed
//!     available at its lowest (active pages count as available): it took at least the
//!     larger of the two, never more than was available at its start.
//!
//!   Free memory at the start is not part of the need of a run that did not swap: other
//!   processes move it by gigabytes between runs, and the answer compares the need with the room of the moment
//!   instead. A run that did not end on its own (stopped by the guard, OOM-killed, ended by a
//!   signal, interrupted) measured a lower bound: it is raised to max(need × 1.2, need + 100
//!   MiB), as Kubernetes' VPA raises an OOM-killed run.
//! - **Prediction**: one or two runs: their largest need × 1.15. Three or more: the 90th
//!   percentile of the needs, each weighted by age with a 24-hour half-life, × 1.15 (the VPA
//!   recommender's target and margin), and never under the largest need of the last three.
//!   The run time predicted is the longest past run's × 1.15 (the queue reads it).
//! - **Answer**: it fits when the prediction is at most the room now above the free floor
//!   (the guard would stop it under the floor). The room is what is not in use where the
//!   kernel counts pages in use (macOS: free memory and cached files), else the free memory
//!   (Linux `MemAvailable`, a cgroup's room under its limit), above the floor the job's guard
//!   keeps: [`Room::for_guard`].

use std::time::Duration;

use serde::Serialize;

use crate::policy::{EndReason, Limits, Verdict};
use headroom_model::counters::SystemCounters;

/// The margin on the need.
pub const MARGIN: f64 = 1.15;
/// The weight of a run halves every this long.
pub const HALF_LIFE: Duration = Duration::from_secs(24 * 3600);
/// The percentile of the weighted needs the prediction takes (three runs or more).
pub const PERCENTILE: f64 = 0.9;
/// A lower-bound need (a run that did not end on its own) is raised at least this much.
const LOWER_BOUND_BYTES: u64 = 100 << 20;
/// … and at least by this factor.
const LOWER_BOUND_FACTOR: f64 = 1.2;

const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "pypy", "pypy3", "node", "deno", "bun", "ruby", "perl", "php",
    "sh", "bash", "zsh", "dash", "Rscript", "julia", "lua",
];

/// The file name of `path`, with a version suffix of an interpreter dropped
/// (`python3.11` → `python3`).
fn program_name(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.split_once('.') {
        Some((stem, version))
            if INTERPRETERS.contains(&stem)
                && version.chars().all(|c| c.is_ascii_digit() || c == '.') =>
        {
            stem.to_string()
        }
        _ => name.to_string(),
    }
}

/// A key as someone typed it (`--key`, `history KEY`, `history import --key`, the app's
/// Guard form): trimmed, `None` when nothing is left. Every entry point of a typed key goes
/// through this one function, so a key is the same key wherever it is typed. (Printed, a
/// key goes through [`headroom_model::units::printable`]: it may hold any character.)
pub fn typed_key(text: &str) -> Option<String> {
    let key = text.trim();
    (!key.is_empty()).then(|| key.to_string())
}

/// The key of a job run as `argv`, or `explicit` when given (`--key`, see [`typed_key`]; a
/// blank one is none).
///
/// One script is one key however it is started: a script run by an interpreter is keyed by
/// its file name and its arguments, without the interpreter or the interpreter's options
/// (`python x.py`, `python3 -u /src/x.py`, `./x.py` and `/usr/bin/env python3 x.py` are all
/// `x.py`), and `python -m headroom_memory x.py` (the package's runner) is the key of what it
/// runs. Code given with `-c` and a module run with `-m` keep the interpreter (`python3 -m
/// diffusers.cli --fast`): they have no file name.
pub fn job_key(argv: &[String], explicit: Option<&str>) -> String {
    if let Some(key) = explicit.and_then(typed_key) {
        return key;
    }
    let argv = without_env(argv);
    let Some((program, args)) = argv.split_first() else {
        return String::new();
    };
    let program = program_name(program);
    if !INTERPRETERS.contains(&program.as_str()) {
        return std::iter::once(program.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
    }
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-m" => {
                let module = rest.next();
                if module.is_some_and(|m| m == RUNNER_MODULE) {
                    return job_key(rest.as_slice(), None);
                }
                let mut parts = vec![program, arg.clone()];
                parts.extend(module.cloned());
                parts.extend(rest.cloned());
                return parts.join(" ");
            }
            "-c" => {
                let mut parts = vec![program, arg.clone()];
                parts.extend(rest.cloned());
                return parts.join(" ");
            }
            // Options that take a value (`python -X importtime`, `-W ignore`).
            "-X" | "-W" => {
                rest.next();
            }
            option if option.starts_with('-') => {}
            script => {
                let name = script.rsplit('/').next().unwrap_or(script);
                return std::iter::once(name)
                    .chain(rest.map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
            }
        }
    }
    // The interpreter alone (a shell, a REPL).
    std::iter::once(program.as_str())
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The Python package's runner, `python -m headroom_memory SCRIPT`: transparent to a key.
const RUNNER_MODULE: &str = "headroom_memory";

/// `argv` without a leading `env` and its `NAME=value` settings (`/usr/bin/env python3 x.py`,
/// a script's `#!/usr/bin/env python3` line as the kernel runs it).
fn without_env(argv: &[String]) -> &[String] {
    match argv.split_first() {
        Some((first, rest)) if first.rsplit('/').next() == Some("env") => {
            let settings = rest
                .iter()
                .take_while(|a| a.contains('=') && !a.starts_with('-'))
                .count();
            &rest[settings..]
        }
        _ => argv,
    }
}

/// The key of a job known only by its command line (a process picked in the app): split on
/// spaces.
pub fn key_of_command_line(command: &str) -> String {
    let argv: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    job_key(&argv, None)
}

/// How what a run took is measured (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Taken {
    /// By its peak footprint (exact on Linux).
    Footprint,
    /// By what the machine lost: the rise of the memory in use where the run has page counts
    /// (macOS), else by the rule of [`recorded`]. `base_bytes` is what a percentage of the
    /// level is of (`hw.memsize_usable` on a Mac), `free_start_percent` the level at the
    /// run's start.
    Machine {
        /// The memory the level is a share of, bytes.
        base_bytes: u64,
        /// Free memory at its start, percent.
        free_start_percent: f64,
    },
}

impl Taken {
    /// The measure for a run on the machine `machine` reads, with `free_start_percent` free
    /// at its start: what the machine lost where the kernel counts pages in use (macOS) or
    /// the footprint is not exact (any OS but Linux); the footprint on Linux.
    pub fn here(machine: &SystemCounters, free_start_percent: f64) -> Self {
        if machine.in_use_bytes.is_none() && cfg!(target_os = "linux") {
            Taken::Footprint
        } else {
            Taken::Machine {
                base_bytes: machine.level_base_bytes(),
                free_start_percent,
            }
        }
    }
}

/// What a recorded run took of `base_bytes`, from its footprint, swap and level alone (see
/// the module docs): a run that swapped (past its verdict's tolerance) filled the RAM it
/// found and took all of it, what was free at its start (never less than the drop of the
/// level, which leaves out active pages); one that did not took the larger of that drop and
/// its peak footprint, the footprint counted up to what stayed available at its lowest.
pub fn recorded(verdict: &Verdict, base_bytes: u64, free_start_percent: f64) -> u64 {
    if verdict.swap_growth_bytes > verdict.fits_tolerance_bytes {
        return headroom_model::units::percent_of_bytes(free_start_percent, base_bytes);
    }
    let lowest = verdict
        .lowest_free_percent
        .unwrap_or(free_start_percent)
        .min(free_start_percent);
    let drop = headroom_model::units::percent_of_bytes(free_start_percent - lowest, base_bytes);
    let available_at_lowest = headroom_model::units::percent_of_bytes(lowest, base_bytes);
    let resident = verdict
        .peak_footprint_bytes
        .unwrap_or(0)
        .min(available_at_lowest);
    resident.max(drop)
}

/// What one run needed, bytes, and whether that is only a lower bound (it did not end on
/// its own), already raised (see the module docs).
pub fn need_of(verdict: &Verdict, taken: Taken) -> (u64, bool) {
    let taken = match taken {
        Taken::Footprint => verdict.peak_footprint_bytes.unwrap_or(0),
        Taken::Machine {
            base_bytes,
            free_start_percent,
        } => verdict
            .in_use_taken_bytes
            .unwrap_or_else(|| recorded(verdict, base_bytes, free_start_percent)),
    };
    let measured = taken.saturating_add(verdict.swap_growth_bytes);
    let lower_bound = match &verdict.ended {
        EndReason::Exited { .. } | EndReason::Vanished => false,
        EndReason::Signaled { .. }
        | EndReason::Stopped { .. }
        | EndReason::Interrupted { .. }
        | EndReason::NotStopped { .. } => true,
    };
    if !lower_bound {
        return (measured, false);
    }
    let raised = (measured as f64 * LOWER_BOUND_FACTOR) as u64;
    (raised.max(measured.saturating_add(LOWER_BOUND_BYTES)), true)
}

/// One past run, as the prediction reads it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PastRun {
    /// Its need, bytes (raised when a lower bound).
    pub need_bytes: u64,
    /// How long ago it ended.
    pub age: Duration,
    /// True when it did not fit.
    pub did_not_fit: bool,
    /// How long it ran, where known.
    pub run_time: Option<Duration>,
}

/// A predicted need and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// The predicted need, bytes.
    pub need_bytes: u64,
    /// How many runs it rests on.
    pub runs: usize,
    /// The age of the oldest of them.
    pub oldest: Duration,
    /// How many of them did not fit.
    pub did_not_fit: usize,
    /// How long a run takes at most: the longest of them × [`MARGIN`] (what the queue's
    /// rule for starting ahead of an earlier job reads), where known.
    pub run_time: Option<Duration>,
}

/// The weighted `q`-quantile of `(value, weight)`.
fn weighted_quantile(mut values: Vec<(u64, f64)>, q: f64) -> u64 {
    values.sort_by_key(|&(v, _)| v);
    let total: f64 = values.iter().map(|&(_, w)| w).sum();
    let mut seen = 0.0;
    for &(value, weight) in &values {
        seen += weight;
        if seen >= q * total {
            return value;
        }
    }
    values.last().map_or(0, |&(v, _)| v)
}

/// The prediction from `runs`, newest first; `None` without any.
pub fn predict(runs: &[PastRun]) -> Option<Prediction> {
    let largest = runs.iter().map(|r| r.need_bytes).max()?;
    let base = if runs.len() <= 2 {
        largest
    } else {
        let weighted: Vec<(u64, f64)> = runs
            .iter()
            .map(|r| {
                let halves = r.age.as_secs_f64() / HALF_LIFE.as_secs_f64();
                (r.need_bytes, 0.5f64.powf(halves).max(1e-9))
            })
            .collect();
        let recent = runs.iter().take(3).map(|r| r.need_bytes).max().unwrap_or(0);
        weighted_quantile(weighted, PERCENTILE).max(recent)
    };
    Some(Prediction {
        need_bytes: (base as f64 * MARGIN) as u64,
        runs: runs.len(),
        oldest: runs.iter().map(|r| r.age).max().unwrap_or_default(),
        did_not_fit: runs.iter().filter(|r| r.did_not_fit).count(),
        run_time: runs
            .iter()
            .filter_map(|r| r.run_time)
            .max()
            .map(|t| t.mul_f64(MARGIN)),
    })
}

/// The room a new job has now, as every "will it fit" reads it (`fit`, `--wait-fit`, the
/// queue, the app's Guard form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Room {
    /// Free for a new job now, bytes ([`SystemCounters::room_bytes`]).
    pub free_bytes: u64,
    /// The free floor the guard keeps, bytes.
    pub floor_bytes: u64,
}

impl Room {
    /// The room in `system` above the free floor the job's guard would keep (`limits`'
    /// `kill_free_percent`, of the memory the level is a share of): the one floor every
    /// "will it fit" compares with (`fit --kill-free`, the queue's guard, the app's
    /// settings), as the guard that runs the job would stop it under that floor.
    pub fn for_guard(system: &SystemCounters, limits: &Limits) -> Self {
        Room {
            free_bytes: system.room_bytes(),
            floor_bytes: system.percent_bytes(limits.kill_free_percent),
        }
    }

    /// `free_bytes` free on another machine of `total_bytes`, with the same floor as
    /// [`Room::for_guard`] there.
    pub fn on_machine(free_bytes: u64, total_bytes: u64, limits: &Limits) -> Self {
        Room {
            free_bytes,
            floor_bytes: headroom_model::units::percent_of_bytes(
                limits.kill_free_percent,
                total_bytes,
            ),
        }
    }

    /// Room left above the floor, bytes.
    pub fn above_floor_bytes(&self) -> u64 {
        self.free_bytes.saturating_sub(self.floor_bytes)
    }
}

/// The answer for `room`: `Ok(room left)` when the prediction fits above the floor,
/// `Err(short by)` when it does not.
pub fn answer(prediction: &Prediction, room: Room) -> Result<u64, u64> {
    let room = room.above_floor_bytes();
    if prediction.need_bytes <= room {
        Ok(room - prediction.need_bytes)
    } else {
        Err(prediction.need_bytes - room)
    }
}

/// The processes to name as making room when a job is `short` bytes short: the largest
/// first, just enough of them to cover it (`rows`: name and footprint, the asker's own
/// process left out by the caller).
pub fn making_room(rows: Vec<(String, u64)>, short_bytes: u64) -> Vec<(String, u64)> {
    let mut rows = rows;
    rows.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    let mut covered = 0u64;
    let mut out = Vec::new();
    for (name, bytes) in rows {
        if covered >= short_bytes {
            break;
        }
        covered = covered.saturating_add(bytes);
        out.push((name, bytes));
    }
    out
}

/// The start gate of a job that waits in line (`guard --wait-fit`): with a need predicted
/// from its past runs the queue decides its room by that need, and the fixed free-memory
/// gate (`--wait-free`) is off; without one it waits by `--wait-free` as it was given.
pub fn line_gate(limits: &Limits, need_bytes: Option<u64>) -> Limits {
    Limits {
        wait_free_percent: if need_bytes.is_some() {
            0.0
        } else {
            limits.wait_free_percent
        },
        ..limits.clone()
    }
}

#[cfg(test)]
mod tests;
