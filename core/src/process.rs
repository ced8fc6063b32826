//! Processes: identity by (pid, start time), process trees, and tree footprints.
//!
//! A pid alone is not an identity: pids are recycled. Everything that remembers a process
//! (the sampler's tracked list, guards) keeps a [`ProcessIdentity`] and re-checks it before
//! acting.

use std::collections::{HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::counters::{CounterSource, Counters, FootprintRow, ProcessMemory, Result};

/// A process, identified so that a recycled pid never matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// Process id.
    pub pid: u32,
    /// The OS's start-time token (see [`crate::counters::ProcessInfo::start_time`]).
    pub start_time: u64,
}

impl ProcessIdentity {
    /// Reads the identity of the running process `pid`.
    pub fn of(counters: &Counters, pid: u32) -> Result<Self> {
        let info = counters.process_info(pid)?;
        Ok(ProcessIdentity {
            pid,
            start_time: info.start_time,
        })
    }

    /// Whether this exact process (same pid and start time) still exists: `Ok(false)` when
    /// it exited or its pid now names another process, an error when the OS would not say.
    /// One cheap read (Linux `/proc/PID/stat`, macOS `PROC_PIDTBSDINFO`).
    pub fn alive(&self, counters: &Counters) -> Result<bool> {
        match counters.start_time(self.pid) {
            Ok(start_time) => Ok(start_time == self.start_time),
            Err(e) if e.is_gone() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// True while this exact process still exists. A failed read counts as alive: only a
    /// process known to be gone is gone.
    pub fn is_alive(&self, counters: &Counters) -> bool {
        self.alive(counters).unwrap_or(true)
    }
}

/// Memory of a process and all its descendants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TreeMemory {
    /// The root process.
    pub pid: u32,
    /// Sum of footprints.
    pub footprint_bytes: u64,
    /// Sum of resident sizes.
    pub resident_bytes: u64,
    /// Sum of per-process swap, where the OS reports it.
    pub swap_bytes: Option<u64>,
    /// How many processes were summed.
    pub processes: u32,
}

impl TreeMemory {
    /// Adds one process's numbers.
    pub(crate) fn add(&mut self, m: &ProcessMemory) {
        self.footprint_bytes += m.footprint_bytes;
        self.resident_bytes += m.resident_bytes;
        if let Some(swap) = m.swap_bytes {
            *self.swap_bytes.get_or_insert(0) += swap;
        }
        self.processes += 1;
    }
}

/// `pid` and all its descendants, `pid` first, found by walking children. Processes that end
/// during the walk are left out; a loop in parent links cannot hang it.
pub fn tree_pids(counters: &Counters, pid: u32) -> Vec<u32> {
    let mut seen = HashSet::from([pid]);
    let mut out = vec![pid];
    let mut queue = VecDeque::from([pid]);
    while let Some(p) = queue.pop_front() {
        for child in counters.child_pids(p).unwrap_or_default() {
            if seen.insert(child) {
                out.push(child);
                queue.push_back(child);
            }
        }
    }
    out
}

/// Descendants of `pid` (not `pid` itself) in a footprint scan, by parent pid.
pub fn descendants_in(rows: &[FootprintRow], pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for row in rows {
        if row.pid != row.ppid {
            children.entry(row.ppid).or_default().push(row.pid);
        }
    }
    let mut seen = HashSet::from([pid]);
    let mut out = Vec::new();
    let mut queue = VecDeque::from([pid]);
    while let Some(p) = queue.pop_front() {
        for &child in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if seen.insert(child) {
                out.push(child);
                queue.push_back(child);
            }
        }
    }
    out
}

/// Memory of `pid` and its descendants. Fails only if `pid` itself cannot be read; a
/// descendant that vanished is skipped.
pub fn tree_memory(counters: &Counters, pid: u32) -> Result<TreeMemory> {
    let mut total = TreeMemory {
        pid,
        ..TreeMemory::default()
    };
    total.add(&counters.process_memory(pid)?);
    for child in tree_pids(counters, pid).into_iter().skip(1) {
        if let Ok(m) = counters.process_memory(child) {
            total.add(&m);
        }
    }
    Ok(total)
}

/// Ancestors of `pid` (parent, grandparent, … up to the root), excluding `pid`.
pub fn ancestors(counters: &Counters, pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut current = pid;
    while let Ok(info) = counters.process_info(current) {
        if info.ppid == 0 || info.ppid == current || out.contains(&info.ppid) {
            break;
        }
        out.push(info.ppid);
        current = info.ppid;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pid: u32, ppid: u32) -> FootprintRow {
        FootprintRow {
            pid,
            ppid,
            uid: 0,
            name: format!("p{pid}"),
            memory: ProcessMemory {
                pid,
                ..ProcessMemory::default()
            },
        }
    }

    #[test]
    fn descendants_by_parent_links() {
        let rows = vec![
            row(1, 0),
            row(10, 1),
            row(11, 10),
            row(12, 11),
            row(20, 1),
            row(13, 10),
        ];
        let mut d = descendants_in(&rows, 10);
        d.sort_unstable();
        assert_eq!(d, vec![11, 12, 13]);
        assert!(descendants_in(&rows, 12).is_empty());
        // A cycle (corrupt or racing data) terminates.
        let cyclic = vec![row(5, 6), row(6, 5)];
        assert_eq!(descendants_in(&cyclic, 5), vec![6]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn real_tree_memory_includes_children() {
        let counters = Counters::new();
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let id = ProcessIdentity::of(&counters, child.id()).unwrap();
        assert!(id.is_alive(&counters));
        let pids = tree_pids(&counters, me);
        let tree = tree_memory(&counters, me).unwrap();
        let ancestors_of_child = ancestors(&counters, child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(pids.contains(&child.id()));
        assert!(tree.processes >= 2);
        assert!(tree.footprint_bytes > 0 && tree.resident_bytes > 0);
        assert_eq!(ancestors_of_child.first(), Some(&me));
        assert!(!id.is_alive(&counters), "reaped child must not be alive");
        let recycled = ProcessIdentity {
            pid: me,
            start_time: 1,
        };
        assert!(!recycled.is_alive(&counters), "same pid, other start time");
    }
}
