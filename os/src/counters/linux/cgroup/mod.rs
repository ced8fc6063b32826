//! Linux memory cgroups: the limit a process's memory lives under, and what it holds.
//!
//! Inside a container, a CI runner or a cluster job the memory that matters is the cgroup's:
//! a process is OOM-killed at its cgroup's limit however much the host has free. This reader
//! finds the memory cgroup of a process (`/proc/PID/cgroup` and `/proc/PID/mountinfo`; v2,
//! else the v1 `memory` hierarchy; hybrid hosts mount v1 memory and an empty v2) and reads it
//! from the files the kernel keeps:
//!
//! | | v2 | v1 |
//! |---|---|---|
//! | limit | `memory.max`, `memory.high` (the smallest on the path to the root) | `memory.limit_in_bytes` (the same walk) |
//! | usage | `memory.current` | `memory.usage_in_bytes` |
//! | reclaimable | `memory.stat` `inactive_file` | `memory.stat` `total_inactive_file` |
//! | swap | `memory.swap.current`, `memory.swap.max` | `memory.memsw.*` − `memory.*`, where accounted |
//! | OOM kills | `memory.events` `oom_kill` | `memory.oom_control` `oom_kill` |
//! | peak | `memory.peak` | `memory.max_usage_in_bytes` |
//!
//! Free memory under a limit is the room left by the working set: usage − inactive file
//! cache, as the kubelet counts it for evictions (the inactive file cache is what the kernel
//! reclaims first when the limit is reached). A limit at or above the host's memory binds
//! nothing: then the host's numbers stand. Every reader takes its root ("/" or a fixture
//! tree), as the `/proc` readers do. A file that cannot be read (no permission, a controller
//! not mounted) gives a note, never a number made up in its place.

mod parse;

use std::path::{Path, PathBuf};

use self::parse::{cgroup_paths, memory_mounts, parse_limit, stat_value, v1_path, MountKind};
use crate::counters::Result as CounterResult;
use crate::error::CounterError;
use headroom_model::counters::{CgroupMemory, JobCgroup, JobCgroupState, OwnDirs};

/// Where a process's memory cgroup is: resolved once per process and kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `1` or `2`.
    pub version: u8,
    /// The cgroup's path as `/proc/PID/cgroup` gives it.
    pub path: String,
    /// Its directory, and each ancestor's up to the mount's root, nearest first.
    pub levels: Vec<PathBuf>,
}

/// What a cgroup read found: the memory, or why there is none to use.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// Under a limit that binds.
    Limited(CgroupMemory),
    /// In a cgroup without a limit below the host's memory (or in none): the host's numbers.
    Unlimited,
    /// A file could not be read or made no sense: the host's numbers, with this note.
    Unreadable(String),
}

/// Finds the memory cgroup of process `pid` (`"self"` for us) under `root` (`/` on a real
/// host): `None` when the process is in no memory cgroup (no controller mounted).
pub fn locate(root: &Path, pid: &str) -> Result<Option<Location>, String> {
    let proc_dir = root.join("proc").join(pid);
    let cgroup_file = proc_dir.join("cgroup");
    let cgroups = std::fs::read_to_string(&cgroup_file)
        .map_err(|e| format!("cannot read {}: {e}", cgroup_file.display()))?;
    let mountinfo_file = proc_dir.join("mountinfo");
    let mountinfo = std::fs::read_to_string(&mountinfo_file)
        .map_err(|e| format!("cannot read {}: {e}", mountinfo_file.display()))?;
    let (v1_path, v2_path) = cgroup_paths(&cgroups);
    let mounts = memory_mounts(&mountinfo);
    let on_host = |point: &str| root.join(point.trim_start_matches('/'));
    // v2 when its hierarchy has the memory controller; else the v1 memory hierarchy.
    let v2 = mounts.iter().find(|m| m.kind == MountKind::V2).filter(|m| {
        std::fs::read_to_string(on_host(&m.point).join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"))
    });
    let v1_mount = mounts.iter().find(|m| m.kind == MountKind::V1Memory);
    let chosen = match (v2, &v2_path) {
        (Some(mount), Some(path)) => Some((2, mount, path.clone())),
        _ => v1_mount
            .zip(v1_path.clone())
            .map(|(mount, path)| (1, mount, path)),
    };
    let Some((version, mount, path)) = chosen else {
        let v2_mounted = mounts.iter().any(|m| m.kind == MountKind::V2);
        return unmounted(
            &cgroup_file,
            v1_path.as_deref(),
            v2_path.as_deref(),
            v2_mounted,
        );
    };
    let inside = path
        .strip_prefix(mount.root.as_str())
        .unwrap_or(&path)
        .trim_start_matches('/');
    let top = on_host(&mount.point);
    let mut dir = top.join(inside);
    let mut levels = vec![dir.clone()];
    while dir != top {
        if !dir.pop() || !dir.starts_with(&top) {
            break;
        }
        levels.push(dir.clone());
    }
    Ok(Some(Location {
        version,
        path,
        levels,
    }))
}

/// No memory hierarchy to read (none was chosen): `None` when the process is in no memory
/// cgroup below the root, a note when `/proc` names one whose hierarchy is not mounted here
/// (a container without `/sys/fs/cgroup`): its limit may bind, and the numbers shown are
/// the host's.
fn unmounted(
    cgroup_file: &Path,
    v1_path: Option<&str>,
    v2_path: Option<&str>,
    v2_mounted: bool,
) -> Result<Option<Location>, String> {
    let (what, path) = match (below_root(v1_path), below_root(v2_path)) {
        // A v1 memory line: that hierarchy is not mounted (else it would have been chosen).
        (Some(path), _) => ("memory cgroup", path.to_string()),
        // Only a v2 line, and no v2 mount at all: a v2 host whose hierarchy is hidden.
        (None, Some(path)) if v1_path.is_none() && !v2_mounted => ("cgroup", path.to_string()),
        _ => return Ok(None),
    };
    Err(format!(
        "{} puts this process in {what} {path}, but its hierarchy is not mounted here: its \
         limit cannot be read",
        cgroup_file.display()
    ))
}

/// Our cgroup in the unified (v2) hierarchy of a hybrid host, if one is mounted: its
/// directory and its path.
fn unified_dir(root: &Path) -> Option<(PathBuf, String)> {
    let read = |file: &str| std::fs::read_to_string(root.join("proc/self").join(file)).ok();
    let (_, v2_path) = cgroup_paths(&read("cgroup")?);
    let v2_path = v2_path?;
    let mounts = memory_mounts(&read("mountinfo")?);
    let mount = mounts.iter().find(|m| m.kind == MountKind::V2)?;
    let inside = v2_path
        .strip_prefix(mount.root.as_str())
        .unwrap_or(&v2_path)
        .trim_start_matches('/');
    let dir = root.join(mount.point.trim_start_matches('/')).join(inside);
    Some((dir, v2_path))
}

/// `path` unless it is the root (or empty).
fn below_root(path: Option<&str>) -> Option<&str> {
    path.filter(|p| !p.is_empty() && *p != "/")
}

/// Finds our own cgroup directories under `root`; `None` without a memory cgroup.
pub fn own_dirs(root: &Path) -> Result<Option<OwnDirs>, String> {
    let Some(location) = locate(root, "self")? else {
        return Ok(None);
    };
    let Some(memory_dir) = location.levels.first().cloned() else {
        return Ok(None);
    };
    let freezer_dir = if location.version == 1 {
        let read = |file: &str| std::fs::read_to_string(root.join("proc/self").join(file));
        match (read("cgroup"), read("mountinfo")) {
            (Ok(cgroups), Ok(mountinfo)) => {
                v1_path(&cgroups, &mountinfo, "freezer").map(|(point, inside)| {
                    root.join(point.trim_start_matches('/'))
                        .join(inside.trim_start_matches('/'))
                })
            }
            _ => None,
        }
    } else {
        None
    };
    let bare_v2 = if location.version == 2 {
        Some((memory_dir.clone(), location.path.clone()))
    } else {
        unified_dir(root)
    };
    Ok(Some(OwnDirs {
        version: location.version,
        memory_dir,
        path: location.path,
        freezer_dir,
        bare_v2,
    }))
}

/// `dir` and every cgroup beneath it, parents before their children: a job's cgroup and
/// those made inside it (a guard run inside a guarded job makes its own job's cgroup there).
pub fn subtree(dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    let mut at = 0;
    while let Some(parent) = dirs.get(at).cloned() {
        at += 1;
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        dirs.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    dirs
}

/// Every process in the cgroup `dir` and the cgroups beneath it (`cgroup.procs` of each); an
/// error when `dir` itself cannot be read or is gone. A cgroup beneath it removed meanwhile
/// holds nothing.
fn subtree_pids(dir: &Path) -> Result<Vec<u32>, String> {
    let mut pids = Vec::new();
    for (n, cgroup) in subtree(dir).iter().enumerate() {
        let read = read_with(cgroup, "cgroup.procs", |procs| {
            pids.extend(
                procs
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        });
        match read {
            Ok(Some(())) => {}
            Ok(None) if n == 0 => return Err("its directory is gone".to_string()),
            Err(e) if n == 0 => return Err(e),
            Ok(None) | Err(_) => {}
        }
    }
    Ok(pids)
}

/// What a job's own cgroup holds now: its processes (those of the cgroups beneath it
/// included), whether it is frozen, the kernel's peak, OOM count, working set and swap (the
/// kernel's figures of a cgroup count those beneath it).
pub fn job_state(job: &JobCgroup) -> CounterResult<JobCgroupState> {
    let io = |e: String| CounterError::Io {
        what: format!("cgroup {}", job.path),
        source: std::io::Error::other(e),
    };
    let pids = subtree_pids(&job.memory_dir).map_err(io)?;
    let frozen = match (job.version, &job.freezer_dir) {
        (2, _) => {
            read_with(&job.memory_dir, "cgroup.events", |events| {
                stat_value(events, "frozen") == Some(1)
            })
            .map_err(io)?
                == Some(true)
        }
        (_, Some(freezer)) => {
            read_with(freezer, "freezer.state", |state| state.trim() == "FROZEN").map_err(io)?
                == Some(true)
        }
        _ => false,
    };
    if !job.memory {
        // Membership and the freezer only: its memory is its members'.
        return Ok(JobCgroupState {
            pids,
            frozen,
            ..JobCgroupState::default()
        });
    }
    let memory = job_memory(job).map_err(io)?;
    Ok(JobCgroupState {
        pids,
        frozen,
        ..memory
    })
}

/// The memory figures of a job's own memory cgroup: peak, OOM count, working set, swap.
fn job_memory(job: &JobCgroup) -> Result<JobCgroupState, String> {
    let files = if job.version == 2 { &V2 } else { &V1 };
    let dir = &job.memory_dir;
    let peak_bytes = number(dir, files.peak)?;
    let oom_kills = read(dir, files.oom.0)?.and_then(|text| stat_value(&text, files.oom.1));
    let (working_set_bytes, swap_bytes) = match usage_at(job.version, dir)? {
        Some(usage) => (Some(usage.used_bytes), usage.swap_used_bytes),
        None => (None, None),
    };
    Ok(JobCgroupState {
        peak_bytes,
        oom_kills,
        working_set_bytes,
        swap_bytes,
        ..JobCgroupState::default()
    })
}

/// What changes from check to check in a memory cgroup: its working set (usage less the
/// inactive file cache), that cache, and its swap where the kernel accounts it.
struct Usage {
    used_bytes: u64,
    reclaimable_bytes: u64,
    swap_used_bytes: Option<u64>,
}

/// The [`Usage`] of the memory cgroup at `dir`; `None` when it has no usage file.
fn usage_at(version: u8, dir: &Path) -> Result<Option<Usage>, String> {
    let files = if version == 2 { &V2 } else { &V1 };
    let Some(usage) = number(dir, files.usage)? else {
        return Ok(None);
    };
    let inactive = read(dir, "memory.stat")?
        .and_then(|stat| stat_value(&stat, files.inactive_file))
        .unwrap_or(0);
    // Its swap alone, not its limit.
    let swap_used_bytes = if version == 2 {
        number(dir, "memory.swap.current")?
    } else {
        number(dir, "memory.memsw.usage_in_bytes")?.map(|both| both.saturating_sub(usage))
    };
    Ok(Some(Usage {
        used_bytes: usage.saturating_sub(inactive),
        reclaimable_bytes: inactive,
        swap_used_bytes,
    }))
}

/// Reads one cgroup file (kept open: they are read at every check); `Ok(None)` when the
/// kernel has no such file there (the root cgroup has no `memory.max`; an older kernel no
/// `memory.peak`).
fn read(dir: &Path, file: &str) -> Result<Option<String>, String> {
    read_with(dir, file, str::to_string)
}

/// [`read`], `f` on the text (no copy of it).
fn read_with<T>(dir: &Path, file: &str, f: impl FnOnce(&str) -> T) -> Result<Option<T>, String> {
    match super::read::with_kept_text(dir, file, f) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", dir.join(file).display())),
    }
}

/// A number file; `None` when missing, an error when it is not a number or `max`.
fn number(dir: &Path, file: &str) -> Result<Option<u64>, String> {
    let parsed = read_with(dir, file, |text| {
        parse_limit(text)
            .map(|limit| limit.or(Some(u64::MAX)))
            .ok_or_else(|| text.trim().to_string())
    })?;
    match parsed {
        None => Ok(None),
        Some(Ok(number)) => Ok(number),
        Some(Err(text)) => Err(format!(
            "{}: not a number: {text:?}",
            dir.join(file).display()
        )),
    }
}

/// The file names of one cgroup version.
struct Files {
    limits: &'static [&'static str],
    usage: &'static str,
    inactive_file: &'static str,
    oom: (&'static str, &'static str),
    peak: &'static str,
}

const V2: Files = Files {
    limits: &["memory.max", "memory.high"],
    usage: "memory.current",
    inactive_file: "inactive_file",
    oom: ("memory.events", "oom_kill"),
    peak: "memory.peak",
};

const V1: Files = Files {
    limits: &["memory.limit_in_bytes"],
    usage: "memory.usage_in_bytes",
    inactive_file: "total_inactive_file",
    oom: ("memory.oom_control", "oom_kill"),
    peak: "memory.max_usage_in_bytes",
};

/// Reads the memory of the cgroup at `location`, on a host of `host_total_bytes`.
pub fn read_memory(location: &Location, host_total_bytes: u64) -> Found {
    match try_read(location, host_total_bytes) {
        Ok(Some(memory)) => Found::Limited(memory),
        Ok(None) => Found::Unlimited,
        Err(note) => Found::Unreadable(note),
    }
}

fn try_read(location: &Location, host_total_bytes: u64) -> Result<Option<CgroupMemory>, String> {
    let files = if location.version == 2 { &V2 } else { &V1 };
    // The smallest limit on the path to the root, and where it is.
    let mut binding: Option<(u64, &PathBuf, &str)> = None;
    for dir in &location.levels {
        for &file in files.limits {
            if let Some(limit) = number(dir, file)? {
                if limit < host_total_bytes && binding.is_none_or(|(b, _, _)| limit < b) {
                    binding = Some((limit, dir, file));
                }
            }
        }
    }
    let Some((limit_bytes, at, limit_file)) = binding else {
        return Ok(None);
    };
    let usage = usage_at(location.version, at)?
        .ok_or_else(|| format!("{}: no {}", at.display(), files.usage))?;
    let swap_limit_bytes = swap_limit(location.version, at, limit_bytes)?;
    let oom_kills = read(at, files.oom.0)?.and_then(|text| stat_value(&text, files.oom.1));
    let peak_bytes = number(at, files.peak)?;
    let limit_path = relative(location, at);
    // Our own cgroup's pressure (PSI is kept per cgroup on v2). Unknown when the file is
    // missing or refused (`psi=0` answers EOPNOTSUPP): it never hides the limit.
    let pressure = match (location.version, location.levels.first()) {
        (2, Some(own)) => read(own, "memory.pressure")
            .ok()
            .flatten()
            .and_then(|text| super::parse::parse_psi(text.as_bytes())),
        _ => None,
    };
    Ok(Some(CgroupMemory {
        version: location.version,
        path: location.path.clone(),
        limit_path,
        limit_file: limit_file.to_string(),
        limit_bytes,
        used_bytes: usage.used_bytes.min(limit_bytes),
        reclaimable_bytes: usage.reclaimable_bytes,
        swap_used_bytes: usage.swap_used_bytes,
        swap_limit_bytes,
        oom_kills,
        peak_bytes,
        host_total_bytes,
        host_free_percent: 0.0,
        host_swap_used_bytes: 0,
        pressure,
        host_pressure: None,
    }))
}

/// The swap limit at `at`: v2 `memory.swap.max`; v1 `memsw` (memory + swap) less the memory
/// `limit`, where the kernel accounts swap at all (`swapaccount`).
fn swap_limit(version: u8, at: &Path, limit: u64) -> Result<Option<u64>, String> {
    if version == 2 {
        return Ok(number(at, "memory.swap.max")?.filter(|&m| m != u64::MAX));
    }
    Ok(number(at, "memory.memsw.limit_in_bytes")?
        .filter(|&b| b < u64::MAX / 2)
        .map(|b| b.saturating_sub(limit)))
}

/// The cgroup whose limit bound at the last full read (`last`), for a light check: what
/// changes from check to check read now ([`Usage`]), its limits, OOM count, peak and
/// pressure as `last` had them (read again at the next full read). A full read when that
/// cgroup is no longer on our path.
pub fn read_usage(location: &Location, last: &CgroupMemory) -> Found {
    let Some(at) = location
        .levels
        .iter()
        .find(|&level| relative(location, level) == last.limit_path)
    else {
        return read_memory(location, last.host_total_bytes);
    };
    match usage_at(location.version, at) {
        Ok(Some(usage)) => Found::Limited(CgroupMemory {
            used_bytes: usage.used_bytes.min(last.limit_bytes),
            reclaimable_bytes: usage.reclaimable_bytes,
            swap_used_bytes: usage.swap_used_bytes,
            ..last.clone()
        }),
        Ok(None) => Found::Unreadable(format!("{}: no usage", at.display())),
        Err(note) => Found::Unreadable(note),
    }
}

/// The cgroup path of directory `at` (one of `location.levels`), as `/proc` would name it.
fn relative(location: &Location, at: &Path) -> String {
    let up = location.levels.iter().position(|l| l == at).unwrap_or(0);
    let mut parts: Vec<&str> = location.path.split('/').filter(|p| !p.is_empty()).collect();
    parts.truncate(parts.len().saturating_sub(up));
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests;
