//! Processes as plain data: a process named by (pid, start time), so that a recycled pid
//! never matches ([`ProcessIdentity`]), and the memory of a process tree ([`TreeMemory`]).
//! `headroom-os` reads them (`process::ProcessLookup`).

use serde::{Deserialize, Serialize};

use crate::counters::ProcessMemory;

/// A process, identified so that a recycled pid never matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// Process id.
    pub pid: u32,
    /// The OS's start-time token (see [`crate::counters::ProcessInfo::start_time`]).
    pub start_time: u64,
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
    pub fn add(&mut self, m: &ProcessMemory) {
        self.footprint_bytes += m.footprint_bytes;
        self.resident_bytes += m.resident_bytes;
        if let Some(swap) = m.swap_bytes {
            *self.swap_bytes.get_or_insert(0) += swap;
        }
        self.processes += 1;
    }
}
