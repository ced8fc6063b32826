//! The process list: every process this user may see, by footprint, filtered by the search
//! box, capped at [`MAX_PROCESSES`] rows with the number that matched.

use std::collections::HashMap;

use headroom_core::counters::CounterSource;
use serde::Serialize;
use tauri::State;

use crate::error::CommandResult;
use crate::state::AppState;

/// Most rows the process list sends.
pub const MAX_PROCESSES: usize = 150;

/// One row of the process list.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessRow {
    pid: u32,
    ppid: u32,
    uid: u32,
    name: String,
    command: String,
    footprint_bytes: u64,
    resident_bytes: u64,
    swap_bytes: Option<u64>,
}

/// The process list: the first rows by footprint, and how many matched in all.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessList {
    rows: Vec<ProcessRow>,
    total: usize,
}

/// Processes sorted by footprint, filtered by `query` (name, command or pid); at most
/// `MAX_PROCESSES` rows, with the number that matched.
#[tauri::command]
pub fn get_processes(state: State<'_, AppState>, query: String) -> CommandResult<ProcessList> {
    let rows = state
        .counters
        .scan_footprints()
        .map_err(|e| e.to_string())?;
    let commands: HashMap<u32, String> = state
        .counters
        .list_processes()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|p| (p.pid, p.command))
        .collect();
    let needle = query.trim().to_lowercase();
    let mut out: Vec<ProcessRow> = rows
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
    out.sort_by_key(|r| std::cmp::Reverse(r.footprint_bytes));
    let total = out.len();
    out.truncate(MAX_PROCESSES);
    Ok(ProcessList { rows: out, total })
}
