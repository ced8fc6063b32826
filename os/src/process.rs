//! Processes: identity by (pid, start time), process trees, and tree footprints.
//!
//! A pid alone is not an identity: pids are recycled. Everything that remembers a process
//! (the sampler's tracked list, guards) keeps a [`ProcessIdentity`] and re-checks it before
//! acting.

use crate::counters::{CounterSource, Result};
use headroom_model::process::ProcessIdentity;

/// What the OS says of a [`ProcessIdentity`]: who runs under a pid, and whether an identity
/// still lives. (Bring it into scope to call `ProcessIdentity::of`, `alive`, `is_alive`.)
pub trait ProcessLookup: Sized {
    /// Reads the identity of the running process `pid`.
    fn of(counters: &impl CounterSource, pid: u32) -> Result<Self>;
    /// Whether this exact process (same pid and start time) still exists: `Ok(false)` when
    /// it exited or its pid now names another process, an error when the OS would not say.
    /// One cheap read (Linux `/proc/PID/stat`, macOS `PROC_PIDTBSDINFO`).
    fn alive(&self, counters: &impl CounterSource) -> Result<bool>;
    /// True while this exact process still exists. A failed read counts as alive: only a
    /// process known to be gone is gone.
    fn is_alive(&self, counters: &impl CounterSource) -> bool {
        self.alive(counters).unwrap_or(true)
    }
}

impl ProcessLookup for ProcessIdentity {
    fn of(counters: &impl CounterSource, pid: u32) -> Result<Self> {
        let info = counters.process_info(pid)?;
        Ok(ProcessIdentity {
            pid,
            start_time: info.start_time,
        })
    }

    fn alive(&self, counters: &impl CounterSource) -> Result<bool> {
        match counters.start_time(self.pid) {
            Ok(start_time) => Ok(start_time == self.start_time),
            Err(e) if e.is_gone() => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// `pid` and all its descendants, `pid` first, found by walking children. Processes that end
/// during the walk are left out; a loop in parent links cannot hang it. Tests use it to find
/// the processes they spawned; a job's members are found by [`crate::members`].
#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
pub fn tree_pids(counters: &impl CounterSource, pid: u32) -> Vec<u32> {
    let mut seen = std::collections::HashSet::from([pid]);
    let mut out = vec![pid];
    let mut queue = std::collections::VecDeque::from([pid]);
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

/// Ancestors of `pid` (parent, grandparent, … up to the root), excluding `pid`, each by
/// (pid, start time): a pid alone would name a process that got a dead ancestor's pid.
pub fn ancestors(counters: &impl CounterSource, pid: u32) -> Vec<ProcessIdentity> {
    let mut out: Vec<ProcessIdentity> = Vec::new();
    let mut current = pid;
    while let Ok(info) = counters.identity(current) {
        if info.ppid == 0 || info.ppid == current || out.iter().any(|a| a.pid == info.ppid) {
            break;
        }
        let Ok(start_time) = counters.start_time(info.ppid) else {
            break;
        };
        out.push(ProcessIdentity {
            pid: info.ppid,
            start_time,
        });
        current = info.ppid;
    }
    out
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn real_tree_and_ancestors_include_a_child() {
        let counters = crate::counters::Counters::new();
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let id = ProcessIdentity::of(&counters, child.id()).unwrap();
        assert!(id.is_alive(&counters));
        let pids = tree_pids(&counters, me);
        let ancestors_of_child = ancestors(&counters, child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(pids.contains(&child.id()));
        assert_eq!(ancestors_of_child.first().map(|a| a.pid), Some(me));
        assert!(!id.is_alive(&counters), "reaped child must not be alive");
        let recycled = ProcessIdentity {
            pid: me,
            start_time: 1,
        };
        assert!(!recycled.is_alive(&counters), "same pid, other start time");
    }
}
