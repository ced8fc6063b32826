//! Counters for operating systems Headroom does not support: every call returns
//! [`CounterError::Unsupported`], so the workspace still compiles there.

use super::{
    CounterSource, FootprintRow, ProcessInfo, ProcessMemory, ProcessState, Result, SystemCounters,
};
use crate::error::CounterError;

/// The counter reader for this OS (none: every read is `Unsupported`).
#[derive(Debug, Default, Clone)]
pub struct Counters;

fn unsupported<T>(what: &str) -> Result<T> {
    Err(CounterError::Unsupported {
        what: format!("{what} on {}", std::env::consts::OS),
    })
}

impl Counters {
    /// A reader for this OS.
    pub fn new() -> Self {
        Counters
    }
}

impl CounterSource for Counters {
    /// System-wide counters.
    fn read_system(&self) -> Result<SystemCounters> {
        unsupported("system memory counters")
    }

    /// Every process with identity and command line.
    fn list_processes(&self) -> Result<Vec<ProcessInfo>> {
        unsupported("process listing")
    }

    /// One process's identity and command line.
    fn process_info(&self, _pid: u32) -> Result<ProcessInfo> {
        unsupported("process information")
    }

    /// A process's start time and state.
    fn process_state(&self, _pid: u32) -> Result<ProcessState> {
        unsupported("process start times")
    }

    /// This boot's id.
    fn boot_id(&self) -> Result<String> {
        unsupported("the boot id")
    }

    /// One process's identity and owner, without the command line.
    fn identity(&self, _pid: u32) -> Result<ProcessInfo> {
        unsupported("process information")
    }

    /// One process's memory.
    fn process_memory(&self, _pid: u32) -> Result<ProcessMemory> {
        unsupported("process memory")
    }

    /// Footprint of every process.
    fn scan_footprints(&self) -> Result<Vec<FootprintRow>> {
        unsupported("process memory")
    }

    /// Direct children of a process.
    fn child_pids(&self, _pid: u32) -> Result<Vec<u32>> {
        unsupported("process children")
    }
}
