//! The process list the app shows: every process this user may read, biggest footprint
//! first, filtered by a search text (name, command line or exact pid), cut to a number of
//! rows, with how many matched in all. Two reads of the OS (a footprint scan and the command
//! lines); the filtering is pure and table-tested.

use std::collections::HashMap;

use serde::Serialize;

use crate::counters::{CounterSource, Counters, Result};
use headroom_model::counters::FootprintRow;

/// One row of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessRow {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Real user id.
    pub uid: u32,
    /// Short name.
    pub name: String,
    /// Command line (empty when hidden).
    pub command: String,
    /// Footprint, bytes.
    pub footprint_bytes: u64,
    /// Resident size, bytes.
    pub resident_bytes: u64,
    /// Swapped-out memory, bytes, where the OS has it.
    pub swap_bytes: Option<u64>,
}

/// The first rows by footprint, and how many processes matched in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessList {
    /// At most the asked number of rows, biggest footprint first.
    pub rows: Vec<ProcessRow>,
    /// How many processes matched the search.
    pub total: usize,
}

/// Every process matching `query`, biggest footprint first, at most `max_rows` of them.
pub fn process_list(counters: &Counters, query: &str, max_rows: usize) -> Result<ProcessList> {
    let scan = counters.scan_footprints()?;
    let commands: HashMap<u32, String> = counters
        .list_processes()?
        .into_iter()
        .map(|p| (p.pid, p.command))
        .collect();
    Ok(select(scan, &commands, query, max_rows))
}

/// The pure part of [`process_list`]: rows with their command lines, filtered, sorted, cut.
fn select(
    scan: Vec<FootprintRow>,
    commands: &HashMap<u32, String>,
    query: &str,
    max_rows: usize,
) -> ProcessList {
    let needle = query.trim().to_lowercase();
    let mut rows: Vec<ProcessRow> = scan
        .into_iter()
        .map(|r| ProcessRow {
            command: commands.get(&r.pid).cloned().unwrap_or_default(),
            pid: r.pid,
            ppid: r.ppid,
            uid: r.uid,
            name: r.name,
            footprint_bytes: r.memory.footprint_bytes,
            resident_bytes: r.memory.resident_bytes,
            swap_bytes: r.memory.swap_bytes,
        })
        .filter(|r| {
            needle.is_empty()
                || r.name.to_lowercase().contains(&needle)
                || r.command.to_lowercase().contains(&needle)
                || r.pid.to_string() == needle
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.footprint_bytes));
    let total = rows.len();
    rows.truncate(max_rows);
    ProcessList { rows, total }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_model::counters::ProcessMemory;

    fn row(pid: u32, name: &str, footprint_bytes: u64) -> FootprintRow {
        FootprintRow {
            pid,
            ppid: 1,
            uid: 501,
            name: name.into(),
            memory: ProcessMemory {
                pid,
                footprint_bytes,
                ..ProcessMemory::default()
            },
        }
    }

    #[test]
    fn search_sort_and_cap() {
        let scan = || {
            vec![
                row(10, "python3", 5 << 30),
                row(11, "bash", 1 << 20),
                row(12, "Python", 9 << 30),
                row(110, "node", 3 << 30),
            ]
        };
        let commands = HashMap::from([
            (10, "python3 train.py".to_string()),
            (110, "node app.js".into()),
        ]);
        // (query, max rows, pids shown, total matched)
        let table: [(&str, usize, &[u32], usize); 6] = [
            ("", 10, &[12, 10, 110, 11], 4),
            ("", 2, &[12, 10], 4),
            ("  PYTHON ", 10, &[12, 10], 2),
            ("train", 10, &[10], 1),
            ("11", 10, &[11], 1), // a pid matches exactly, not "110"
            ("nothing", 10, &[], 0),
        ];
        for (query, max_rows, pids, total) in table {
            let list = select(scan(), &commands, query, max_rows);
            let shown: Vec<u32> = list.rows.iter().map(|r| r.pid).collect();
            assert_eq!((shown.as_slice(), list.total), (pids, total), "{query:?}");
        }
        let list = select(scan(), &commands, "node", 10);
        assert_eq!(list.rows[0].command, "node app.js");
    }
}
